"""Installing what envbisect wrote, as a user on another machine would: the lockfile names
its own index and --find-links folders (nothing on the command line says where files come
from), hashes are required, and the PEP 751 file is checked with ``packaging.pylock`` and
installed with ``uv pip sync``."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

from packaging.pylock import Pylock

from envbisect.env.uv import find_uv


def install_and_run(lock: Path, pylock: Path, app: str, python: str, tmp: Path) -> None:
    """The lock installs on its own (it names its index), hashes required, with uv and with
    pip, and the PEP 751 file with ``uv pip sync``; the repro passes in each environment."""
    Pylock.from_dict(tomllib.loads(pylock.read_text()))  # PEP 751, checked
    uv = find_uv()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("UV_INDEX", "PIP_"))}
    env["UV_CACHE_DIR"] = os.environ["UV_CACHE_DIR"]
    where = Path(tempfile.mkdtemp(prefix="installs-", dir=tmp))
    for how in ("uv", "pip", "pylock"):
        venv = where / how
        if how == "pip":
            subprocess.run([python, "-m", "venv", str(venv)], check=True)
        else:
            subprocess.run([uv, "venv", "-q", "--python", python, str(venv)], check=True, env=env)
        py = str(venv / "bin" / "python")
        cmd = {
            "uv": [uv, "pip", "install", "-q", "--python", py, "--require-hashes", "-r", str(lock)],
            "pip": [py, "-m", "pip", "install", "-q", "--disable-pip-version-check",
                    "--require-hashes", "-r", str(lock)],
            "pylock": [uv, "pip", "sync", "-q", "--python", py, str(pylock)],
        }[how]  # fmt: skip
        subprocess.run(cmd, check=True, env=env, cwd=tmp)
        ran = subprocess.run([py, "-c", f"import {app}; {app}.run()"], capture_output=True,
                             text=True)  # fmt: skip
        assert ran.returncode == 0, (how, ran.stderr)
