"""Locks for committed tables name public indexes only; a matrix file names no machine's folder.

A real index on 127.0.0.1 plays the public ones (PyPI's /simple and PyTorch's /whl/cpu, laid
out as download.pytorch.org is); a wheel folder in tmp plays this machine's. The PyTorch host
that cannot be reached is a closed port on 127.0.0.1.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest
from packaging.pylock import Pylock

from envbisect.cli.optionset import parsed
from envbisect.cli.readflags import index_settings
from envbisect.core.living.spec import MatrixSpec, parse_matrix
from envbisect.env.uv import find_uv
from envbisect.errors import UsageError
from envbisect.model import IndexConfig, InstalledDist
from envbisect.modes.living.matrix import matrix_indexes
from envbisect.modes.living.publish import without_paths
from envbisect.modes.outputs import write_lockfiles
from envbisect.modes.portable import PublicSources
from envbisect.modes.session import Session
from support.index_server import IndexFile, LocalIndex
from support.options import flat_options
from support.wheels import build_wheel

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

WHEN = datetime(2025, 1, 1, tzinfo=timezone.utc)


def spec_of(**matrix: object) -> MatrixSpec:
    data = {"matrix": {"probes": ["import:x"], **matrix}, "axis": [{"package": "x"}]}
    return parse_matrix(data, path=Path("matrices/m.toml"))


def test_a_matrix_file_names_no_folder_of_one_machine() -> None:
    for folder in ("/opt/wheels", "~/wheels", "C:\\wheels"):
        with pytest.raises(UsageError) as e:
            spec_of(find_links=[folder])
        assert e.value.ref == "matrix-local-folder" and "--find-links DIR" in (e.value.hint or "")
    # A folder beside the file, or a URL, is the same on every clone.
    assert spec_of(find_links=["wheels", "https://example.org/w.html"]).find_links
    for bad in ("auto", "cuda", "cpu/"):
        with pytest.raises(UsageError) as e:
            spec_of(torch_backend=bad)
        assert e.value.ref == "matrix-schema"


def test_a_folder_of_this_machine_overrides_the_file() -> None:
    spec = spec_of(torch_backend="cpu")
    public = matrix_indexes(spec)
    assert public.torch_index == "https://download.pytorch.org/whl/cpu" and not public.find_links
    local = matrix_indexes(spec, ("/here/wheels",))
    # The folder stands in for the PyTorch index (this machine's copy of its files).
    assert local.find_links == ("/here/wheels",) and local.torch_index is None
    assert local.index_url == public.index_url == "https://pypi.org/simple"


def test_matrix_and_publish_read_the_folder_from_the_flag_or_the_settings(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("UV_FIND_LINKS", str(tmp_path))
    monkeypatch.setenv("UV_INDEX_URL", "https://mirror.example/simple")
    for argv in (["matrix", "m.toml"], ["publish", "m.toml"]):
        found = index_settings(parsed(argv))
        assert [(f.url, f.origin) for f in found.links] == [(str(tmp_path), "UV_FIND_LINKS")]
        flag = index_settings(parsed([*argv, "--find-links", "w"]))
        assert [f.url for f in flag.links] == ["w"]
        assert not index_settings(parsed([*argv, "--no-config"])).links


def test_old_records_lose_the_interpreter_path_and_keep_what_the_label_says() -> None:
    meta = {"name": "m", "targets": {"3.11": "cp311-manylinux_2_36_x86_64 (/x/.venv/bin/python)"}}
    assert without_paths(meta)["targets"] == {
        "3.11": {"implementation": "cpython", "abi": "cp311", "platform": "manylinux_2_36_x86_64"}
    }
    new = {"3.12": {"implementation": "cpython", "version": "3.12.1", "abi": "cp312",
                    "platform": "manylinux_2_36_x86_64"}}  # fmt: skip
    assert without_paths({"targets": new})["targets"] == new


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])  # closed when the with ends: nothing listens there


@pytest.fixture
def world(tmp_path: Path) -> Iterator[tuple[LocalIndex, Path]]:
    """The public index and this machine's wheel folder:
    - pubpkg 1.0: the same file in both (a copy);
    - twinbad 1.0: another build of it in the folder (the index's file is not this one);
    - onlyhere 1.0: in the folder only;
    - torch 2.1.0+cpu: in the folder and in the index's /whl/cpu (the same file)."""
    served, folder = tmp_path / "served", tmp_path / "wheels"
    for d in (served, served / "cpu", folder):
        d.mkdir(parents=True)
    index = LocalIndex()
    pub = build_wheel(served, "pubpkg", "1.0", {"pubpkg/__init__.py": "X = 1\n"})
    shutil.copy(pub, folder)
    index.add(IndexFile(project="pubpkg", path=pub, upload_time=WHEN))
    bad = build_wheel(served, "twinbad", "1.0", {"twinbad/__init__.py": "X = 'index'\n"})
    index.add(IndexFile(project="twinbad", path=bad, upload_time=WHEN))
    build_wheel(folder, "twinbad", "1.0", {"twinbad/__init__.py": "X = 'folder'\n"})
    build_wheel(folder, "onlyhere", "1.0", {"onlyhere/__init__.py": "X = 1\n"})
    torch = build_wheel(served / "cpu", "torch", "2.1.0+cpu", {"torch/__init__.py": "X = 1\n"})
    shutil.copy(torch, folder)
    index.variants["cpu"] = [IndexFile(project="torch", path=torch, upload_time=WHEN)]
    index.start()
    yield index, folder
    index.stop()


def lock_for(
    index: LocalIndex, folder: Path, tmp: Path, names: list[str], torch_index: str
) -> tuple[str, dict[str, Any]]:
    results = tmp / "results"
    opts = flat_options(
        indexes=IndexConfig(index_url=index.url, find_links=(str(folder),)),
        results=results,
        cache_dir=tmp / "cache",
        python=sys.executable,
    )
    versions = {"pubpkg": "1.0", "twinbad": "1.0", "onlyhere": "1.0", "torch": "2.1.0+cpu"}
    installed = tuple(InstalledDist(name=n, version=versions[n]) for n in names)
    with Session(opts) as session:
        public = PublicSources(IndexConfig(index_url=index.url, torch_index=torch_index), session)
        out = results / "locks"
        out.mkdir(parents=True)
        req, pl = write_lockfiles(out, installed, session, header=["a table's lock"],
                                  public=public, again="envbisect publish m.toml")  # fmt: skip
    return req.read_text(), tomllib.loads(pl.read_text())


@pytest.mark.slow
def test_a_table_lock_names_the_public_twin_of_each_local_file_and_installs(
    world: tuple[LocalIndex, Path], tmp_path: Path
) -> None:
    index, folder = world
    text, pylock = lock_for(index, folder, tmp_path, ["pubpkg", "torch"], f"{index.base}/whl/cpu")
    assert str(folder) not in text and str(folder) not in str(pylock)
    assert "--find-links" not in text and "not portable" not in text and "unchecked" not in text
    assert f"--index-url {index.url}\n--extra-index-url {index.base}/whl/cpu\n" in text
    files = {p["name"]: p["wheels"][0] for p in pylock["packages"]}
    assert files["pubpkg"]["url"] == f"{index.base}/files/pubpkg-1.0-py3-none-any.whl"
    assert files["torch"]["url"].startswith(f"{index.base}/whl/cpu/torch-2.1.0")
    assert [len(p["wheels"]) for p in pylock["packages"]] == [1, 1]
    # The lock installs as its header says, hashes required, from the indexes it names alone.
    (line,) = [h for h in text.splitlines() if h.startswith("# Install: ")]
    cmd = line.removeprefix("# Install: ").split("  (")[0].split()
    assert "--index-strategy" in cmd  # two indexes: pip's rule, not uv's first-index
    uv = find_uv()
    venv = tmp_path / "venv"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("UV_INDEX", "PIP_"))}
    subprocess.run([uv, "venv", "-q", "--python", sys.executable, str(venv)], check=True, env=env)
    (tmp_path / "req.txt").write_text(text)
    subprocess.run([uv, *cmd[1:-1], str(tmp_path / "req.txt"), "--python", str(venv / "bin" /
                    "python"), "-q", "--no-config"], check=True, env=env)  # fmt: skip
    got = subprocess.run([uv, "pip", "freeze", "--python", str(venv / "bin" / "python")],
                         capture_output=True, text=True, check=True, env=env).stdout  # fmt: skip
    assert got.split() == ["pubpkg==1.0", "torch==2.1.0+cpu"]
    assert index.hits["GET /files/pubpkg-1.0-py3-none-any.whl"] >= 1
    assert sum(n for k, n in index.hits.items() if k.startswith("GET /whl/cpu/torch-")) >= 1


