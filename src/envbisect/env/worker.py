"""The unit of work an executor ships: build one environment, run the repro in it, classify.

Who does what: ``uv.Materializer`` builds the venv; the ``Repro`` runs its steps in it (through
the runner: own process group, timeout with SIGABRT first so faulthandler speaks, then
SIGKILL); ``outcome.classify`` decides each run; on a crash ``forensics`` re-runs the crashing
step under gdb for the native side; ``envreport`` records what the environment was. The
worker touches no store: the controller looked the environment up before it made the task
(``earlier`` is what the store already had) and records what comes back.

A ``ProbeTask`` is frozen and picklable, so the same function runs in a thread, in another
process, or on another machine; what it needs of the machine (uv, the interpreter, gdb,
nvidia-smi) it finds there, once per process.
"""

from __future__ import annotations

import functools
import os
import platform
import shutil
import tempfile
from dataclasses import dataclass, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Protocol

from envbisect import __version__
from envbisect.core.outcome import classify, failed, representative
from envbisect.env import envreport, forensics
from envbisect.env.forensics import NativeBacktrace
from envbisect.env.interp import find_python
from envbisect.env.repro import Repro
from envbisect.env.runner import interrupted
from envbisect.env.uv import BuildFailed, BuiltEnv, Materializer, Uv, find_uv
from envbisect.errors import UsageError
from envbisect.model import (
    EnvSpec,
    InstalledDist,
    Outcome,
    OutcomeKind,
    ProbeRecord,
    RawProbe,
    installed_hash,
)


class Watcher(Protocol):
    """Who hears a local probe's phases (the session, for its reporter)."""

    @property
    def verbose(self) -> bool: ...

    def phase(self, env_id: str, phase: str) -> None: ...

    def output(self, env_id: str, stream: str, text: str) -> None: ...


def _tell(
    w: Watcher | None, task: ProbeTask, phase: str | None = None, stream: str = "", text: str = ""
) -> None:
    """Tell the watcher, if there is one; a watcher's failure never changes a probe.

    The controller passes its watcher to the probes that run in its own process (this thread
    or worker threads); a worker process or a Ray node has none, and its probes run the same."""
    if w is None:
        return
    try:
        if phase is not None:
            w.phase(task.spec.env_id, phase)
        elif text.strip() and w.verbose:
            w.output(task.spec.env_id, stream, text)
    except Exception:  # progress is best effort, the probe is not
        pass


@dataclass(frozen=True, slots=True, kw_only=True)
class ProbeTask:
    """Everything one probe needs, as data.

    ``runs`` is how many runs the environment should have in all; ``earlier`` is the stored
    record of the runs it already has (its missing runs are made, numbered after them).
    ``python`` is an interpreter request: the controller's path, which a node that lacks it
    replaces with the version (``spec.python`` says what the interpreter must be).
    ``offline``: every uv call on the node runs offline too (``--offline``).
    """

    spec: EnvSpec
    repro: Repro
    python: str
    python_version: str
    envs_dir: Path | None = None  # None: the node's own temporary folder
    runs: int = 1
    earlier: ProbeRecord | None = None
    timeout: float = 600.0
    keep_envs: bool = False
    native_backtrace: NativeBacktrace = NativeBacktrace.AUTO
    uv: str | None = None
    offline: bool
    devices: tuple[tuple[str, str], ...] = ()  # CUDA_VISIBLE_DEVICES given by the executor
    # A spec with a source: the mirror its commit is checked out of (a folder on the machine
    # that runs the probe), and the cap on the build (--build-timeout; None: no cap).
    source_repo: str | None = None
    build_timeout: float | None = None
    # The session's token: what uv revalidated for its earlier builds on this node is not
    # asked for again within env/uvfresh.py's window ("": every build asks uv online).
    session: str = ""


# A build ahead: its materializer, and what it made.
Built = tuple[Materializer, BuiltEnv | BuildFailed]


def prebuild(task: ProbeTask, watcher: Watcher | None = None) -> Built:
    """Only the build of ``task``, told to no one (``run_task(task, built=...)`` probes it
    later): the session builds the environments a search may ask for next while a probe runs.
    An environment built and not wanted is removed by ``discard``."""
    return _build(task, watcher, quiet=True)


def build(task: ProbeTask, watcher: Watcher | None = None) -> Built:
    """Only the build of ``task``, its phases told as ``run_task`` tells them."""
    return _build(task, watcher)


def discard(built: Built) -> None:
    materializer, env = built
    if isinstance(env, BuiltEnv):
        materializer.remove(env.path)


