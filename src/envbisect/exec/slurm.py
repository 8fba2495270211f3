"""Probes on a Slurm cluster: one batch job per ``ProbeTask``, the same worker function as
locally, with ``sbatch``, ``squeue`` and ``scancel`` (no library between us and Slurm).

Who does what: the controller writes each task (pickled) into a folder of its results
folder, which the nodes must see (a shared filesystem, as a cluster's home and project folders
are), and submits a job that runs this interpreter on it: ``python -m envbisect.exec.slurm
run FOLDER``. On the node the job builds the environment in the node's own temporary folder
(``TMPDIR``, which many sites set per job) with the node's uv, runs the probe through our own
runner and writes the record back into the folder, atomically, then exits. Planning and the
store stay in the controller, which watches the folder and the queue (one ``squeue`` for all
of this run's jobs, named ``envbisect-TOKEN``).

``--jobs N`` jobs are in the queue at once (the rest wait here, so a matrix of 500 cells
does not fill a shared queue). ``--gpus-per-probe N`` asks ``--gres=gpu:N``: Slurm places the
job and sets CUDA_VISIBLE_DEVICES, which the probe is given as is. Partition, account and
time limit come from ``--slurm-partition``, ``--slurm-account`` and ``--slurm-time`` (or
``[tool.envbisect]``); ``--slurm-option`` passes any other sbatch option. They are checked
once with ``sbatch --test-only`` before the first job: a partition that does not exist is one
clear error, not a queue of failed jobs.

A job that ends without a record (cancelled by someone else, preempted, its node failed, the
job killed) is submitted again, up to ``RETRIES`` times, and never becomes a verdict: after
that, or for a job that hit its time limit, the run stops with an infrastructure error (exit 3)
naming the job and its output file; every probe that finished is kept, and the same command
resumes. A job that cannot start envbisect (no interpreter at this path on the node, another
envbisect version there) is that error at once. Ctrl-C, SIGTERM or an error elsewhere cancel
every job this run submitted (``scancel``: Slurm sends SIGTERM, on which the job kills its
probe's process group), and the controller waits until none is left in the queue.
"""

from __future__ import annotations

import contextlib
import json
import pickle
import secrets
import shlex
import shutil
import subprocess
import sys
import threading
import time
from collections import deque
from collections.abc import Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field, replace
from pathlib import Path

from envbisect import __version__
from envbisect.errors import EnvbisectError, InfrastructureError, UsageError
from envbisect.exec.executor import Launch
from envbisect.exec.kinds.slurm import SlurmSettings
from envbisect.exec.slurmjob import CANNOT_START_SAID, job_main
from envbisect.model import ProbeRecord
from envbisect.textsafe import for_terminal

RETRIES = 3  # a job that ends without a record is submitted again this many times
POLL = 0.2  # seconds between looks at the folder (a stat per job); squeue every SQUEUE_EVERY
SQUEUE_EVERY = 10
QUEUE_PATIENCE = 60  # squeue failures in a row (2 s apart) before the run gives up on the queue
LATE = 15.0  # seconds a finished job's record may take to appear (a shared filesystem's lag)
CANCEL_WAIT = 60.0  # seconds for cancelled jobs to leave the queue
# States a job is still in the queue in (squeue's %T); any other is an end.
LIVE = frozenset(
    {
        "PENDING",
        "CONFIGURING",
        "RUNNING",
        "COMPLETING",
        "SUSPENDED",
        "REQUEUED",
        "RESIZING",
        "SIGNALING",
        "STAGE_OUT",
        "REQUEUE_HOLD",
        "REQUEUE_FED",
        "RESV_DEL_HOLD",
    }
)
# The job: this interpreter, checked first (a node may not see it, or see no envbisect there).
_SCRIPT = """#!/bin/sh
py={python}
if ! [ -x "$py" ]; then
  echo "envbisect-slurm: cannot start: no interpreter at $py on $(hostname)"; exit 90
fi
if ! "$py" -c "import envbisect.exec.slurm" 2>/dev/null; then
  echo "envbisect-slurm: cannot start: $py on $(hostname) has no envbisect"; exit 90
fi
exec "$py" -m envbisect.exec.slurm run {folder}
"""
SLURM_TOOLS = ("sbatch", "squeue", "scancel")


