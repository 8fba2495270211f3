"""Probe *policy*: what runs in a candidate environment, with which interpreter flags and
environment variables, in which working directory. The mechanism is ``runner.run_process``.

Two kinds of repro:
    --repro FILE      ``<env python> -X faulthandler FILE``
    -- CMD ARGS...    the command, with the environment's bin directory first on PATH and
                      ``ENVBISECT_PYTHON`` set to its interpreter

Both run in a fresh working directory per probe, with faulthandler on (every thread's Python
stack on a fatal signal, and on the SIGABRT sent at the timeout), without the user's
PYTHONPATH/PYTHONHOME/user site, so that only the candidate environment is tested.
"""

from __future__ import annotations

import hashlib
import json
import os
import shlex
import shutil
import signal
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from .errors import UsageError
from .materialize import BuiltEnv
from .model import RawProbe
from .runner import run_process

# Bump when the way probes are run changes enough that stored outcomes should not be reused.
POLICY_VERSION = 1

_ENV_DROP = (
    "PYTHONPATH",
    "PYTHONHOME",
    "PYTHONSTARTUP",
    "PYTHONUSERBASE",
    "VIRTUAL_ENV",
    "CONDA_PREFIX",
    "PYTHONEXECUTABLE",
    "__PYVENV_LAUNCHER__",
)


@dataclass(frozen=True, slots=True, kw_only=True)
class Repro:
    """The user's minimal repro: a Python file, or a command line."""

    file: Path | None = None
    argv: tuple[str, ...] = ()
    origin: Path = Path(".")  # the directory envbisect was started from

    @classmethod
    def from_file(cls, path: str, origin: Path) -> Repro:
        p = (origin / path).resolve()
        if not p.is_file():
            raise UsageError(
                f"the repro file {path} does not exist",
                hint="pass --repro PATH to a Python file, or give a command after --",
                ref="repro-missing",
            )
        return cls(file=p, origin=origin)

    @classmethod
    def from_command(cls, argv: list[str], origin: Path) -> Repro:
        if not argv:
            raise UsageError(
                "no repro given",
                hint="pass --repro FILE, or a command after -- "
                "(e.g. -- python -c 'import datasets')",
                ref="repro-missing",
            )
        return cls(argv=tuple(argv), origin=origin)

    @property
    def repro_id(self) -> str:
        """Changes when the repro's text changes, so an edited repro is probed afresh."""
        blob = {
            "policy": POLICY_VERSION,
            "file": _digest(self.file) if self.file else None,
            "argv": list(self.argv),
            "files": {a: _digest(p) for a, p in self._arg_files().items()},
        }
        return hashlib.sha256(json.dumps(blob, sort_keys=True).encode()).hexdigest()[:16]

    def describe(self) -> str:
        if self.file is not None:
            return f"python -X faulthandler {self.file}"
        return shlex.join(self.argv)

    def _arg_files(self) -> dict[str, Path]:
        """Arguments that name files relative to the directory envbisect started in."""
        out: dict[str, Path] = {}
        for arg in self.argv[1:]:
            if arg.startswith("-") or os.path.isabs(arg):
                continue
            p = self.origin / arg
            if p.is_file():
                out[arg] = p.resolve()
        return out

    def command(self, env: BuiltEnv) -> list[str]:
        if self.file is not None:
            return [str(env.python), "-X", "faulthandler", str(self.file)]
        # Each probe runs in its own directory: make file arguments absolute so that
        # "-- python repro.py" still finds repro.py.
        files = self._arg_files()
        return [self.argv[0], *(str(files[a]) if a in files else a for a in self.argv[1:])]

    def environment(self, env: BuiltEnv, base: Mapping[str, str]) -> dict[str, str]:
        out = {k: v for k, v in base.items() if k not in _ENV_DROP}
        out["PATH"] = os.pathsep.join([str(env.bin_dir), base.get("PATH", os.defpath)])
        out["VIRTUAL_ENV"] = str(env.path)
        out["ENVBISECT_PYTHON"] = str(env.python)
        out["ENVBISECT_ORIGIN"] = str(self.origin)
        out["PYTHONFAULTHANDLER"] = "1"
        out["PYTHONNOUSERSITE"] = "1"
        out["PYTHONUNBUFFERED"] = "1"
        return out

    def run(self, env: BuiltEnv, *, workdir: Path, timeout: float) -> RawProbe:
        """Run the repro in ``env``; a command that cannot be started exits 127 (FAIL)."""
        workdir.mkdir(parents=True, exist_ok=True)
        argv = self.command(env)
        penv = self.environment(env, os.environ)
        if self.file is None and os.sep not in argv[0]:
            # Look the program up on the probe's PATH (the venv first), not envbisect's.
            found = shutil.which(argv[0], path=penv["PATH"])
            if found is None:
                return RawProbe(
                    returncode=127,
                    timed_out=False,
                    seconds=0.0,
                    stderr_tail=f"envbisect: command not found: {argv[0]}",
                )
            argv[0] = found
        return run_process(argv, cwd=workdir, env=penv, timeout=timeout, stop_signal=signal.SIGABRT)


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()
