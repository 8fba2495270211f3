"""Another revision's envbisect, for a bench that runs the same commands with it side by side.

``archived(REV, DIR)`` unpacks ``git archive REV src`` under DIR, compiles it (where
PYTHONDONTWRITEBYTECODE is set, as on some machines, the other revision would otherwise compile
every module at every start while this tree's were compiled once: a timing of the compiler,
not of the code) and returns the ``src`` folder to put on PYTHONPATH (bench/bench_breakpoints.py
and bench/realworld.py ``--against``).
"""

from __future__ import annotations

import compileall
import subprocess
import tarfile
from io import BytesIO
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def archived(rev: str, into: Path) -> Path:
    """``git archive REV src`` unpacked under ``into``: that revision's package."""
    blob = subprocess.run(["git", "archive", rev, "src"], cwd=ROOT, capture_output=True,
                          check=True).stdout  # fmt: skip
    with tarfile.open(fileobj=BytesIO(blob)) as tf:
        tf.extractall(into, filter="data")
    compileall.compile_dir(into / "src", quiet=1)
    return into / "src"
