"""Where pin sources meet the machine: files read as text, interpreters asked what they have.

Who does what: ``load_pins`` (pins.py) decides what kind of source the user named and which
parser reads it; this module does the IO that needs and hands back plain data, parsing nothing.
``read_text`` reads a file as UTF-8 (a BOM is dropped); ``file_reader`` is the ``read`` callable
that follows a requirements file's includes on disk; ``installed_distributions`` runs the
interpreter that ``installed:PYTHON`` names, isolated (``-I``: no ``PYTHON*`` variables, no user
site, not the current folder), and returns what ``importlib.metadata`` finds there. Every error
is a ``UsageError`` with ref ``pins-unreadable`` or ``pins-no-interpreter``.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

from envbisect.core.reqfile import Reader
from envbisect.errors import UsageError

# Run with the user's interpreter (``python -I -c``); prints [[name, version], ...] in sys.path
# order, so the first row of a name is the distribution that import finds.
_INSTALLED_SCRIPT = r"""
import json
try:
    from importlib import metadata
except ImportError:
    import importlib_metadata as metadata
rows = []
for dist in metadata.distributions():
    name = dist.metadata["Name"]
    if name:
        rows.append([name, dist.version])
print(json.dumps(rows))
"""


def installed_distributions(python: str, *, cwd: Path) -> list[tuple[str, str]]:
    """(name, version) of every distribution ``python`` sees, in its ``sys.path`` order.

    ``python`` is a name looked up on PATH, or a path (relative to ``cwd``). Names and versions
    are as the distributions give them, not validated.
    """
    hint = "name an interpreter on PATH or give its path, e.g. installed:.venv/bin/python"
    if not python:
        raise UsageError("installed: names no interpreter", hint=hint, ref="pins-no-interpreter")
    if os.sep in python or (os.altsep is not None and os.altsep in python):
        path = resolve(cwd, python)
        exe = str(path) if path.is_file() else None
    else:
        exe = shutil.which(python)
    if exe is None:
        raise UsageError(f"no interpreter {python!r}", hint=hint, ref="pins-no-interpreter")
    try:
        proc = subprocess.run(
            [exe, "-I", "-c", _INSTALLED_SCRIPT],
            capture_output=True,
            text=True,
            timeout=120,
            cwd=cwd,
        )
    except (OSError, subprocess.TimeoutExpired) as e:
        raise UsageError(f"cannot run {exe}: {e}", hint=hint, ref="pins-no-interpreter") from e
    try:
        if proc.returncode != 0:
            raise ValueError(f"exit {proc.returncode}")
        rows = json.loads(proc.stdout)
        if not isinstance(rows, list):
            raise ValueError("not a list")
    except ValueError as e:
        tail = (proc.stderr.strip().splitlines() or [""])[-1]
        raise UsageError(
            f"{exe} could not list its distributions ({e}){': ' + tail if tail else ''}",
            hint="installed: needs a Python 3.8 or newer that starts cleanly",
            ref="pins-no-interpreter",
        ) from e
    return [(str(row[0]), str(row[1])) if isinstance(row, list) else ("?", "?") for row in rows]


def file_reader(cwd: Path) -> Reader:
    """The ``read`` callable for ``parse_requirements``: includes are files under ``cwd``.

    It raises ``OSError`` for a file it cannot read, so that the parser names the include.
    """

    def read(location: str) -> tuple[str, str]:
        return decode(resolve(cwd, location).read_bytes(), location), location

    return read


def resolve(cwd: Path, location: str) -> Path:
    """``location`` with ``~`` expanded, relative to ``cwd`` unless absolute."""
    path = Path(location).expanduser()
    return path if path.is_absolute() else cwd / path


def read_text(path: Path, label: str) -> str:
    """The text of the file at ``path``; ``label`` names it in errors."""
    try:
        data = path.read_bytes()
    except OSError as e:
        raise UsageError(
            f"cannot read {label}: {e.strerror or e}",
            hint="check the path and its permissions",
            ref="pins-unreadable",
        ) from e
    return decode(data, label)


def decode(data: bytes, label: str) -> str:
    """``data`` as UTF-8 text, without a byte-order mark."""
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise UsageError(
            f"{label} is not UTF-8 text", hint="save the file as UTF-8", ref="pins-unreadable"
        ) from e
