"""The one loop every mode uses: ask a strategy for a round of points, plan each into an
environment, probe them through the session, tell the strategy what happened, until it has
its answer.

Who does what: a *strategy* (``strategy/``: bisection, ddmin, matrix rows, fixed points)
chooses the points and decides; it never runs anything. The *mode* turns a point into a
``Want`` (it plans the environment; planning stays on the controller, one at a time). The
*session* answers from the store and ships the rest to the executor, K at a time with
``--jobs K``, and records what comes back. This loop owns the rounds and the progress lines,
and is the one place ``--jobs`` becomes a round's size. The living tables' probes that no
strategy chooses (deep probes on a row's edges, rechecks) go through the same loop with
``each``: their wants made before it, told back one by one as each round ends.
Ctrl-C or a worker's error leaves through the session, which cancels every task in flight:
nothing half-seen is stored, every finished probe stays.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Generic, TypeVar

from envbisect.core.results.parts import (
    BreakpointRow,
    FailRate,
    ProbeRow,
    RowVerdict,
    SearchMode,
    SearchSummary,
    Status,
)
from envbisect.core.results.search import SearchResult
from envbisect.modes.session import Session, Want
from envbisect.strategy.bisect import Bisector, BisectResult
from envbisect.strategy.protocol import Bisection, Points, Strategy, fail_rate, note, verdict

P = TypeVar("P")
R = TypeVar("R", bound=SearchResult)


@dataclass(slots=True, kw_only=True)
class Log(Generic[P]):
    rows: list[ProbeRow] = field(default_factory=list)
    points: list[P] = field(default_factory=list)  # the point of each row
    rounds: int = 0  # rounds that built or ran anything (not those answered by the store)


def drive(strategy: Strategy[P], session: Session, plan: Callable[[P, int], Want]) -> Log[P]:
    """Run the strategy to its end; the rows come back in the order the points were asked for."""
    return _rounds(strategy, session, plan, planned=False)


def each(
    session: Session,
    wants: Sequence[Want],
    done: Callable[[int, ProbeRow], None],
    *,
    again: bool = False,
) -> None:
    """Probe these wants (each with a spec), ``--jobs`` a round, in order; ``done(i, row)``
    hears the row of ``wants[i]`` as its round ends (so an interrupted run keeps what it
    saw). ``again``: built and probed afresh (``Session.probe_all``). Nothing is planned
    here and nothing is guessed: no build ahead."""
    _rounds(_Each(len(wants), done), session, lambda i, _runs: wants[i], again=again, planned=True)


class _Each(Points[int]):
    """Indices ``0..n-1`` in order, ``k`` a round; what is left counts the round asked for."""

    def __init__(self, n: int, done: Callable[[int, ProbeRow], None]) -> None:
        self.todo = list(range(n))
        self.left = n
        self.done = done

    def next_batch(self, k: int) -> list[int]:
        self.left = len(self.todo)
        batch, self.todo = self.todo[:k], self.todo[k:]
        return batch

    def record(self, point: int, row: ProbeRow) -> None:
        self.done(point, row)

    def progress(self) -> tuple[int, int]:
        return (self.left, self.left)


def _rounds(
    strategy: Strategy[P],
    session: Session,
    plan: Callable[[P, int], Want],
    *,
    planned: bool,
    again: bool = False,
) -> Log[P]:
    """The one loop: ``planned``: the wants exist already (``each``: no planning said, no
    guess built ahead); ``again``: every environment probed afresh."""
    log: Log[P] = Log()
    progress = session.progress
    jobs = session.opts.parallel.per_round  # the one place a round's size is read
    while batch := strategy.next_batch(jobs):
        left, steps = strategy.progress()
        wants = []
        for i, p in enumerate(batch):
            if not planned:
                progress.planning("environment(s)", i, len(batch))
            wants.append(plan(p, strategy.runs_wanted(p)))
        for w in wants:
            progress.probe_started(w.label, left, steps)
        # While this round's probe runs, the environments the next round may want are built
        # (one probe at a time on this machine); the points asked for stay as they were.
        ahead = None if planned else _ahead(strategy, session, plan, batch)
        rows = session.rows(wants, ahead=ahead, again=again)
        if any(not r.reused for r in rows):
            log.rounds += 1
        for p, row in zip(batch, rows, strict=True):
            strategy.record(p, row)
        for p, row in zip(batch, rows, strict=True):
            row = replace(strategy.label(p, row), round=log.rounds)
            log.rows.append(row)
            log.points.append(p)
            progress.probe_finished(
                row.version,
                row.outcome,
                row.build_seconds + row.probe_seconds,
                row.reused,
                strategy.drawing(),
            )
    return log


def _ahead(
    strategy: Strategy[P], session: Session, plan: Callable[[P, int], Want], batch: Sequence[P]
) -> Callable[[], list[Want]] | None:
    if not session.in_thread:
        return None
    return lambda: [plan(p, strategy.runs_wanted(p)) for p in strategy.ahead(batch)]


def bisect(
    bis: Bisector,
    session: Session,
    plan: Callable[[int, int], Want],
    *,
    labels: Callable[[int], str],
    cached: Callable[[int, int], bool] | None = None,
    hint_for: Callable[[ProbeRow], tuple[int, int] | None] | None = None,
) -> tuple[Log[int], SearchSummary]:
    """Drive a bisection to its end: the log (guesses made beside the ends relabelled once
    the ends decided) and the search summary for the report. ``hint_for``: where the
    failing end's failure began as the wheels say (protocol.Bisection), probed first."""
    log = drive(Bisection(bis, cached, hint_for), session, plan)
    log.rows = [
        replace(r, verdict=verdict(bis, i), note=note(bis, i))
        if r.verdict is RowVerdict.GUESS
        else r
        for r, i in zip(log.rows, log.points, strict=True)
    ]
    return log, summary(bis, rounds=log.rounds, jobs=session.opts.parallel.jobs, labels=labels)