def run_task(
    task: ProbeTask,
    built: Built | None = None,
    *,
    ahead: bool = False,
    watcher: Watcher | None = None,
) -> ProbeRecord:
    """Build, run and classify; the record of every run the environment now has. ``built``:
    the environment is built already (``build``; ``prebuild`` with ``ahead``, which the
    progress line says), only the probe is left. ``watcher``: who hears its phases.

    A record equal to ``task.earlier`` means nothing new was seen (an environment that built
    before and fails to build now keeps what was seen). Ctrl-C, or the executor cancelling,
    raises ``KeyboardInterrupt``: a run cut short says nothing, and nothing is returned.
    """
    rec = task.earlier
    started = rec.started_at if rec is not None else _now()
    if built is None:
        materializer, env = _build(task, watcher)
    else:
        materializer, env = built
        if ahead:
            _tell(watcher, task, "built ahead")
    return _finish(task, rec, started, materializer, env, watcher)


def _finish(
    task: ProbeTask,
    rec: ProbeRecord | None,
    started: str,
    materializer: Materializer,
    built: BuiltEnv | BuildFailed,
    watcher: Watcher | None,
) -> ProbeRecord:
    if isinstance(built, BuildFailed):
        if rec is not None:  # it built before: keep what was seen, do not overwrite it
            return rec
        seen = _Seen(outcome=built.outcome, runs=(built.outcome,), build_seconds=built.seconds)
    else:
        try:
            seen = _probe(task, built, watcher)
        finally:
            if not task.keep_envs:
                materializer.remove(built.path)
    if interrupted():
        raise KeyboardInterrupt  # a run cut short by Ctrl-C says nothing: keep nothing
    return ProbeRecord(
        env_id=task.spec.env_id,
        repro_id=task.repro.repro_id,
        spec=task.spec.to_dict(),
        installed=seen.installed,
        installed_hash=installed_hash(seen.installed),
        outcome=seen.outcome,
        stdout_tail=seen.stdout_tail,
        stderr_tail=seen.stderr_tail,
        build_seconds=seen.build_seconds,
        probe_seconds=seen.probe_seconds,
        timeout=task.timeout,
        started_at=started,
        envbisect_version=__version__,
        env_report=seen.report,
        runs=seen.runs if len(seen.runs) > 1 else (),
        host=platform.node(),  # socket.gethostname()'s answer, without socket's import
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class _Seen:
    """What one task saw of its environment: every run's outcome (the stored ones first), the
    one that decides, the output tails kept, the times and what was installed."""

    outcome: Outcome
    runs: tuple[Outcome, ...]
    installed: tuple[InstalledDist, ...] = ()
    build_seconds: float = 0.0
    probe_seconds: float = 0.0
    stdout_tail: str = ""
    stderr_tail: str = ""
    report: dict[str, Any] | None = None


def _build(task: ProbeTask, w: Watcher | None, *, quiet: bool = False) -> Built:
    """The environment, built on this machine with its uv and interpreter (``quiet``: its
    phases told to no one, for a build ahead of the search)."""
    uv = Uv(binary=_uv(task.uv), offline=task.offline)
    python = _python(uv, task.python, task.python_version)
    envs_dir = task.envs_dir or Path(tempfile.gettempdir()) / "envbisect-envs"
    materializer = Materializer(
        uv, envs_dir, verbose=w is not None and w.verbose, session=task.session
    )
    if not quiet:
        _tell(w, task, "building")
    built = materializer.build(
        task.spec,
        python,
        None if quiet else (lambda phase: _tell(w, task, phase)),
        source_repo=task.source_repo,
        build_timeout=task.build_timeout,
    )
    if not quiet:
        _tell(w, task, stream="uv", text=built.log)
    return materializer, built


def _probe(task: ProbeTask, built: BuiltEnv, watcher: Watcher | None) -> _Seen:
    """The runs the environment lacks, after the stored ones, until one is untestable."""
    rec = task.earlier
    earlier = rec.all_runs if rec is not None else ()
    seen = list(earlier)
    probe_s = rec.probe_seconds if rec is not None else 0.0
    tails = (rec.stdout_tail, rec.stderr_tail) if rec is not None else ("", "")
    report = rec.env_report if rec is not None else None
    # The environment as built: read from its files here (a plain uv virtualenv, a few ms),
    # else reported on by its interpreter while the repro starts, on a second core.
    pending = None
    if report is None:
        report = envreport.read_venv(built.python)
        if report is not None:
            report["nvidia"] = _nvidia()
        else:
            pending = envreport.Pending(str(built.python))
    try:
        for r in range(len(earlier), task.runs):
            first_failure = not any(failed(o) for o in seen)
            outcome, raw = _run(task, built, r, watcher, first_failure=first_failure)
            seen.append(outcome)
            probe_s += raw.seconds
            if (not tails[0] and not tails[1]) or (failed(outcome) and first_failure):
                tails = (raw.stdout_tail, raw.stderr_tail)
            if outcome.kind is OutcomeKind.UNTESTABLE:
                break
    except BaseException:
        if pending is not None:
            pending.cancel()
        raise
    if pending is not None:
        report = pending.result(timeout=60)
        if report is not None:
            report["nvidia"] = _nvidia()
    outcome = representative(seen)
    if rec is not None and failed(rec.outcome):
        outcome = rec.outcome  # the stored first failure, with its detail and gdb frames
    return _Seen(
        outcome=outcome,
        runs=tuple(seen),
        installed=built.installed,
        build_seconds=built.seconds,
        probe_seconds=probe_s,
        stdout_tail=tails[0],
        stderr_tail=tails[1],
        report=report,
    )


def _run(
    task: ProbeTask, built: BuiltEnv, r: int, w: Watcher | None, *, first_failure: bool
) -> tuple[Outcome, RawProbe]:
    """Run ``r`` of the repro, classified; the first crash is rerun under gdb."""
    workdir = built.path / ("envbisect-work" if r == 0 else f"envbisect-work-{r}")
    _tell(w, task, "running" if task.runs == 1 else f"running {r + 1}/{task.runs}")
    devices = dict(task.devices)
    raw = task.repro.run(
        built, workdir=workdir, timeout=task.timeout, run=r, repeat=task.runs, devices=devices
    )
    _tell(w, task, stream="stdout", text=raw.stdout_tail)
    _tell(w, task, stream="stderr", text=raw.stderr_tail)
    outcome = classify(raw)
    if outcome.kind is OutcomeKind.CRASH and first_failure:
        if _gdb(task.native_backtrace) is not None:
            _tell(w, task, "native backtrace")
        outcome = _forensics(task, built, outcome, workdir)
    # The environment's own path says nothing and differs every time.
    outcome = replace(
        outcome,
        signature=outcome.signature.replace(str(built.path), "<env>"),
        detail=outcome.detail.replace(str(built.path), "<env>"),
    )
    return outcome, raw


def check_native_backtrace(mode: NativeBacktrace) -> str | None:
    """gdb's path for ``--native-backtrace mode`` (None: crashes get no native frames)."""
    gdb = forensics.gdb_path() if mode is not NativeBacktrace.NEVER else None
    if mode is NativeBacktrace.ALWAYS and gdb is None:
        raise UsageError(
            "--native-backtrace always needs gdb, and gdb is not installed",
            hint="install gdb (apt install gdb), or use --native-backtrace auto",
            ref="gdb-missing",
        )
    return gdb


# What a process finds once and keeps: uv, interpreters, gdb, the GPUs.


@functools.cache
def _uv(given: str | None) -> str:
    return given if given and os.path.exists(given) else find_uv()


@functools.cache
def _python(uv: Uv, request: str, version: str) -> str:
    if os.path.exists(request):
        return request
    return find_python(uv, version)


@functools.cache
def _gdb(mode: NativeBacktrace) -> str | None:
    return check_native_backtrace(mode)


@functools.lru_cache(maxsize=1)
def _nvidia() -> dict[str, Any] | None:
    return envreport.read_nvidia_smi()


def _forensics(task: ProbeTask, env: BuiltEnv, outcome: Outcome, workdir: Path) -> Outcome:
    gdb = _gdb(task.native_backtrace)
    if gdb is None:
        return outcome
    repro = task.repro
    step = repro.steps_for_rerun(outcome.step)
    if step is None:
        return outcome
    argv = repro.command(env, step, workdir)
    if step.file is None:
        exe = shutil.which(argv[0], path=repro.environment(env, os.environ, step)["PATH"])
        if exe is None or not _is_elf(exe):
            return outcome  # a shell script: gdb would follow the shell, not the crash
        argv[0] = exe
    trace = forensics.capture(
        argv,
        cwd=workdir,
        env={**repro.environment(env, os.environ, step), **dict(task.devices)},
        timeout=min(task.timeout, 300.0),
        gdb=gdb,
    )
    return forensics.enrich(outcome, trace) if trace is not None else outcome


def _is_elf(path: str) -> bool:
    try:
        with open(os.path.realpath(path), "rb") as fh:
            return fh.read(4) == b"\x7fELF"
    except OSError:
        return False


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")
