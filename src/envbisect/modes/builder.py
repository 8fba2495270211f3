"""The environment builder: environments built in this thread, and built ahead beside it.

Who does what: with one probe at a time on this machine (``--jobs 1``), ``Builder`` builds
the environments the next round may want in one background thread while this thread probes
(the strategy's guess, planned by the mode: drive.py), hands a finished build to the probe
runner (prober.py) that asks for it, drops the builds no round asked for, and makes room when
the disk is full (the builds ahead go, and none is made again this run). It claims what it
builds ahead through the ledger (ledger.py), so another run waits for it rather than building
it too. Nothing it builds outlives the session (``end``).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from functools import partial
from typing import TypeVar

from envbisect.env import runner, worker
from envbisect.env.worker import ProbeTask
from envbisect.errors import DiskFull
from envbisect.modes.edges import Edges
from envbisect.modes.ledger import Ledger
from envbisect.modes.sharing import drop_build, said_if_failed
from envbisect.modes.want import Want

T = TypeVar("T")


class Builder:
    """Builds ahead in one background thread; ``end`` removes whatever it still holds."""

    def __init__(self, edges: Edges, ledger: Ledger) -> None:
        self._edges = edges
        self._ledger = ledger
        self._ahead: dict[str, Future[worker.Built]] = {}  # built ahead: env id -> the build
        self._pool: ThreadPoolExecutor | None = None
        # None built ahead: one core this process may use (a build beside the probe slows it;
        # a Slurm job's or a container's cpuset, not the machine's count), asked, disk full.
        ahead_off = os.environ.get("ENVBISECT_NO_BUILD_AHEAD")
        self._off = len(os.sched_getaffinity(0)) < 2 or bool(ahead_off)

    def held(self) -> list[str]:
        """The environments built ahead (or being built) now, by id."""
        return list(self._ahead)

    def ahead(self, wants: Sequence[Want], make: Callable[[Want], ProbeTask]) -> None:
        """Build these environments in one background thread, in order, while this thread
        probes (``make``: each one's task); those already built, stored or under way are left
        alone, and builds ahead that are no longer among them are dropped."""
        keep = {w.spec.env_id for w in wants if w.spec is not None}
        for env_id in [e for e in self._ahead if e not in keep]:
            self._drop(env_id)
        if self._off:
            return
        for want in wants:
            spec = want.spec
            if spec is None or spec.env_id in self._ahead or self._ledger.stored(spec, want.runs):
                continue
            if self._ledger.claim(want) is not None:
                continue  # another run builds and probes it: its record will do
            if self._pool is None:
                self._pool = ThreadPoolExecutor(1, thread_name_prefix="envbisect-ahead")
            watcher = self._edges.watcher
            self._ahead[spec.env_id] = fut = self._pool.submit(worker.prebuild, make(want), watcher)
            fut.add_done_callback(partial(said_if_failed, self._edges.progress, want.label))

    def _drop(self, env_id: str) -> None:
        """A build ahead no round asked for: removed, and its claim given up."""
        drop_build(self._ahead.pop(env_id))
        self._ledger.release(env_id)

    def take(self, env_id: str) -> worker.Built | None:
        """The environment built ahead, waited for if still building; None if it was not
        (or its build ahead failed: it is built again here, where a failure is reported)."""
        fut = self._ahead.get(env_id)
        if fut is None:
            return None
        try:
            built = fut.result()
        except Exception:  # built again here, where a failure is reported (-v said it)
            self._ahead.pop(env_id, None)
            return None
        # Ctrl-C while waiting leaves it in _ahead: end() removes what it built.
        self._ahead.pop(env_id, None)
        return built

    def room(self, build: Callable[[], T]) -> T:
        """``build()``; when the disk is full and builds ahead hold space, they are removed
        (and none is made again this run) and it is tried once more."""
        try:
            return build()
        except DiskFull:
            if not self._ahead:
                raise
            self._edges.progress.message(
                "the disk is full: builds ahead removed (no more this run)"
            )
            self.end()
            self._off = True
            return build()

    def end(self) -> None:
        """Stop the builds ahead and remove what they built: nothing outlives the session."""
        if self._pool is None:
            return
        pending = [f for f in self._ahead.values() if not f.cancel()]
        if pending:
            runner.interrupt_all()  # only builds ahead are running now: stop them
        self._pool.shutdown(wait=True, cancel_futures=True)
        if pending:
            runner.clear_interrupt()
        for fut in self._ahead.values():
            drop_build(fut)
        self._ahead.clear()
        self._pool = None