@dataclass
class _Job:
    """One task, through its attempts: the folder it lives in and the job now carrying it."""

    task: object  # the ProbeTask
    folder: Path
    out: Future[ProbeRecord]
    job_id: str = ""
    attempts: int = 0
    ended_at: float | None = None  # when the queue first showed it ended without a record
    state: str = ""
    history: list[str] = field(default_factory=list)  # "job 12: NODE_FAIL" per attempt


class SlurmExecutor:
    name = "slurm"

    def __init__(
        self,
        jobs: int,
        *,
        folder: Path,
        gpus_per_probe: int = 0,
        settings: SlurmSettings | None = None,
        python: str | None = None,
    ) -> None:
        lacking = [t for t in SLURM_TOOLS if shutil.which(t) is None]
        if lacking:
            raise UsageError(
                f"--executor slurm needs Slurm's commands, and {', '.join(lacking)} is not on PATH",
                hint="run envbisect on a login node of the cluster (where sbatch works)",
                ref="slurm-missing",
            )
        self.jobs = jobs  # at least 1: Parallelism sees to it
        self.gpus = gpus_per_probe
        self.settings = settings or SlurmSettings()
        self.python = python or sys.executable
        token = secrets.token_hex(4)
        self.job_name = f"envbisect-{token}"
        self.root = folder / f"{time.strftime('%Y%m%d-%H%M%S')}-{token}"
        self.root.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._live: dict[str, _Job] = {}  # job id -> job, in the queue
        self._backlog: deque[_Job] = deque()
        self._count = 0
        self._closed = threading.Event()
        self._failed = False  # an attempt's folder is kept, for its output
        self._check()
        self._monitor = threading.Thread(target=self._watch, name="envbisect-slurm", daemon=True)
        self._monitor.start()

    # -- the Executor interface --------------------------------------------------------------

    def submit(self, task: object) -> Future[ProbeRecord]:
        from envbisect.env.worker import ProbeTask

        assert isinstance(task, ProbeTask)
        with self._lock:
            self._count += 1
            folder = self.root / f"{self._count:05d}"
        folder.mkdir()
        # The node's own temporary folder, not the controller's results path.
        (folder / "task.pkl").write_bytes(pickle.dumps(replace(task, envs_dir=None)))
        (folder / "meta.json").write_text(json.dumps({"envbisect": __version__}))
        job = _Job(task=task, folder=folder, out=Future())
        with self._lock:
            self._backlog.append(job)
            self._fill()
        return job.out

    def cancel_all(self) -> None:
        self._closed.set()
        with self._lock:
            live = list(self._live.values())
            backlog = list(self._backlog)
            self._live.clear()
            self._backlog.clear()
        ids = [j.job_id for j in live if j.job_id]
        if ids:
            self._scancel(ids)
            self._wait_gone(ids)
        for job in [*live, *backlog]:
            job.out.cancel()
        self.close()

    def close(self) -> None:
        self._closed.set()
        if self._monitor.is_alive() and threading.current_thread() is not self._monitor:
            self._monitor.join(timeout=10)
        if not self._failed:
            shutil.rmtree(self.root, ignore_errors=True)
            with contextlib.suppress(OSError):
                self.root.parent.rmdir()  # the last run's: the folder goes too

    # -- submitting ---------------------------------------------------------------------------

    def _options(self) -> list[str]:
        s = self.settings
        argv = ["--job-name", self.job_name, "--cpus-per-task", "1"]
        if self.gpus:
            argv.append(f"--gres=gpu:{self.gpus}")
        for flag, value in (
            ("--partition", s.partition),
            ("--account", s.account),
            ("--time", s.time),
        ):
            if value:
                argv.append(f"{flag}={value}")
        return argv + list(s.options)

    def _check(self) -> None:
        """The options, as sbatch judges them, before any job: one clear error for all."""
        argv = ["sbatch", "--test-only", *self._options(), "--output=/dev/null", "--wrap", "true"]
        done = _slurm(argv)
        if done.returncode != 0:
            why = _first_line(done.stderr or done.stdout) or f"exit {done.returncode}"
            raise UsageError(
                f"sbatch refuses this run's job options: {why}",
                hint="check --slurm-partition, --slurm-account, --slurm-time, --slurm-option "
                f"and --gpus-per-probe (sbatch {shlex.join(self._options())})",
                ref="slurm-refused",
            )

    def _fill(self) -> None:
        """Submit from the backlog while fewer than ``jobs`` are in the queue (lock held)."""
        while self._backlog and len(self._live) < self.jobs and not self._closed.is_set():
            job = self._backlog.popleft()
            try:
                self._sbatch(job)
            except EnvbisectError as e:
                self._failed = True
                job.out.set_exception(e)
                continue
            self._live[job.job_id] = job

    def _sbatch(self, job: _Job) -> None:
        job.attempts += 1
        script = job.folder / "job.sh"
        quoted = {"python": shlex.quote(self.python), "folder": shlex.quote(str(job.folder))}
        script.write_text(_SCRIPT.format(**quoted))
        output, chdir = f"--output={job.folder / 'job-%j.out'}", f"--chdir={job.folder}"
        argv = ["sbatch", "--parsable", *self._options(), output, chdir, str(script)]
        done = _slurm(argv)
        job_id = done.stdout.strip().split(";")[0]
        if done.returncode != 0 or not job_id.isdigit():
            raise InfrastructureError(
                f"sbatch did not take a probe's job: {_first_line(done.stderr) or done.stdout}",
                hint="check the cluster (sinfo, squeue); finished probes are kept",
                ref="slurm-submit-failed",
            )
        job.job_id, job.ended_at, job.state = job_id, None, "PENDING"

    # -- watching -----------------------------------------------------------------------------

    def _watch(self) -> None:
        looks = unread = 0
        while not self._closed.wait(POLL):
            looks += 1
            queue = looks % SQUEUE_EVERY == 0
            try:
                self._look(queue=queue)
                unread = 0 if queue else unread
            except InfrastructureError as e:  # a busy slurmctld: asked again, for a while
                unread += 1
                if unread >= QUEUE_PATIENCE:
                    self._fail_all(e)
                    return
            except Exception as e:  # every waiting probe hears it
                self._fail_all(e)
                return

    def _look(self, *, queue: bool) -> None:
        with self._lock:
            live = list(self._live.values())
        states = self._states() if queue and live else {}
        for job in live:
            if self._closed.is_set():
                return
            if self._settle(job):
                continue
            if not queue:
                continue
            state = states.get(job.job_id, "")
            job.state = state or job.state
            if state in LIVE:
                continue
            # Ended (or gone from squeue) without a record: a record may still be on its way.
            now = time.monotonic()
            if job.ended_at is None:
                job.ended_at = now
            late = now - job.ended_at >= LATE or state not in ("COMPLETED", "")
            if late and not self._settle(job):
                self._ended(job, state or "gone from the queue")
        with self._lock:
            self._fill()

    def _states(self) -> dict[str, str]:
        done = _slurm(["squeue", "-h", "-t", "all", "--name", self.job_name, "-o", "%i|%T"])
        if done.returncode != 0:
            raise InfrastructureError(
                f"squeue failed: {_first_line(done.stderr) or done.returncode}",
                hint="check the cluster (squeue); finished probes are kept, the same command "
                "resumes",
                ref="slurm-queue-unreadable",
            )
        out = {}
        for line in done.stdout.splitlines():
            job_id, _, state = line.strip().partition("|")
            out[job_id] = state.split()[0] if state else ""
        return out

    def _settle(self, job: _Job) -> bool:
        """The job's record (or its error), when it wrote one: its future set, it leaves."""
        record, error = job.folder / "record.pkl", job.folder / "error.json"
        if record.exists():
            try:
                rec = pickle.loads(record.read_bytes())
            except (OSError, EOFError, pickle.UnpicklingError):
                return False  # written by rename, so only a shared filesystem's lag does this
            self._leave(job)
            job.out.set_result(rec)
            return True
        if error.exists():
            self._leave(job)
            self._failed = True
            job.out.set_exception(_error_from(json.loads(error.read_text()), job))
            return True
        return False

    def _ended(self, job: _Job, state: str) -> None:
        job.history.append(f"job {job.job_id}: {state}")
        output = job.folder / f"job-{job.job_id}.out"
        if state == "TIMEOUT":
            self._give_up(
                job,
                InfrastructureError(
                    f"the Slurm job {job.job_id} hit its time limit before the probe ended",
                    hint=f"raise --slurm-time (now {self.settings.time or 'the partition default'})"
                    f"; its output: {output}",
                    ref="slurm-time-limit",
                ),
            )
            return
        if _cannot_start(output):
            self._give_up(
                job,
                InfrastructureError(
                    f"the Slurm job {job.job_id} could not start envbisect: {_last_line(output)}",
                    hint=f"the nodes run {self.python} -m envbisect.exec.slurm: envbisect "
                    f"{__version__} must be installed there (a virtualenv on a shared filesystem)",
                    ref="slurm-node-no-envbisect",
                ),
            )
            return
        if job.attempts > RETRIES:
            self._give_up(
                job,
                InfrastructureError(
                    f"a probe's Slurm job ended without a record {job.attempts} times "
                    f"({'; '.join(job.history)})",
                    hint=f"check the nodes (sinfo -R) and the jobs' output in {job.folder}; "
                    "finished probes are kept, the same command resumes",
                    ref="slurm-job-lost",
                ),
            )
            return
        with self._lock:
            self._live.pop(job.job_id, None)
            if not self._closed.is_set():
                self._backlog.appendleft(job)  # again, before the others

    def _give_up(self, job: _Job, error: InfrastructureError) -> None:
        self._failed = True
        self._leave(job)
        job.out.set_exception(error)

    def _leave(self, job: _Job) -> None:
        with self._lock:
            self._live.pop(job.job_id, None)

    def _fail_all(self, e: Exception) -> None:
        with self._lock:
            jobs = [*self._live.values(), *self._backlog]
        for job in jobs:
            if not job.out.done():
                job.out.set_exception(e)

    # -- cancelling ---------------------------------------------------------------------------

    def _scancel(self, ids: Sequence[str]) -> None:
        for chunk in range(0, len(ids), 500):
            _slurm(["scancel", *ids[chunk : chunk + 500]])

    def _wait_gone(self, ids: Sequence[str]) -> None:
        """Until none of ``ids`` is in the queue (their probes killed by their jobs)."""
        deadline = time.monotonic() + CANCEL_WAIT
        wanted = set(ids)
        while time.monotonic() < deadline:
            with contextlib.suppress(InfrastructureError):
                states = self._states()
                if not any(states.get(i, "") in LIVE for i in wanted):
                    return
            time.sleep(1.0)


