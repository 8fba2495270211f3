"""What a user meets on bad input: one ``error:`` line, one ``hint:`` line, the right exit
code, no traceback, and nothing finished is lost. Every case runs the real CLI in a subprocess.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import sqlite3
import subprocess
import time
from pathlib import Path

import pytest

from conftest import write_repro
from support.cli import assert_clean_error, envbisect, start
from support.index_server import LocalIndex
from support.wheels import build_wheel


@pytest.fixture
def base(index: LocalIndex, python: str, tmp_path: Path) -> list[str]:
    return ["run", "--index-url", index.url, "--python", python, "--results", str(tmp_path / "r")]


def test_unknown_package(base: list[str], tmp_path: Path) -> None:
    proc = envbisect(*base, "--package", "nope-nothing", "--", "python", "-c", "pass")
    assert_clean_error(proc, 2, "no package named 'nope-nothing'")


def test_version_that_does_not_exist(base: list[str]) -> None:
    proc = envbisect(*base, "--package", "crashy", "--good", "0.9", "--", "true")
    assert_clean_error(proc, 2, "--good 0.9: crashy has no such version")


def test_good_equal_to_bad(base: list[str]) -> None:
    proc = envbisect(
        *base, "--package", "crashy", "--good", "1.2.0", "--bad", "1.2.0", "--", "true"
    )
    assert_clean_error(proc, 2, "same version")


def test_no_candidates_in_range(base: list[str]) -> None:
    proc = envbisect(*base, "--package", "crashy", "--exclude-newer", "2020-01-01", "--", "true")
    assert_clean_error(proc, 2, "0 candidate version(s)")


def test_missing_repro_file(base: list[str]) -> None:
    proc = envbisect(*base, "--package", "crashy", "--repro", "does-not-exist.py")
    assert_clean_error(proc, 2, "the repro file does-not-exist.py does not exist")


def test_no_repro_runs_the_default_probes(base: list[str]) -> None:
    # import:crashy passes everywhere (only crashy.run() crashes): the ends do not verify.
    proc = envbisect(*base, "--package", "crashy")
    assert proc.returncode == 1, proc.stderr
    assert "no repro given; probing with import:crashy" in proc.stderr
    assert "both ends pass" in proc.stdout


def test_probe_needs_a_repro_and_an_environment(base: list[str]) -> None:
    args = [a for a in base if a != "run"]
    assert_clean_error(envbisect("probe", *args, "--with", "crashy"), 2, "no repro given")
    assert_clean_error(envbisect("probe", *args, "--probe", "import:x"), 2, "no environment given")


def test_unknown_probe_lists_the_known_ones(base: list[str]) -> None:
    proc = envbisect(*base, "--package", "crashy", "--probe", "lora-stpe")
    assert_clean_error(proc, 2, "no built-in probe named 'lora-stpe'")
    assert "datasets-json" in proc.stderr and "lora-step" in proc.stderr


@pytest.mark.slow
def test_bad_flag_values(base: list[str]) -> None:
    assert_clean_error(
        envbisect(*base, "--package", "x", "--timeout", "-5", "--", "true"), 2, "--timeout"
    )
    assert_clean_error(
        envbisect(*base, "--package", "x", "--with", "numpy>>1", "--", "true"),
        2,
        "not a valid requirement",
    )
    assert_clean_error(
        envbisect(*base, "--package", "x", "--exclude-newer", "yesterday", "--", "true"),
        2,
        "not a date",
    )
    assert_clean_error(
        envbisect("run", "--package", "x", "--no-such-flag"), 2, "unrecognized arguments"
    )


@pytest.mark.slow
def test_env_flags(base: list[str], index: LocalIndex, python: str, tmp_path: Path) -> None:
    cases = {"FOO": "--env 'FOO' is not NAME=VALUE", "=1": "--env '=1' is not NAME=VALUE",
             "1X=2": "--env '1X': not a variable name"}  # fmt: skip
    for item, message in cases.items():
        proc = envbisect(*base, "--package", "raisy", "--env", item, "--", "true")
        assert_clean_error(proc, 2, message, "[bad-env]")
        assert (
            "hint: e.g. --env PYTHONOPTIMIZE=1" in proc.stderr or "hint: a name is" in proc.stderr
        )
    # probe takes it too, and refuses before anything is built.
    proc = envbisect("probe", "--index-url", index.url, "--python", python, "--results",
                     str(tmp_path / "p"), "--with", "raisy==1.0.0", "--env", "PATH=/x",
                     "--", "true")  # fmt: skip
    assert_clean_error(proc, 2, "--env PATH: envbisect sets it")
    assert not (tmp_path / "p" / ".envs").exists()
    # A good one: the shell's interpreter variables that probes go without are named, the one
    # passed with --env is not.
    shell = {**os.environ, "PYTHONPATH": str(tmp_path), "PYTHONOPTIMIZE": "1"}
    proc = envbisect("probe", "--index-url", index.url, "--python", python, "--results",
                     str(tmp_path / "p"), "--with", "raisy==1.0.0", "--env", "PYTHONOPTIMIZE=1",
                     "--dry-run", "--", "true", env=shell)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "envbisect: PYTHONPATH from your shell does not reach the probes" in proc.stderr
    assert "PYTHONOPTIMIZE" not in proc.stderr


def test_unreachable_index_masks_credentials(python: str, tmp_path: Path) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = envbisect(
        "run",
        "--package",
        "x",
        "--index-url",
        f"http://bob:hunter2@127.0.0.1:{port}/simple",
        "--python",
        python,
        "--results",
        str(tmp_path / "r"),
        "--",
        "true",
    )
    assert_clean_error(proc, 3, "cannot reach http://***@127.0.0.1")
    assert "hunter2" not in proc.stderr + proc.stdout and "bob" not in proc.stderr


def test_uv_missing(base: list[str], tmp_path: Path) -> None:
    # Hide uv: a `uv` module that cannot be imported and a PATH without the binary.
    shadow = tmp_path / "shadow"
    shadow.mkdir()
    (shadow / "uv.py").write_text("raise ImportError('hidden by the test')\n")
    env = {**os.environ, "PYTHONPATH": str(shadow), "PATH": "/usr/bin:/bin"}
    proc = envbisect(*base, "--package", "crashy", "--", "true", env=env)
    assert_clean_error(proc, 3, "uv is not installed")


def test_full_disk_is_an_infrastructure_error(
    index: LocalIndex, python: str, tmp_path: Path
) -> None:
    """A real full disk: the results directory on a 2 MiB tmpfs, a wheel that needs more."""
    mnt = tmp_path / "small"
    mnt.mkdir()
    if (
        subprocess.run(
            ["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(mnt)], capture_output=True
        ).returncode
        != 0
    ):
        pytest.skip("cannot mount a tmpfs here (needs root)")
    try:
        wheels = tmp_path / "wheels"
        wheels.mkdir()
        build_wheel(
            wheels,
            "bigpkg",
            "1.0",
            {"bigpkg/__init__.py": "", "bigpkg/blob.bin": os.urandom(3 << 20)},
        )
        build_wheel(
            wheels,
            "bigpkg",
            "2.0",
            {"bigpkg/__init__.py": "", "bigpkg/blob.bin": os.urandom(3 << 20)},
        )
        proc = envbisect(
            "run",
            "--package",
            "bigpkg",
            "--index-url",
            index.url,
            "--find-links",
            str(wheels),
            "--python",
            python,
            "--results",
            str(mnt / "r"),
            "--",
            "python",
            "-c",
            "import bigpkg",
        )
        assert_clean_error(proc, 3, "disk is full")
    finally:
        subprocess.run(["umount", str(mnt)], check=False)


@pytest.mark.slow
@pytest.mark.parametrize("jobs", ["1", "2"])
def test_ctrl_c_during_a_probe_keeps_finished_probes_and_resumes(
    index: LocalIndex, python: str, tmp_path: Path, jobs: str
) -> None:
    """With --jobs 2 the ends run in parallel worker threads, whose process groups Ctrl-C
    does not reach: envbisect must kill them itself, and store nothing half-seen."""
    results = tmp_path / "r"
    repro = write_repro(tmp_path, "hangy")
    args = [
        "run",
        "--jobs",
        jobs,
        "--package",
        "hangy",
        "--index-url",
        index.url,
        "--python",
        python,
        "--results",
        str(results),
        "--timeout",
        "120",
        "--repro",
        str(repro),
    ]
    proc = start(*args)
    # The new end (1.5.0) hangs: wait until its probe runs and 1.0.0's is stored (with --jobs
    # 2 they run together, and the hanging one may start first), then press Ctrl-C.
    deadline = time.monotonic() + 240
    seen = ""
    assert proc.stderr is not None
    while "probing 1.5.0" not in seen and time.monotonic() < deadline:
        seen += proc.stderr.readline()

    def ready() -> bool:
        return _stored(results) == 1 and _running(repro, proc.pid)

    while not ready() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert ready(), "1.0.0 should be stored and the hanging probe running"
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    err = seen + err
    assert proc.returncode == 130, err
    assert "Traceback" not in err and "resume" in err
    deadline = time.monotonic() + 10  # the group is killed; its processes may take a moment
    while _running(repro, proc.pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _running(repro, proc.pid), "the probe's process group outlived Ctrl-C"
    db = sqlite3.connect(results / "envbisect.db")
    assert db.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    assert db.execute("SELECT count(*) FROM probes").fetchone() == (1,)  # 1.0.0 finished
    db.close()
    # Resuming: the finished probe is reused, not run again.
    again = envbisect(*[a if a != "120" else "3" for a in args], "--json")
    assert again.returncode == 0, again.stderr
    data = json.loads(again.stdout)
    assert [r["version"] for r in data["reused"]] == ["1.0.0"]
    assert data["first_bad"] == "1.3.0"


def _stored(results: Path) -> int:
    """Probes in the store so far (0 before it exists); read while envbisect writes (WAL)."""
    if not (results / "envbisect.db").exists():
        return 0
    db = sqlite3.connect(f"file:{results / 'envbisect.db'}?mode=ro", uri=True, timeout=30)
    try:
        return int(db.execute("SELECT count(*) FROM probes").fetchone()[0])
    except sqlite3.OperationalError:  # created, its table not yet
        return 0
    finally:
        db.close()


def _running(repro: Path, cli: int) -> bool:
    """A probe of ``repro`` is running: a process (not a zombie) with it on its command line,
    other than envbisect (``cli``) itself."""
    found = subprocess.run(["pgrep", "-f", str(repro)], capture_output=True, text=True)
    return any(int(p) != cli for p in found.stdout.split())
