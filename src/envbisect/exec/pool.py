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
import threading
from concurrent.futures import Future, ProcessPoolExecutor, ThreadPoolExecutor
from dataclasses import replace
from types import FrameType

from envbisect.env import envreport, runner
from envbisect.env.worker import ProbeTask, Watcher, run_task
from envbisect.errors import UsageError
from envbisect.exec.executor import Launch
from envbisect.model import ProbeRecord


class ThreadExecutor:
    """Probes in worker threads; with ``gpus_per_probe``, each probe waits for that many of
    this machine's GPUs and sees only them (CUDA_VISIBLE_DEVICES): with 8 GPUs and 1 per
    probe, eight probes run at once, each on its own GPU. ``watcher``: who hears the phases
    of the probes (they run in this process)."""

    name = "local"

    def __init__(
        self, jobs: int, *, gpus_per_probe: int = 0, watcher: Watcher | None = None
    ) -> None:
        self._pool = ThreadPoolExecutor(max_workers=jobs, thread_name_prefix="envbisect-probe")
        self._gpus = GpuPool(local_gpus(), gpus_per_probe) if gpus_per_probe else None
        self._watcher = watcher

    def submit(self, task: ProbeTask) -> Future[ProbeRecord]:
        if self._gpus is None:
            return self._pool.submit(run_task, task, watcher=self._watcher)
        return self._pool.submit(self._gpus.run, task, self._watcher)

    def cancel_all(self) -> None:
        # Every live probe group dies now, every run in flight raises KeyboardInterrupt
        # (nothing half-seen is classified); then the next search in this process may run.
        runner.interrupt_all()
        self._pool.shutdown(wait=True, cancel_futures=True)
        runner.clear_interrupt()

    def close(self) -> None:
        self._pool.shutdown(wait=True)


class GpuPool:
    """This machine's GPUs, handed out ``per`` at a time to the probes that run."""

    def __init__(self, ids: list[str], per: int) -> None:
        if per > len(ids):
            raise UsageError(
                f"--gpus-per-probe {per}: this machine has {len(ids)} GPU(s)",
                hint="ask for fewer, set CUDA_VISIBLE_DEVICES to the GPUs to use, or run on a "
                "cluster (--executor ray)",
                ref="no-gpus",
            )
        self.per = per
        self._free = list(ids)
        self._cond = threading.Condition()

    def run(self, task: ProbeTask, watcher: Watcher | None = None) -> ProbeRecord:
        with self._cond:
            self._cond.wait_for(lambda: len(self._free) >= self.per)
            mine, self._free = self._free[: self.per], self._free[self.per :]
        try:
            mine_only = (("CUDA_VISIBLE_DEVICES", ",".join(mine)),)
            return run_task(replace(task, devices=mine_only), watcher=watcher)
        finally:
            with self._cond:
                self._free = sorted([*self._free, *mine], key=_gpu_order)
                self._cond.notify_all()


def local_gpus() -> list[str]:
    """The GPUs this process may use: CUDA_VISIBLE_DEVICES when it is set (as CUDA reads it),
    else every GPU nvidia-smi lists."""
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible is not None:
        return [g.strip() for g in visible.split(",") if g.strip() and g.strip() != "-1"]
    smi = envreport.read_nvidia_smi()
    return [str(i) for i in range(len(smi.get("gpus", []) if smi else []))]


def _gpu_order(gpu: str) -> tuple[int, str]:
    return (int(gpu), "") if gpu.isdigit() else (1 << 30, gpu)


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


def launch_threads(launch: Launch) -> ThreadExecutor:
    """``--executor local`` (exec/kinds/local.py)."""
    return ThreadExecutor(
        launch.workers, gpus_per_probe=launch.gpus_per_probe, watcher=launch.watcher
    )


def launch_processes(launch: Launch) -> ProcessExecutor:
    """``--executor process`` (exec/kinds/process.py)."""
    return ProcessExecutor(launch.workers)
