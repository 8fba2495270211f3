"""The search loop that ``run`` and ``run --by-date`` share: ask the strategy for a round of
points, probe them (K at a time with ``--jobs K``), tell it what happened, until it answers.

Who does what: ``strategy.Bisector`` chooses the points and decides; the caller's ``probe``
builds and runs one point (it is called from worker threads, each with its own store
connection); this loop owns the threads, the progress lines, the round numbers, and Ctrl-C or
a worker's error (every live probe group is killed, nothing half-seen is stored, finished
probes stay).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from envbisect.core.report import ProbeRow
from envbisect.env import runner
from envbisect.reporter import Reporter
from envbisect.store import Store
from envbisect.strategy.bisect import Bisector, Verdict

# probe(store, index, runs) -> the row of that point (runs: how many runs it should have)
ProbeFn = Callable[[Store, int, int], ProbeRow]
# cached(store, index, runs) -> whether the store already answers for that point
CachedFn = Callable[[Store, int, int], bool]


@dataclass(slots=True, kw_only=True)
class SearchLog:
    rows: list[ProbeRow] = field(default_factory=list)
    indices: list[int] = field(default_factory=list)  # the point of each row
    rounds: int = 0  # rounds that built or ran anything (not those answered by the store)

    def summary(self, bis: Bisector, *, jobs: int, labels: Callable[[int], str]) -> dict[str, Any]:
        out: dict[str, Any] = {
            "mode": bis.mode,
            "jobs": jobs,
            "rounds": self.rounds,
            "repeat": bis.repeat,
        }
        if bis.mode == "probabilistic":
            out["confidence"] = bis.confidence
            out["switch_reason"] = bis.switch_reason
        if bis.mode == "probabilistic" or bis.repeat > 1:
            rates = []
            for i in sorted(bis.runs):
                fails, runs = bis.fail_rate(i)
                rates.append({"version": labels(i), "runs": runs, "fails": fails})
            out["fail_rates"] = rates
        return out


def drive(
    bis: Bisector,
    *,
    jobs: int,
    results: Path,
    probe: ProbeFn,
    labels: Callable[[int], str],
    reporter: Reporter,
    cached: CachedFn | None = None,
) -> SearchLog:
    """Run the search to its end; the rows come back in the order the points were asked for."""
    log = SearchLog()
    local = threading.local()
    opened: list[Store] = []
    lock = threading.Lock()

    def store_here() -> Store:
        st = getattr(local, "store", None)
        if st is None:
            st = Store(results)
            local.store = st
            with lock:
                opened.append(st)
        return st

    def one(i: int, runs: int) -> ProbeRow:
        return probe(store_here(), i, runs)

    pool = ThreadPoolExecutor(max_workers=max(1, jobs), thread_name_prefix="envbisect-probe")
    try:
        with Store(results) as main_store:

            def free(i: int) -> bool:
                assert cached is not None
                return cached(main_store, i, bis.runs_wanted(i))

            while batch := bis.next_batch(jobs, cached=free if cached is not None else None):
                left, steps = bis.remaining()
                wanted = {i: bis.runs_wanted(i) for i in batch}
                for i in batch:
                    reporter.probe_started(labels(i), left, steps)
                futures: dict[Future[ProbeRow], int] = {
                    pool.submit(one, i, wanted[i]): i for i in batch
                }
                done_rows: dict[int, ProbeRow] = {}
                pending = set(futures)
                while pending:
                    finished, pending = wait(pending, return_when=FIRST_COMPLETED)
                    for fut in finished:
                        done_rows[futures[fut]] = fut.result()
                if any(not r.reused for r in done_rows.values()):
                    log.rounds += 1
                for i in batch:
                    row = done_rows[i]
                    bis.record(i, row.outcome, _runs_of(row))
                for i in batch:
                    row = replace(
                        done_rows[i],
                        verdict=_label(bis, i),
                        note=_note(bis, i),
                        round=log.rounds,
                    )
                    log.rows.append(row)
                    log.indices.append(i)
                    reporter.probe_finished(
                        row.version,
                        row.outcome,
                        row.build_seconds + row.probe_seconds,
                        row.reused,
                        bis.drawing(),
                    )
        # A guess made while the ends were still deciding was counted once they had.
        log.rows = [
            replace(r, verdict=_label(bis, i), note=_note(bis, i)) if r.verdict == "guess" else r
            for r, i in zip(log.rows, log.indices, strict=True)
        ]
    except BaseException:
        # Ctrl-C, or a worker's infrastructure error (disk full, index gone): stop the other
        # workers' probes now rather than wait out their timeouts; none of them is stored.
        runner.interrupt_all()
        pool.shutdown(wait=True, cancel_futures=True)
        runner.clear_interrupt()
        raise
    finally:
        pool.shutdown(wait=True)
        for st in opened:
            st.close()
    return log


def _runs_of(row: ProbeRow) -> tuple[Any, ...]:
    return row.run_outcomes or (row.outcome,)


def _label(bis: Bisector, i: int) -> str:
    step = next((s for s in reversed(bis.history) if s.index == i), None)
    if step is None:
        return "guess"  # probed beside the ends, before they decided the direction
    if step.verdict is None:
        return "end"
    if step.verdict is Verdict.SKIP:
        return "skip"
    regression = bis.direction == "regression"
    if step.verdict is Verdict.OLD:
        return "good" if regression else "bad"
    return "bad" if regression else "good"


def _note(bis: Bisector, i: int) -> str:
    step = next((s for s in reversed(bis.history) if s.index == i), None)
    return step.note if step is not None else ""
