"""The executor interface, and what each executor is made with (the executors themselves are
declared in exec/kinds/)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:  # concurrent.futures costs --help 5 ms
    from concurrent.futures import Future

    from envbisect.env.worker import ProbeTask, Watcher
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


@dataclass(frozen=True, slots=True, kw_only=True)
class Launch:
    """What an executor is made with (exec/kinds/ ``make_executor``): how many probes at once,
    the GPUs each is given, its own settings record (its kind's), the results folder, and who
    hears the phases of probes run in this process."""

    workers: int
    gpus_per_probe: int = 0
    settings: object = None
    results: Path = Path("results")
    watcher: Watcher | None = None