def test_what_no_public_index_serves_is_said_and_never_named_by_its_folder(
    world: tuple[LocalIndex, Path], tmp_path: Path
) -> None:
    index, folder = world
    unreachable = f"http://127.0.0.1:{closed_port()}/whl/cpu"
    text, pylock = lock_for(index, folder, tmp_path, ["twinbad", "onlyhere", "torch"], unreachable)
    assert str(folder) not in text and str(folder) not in str(pylock)
    lines = text.splitlines()
    notes = [n for n in lines if n.startswith(("# not portable", "# unchecked"))]
    assert len(notes) == 3
    assert any(n.startswith("# not portable: twinbad 1.0:") and "serves another file" in n
               for n in notes)  # fmt: skip
    assert any(n.startswith("# not portable: onlyhere 1.0:") and "has no onlyhere" in n
               for n in notes)  # fmt: skip
    assert any(n.startswith("# unchecked: torch 2.1.0+cpu:") and unreachable in n for n in notes)
    assert "# to check it again where that index can be read: envbisect publish m.toml" in lines
    # The torch index is named (its file pinned by hash); neither folder nor unchecked URL is.
    assert f"--extra-index-url {unreachable}" in lines and "--find-links" not in text
    wheels = {p["name"]: p["wheels"] for p in pylock["packages"]}
    assert all("path" not in w for ws in wheels.values() for w in ws)
    # twinbad: the index's own build (what another machine gets) by URL, the folder's by hash
    # alone (PEP 751 names every file by URL or path); the others have no file it can name:
    # left out of the pylock and said, never written as entries an installer refuses.
    assert [("url" in w) for w in wheels["twinbad"]] == [True]
    assert "onlyhere" not in wheels and "torch" not in wheels
    assert pylock["tool"]["envbisect"]["left-out"] == ["onlyhere==1.0", "torch==2.1.0+cpu"]
    assert len(pylock["tool"]["envbisect"]["notes"]) == 5
    assert "left out of this file: onlyhere==1.0, torch==2.1.0+cpu" in str(pylock)
    Pylock.from_dict(pylock)  # it validates
    assert "uv pip sync" not in text
    assert "which leaves out onlyhere==1.0, torch==2.1.0+cpu" in text
    # Each file keeps its hash: an install elsewhere takes that file or none.
    assert text.count("--hash=sha256:") == 4
