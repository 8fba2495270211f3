"""What runs share: claims in the store renewed while a run lives (no environment is probed
twice at once, modes/session.py), and builds ahead that no round asked for (or that failed),
dropped."""

from __future__ import annotations

import contextlib
import threading
from concurrent.futures import Future
from pathlib import Path

from envbisect.env import worker
from envbisect.errors import EnvbisectError
from envbisect.progress import Progress
from envbisect.store import CLAIM_BEAT, Claimant, Store

# How often a run waiting for another's probe looks at the store.
CLAIM_POLL = 0.5


class Renewal:
    """Renews this run's claims every CLAIM_BEAT seconds, on a connection of its own, so
    that a run on another machine sees them alive however long a probe takes."""

    def __init__(self, results: Path, me: Claimant) -> None:
        self._stop = threading.Event()
        self._thread = threading.Thread(
            target=self._run, args=(results, me), name="envbisect-claims", daemon=True
        )
        self._thread.start()

    def _run(self, results: Path, me: Claimant) -> None:
        with contextlib.suppress(EnvbisectError), Store(results) as store:
            while not self._stop.wait(CLAIM_BEAT):
                store.renew(me)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)


def drop_build(fut: Future[worker.Built]) -> None:
    """A build ahead no one wants: cancelled if not started, removed once it is built."""
    if fut.cancel():
        return

    def discard(done: Future[worker.Built]) -> None:
        if not done.cancelled() and done.exception() is None:
            worker.discard(done.result())

    fut.add_done_callback(discard)


def said_if_failed(progress: Progress, label: str, fut: Future[worker.Built]) -> None:
    """At -v, a build ahead that failed (a full disk, the index): it is dropped, and built
    again if a round wants it, where its failure counts."""
    if progress.verbose and not fut.cancelled() and fut.exception() is not None:
        progress.message(f"{label}: its build ahead failed ({fut.exception()}); dropped")
