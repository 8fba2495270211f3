"""Which Python the environments get when ``--python`` is absent: uv's rules, said.

uv picks an interpreter in this order when none is named (its docs, "Python discovery"):
``UV_PYTHON``, then a ``.python-version`` file in the current folder or the nearest folder
above it, then the active virtualenv (``VIRTUAL_ENV``), then a ``.venv`` in the current
folder. envbisect follows the same order, so that ``envbisect versions peft`` in a project
pinned to 3.10 plans for 3.10 as ``uv pip compile`` there would; with none of them, uv's own
default (the first Python on PATH) as before. Each choice says where it came from.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True, slots=True)
class PythonRequest:
    request: str  # a version uv can find, or an interpreter's path
    origin: str  # where it came from, for the stderr line


def venv_python(root: Path) -> Path | None:
    """The interpreter of the virtualenv at ``root`` (POSIX or Windows layout), if any."""
    for rel in ("bin/python", "Scripts/python.exe"):
        path = root / rel
        if path.is_file():
            return path
    return None


def python_version_file(cwd: Path) -> tuple[str, Path] | None:
    """The first request in the nearest ``.python-version`` (comments and blanks skipped)."""
    for folder in (cwd, *cwd.parents):
        path = folder / ".python-version"
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        for line in text.splitlines():
            value = line.strip()
            if value and not value.startswith("#"):
                return value, path
        return None  # an empty file ends the search, as uv's does
    return None


def active_venv(environ: Mapping[str, str], cwd: Path) -> PythonRequest | None:
    """The active virtualenv's interpreter (``VIRTUAL_ENV``), else ``./.venv``'s."""
    venv = environ.get("VIRTUAL_ENV", "").strip()
    if venv and (path := venv_python(Path(venv))) is not None:
        return PythonRequest(str(path), f"the active virtualenv {venv} (VIRTUAL_ENV)")
    if (path := venv_python(cwd / ".venv")) is not None:
        return PythonRequest(str(path), f"{cwd / '.venv'} (the current folder's .venv)")
    return None


def default_python(
    environ: Mapping[str, str] | None = None, cwd: Path | None = None
) -> PythonRequest | None:
    """uv's request when ``--python`` is absent, or None for uv's own default."""
    environ = os.environ if environ is None else environ
    cwd = Path.cwd() if cwd is None else cwd
    value = environ.get("UV_PYTHON", "").strip()
    if value:
        return PythonRequest(value, "UV_PYTHON")
    found = python_version_file(cwd)
    if found is not None:
        return PythonRequest(found[0], str(found[1]))
    return active_venv(environ, cwd)
