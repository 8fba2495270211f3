"""The executor interface, and the table that names each implementation."""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Future
from typing import TYPE_CHECKING, Protocol

from envbisect.errors import UsageError

if TYPE_CHECKING:
    from envbisect.env.worker import ProbeTask
    from envbisect.model import ProbeRecord


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


def _local(jobs: int) -> Executor:
    from envbisect.exec.local import ThreadExecutor

    return ThreadExecutor(jobs)


def _process(jobs: int) -> Executor:
    from envbisect.exec.local import ProcessExecutor

    return ProcessExecutor(jobs)


# The executors by name, as --executor takes them (imported when chosen).
EXECUTORS: dict[str, Callable[[int], Executor]] = {"local": _local, "process": _process}


def make_executor(name: str, jobs: int) -> Executor:
    factory = EXECUTORS.get(name)
    if factory is None:
        raise UsageError(
            f"--executor {name!r} is not an executor",
            hint=f"use one of: {', '.join(EXECUTORS)}",
            ref="bad-executor",
        )
    return factory(max(1, jobs))
