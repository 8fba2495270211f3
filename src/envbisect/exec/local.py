"""Executors on this machine: worker threads (the default), or worker processes.

Threads share the runner's registry of live probe groups, so ``cancel_all`` kills them
directly. Worker processes each have their own registry: they ignore the terminal's Ctrl-C
(the controller decides), and ``cancel_all`` sends each one SIGTERM, on which it kills its
live probe groups and exits. Every task and record crosses a pickle there, as it would to
another machine.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import signal
from concurrent.futures import Future, ProcessPoolExecutor, ThreadPoolExecutor
from types import FrameType

from envbisect.env import runner
from envbisect.env.worker import ProbeTask, run_task
from envbisect.model import ProbeRecord


class ThreadExecutor:
    name = "local"

    def __init__(self, jobs: int) -> None:
        self._pool = ThreadPoolExecutor(max_workers=jobs, thread_name_prefix="envbisect-probe")

    def submit(self, task: ProbeTask) -> Future[ProbeRecord]:
        return self._pool.submit(run_task, task)

    def cancel_all(self) -> None:
        # Every live probe group dies now, every run in flight raises KeyboardInterrupt
        # (nothing half-seen is classified); then the next search in this process may run.
        runner.interrupt_all()
        self._pool.shutdown(wait=True, cancel_futures=True)
        runner.clear_interrupt()

    def close(self) -> None:
        self._pool.shutdown(wait=True)


class ProcessExecutor:
    name = "process"

    def __init__(self, jobs: int) -> None:
        ctx = multiprocessing.get_context("spawn")  # no fork of a threaded controller
        self._pool = ProcessPoolExecutor(max_workers=jobs, mp_context=ctx, initializer=_worker_init)

    def submit(self, task: ProbeTask) -> Future[ProbeRecord]:
        return self._pool.submit(run_task, task)

    def cancel_all(self) -> None:
        for proc in list(getattr(self._pool, "_processes", {}).values()):
            if proc.pid is not None and proc.is_alive():
                with contextlib.suppress(ProcessLookupError):
                    os.kill(proc.pid, signal.SIGTERM)
        self._pool.shutdown(wait=True, cancel_futures=True)

    def close(self) -> None:
        self._pool.shutdown(wait=True)


def _worker_init() -> None:
    # A Python-level handler, not SIG_IGN: exec resets handlers, so the probes this worker
    # starts still see Ctrl-C as usual; an ignored disposition would be inherited.
    signal.signal(signal.SIGINT, _ignore)
    signal.signal(signal.SIGTERM, _stop)


def _ignore(signum: int, frame: FrameType | None) -> None:
    return None


def _stop(signum: int, frame: FrameType | None) -> None:
    runner.interrupt_all()
    os._exit(128 + signum)
