"""The executor interface, and the table that names each implementation."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol

from envbisect.errors import UsageError

if TYPE_CHECKING:  # concurrent.futures costs --help 5 ms: the table below is all it reads here
    from concurrent.futures import Future

    from envbisect.env.worker import ProbeTask, Watcher
    from envbisect.model import ProbeRecord
    from envbisect.options import CommonOptions


class Executor(Protocol):
    """Runs ``ProbeTask``s somewhere and hands back their records as futures."""

    name: str

    def submit(self, task: ProbeTask) -> Future[ProbeRecord]:
        """Start (or queue) one task."""
        ...

    def cancel_all(self) -> None:
        """Stop every task in flight and drop the queued ones; the executor is then closed.

        Their process groups are killed; their futures never yield a record."""
        ...

    def close(self) -> None:
        """Wait for the tasks in flight, then release the workers."""
        ...


def _local(opts: CommonOptions, watcher: Watcher | None) -> Executor:
    from envbisect.exec.pool import ThreadExecutor

    return ThreadExecutor(opts.jobs, gpus_per_probe=opts.gpus_per_probe, watcher=watcher)


def _process(opts: CommonOptions, watcher: Watcher | None) -> Executor:
    from envbisect.exec.pool import ProcessExecutor

    if opts.gpus_per_probe:
        raise UsageError(
            "--gpus-per-probe needs --executor local, ray or slurm",
            hint="the local executor pins each probe to its own GPUs; so do Ray and Slurm",
            ref="bad-executor",
        )
    return ProcessExecutor(opts.jobs)


def _ray(opts: CommonOptions, watcher: Watcher | None) -> Executor:
    from envbisect.exec.ray import RayExecutor

    return RayExecutor(opts.jobs, address=opts.ray_address, gpus_per_probe=opts.gpus_per_probe)


def _slurm(opts: CommonOptions, watcher: Watcher | None) -> Executor:
    from envbisect.exec.slurm import SlurmExecutor

    return SlurmExecutor(
        opts.jobs,
        folder=opts.results / ".slurm",
        gpus_per_probe=opts.gpus_per_probe,
        settings=opts.slurm,
    )


# The executors by name, as --executor takes them (each imported only when chosen: the plain
# install never imports Ray).
EXECUTORS: dict[str, Callable[[CommonOptions, Watcher | None], Executor]] = {
    "local": _local,
    "process": _process,
    "ray": _ray,
    "slurm": _slurm,
}


def make_executor(opts: CommonOptions, *, watcher: Watcher | None = None) -> Executor:
    """The executor ``opts`` names; ``watcher`` hears the phases of probes run in this process
    (the local executor's: a worker process or a node tells no one)."""
    return EXECUTORS[opts.executor.value](opts, watcher)