def _slurm(argv: list[str]) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run(argv, capture_output=True, text=True, timeout=120, check=False)
    except (OSError, subprocess.TimeoutExpired) as e:
        return subprocess.CompletedProcess(argv, 1, "", str(e))


def _first_line(text: str) -> str:
    for line in (text or "").splitlines():
        if line.strip():
            return for_terminal(line.strip())[:300]
    return ""


def _last_line(path: Path) -> str:
    try:
        lines = [ln for ln in path.read_text(errors="replace").splitlines() if ln.strip()]
    except OSError:
        return "(no output)"
    return for_terminal(lines[-1].strip())[:300] if lines else "(no output)"


def _cannot_start(output: Path) -> bool:
    """Whether the job's script (or job_main) said envbisect cannot run on its node."""
    try:
        return CANNOT_START_SAID in output.read_text(errors="replace")
    except OSError:
        return False


def _error_from(data: dict[str, str], job: _Job) -> EnvbisectError:
    cls = UsageError if data.get("kind") == "usage" else InfrastructureError
    host = data.get("host", "?")
    return cls(
        f"{data.get('message', 'a probe failed')} (Slurm job {job.job_id} on {host})",
        hint=data.get("hint") or None,
        ref=data.get("ref") or None,
    )


def launch(launch: Launch) -> SlurmExecutor:
    """``--executor slurm`` (exec/kinds/slurm.py): its jobs' folders under the results."""
    settings = launch.settings if isinstance(launch.settings, SlurmSettings) else None
    return SlurmExecutor(
        launch.workers,
        folder=launch.results / ".slurm",
        gpus_per_probe=launch.gpus_per_probe,
        settings=settings,
    )


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) != 2 or args[0] != "run":
        print("usage: python -m envbisect.exec.slurm run FOLDER (run by a Slurm job)")
        return 2
    return job_main(Path(args[1]))


if __name__ == "__main__":
    raise SystemExit(main())
