"""The probe runner: every wanted environment's record, from the store or probed now.

Who does what: ``Prober`` asks the ledger (ledger.py) first, claims the environments it
lacks, and either probes them one at a time in this thread (``--jobs 1`` on this machine:
the builder, builder.py, builds the next round's ahead meanwhile) or ships them as
``ProbeTask``s to the executor (edges.py) all at once; each record that comes back goes to
the ledger. It makes the tasks (the interpreter, the repro, the limits, the record they
extend) and says once when a crash has no native frames for want of gdb.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, wait
from dataclasses import replace
from functools import partial
from typing import TYPE_CHECKING

from envbisect.core.outcome import untestable
from envbisect.env import worker
from envbisect.env.forensics import NativeBacktrace
from envbisect.env.worker import ProbeTask, check_native_backtrace, run_task
from envbisect.model import OutcomeKind, ProbeRecord
from envbisect.modes.builder import Builder
from envbisect.modes.edges import Edges
from envbisect.modes.ledger import Ledger
from envbisect.modes.want import Want

if TYPE_CHECKING:
    from envbisect.core.results.parts import ProbeRow


class Prober:
    """Probes through the edges' executor, or in this thread with builds ahead."""

    def __init__(self, edges: Edges, ledger: Ledger, builder: Builder) -> None:
        self._edges = edges
        self._ledger = ledger
        self._builder = builder
        self._gdb_checked = False
        self._gdb_warned = False

    @property
    def in_thread(self) -> bool:
        """Whether probes run one at a time in this thread (``--jobs 1``, this machine)."""
        opts = self._edges.opts
        here = opts.parallel.one_at_a_time and opts.execution.here
        return here and not self._edges.has_executor

    def probe_all(
        self,
        wants: Sequence[Want],
        *,
        again: bool = False,
        ahead: Callable[[], Sequence[Want]] | None = None,
    ) -> list[tuple[ProbeRecord, bool]]:
        """Every wanted environment's record (each must have a spec), in the order asked,
        and whether it came from the store.

        The store answers first; the rest go to the executor all at once. A failure in any
        task (Ctrl-C, an infrastructure error) cancels the others: nothing half-seen is
        stored, every finished one is. ``again``: every environment is built and probed
        afresh (``matrix --recheck``), its new record replacing the stored one. ``ahead``:
        the environments the next round may want, built while this round's probe runs (one
        probe at a time on this machine: ``in_thread``). The phases of the probes run in
        this process are told to the edges' watcher, under each want's label."""
        out: dict[int, tuple[ProbeRecord, bool]] = {}
        futures: dict[Future[ProbeRecord], tuple[int, ProbeTask]] = {}
        waiting: list[tuple[int, Want]] = []
        for i, want in enumerate(wants):
            assert want.spec is not None
            hit = None if again else self._ledger.stored(want.spec, want.runs)
            if hit is not None:
                out[i] = (hit, True)
                continue
            if not again and self._ledger.claim(want) is not None:
                waiting.append((i, want))  # another run probes it now: its record, later
                continue
            task = self.task(want)
            if again:
                task = replace(task, earlier=None)
            self._edges.watcher.labels[want.spec.env_id] = want.label
            if self.in_thread:
                out[i] = self._in_thread(task, ahead)
                ahead = None
                continue
            futures[self._edges.executor.submit(task)] = (i, task)
        pending = set(futures)
        while pending:
            done, pending = wait(pending, return_when=FIRST_COMPLETED)
            for fut in done:
                i, task = futures[fut]
                out[i] = self._record(task, fut.result())
        for i, want in waiting:
            out[i] = self._wait_for(want)
        return [out[i] for i in range(len(wants))]

    def _in_thread(
        self, task: ProbeTask, ahead: Callable[[], Sequence[Want]] | None
    ) -> tuple[ProbeRecord, bool]:
        """One probe in this thread (the fixed cost of a pool buys nothing here). The
        environment may have been built ahead; the next ones are, while it runs."""
        builder, watcher = self._builder, self._edges.watcher
        built = builder.take(task.spec.env_id)
        was_ahead = built is not None
        if built is None and ahead is not None:
            built = builder.room(partial(worker.build, task, watcher))
        if ahead is not None:
            try:
                builder.ahead(ahead(), self.task)
            except BaseException:  # Ctrl-C before the probe: no environment stays
                if built is not None:
                    worker.discard(built)
                raise
        if built is None:
            rec = builder.room(partial(run_task, task, watcher=watcher))
        else:
            rec = run_task(task, built, ahead=was_ahead, watcher=watcher)
        return self._record(task, rec)

    def _wait_for(self, want: Want) -> tuple[ProbeRecord, bool]:
        """The record another run is making of ``want``'s environment; if that run ends
        without one (interrupted, killed), this run probes it itself."""
        assert want.spec is not None
        rec = self._ledger.wait(want, self._builder.held())
        if rec is not None:
            return rec, True
        task = self.task(want)
        self._edges.watcher.labels[want.spec.env_id] = want.label
        if self.in_thread:
            built = self._builder.take(want.spec.env_id)
            rec = run_task(task, built, ahead=built is not None, watcher=self._edges.watcher)
            return self._record(task, rec)
        return self._record(task, self._edges.executor.submit(task).result())

    def rows(
        self,
        wants: Sequence[Want],
        ahead: Callable[[], Sequence[Want]] | None = None,
        *,
        again: bool = False,
    ) -> list[ProbeRow]:
        """The report row of each wanted environment (untestable ones without a build);
        ``again``: as ``probe_all``'s."""
        from envbisect.core.results.parts import ProbeRow, RowVerdict  # a search's: not probe's

        buildable = [w for w in wants if w.spec is not None]
        records = iter(self.probe_all(buildable, again=again, ahead=ahead))
        out = []
        for w in wants:
            if w.spec is None:
                out.append(
                    ProbeRow(
                        version=w.label,
                        outcome=untestable(w.why_not),
                        verdict=RowVerdict.NONE,
                        reused=False,
                        build_seconds=0.0,
                        probe_seconds=0.0,
                        env_id="",
                    )
                )
                continue
            rec, reused = next(records)
            row = ProbeRow.of_record(w.label, rec, reused, env_id=w.spec.env_id, moved=w.moved)
            out.append(row)
        return out

    def task(self, want: Want) -> ProbeTask:
        """What the executor is handed to build ``want``'s environment and probe it."""
        assert want.spec is not None
        edges, opts = self._edges, self._edges.opts
        if not self._gdb_checked:  # --native-backtrace always without gdb: fail before a build
            check_native_backtrace(opts.probing.native_backtrace)
            self._gdb_checked = True
        request = want.python if want.python is not None else opts.planning.python
        path, target = edges.target_for(request)
        earlier = self._ledger.earlier(want.spec)
        return ProbeTask(
            spec=want.spec,
            repro=edges.repro,
            python=path,
            python_version=str(target.python_version),
            envs_dir=opts.results / ".envs",
            runs=want.runs,
            earlier=earlier,
            timeout=opts.probing.timeout,
            keep_envs=opts.probing.keep_envs,
            native_backtrace=opts.probing.native_backtrace,
            uv=edges.uv.binary,
            offline=edges.uv.offline,
            source_repo=want.source_repo,
            build_timeout=opts.planning.build_timeout if want.spec.source is not None else None,
            session=""
            if opts.planning.refresh or opts.planning.refresh_packages
            else self._ledger.me.owner,
        )

    def _record(self, task: ProbeTask, rec: ProbeRecord) -> tuple[ProbeRecord, bool]:
        if self._ledger.record(task, rec):
            return rec, True  # nothing new was seen
        o = rec.outcome
        if (
            o.kind is OutcomeKind.CRASH
            and not o.native_frames
            and self._edges.opts.probing.native_backtrace is NativeBacktrace.AUTO
            and not self._gdb_warned
            and check_native_backtrace(NativeBacktrace.AUTO) is None
        ):
            self._edges.progress.message(
                "gdb is not installed: crash signatures carry no native frames "
                "(apt install gdb to get them)"
            )
            self._gdb_warned = True
        return rec, False
