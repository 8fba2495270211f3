"""One session per invocation: the one place that wires the core to the edges.

Who does what: the session opens the edges on first use and closes them on exit (edges.py:
uv, the interpreters, the index clients, the store, the executor); it makes environment specs
for its target (``env_spec``: the id says what the interpreter *is*, never where it lives),
the run id and the result header; and probes: it looks each environment up in the store,
claims the ones it lacks (two runs never probe one at once), ships them as ``ProbeTask``s to
the executor or builds the next ones ahead, and records what comes back (only the controller
writes the store). Every mode opens one.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import time
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, replace
from functools import partial
from types import TracebackType
from typing import TYPE_CHECKING, Any, TypeVar

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from envbisect.core.names import project_name
from envbisect.core.outcome import failed, untestable
from envbisect.core.overrides import for_environment
from envbisect.core.target import Target
from envbisect.env import forensics, runner, worker
from envbisect.env.worker import ProbeTask, check_native_backtrace, run_task
from envbisect.errors import DiskFull, EnvbisectError, Interrupted
from envbisect.model import EnvSpec, IndexConfig, OutcomeKind, ProbeRecord, SourceBuild
from envbisect.modes.edges import Edges
from envbisect.modes.sharing import CLAIM_POLL, Renewal, drop_build, said_if_failed
from envbisect.options import CommonOptions
from envbisect.progress import Progress
from envbisect.redact import mask_env_map, mask_text
from envbisect.store import Claimant

if TYPE_CHECKING:
    import httpx

    from envbisect.core.results.parts import Moved, ProbeRow
    from envbisect.core.results.search import SearchResult
    from envbisect.exec.executor import Executor

R = TypeVar("R", bound="SearchResult")
T = TypeVar("T")


@dataclass(frozen=True, slots=True, kw_only=True)
class Want:
    """One environment a strategy asks for, as the mode planned it.

    No ``spec``: it cannot be built (``why_not`` says why: unresolvable, no installable
    file); it is untestable without a build. ``python``: an interpreter of its own (a
    matrix's other Pythons), else the session's."""

    label: str
    spec: EnvSpec | None = None
    runs: int = 1
    why_not: str = ""
    moved: tuple[Moved, ...] = ()
    python: str | None = None
    source_repo: str | None = None  # a spec with a source: the mirror its commit comes from


class Session(Edges):
    """Use as a context manager; everything it opened is closed on exit."""

    def __init__(
        self,
        opts: CommonOptions,
        progress: Progress | None = None,
        *,
        transport: httpx.BaseTransport | None = None,
        executor: Executor | None = None,
        plan_only: bool = False,
    ) -> None:
        """The edges (modes/edges.py), then the state of probing (nothing is opened here)."""
        super().__init__(
            opts, progress, transport=transport, executor=executor, plan_only=plan_only
        )
        self._gdb_checked = False
        self._gdb_warned = False
        self._ahead: dict[str, Future[worker.Built]] = {}  # built ahead: env id -> the build
        self._ahead_pool: ThreadPoolExecutor | None = None
        # None built ahead: one core this process may use (a build beside the probe slows it;
        # a Slurm job's or a container's cpuset, not the machine's count), asked, disk full.
        ahead_off = os.environ.get("ENVBISECT_NO_BUILD_AHEAD")
        self._no_ahead = len(os.sched_getaffinity(0)) < 2 or bool(ahead_off)
        self._me = Claimant.this_process()  # this run, as its claims in the store name it
        self._beat: Renewal | None = None

    def __enter__(self) -> Session:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._stop_executor(exc)
        self._end_ahead()
        if self._beat is not None:
            self._beat.stop()
            with contextlib.suppress(EnvbisectError):
                self.store.release(self._me)  # claims left by an interruption
        self._close_edges()

    # -- what the session names -------------------------------------------------------------------

    def env_spec(
        self,
        requirements: Sequence[str],
        *,
        only_binary: bool = True,
        exclude_newer: str | None = None,
        prerelease: bool = False,
        target: Target | None = None,
        indexes: IndexConfig | None = None,
        source: SourceBuild | None = None,
        overrides: Sequence[str] = (),
    ) -> EnvSpec:
        inherit = self._inherit(requirements)
        return EnvSpec.build(
            inherit.pop("requirements"),
            python=(target or self.target).identity,
            indexes=indexes or self.indexes(),
            only_binary=only_binary,
            exclude_newer=exclude_newer,
            prerelease=prerelease,
            source=source,
            overrides=for_environment((*self.opts.planning.overrides, *overrides), requirements),
            **inherit,
        )

    def _inherit(self, requirements: Sequence[str]) -> dict[str, Any]:
        """--inherit: the requirements the interpreter's own packages meet are left to them
        (and every other package of theirs is excluded from the install: never downloaded);
        the rest are installed into the environment, in front of them."""
        paths, dists = self.inherited
        if not paths:
            return {"requirements": list(requirements)}
        keep, named = [], set()
        for text in requirements:
            req = Requirement(text)
            name = canonicalize_name(req.name)
            have = dists.get(name)
            if have is not None and not req.url and req.specifier.contains(have, prereleases=True):
                continue
            keep.append(text)
            named.add(name)
        used = [f"{n}=={v}" for n, v in dists.items() if n not in named]
        return {"requirements": keep, "inherit_paths": paths, "inherited": used}

    def run_id(self, name: str, fields: dict[str, Any]) -> str:
        """The folder of a run's report: the same question asked again gets the same one.

        What changes the question: the mode's own fields, the repro, what the interpreter is,
        the indexes, and the flags that change what counts as the answer (not --jobs)."""
        probing, over = self.opts.probing, list(self.opts.planning.overrides)
        blob = json.dumps(
            {
                **fields,
                "repro": self.repro.repro_id,
                "python": self.target.identity,
                "indexes": self.indexes().to_dict(),
                "any_failure": probing.any_failure,
                **({"repeat": probing.repeat} if probing.repeat != 1 else {}),
                **({"overrides": over} if over else {}),
            },
            sort_keys=True,
        )
        slug = project_name(name, what="--package")  # a folder under --results: never a path
        return f"{slug}-{hashlib.sha256(blob.encode()).hexdigest()[:8]}"

    def result(self, cls: type[R], *, package: str, run_id: str, **kw: Any) -> R:
        """A result of type ``cls`` with its header (where the question was asked): no answer
        until a mode finds one."""
        return cls(
            package=package,
            target=f"{self.target.short} ({self.interpreter}, Python {self.target.python_version})",
            command=mask_text(self.opts.command),
            repro=self.repro.describe(),
            env=mask_env_map(self.repro.user_env),
            overrides=self.opts.planning.overrides,
            run_id=run_id,
            **kw,
        )

    def interrupted(self, e: KeyboardInterrupt) -> Interrupted:
        return Interrupted(
            f"interrupted; finished probes are kept in {self.opts.results / 'envbisect.db'}",
            hint="run the same command again to resume: finished probes are reused",
        )

    # -- probing ----------------------------------------------------------------------------------

    def stored(self, spec: EnvSpec, runs: int) -> ProbeRecord | None:
        """The stored record that answers for ``spec`` with ``runs`` runs, if there is one."""
        rec = self.store.get(spec.env_id, self.repro.repro_id)
        if rec is None or _stale(rec, self.opts):
            return None
        if len(rec.all_runs) >= runs or rec.outcome.kind is OutcomeKind.UNTESTABLE:
            return _first_runs(rec, runs)
        return None

    def probe(self, spec: EnvSpec, runs: int | None = None) -> tuple[ProbeRecord, bool]:
        """One environment's record, and whether it came from the store."""
        (row,) = self.probe_all([Want(label="", spec=spec, runs=runs or self.opts.probing.repeat)])
        return row

    def probe_all(
        self,
        wants: Sequence[Want],
        *,
        again: bool = False,
        ahead: Callable[[], Sequence[Want]] | None = None,
    ) -> list[tuple[ProbeRecord, bool]]:
        """Every wanted environment's record (each must have a spec), in the order asked.

        The store answers first; the rest go to the executor all at once. A failure in any
        task (Ctrl-C, an infrastructure error) cancels the others: nothing half-seen is
        stored, every finished one is. ``again``: every environment is built and probed
        afresh (``matrix --recheck``), its new record replacing the stored one. ``ahead``:
        the environments the next round may want, built while this round's probe runs (one
        probe at a time on this machine: ``in_thread``). The phases of the probes run in
        this process are told to ``watcher`` (edges.py), under each want's label."""
        out: dict[int, tuple[ProbeRecord, bool]] = {}
        futures: dict[Future[ProbeRecord], tuple[int, ProbeTask]] = {}
        waiting: list[tuple[int, Want]] = []
        for i, want in enumerate(wants):
            assert want.spec is not None
            hit = None if again else self.stored(want.spec, want.runs)
            if hit is not None:
                out[i] = (hit, True)
                continue
            if not again and self._claim(want) is not None:
                waiting.append((i, want))  # another run probes it now: its record, later
                continue
            task = self._task(want)
            if again:
                task = replace(task, earlier=None)
            self.watcher.labels[want.spec.env_id] = want.label
            if self.in_thread:
                # One at a time in this thread: the fixed cost of a pool buys nothing here.
                # The environment may have been built ahead; the next ones are, while it runs.
                built = self._take_ahead(want.spec.env_id)
                was_ahead = built is not None
                if built is None and ahead is not None:
                    built = self._room(partial(worker.build, task, self.watcher))
                if ahead is not None:
                    try:
                        self._build_ahead(ahead())
                    except BaseException:  # Ctrl-C before the probe: no environment stays
                        if built is not None:
                            worker.discard(built)
                        raise
                    ahead = None
                if built is None:
                    rec = self._room(partial(run_task, task, watcher=self.watcher))
                else:
                    rec = run_task(task, built, ahead=was_ahead, watcher=self.watcher)
                out[i] = self._record(task, rec)
                continue
            futures[self.executor.submit(task)] = (i, task)
        pending = set(futures)
        while pending:
            done, pending = wait(pending, return_when=FIRST_COMPLETED)
            for fut in done:
                i, task = futures[fut]
                out[i] = self._record(task, fut.result())
        for i, want in waiting:
            out[i] = self._wait_for(want)
        return [out[i] for i in range(len(wants))]

    # -- claims: two runs never probe one environment at once -------------------------------

    def _claim(self, want: Want) -> Claimant | None:
        """Claim probing ``want``'s environment; None when it is this run's to probe, else
        the live run that probes it now."""
        assert want.spec is not None
        holder = self.store.claim(want.spec.env_id, self.repro.repro_id, self._me)
        if holder is None and self._beat is None:
            self._beat = Renewal(self.opts.results, self._me)
        return holder

    def _wait_for(self, want: Want) -> tuple[ProbeRecord, bool]:
        """The record another run is making of ``want``'s environment, waited for; if that
        run ends without one (interrupted, killed), this run probes it itself."""
        assert want.spec is not None
        # A run that waits holds no claim another could be waiting for (the builds ahead keep
        # building, unclaimed): two runs never wait for each other.
        for env_id in self._ahead:
            self.store.release(self._me, env_id, self.repro.repro_id)
        told = False
        while True:
            hit = self.stored(want.spec, want.runs)
            if hit is not None:
                return hit, True
            holder = self.store.held(want.spec.env_id, self.repro.repro_id)
            if holder is None and self._claim(want) is None:
                return self._probe_claimed(want)
            if holder is not None and not told:
                self.progress.message(
                    f"{want.label}: another envbisect run (pid {holder.pid} on {holder.host}) "
                    "is probing this environment; waiting for its outcome"
                )
                told = True
            time.sleep(CLAIM_POLL)

    def _probe_claimed(self, want: Want) -> tuple[ProbeRecord, bool]:
        assert want.spec is not None
        task = self._task(want)
        self.watcher.labels[want.spec.env_id] = want.label
        if self.in_thread:
            built = self._take_ahead(want.spec.env_id)
            rec = run_task(task, built, ahead=built is not None, watcher=self.watcher)
            return self._record(task, rec)
        return self._record(task, self.executor.submit(task).result())

    def rows(
        self, wants: Sequence[Want], ahead: Callable[[], Sequence[Want]] | None = None
    ) -> list[ProbeRow]:
        """The report row of each wanted environment (untestable ones without a build)."""
        from envbisect.core.results.parts import ProbeRow, RowVerdict  # a search's: not probe's

        buildable = [w for w in wants if w.spec is not None]
        records = iter(self.probe_all(buildable, ahead=ahead))
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
            out.append(ProbeRow.of_record(w.label, rec, reused, env_id=w.spec.env_id,
                                          moved=w.moved))  # fmt: skip
        return out

    @property
    def in_thread(self) -> bool:
        """Whether probes run one at a time in this thread (``--jobs 1``, this machine)."""
        return self.opts.parallel.one_at_a_time and self.opts.execution.here and not self._executor

    def _build_ahead(self, wants: Sequence[Want]) -> None:
        """Build these environments in one background thread, in order, while this thread
        probes; those already built, stored or under way are left alone, and builds ahead
        that are no longer among them are dropped."""
        keep = {w.spec.env_id for w in wants if w.spec is not None}
        for env_id in [e for e in self._ahead if e not in keep]:
            self._drop_ahead(env_id)
        if self._no_ahead:
            return
        for want in wants:
            spec = want.spec
            if spec is None or spec.env_id in self._ahead or self.stored(spec, want.runs):
                continue
            if self._claim(want) is not None:
                continue  # another run builds and probes it: its record will do
            if self._ahead_pool is None:
                self._ahead_pool = ThreadPoolExecutor(1, thread_name_prefix="envbisect-ahead")
            self._ahead[spec.env_id] = fut = self._ahead_pool.submit(
                worker.prebuild, self._task(want), self.watcher
            )
            fut.add_done_callback(partial(said_if_failed, self.progress, want.label))

    def _drop_ahead(self, env_id: str) -> None:
        """A build ahead no round asked for: removed, and its claim given up."""
        drop_build(self._ahead.pop(env_id))
        self.store.release(self._me, env_id, self.repro.repro_id)

    def _take_ahead(self, env_id: str) -> worker.Built | None:
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
        # Ctrl-C while waiting leaves it in _ahead: _end_ahead removes what it built.
        self._ahead.pop(env_id, None)
        return built

    def _room(self, build: Callable[[], T]) -> T:
        """``build()``; when the disk is full and builds ahead hold space, they are removed
        (and none is made again this run) and it is tried once more."""
        try:
            return build()
        except DiskFull:
            if not self._ahead:
                raise
            self.progress.message("the disk is full: builds ahead removed (no more this run)")
            self._end_ahead()
            self._no_ahead = True
            return build()

    def _end_ahead(self) -> None:
        """Stop the builds ahead and remove what they built: nothing outlives the session."""
        if self._ahead_pool is None:
            return
        pending = [f for f in self._ahead.values() if not f.cancel()]
        if pending:
            runner.interrupt_all()  # only builds ahead are running now: stop them
        self._ahead_pool.shutdown(wait=True, cancel_futures=True)
        if pending:
            runner.clear_interrupt()
        for fut in self._ahead.values():
            drop_build(fut)
        self._ahead.clear()
        self._ahead_pool = None

    def _task(self, want: Want) -> ProbeTask:
        assert want.spec is not None
        if not self._gdb_checked:  # --native-backtrace always without gdb: fail before a build
            check_native_backtrace(self.opts.probing.native_backtrace)
            self._gdb_checked = True
        request = want.python if want.python is not None else self.opts.planning.python
        path, target = self.target_for(request)
        earlier = self.store.get(want.spec.env_id, self.repro.repro_id)
        if earlier is not None and _stale(earlier, self.opts):
            earlier = None
        return ProbeTask(
            spec=want.spec,
            repro=self.repro,
            python=path,
            python_version=str(target.python_version),
            envs_dir=self.opts.results / ".envs",
            runs=want.runs,
            earlier=earlier,
            timeout=self.opts.probing.timeout,
            keep_envs=self.opts.probing.keep_envs,
            native_backtrace=self.opts.probing.native_backtrace,
            uv=self.uv.binary,
            offline=self.uv.offline,
            source_repo=want.source_repo,
            build_timeout=self.opts.planning.build_timeout
            if want.spec.source is not None
            else None,
            session=""
            if self.opts.planning.refresh or self.opts.planning.refresh_packages
            else self._me.owner,
        )

    def _record(self, task: ProbeTask, rec: ProbeRecord) -> tuple[ProbeRecord, bool]:
        if task.earlier is not None and rec == task.earlier:
            self.store.release(self._me, task.spec.env_id, task.repro.repro_id)
            return rec, True  # nothing new was seen
        self.store.put(rec)
        self.store.release(self._me, task.spec.env_id, task.repro.repro_id)
        o = rec.outcome
        if (
            o.kind is OutcomeKind.CRASH
            and not o.native_frames
            and self.opts.probing.native_backtrace is forensics.NativeBacktrace.AUTO
            and not self._gdb_warned
            and check_native_backtrace(forensics.NativeBacktrace.AUTO) is None
        ):
            self.progress.message(
                "gdb is not installed: crash signatures carry no native frames "
                "(apt install gdb to get them)"
            )
            self._gdb_warned = True
        return rec, False


def _first_runs(rec: ProbeRecord, runs: int) -> ProbeRecord:
    """The record as it was after ``runs`` runs: a rerun asks for what the first run asked
    for at each step, so it sees the same evidence and retraces the same search."""
    if len(rec.all_runs) <= runs:
        return rec
    kept = rec.all_runs[:runs]
    first = next((i for i, o in enumerate(rec.all_runs) if failed(o)), None)
    outcome = rec.outcome if first is not None and first < runs else kept[0]
    return replace(rec, runs=kept if runs > 1 else (), outcome=outcome)


def _stale(rec: ProbeRecord, opts: CommonOptions) -> bool:
    """A stored timeout under a shorter limit than today's says nothing: probe again (a
    build cut at a lower --build-timeout too)."""
    if rec.outcome.kind is OutcomeKind.UNTESTABLE and rec.spec.get("source"):
        from envbisect.env.srcbuild import stale_build

        return stale_build(rec.outcome, opts.planning.build_timeout)
    return rec.outcome.kind is OutcomeKind.TIMEOUT and (rec.timeout or 0) < opts.probing.timeout
