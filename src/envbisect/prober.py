"""Probing one environment: store lookup, build, run, classify, forensics, record.

Who does what: ``store`` answers "already probed?"; ``materialize`` builds the venv; the
``Repro`` runs its steps in it; ``outcome.classify`` decides; on a crash ``forensics`` re-runs
the crashing step under gdb for the native side; ``envreport`` records what the environment
was. The same ``Prober`` serves ``envbisect run`` (many environments) and ``envbisect probe``
(one).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from . import __version__, envreport, forensics
from .errors import UsageError
from .materialize import BuildFailed, BuiltEnv, Materializer
from .model import EnvSpec, InstalledDist, Outcome, OutcomeKind, installed_hash
from .outcome import classify
from .probe import Repro
from .reporter import Reporter
from .store import ProbeRecord, Store
from .target import Target

NATIVE_BACKTRACE = ("auto", "always", "never")


@dataclass(slots=True, kw_only=True)
class Prober:
    uv: str
    python: str
    target: Target
    repro: Repro
    results: Path
    timeout: float = 600.0
    keep_envs: bool = False
    native_backtrace: str = "auto"
    reporter: Reporter = field(default_factory=Reporter)
    _gdb: str | None = field(init=False, default=None)
    _gdb_warned: bool = field(init=False, default=False)
    _nvidia: dict[str, Any] | None = field(init=False, default=None)

    def __post_init__(self) -> None:
        self._gdb = forensics.gdb_path() if self.native_backtrace != "never" else None
        if self.native_backtrace == "always" and self._gdb is None:
            raise UsageError(
                "--native-backtrace always needs gdb, and gdb is not installed",
                hint="install gdb (apt install gdb), or use --native-backtrace auto",
                ref="gdb-missing",
            )
        self._nvidia = envreport.read_nvidia_smi()

    def python_label(self) -> str:
        return f"{self.python} ({self.target.python_version})"

    def probe(self, store: Store, spec: EnvSpec) -> tuple[ProbeRecord, bool]:
        """The record for ``spec`` with this repro, and whether it came from the store."""
        repro_id = self.repro.repro_id
        rec = store.get(spec.env_id, repro_id)
        if rec is not None and not _stale(rec, self.timeout):
            return rec, True
        started = datetime.now(timezone.utc).isoformat(timespec="seconds")
        materializer = Materializer(self.uv, self.results / ".envs")
        built = materializer.build(spec, self.python)
        installed: tuple[InstalledDist, ...] = ()
        report: dict[str, Any] | None = None
        if isinstance(built, BuildFailed):
            outcome, probe_s, build_s = built.outcome, 0.0, built.seconds
            out_tail = err_tail = ""
        else:
            try:
                workdir = built.path / "envbisect-work"
                raw = self.repro.run(built, workdir=workdir, timeout=self.timeout)
                outcome = classify(raw)
                if outcome.kind is OutcomeKind.CRASH:
                    outcome = self._forensics(built, outcome, workdir)
                # The environment's own path says nothing and differs every time.
                outcome = replace(
                    outcome,
                    signature=outcome.signature.replace(str(built.path), "<env>"),
                    detail=outcome.detail.replace(str(built.path), "<env>"),
                )
                report = self._report(built)
            finally:
                if not self.keep_envs:
                    materializer.remove(built.path)
            installed, probe_s, build_s = built.installed, raw.seconds, built.seconds
            out_tail, err_tail = raw.stdout_tail, raw.stderr_tail
        rec = ProbeRecord(
            env_id=spec.env_id,
            repro_id=repro_id,
            spec=spec.to_dict(),
            installed=installed,
            installed_hash=installed_hash(installed),
            outcome=outcome,
            stdout_tail=out_tail,
            stderr_tail=err_tail,
            build_seconds=build_s,
            probe_seconds=probe_s,
            timeout=self.timeout,
            started_at=started,
            envbisect_version=__version__,
            env_report=report,
        )
        store.put(rec)
        return rec, False

    def _forensics(self, env: BuiltEnv, outcome: Outcome, workdir: Path) -> Outcome:
        if self._gdb is None:
            if self.native_backtrace == "auto" and not self._gdb_warned:
                self.reporter.message(
                    "gdb is not installed: crash signatures carry no native frames "
                    "(apt install gdb to get them)"
                )
                self._gdb_warned = True
            return outcome
        step = self.repro.steps_for_rerun(outcome.step)
        if step is None:
            return outcome
        argv = self.repro.command(env, step, workdir)
        if step.file is None:
            import shutil

            exe = shutil.which(argv[0], path=self.repro.environment(env, os.environ, step)["PATH"])
            if exe is None or not _is_elf(exe):
                return outcome  # a shell script: gdb would follow the shell, not the crash
            argv[0] = exe
        trace = forensics.capture(
            argv,
            cwd=workdir,
            env=self.repro.environment(env, os.environ, step),
            timeout=min(self.timeout, 300.0),
            gdb=self._gdb,
        )
        return forensics.enrich(outcome, trace) if trace is not None else outcome

    def _report(self, env: BuiltEnv) -> dict[str, Any] | None:
        try:
            report = envreport.collect(str(env.python), deep=False, timeout=60)
        except UsageError:
            return None
        report["nvidia"] = self._nvidia
        return report


def _is_elf(path: str) -> bool:
    try:
        with open(os.path.realpath(path), "rb") as fh:
            return fh.read(4) == b"\x7fELF"
    except OSError:
        return False


def _stale(rec: ProbeRecord, timeout: float) -> bool:
    """A stored timeout under a shorter limit than today's says nothing: probe again."""
    return rec.outcome.kind is OutcomeKind.TIMEOUT and (rec.timeout or 0) < timeout
