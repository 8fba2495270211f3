"""Builds ahead never cost the run: on a small filesystem (a tmpfs the test mounts, with room
for the environment being probed and half of another), every build ahead fills the disk; it
is dropped (said at -v), the wanted environment is built when its round comes, and the run
ends with the right answer. Skipped where the test cannot mount a tmpfs (not root, or no
mount in this container)."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest

from conftest import RecordingProgress
from envbisect.env.repro import Repro
from envbisect.errors import DiskFull
from envbisect.model import IndexConfig
from envbisect.modes.run import RunOptions, run_bisect
from envbisect.store import Store
from support.index_server import IndexFile, LocalIndex
from support.options import flat_options
from support.wheels import build_wheel

pytestmark = pytest.mark.slow
BLOB = 3 * 1024 * 1024  # each version carries this much: the environments' size is known
VERSIONS = [f"1.{i}.0" for i in range(12)]  # 1.7.0 and later fail


@pytest.fixture(scope="module")
def heavy(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalIndex]:
    out = tmp_path_factory.mktemp("heavy")
    index = LocalIndex()
    when = datetime(2024, 1, 1, tzinfo=timezone.utc)
    for i, v in enumerate(VERSIONS):
        body = "def run():\n    pass\n" if i < 7 else "def run():\n    raise SystemExit(3)\n"
        path = build_wheel(
            out,
            "heavypkg",
            v,
            {"heavypkg/__init__.py": body, "heavypkg/blob.bin": os.urandom(BLOB)},
        )
        index.add(IndexFile(project="heavypkg", path=path, upload_time=when + timedelta(days=i)))
    index.start()
    yield index
    index.stop()


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    where = tmp_path / "small"
    where.mkdir()
    yield where
    subprocess.run(["umount", str(where)], capture_output=True)


def _mount(where: Path, size: int) -> None:
    got = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(where)],
        capture_output=True, text=True,
    )  # fmt: skip
    if got.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {got.stderr.strip() or got.returncode}")


def _opts(
    index: LocalIndex, python: str, repro: Repro, results: Path, cache: Path, *, keep: bool
) -> RunOptions:
    common = flat_options(
        repro=repro, indexes=IndexConfig(index_url=index.url), python=python, results=results,
        cache_dir=cache, keep_envs=keep,
    )  # fmt: skip
    return RunOptions(package="heavypkg", common=common)


def _size(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file() and not p.is_symlink())


def _measured(
    heavy: LocalIndex, python: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> tuple[Repro, Any, int, int]:
    """The repro (a probe that takes a moment: the next round's candidates are built ahead
    while it runs), the bisection with no build ahead and every environment kept, one
    environment's size and the store's."""
    if len(os.sched_getaffinity(0)) < 2:
        pytest.skip("builds ahead need a second core")
    script = tmp_path / "repro.py"
    script.write_text("import time, heavypkg\ntime.sleep(1.5)\nheavypkg.run()\n")
    repro = Repro.from_file(str(script), tmp_path)
    monkeypatch.setenv("ENVBISECT_NO_BUILD_AHEAD", "1")
    plain = run_bisect(_opts(heavy, python, repro, tmp_path / "plain", tmp_path / "c", keep=True))
    monkeypatch.delenv("ENVBISECT_NO_BUILD_AHEAD")
    assert (plain.first_new, plain.last_old) == ("1.7.0", "1.6.0")
    envs = _size(tmp_path / "plain" / ".envs")
    return repro, plain, envs // len(plain.rows), _size(tmp_path / "plain") - envs


def test_builds_ahead_that_fill_the_disk_are_dropped_and_the_run_ends_right(
    heavy: LocalIndex, python: str, tmp_path: Path, small_disk: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    repro, plain, one, store = _measured(heavy, python, tmp_path, monkeypatch)
    # Room for the environment being probed and half of another: every build ahead beside a
    # probe fills the disk (the probed environment is removed after its probe).
    _mount(small_disk, one + one // 2 + store + 1024 * 1024)
    rec = RecordingProgress()
    rec.verbose = True  # -v: a build ahead that failed is said
    res = run_bisect(_opts(heavy, python, repro, small_disk / "r", tmp_path / "c", keep=False), rec)
    assert (res.first_new, res.last_old) == ("1.7.0", "1.6.0")
    assert [r.version for r in res.rows] == [r.version for r in plain.rows]
    failed = [m for m in rec.messages if "build ahead failed" in m and "disk" in m]
    assert failed, rec.messages
    assert not [p for p in (small_disk / "r" / ".envs").iterdir() if p.is_dir()]


def test_with_keep_envs_builds_ahead_never_make_a_full_disk_come_sooner(
    heavy: LocalIndex, python: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """--keep-envs on a disk too small for every probed environment: the run ends with
    [disk-full] (exit 3), but after as many probes as it makes with no build ahead; builds
    ahead holding the space are removed for the environment the search wants."""
    repro, _, one, store = _measured(heavy, python, tmp_path, monkeypatch)
    probed = {}
    for ahead in (False, True):
        if not ahead:
            monkeypatch.setenv("ENVBISECT_NO_BUILD_AHEAD", "1")
        else:
            monkeypatch.delenv("ENVBISECT_NO_BUILD_AHEAD")
        disk = tmp_path / f"disk-{ahead}"
        disk.mkdir()
        _mount(disk, 4 * one + one // 2 + store + 1024 * 1024)  # four and a half
        try:
            rec = RecordingProgress()
            with pytest.raises(DiskFull):
                run_bisect(_opts(heavy, python, repro, disk / "r", tmp_path / "c", keep=True), rec)
            with Store(disk / "r") as s:
                probed[ahead] = len(list(s.all()))
            if ahead:
                assert any("the disk is full" in m for m in rec.messages), rec.messages
        finally:
            subprocess.run(["umount", str(disk)], capture_output=True)
    assert probed[True] == probed[False] == 4, probed
