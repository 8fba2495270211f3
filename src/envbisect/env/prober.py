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

from envbisect import __version__
from envbisect.core.outcome import classify, failed, representative
from envbisect.core.target import Target
from envbisect.env import envreport, forensics
from envbisect.env.repro import Repro
from envbisect.env.runner import interrupted
from envbisect.env.uv import BuildFailed, BuiltEnv, Materializer
from envbisect.errors import UsageError
from envbisect.model import EnvSpec, InstalledDist, Outcome, OutcomeKind, installed_hash
from envbisect.reporter import Reporter
from envbisect.store import ProbeRecord, Store

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

    def probe(self, store: Store, spec: EnvSpec, runs: int = 1) -> tuple[ProbeRecord, bool]:
        """The record for ``spec`` with this repro, and whether it came from the store.

        ``runs`` (``--repeat``): run the repro that many times in the environment; a stored
        record with fewer runs gets the missing ones (the environment is built again), and
        the point's outcome is its first failure, if any run failed. An untestable first
        run is not repeated.
        """
        repro_id = self.repro.repro_id
        rec = store.get(spec.env_id, repro_id)
        if rec is not None and _stale(rec, self.timeout):
            rec = None
        if rec is not None and (len(rec.all_runs) >= runs or _untestable(rec)):
            return _first_runs(rec, runs), True
        earlier = rec.all_runs if rec is not None else ()
        started = rec.started_at if rec is not None else _now()
        materializer = Materializer(self.uv, self.results / ".envs")
        built = materializer.build(spec, self.python)
        installed: tuple[InstalledDist, ...] = ()
        report: dict[str, Any] | None = rec.env_report if rec is not None else None
        if isinstance(built, BuildFailed):
            if rec is not None:  # it built before: keep what was seen, do not overwrite it
                return rec, True
            outcome, probe_s, build_s = built.outcome, 0.0, built.seconds
            out_tail = err_tail = ""
            seen: list[Outcome] = [outcome]
        else:
            seen = list(earlier)
            probe_s = rec.probe_seconds if rec is not None else 0.0
            tails = (rec.stdout_tail, rec.stderr_tail) if rec is not None else ("", "")
            try:
                for r in range(len(earlier), runs):
                    workdir = built.path / ("envbisect-work" if r == 0 else f"envbisect-work-{r}")
                    raw = self.repro.run(
                        built, workdir=workdir, timeout=self.timeout, run=r, repeat=runs
                    )
                    outcome = classify(raw)
                    first_failure = not any(failed(o) for o in seen)
                    if outcome.kind is OutcomeKind.CRASH and first_failure:
                        outcome = self._forensics(built, outcome, workdir)
                    # The environment's own path says nothing and differs every time.
                    outcome = replace(
                        outcome,
                        signature=outcome.signature.replace(str(built.path), "<env>"),
                        detail=outcome.detail.replace(str(built.path), "<env>"),
                    )
                    seen.append(outcome)
                    probe_s += raw.seconds
                    if (not tails[0] and not tails[1]) or (failed(outcome) and first_failure):
                        tails = (raw.stdout_tail, raw.stderr_tail)
                    if outcome.kind is OutcomeKind.UNTESTABLE:
                        break
                if report is None:
                    report = self._report(built)
            finally:
                if not self.keep_envs:
                    materializer.remove(built.path)
            installed, build_s = built.installed, built.seconds
            out_tail, err_tail = tails
            outcome = representative(seen)
            if rec is not None and failed(rec.outcome):
                outcome = rec.outcome  # the stored first failure, with its detail and gdb frames
        if interrupted():
            raise KeyboardInterrupt  # a run cut short by Ctrl-C says nothing: keep nothing
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
            runs=tuple(seen) if len(seen) > 1 else (),
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


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def _untestable(rec: ProbeRecord) -> bool:
    return rec.outcome.kind is OutcomeKind.UNTESTABLE


def _first_runs(rec: ProbeRecord, runs: int) -> ProbeRecord:
    """The record as it was after ``runs`` runs: a rerun asks for what the first run asked
    for at each step, so it sees the same evidence and retraces the same search."""
    if len(rec.all_runs) <= runs:
        return rec
    kept = rec.all_runs[:runs]
    first = next((i for i, o in enumerate(rec.all_runs) if failed(o)), None)
    outcome = rec.outcome if first is not None and first < runs else kept[0]
    return replace(rec, runs=kept if runs > 1 else (), outcome=outcome)


def _stale(rec: ProbeRecord, timeout: float) -> bool:
    """A stored timeout under a shorter limit than today's says nothing: probe again."""
    return rec.outcome.kind is OutcomeKind.TIMEOUT and (rec.timeout or 0) < timeout