def answer(result: R, final: BisectResult, labels: Callable[[int], str]) -> R:
    """The result with a bisection's answer, each point by its label: the boundary, the
    points that may hide it, every breakpoint and the neighbour that fails another way."""
    status = final.status
    out = replace(result, status=status, direction=final.direction, reason=final.reason)
    if status is Status.NO_ANSWER:
        return out
    assert final.first_new is not None and final.last_old is not None
    return replace(
        out,
        first_new=labels(final.first_new),
        last_old=labels(final.last_old),
        possible=tuple(labels(i) for i in final.possible),
        probability=final.probability,
        neighbour=labels(final.neighbour) if final.neighbour is not None else None,
        breakpoints=tuple(
            BreakpointRow(
                first_new=labels(b.first_new),
                last_old=labels(b.last_old),
                outcome=b.outcome,
                possible=tuple(labels(i) for i in b.possible),
            )
            for b in final.breakpoints
        ),
    )


def summary(
    bis: Bisector, *, rounds: int, jobs: int, labels: Callable[[int], str]
) -> SearchSummary:
    """How the bisection ran; the fail rate of each point when its runs were counted."""
    rates = None
    if bis.mode is SearchMode.PROBABILISTIC or bis.repeat > 1:
        rates = []
        for i in sorted(bis.runs):
            fails, runs = fail_rate(bis, i)
            rates.append(FailRate(version=labels(i), runs=runs, fails=fails))
    probabilistic = bis.mode is SearchMode.PROBABILISTIC
    return SearchSummary(
        mode=bis.mode,
        jobs=jobs,
        rounds=rounds,
        repeat=bis.repeat,
        confidence=bis.confidence if probabilistic else None,
        switch_reason=bis.switch_reason if probabilistic else None,
        fail_rates=tuple(rates) if rates is not None else None,
    )
