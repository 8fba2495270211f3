"""Without ``--python``, the environments get the interpreter uv would pick: ``UV_PYTHON``,
then ``.python-version`` (here or above), then the active virtualenv (``VIRTUAL_ENV``, then
``./.venv``), each choice said on stderr; ``env`` reports on the active virtualenv. The rules
in-process on real folders, then the real CLI against the tests' index."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from envbisect.env.pyrequest import PythonRequest, default_python
from envbisect.env.uv import find_uv
from support.cli import envbisect
from support.index_server import LocalIndex


def make_venv(root: Path) -> Path:
    (root / "bin").mkdir(parents=True)
    (root / "bin" / "python").write_text("")
    return root / "bin" / "python"


def test_the_order_is_uv_python_then_python_version_then_the_active_virtualenv(
    tmp_path: Path,
) -> None:
    project = tmp_path / "project"
    deep = project / "src" / "pkg"
    deep.mkdir(parents=True)
    venv = make_venv(tmp_path / "active")
    local = make_venv(deep / ".venv")
    assert default_python({}, tmp_path) is None  # nothing: uv's own default
    assert default_python({}, deep) == PythonRequest(str(local), f"{deep / '.venv'} (the "
                                                     "current folder's .venv)")  # fmt: skip
    environ = {"VIRTUAL_ENV": str(tmp_path / "active")}
    assert default_python(environ, deep) == PythonRequest(
        str(venv), f"the active virtualenv {tmp_path / 'active'} (VIRTUAL_ENV)"
    )
    # A .python-version above the current folder (comments and blank lines skipped) wins.
    (project / ".python-version").write_text("# pinned\n\n3.10\n3.12\n")
    assert default_python(environ, deep) == PythonRequest("3.10", str(project / ".python-version"))
    # UV_PYTHON wins over everything; an empty one counts as unset.
    assert default_python({**environ, "UV_PYTHON": " "}, deep).request == "3.10"  # type: ignore[union-attr]
    assert default_python({**environ, "UV_PYTHON": "3.13"}, deep) == PythonRequest(
        "3.13", "UV_PYTHON"
    )
    # A virtualenv variable naming a folder without an interpreter is passed over.
    (project / ".python-version").unlink()
    assert default_python({"VIRTUAL_ENV": str(tmp_path / "gone")}, deep).request == str(local)  # type: ignore[union-attr]


def other_version() -> str:
    """A minor version other than this interpreter's: ``versions`` plans for it whether or
    not this machine has it (tests/env/test_missing_python.py)."""
    return "3.12" if sys.version_info[:2] == (3, 10) else "3.10"


def clean_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("UV_PYTHON", "VIRTUAL_ENV")}
    return {**env, **extra}


@pytest.mark.slow
def test_versions_follows_uv_python_and_python_version(index: LocalIndex, tmp_path: Path) -> None:
    version = other_version()
    tag = "cp" + version.replace(".", "")
    work = tmp_path / "project" / "sub"
    work.mkdir(parents=True)
    (tmp_path / "project" / ".python-version").write_text(f"{version}\n")
    args = ("versions", "crashy", "--index-url", index.url, "--no-config")
    proc = envbisect(*args, cwd=work, env=clean_env())
    assert proc.returncode == 0, proc.stderr
    assert f"envbisect: Python {version} (from {tmp_path / 'project' / '.python-version'}" in (
        proc.stderr
    )
    assert f"for {tag}-" in proc.stdout
    # UV_PYTHON over the file, as uv has it; --python over both, and then nothing is said.
    here = f"{sys.version_info[0]}.{sys.version_info[1]}"
    proc = envbisect(*args, cwd=work, env=clean_env(UV_PYTHON=here))
    assert f"envbisect: Python {here} (from UV_PYTHON" in proc.stderr
    assert f"for cp{here.replace('.', '')}-" in proc.stdout
    proc = envbisect(*args, "--python", here, cwd=work, env=clean_env(UV_PYTHON=version))
    assert "envbisect: Python" not in proc.stderr
    assert f"for cp{here.replace('.', '')}-" in proc.stdout


@pytest.mark.slow
def test_env_reports_on_the_active_virtualenv(tmp_path: Path) -> None:
    uv = find_uv()
    venv = tmp_path / "active"
    subprocess.run([uv, "venv", "-q", "--no-config", "--python", sys.executable, str(venv)],
                   check=True)  # fmt: skip
    proc = envbisect("env", "--quick", "--json", cwd=tmp_path,
                     env=clean_env(VIRTUAL_ENV=str(venv)))  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["executable"] == str(venv / "bin" / "python")
    assert f"reporting on {venv / 'bin' / 'python'} (the active virtualenv" in proc.stderr
    # --python picks another; with no virtualenv at all, envbisect's own interpreter.
    proc = envbisect("env", "--quick", "--json", "--python", sys.executable, cwd=tmp_path,
                     env=clean_env(VIRTUAL_ENV=str(venv)))  # fmt: skip
    assert json.loads(proc.stdout)["executable"] == sys.executable
    proc = envbisect("env", "--quick", "--json", cwd=tmp_path, env=clean_env())
    assert json.loads(proc.stdout)["executable"] == sys.executable
    assert "(the interpreter running envbisect" in proc.stderr
