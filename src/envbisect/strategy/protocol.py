"""What a strategy offers the drive loop, the no-op defaults, and the Bisector as one.

A strategy chooses points and decides; it never runs anything. ``drive`` (modes/drive.py)
asks ``next_batch(k)``, has each point planned and probed, calls ``record`` for every point
of the round, then ``label`` for the report row of each. How a bisection looks from outside
(what is left of it, its range drawn, each point's label and fail rate) is read here, from
the Bisector's state, so that the state machine (bisect.py) holds only asking and telling.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any, Generic, Protocol, TypeVar

from envbisect.core.results.parts import Direction, ProbeRow, RowVerdict, SearchMode
from envbisect.model import Outcome, OutcomeKind
from envbisect.strategy import ends, flaky, segments
from envbisect.strategy.bisect import Bisector, Verdict
from envbisect.strategy.ends import End

P = TypeVar("P")


class Strategy(Protocol[P]):
    """What ``drive`` asks of a strategy. ``Points`` gives the no-op defaults."""

    def next_batch(self, k: int) -> Sequence[P]:
        """Up to ``k`` points to probe now (all at once); empty when the answer is ready."""
        ...

    def runs_wanted(self, point: P) -> int: ...

    def record(self, point: P, row: ProbeRow) -> None: ...

    def label(self, point: P, row: ProbeRow) -> ProbeRow:
        """The row as the report shows it (its verdict, a note), once the round is recorded."""
        ...

    def progress(self) -> tuple[int, int]:
        """Points left in range, steps left at most ((0, 0): not known)."""
        ...

    def drawing(self) -> str: ...

    def ahead(self, batch: Sequence[P]) -> list[P]:
        """Points the round after ``batch`` may ask for, whatever ``batch`` shows, likeliest
        first: the session builds them while ``batch`` is probed (a guess: one never asked
        for is dropped). Empty: no guess."""
        ...


class Points(Generic[P]):
    """No-op defaults for a strategy: one run per point, no verdict labels, no drawing."""

    repeat: int = 1

    def runs_wanted(self, point: P) -> int:
        return self.repeat

    def label(self, point: P, row: ProbeRow) -> ProbeRow:
        return row

    def progress(self) -> tuple[int, int]:
        return (0, 0)

    def drawing(self) -> str:
        return ""

    def ahead(self, batch: Sequence[P]) -> list[P]:
        return []


class Fixed(Points[P]):
    """Probe these points, ``k`` at a time, and nothing else (the ends of diff, a check)."""

    def __init__(self, points: Sequence[P], repeat: int = 1) -> None:
        self.todo = list(points)
        self.repeat = repeat
        self.rows: dict[Any, ProbeRow] = {}

    def next_batch(self, k: int) -> list[P]:
        batch, self.todo = self.todo[:k], self.todo[k:]
        return batch

    def record(self, point: P, row: ProbeRow) -> None:
        self.rows[point] = row


class Bisection(Points[int]):
    """The ``Bisector`` over indices; ``cached(i, runs)``: whether the store already answers
    for point i (so a rerun takes stored points first, for free)."""

    def __init__(
        self,
        bis: Bisector,
        cached: Callable[[int, int], bool] | None = None,
        hint_for: Callable[[ProbeRow], tuple[int, int] | None] | None = None,
    ) -> None:
        self.bis = bis
        self.cached = cached
        # ``hint_for(row)``: where the wheels say the failing end's failure began (two
        # neighbouring indices: ``envbisect why``), asked once that end has failed; the pair
        # is probed first while it lies in an open gap, and the segments decide as ever.
        self.hint_for = hint_for
        self.hint: tuple[int, int] | None = None

    def next_batch(self, k: int) -> list[int]:
        hinted = self._hinted(k)
        if hinted:
            return hinted
        cached = self.cached
        if cached is None:
            return self.bis.next_batch(k)
        return self.bis.next_batch(k, cached=lambda i: cached(i, self.bis.runs_wanted(i)))

    def runs_wanted(self, point: int) -> int:
        return self.bis.runs_wanted(point)

    def record(self, point: int, row: ProbeRow) -> None:
        self.bis.record(point, row.outcome, row.run_outcomes or (row.outcome,))
        asks = self.hint_for is not None and self.hint is None
        if asks and point == self.bis.new.index and row.outcome.kind is not OutcomeKind.PASS:
            assert self.hint_for is not None
            self.hint = self.hint_for(row) or (-1, -1)

    def _hinted(self, k: int) -> list[int]:
        """The hint's points not yet probed that lie in an open gap (the plain search only)."""
        if self.hint is None or self.bis.mode is not SearchMode.PLAIN or self.bis.finished:
            return []
        if ends.waiting(self.bis.old, self.bis.new):
            return []
        open_now = {i for g in self.bis.gaps() for i in g.open}
        todo = [i for i in self.hint if i in open_now and i not in self.bis.runs]
        return todo[: max(1, k)]

    def label(self, point: int, row: ProbeRow) -> ProbeRow:
        return replace(row, verdict=verdict(self.bis, point), note=note(self.bis, point))

    def progress(self) -> tuple[int, int]:
        return remaining(self.bis)

    def drawing(self) -> str:
        return drawing(self.bis)

    def ahead(self, batch: Sequence[int]) -> list[int]:
        """With one point in flight, the point the bisection asks for next if it behaves as
        the old end does, then if it behaves as the new end does (an end not probed yet is
        taken to pass, the new one to fail): on a copy, never on the search itself."""
        if len(batch) != 1 or self.bis.mode is not SearchMode.PLAIN:
            return []
        (i,) = batch
        out: list[int] = []
        for outcome in (
            _end_outcome(self.bis.old, passing=True),
            _end_outcome(self.bis.new, passing=False),
        ):
            sim = copy.deepcopy(self.bis)
            sim.record(i, outcome, (outcome,) * max(1, sim.runs_wanted(i)))
            out += [j for j in sim.next_batch(1) if j != i and j not in out]
        return out


def _end_outcome(end: End, *, passing: bool) -> Outcome:
    if end.outcome is not None:
        return end.outcome
    if passing:
        return Outcome(kind=OutcomeKind.PASS)
    return Outcome(kind=OutcomeKind.FAIL, exception="Guess", signature="Guess: built ahead")


def verdict(bis: Bisector, i: int) -> RowVerdict:
    """Point ``i``'s last verdict as the report names it, read in the search's direction."""
    step = next((s for s in reversed(bis.history) if s.index == i), None)
    if step is None:
        return RowVerdict.GUESS  # probed beside the ends, before they decided the direction
    if step.verdict is None:
        return RowVerdict.END
    if step.verdict is Verdict.SKIP:
        return RowVerdict.SKIP
    if step.verdict is Verdict.OTHER:
        return RowVerdict.OTHER
    regression = bis.direction == Direction.REGRESSION
    if step.verdict is Verdict.OLD:
        return RowVerdict.GOOD if regression else RowVerdict.BAD
    return RowVerdict.BAD if regression else RowVerdict.GOOD


def note(bis: Bisector, i: int) -> str:
    step = next((s for s in reversed(bis.history) if s.index == i), None)
    return step.note if step is not None else ""


def fail_rate(bis: Bisector, i: int) -> tuple[int, int]:
    """(runs that failed, runs) at point ``i``: any failure, for reports."""
    runs = bis.runs.get(i, ())
    return sum(1 for o in runs if o.kind is not OutcomeKind.PASS), len(runs)


def remaining(bis: Bisector) -> tuple[int, int]:
    """(candidates left in the open range, probes left at most) for progress displays."""
    if bis.finished:
        return 0, 0
    if bis.direction is None:
        return ends.cost(bis.old, bis.new, bis.skipped)
    if bis.mode is SearchMode.PROBABILISTIC:
        left = len(bis.open_points) + 1
        return left, max(0, bis.probe_budget() - bis.probes_since_switch)
    open_gaps = [len(g.open) for g in bis.gaps()]
    return sum(open_gaps), sum(math.ceil(math.log2(n + 1)) for n in open_gaps)


def drawing(bis: Bisector) -> str:
    """The current range as ``[G, ?, S, F, B]`` (G a pass, B the reference failure, F
    another failure, S untestable, ? not yet known);
    in the probabilistic mode a point that may be the first new one shows its probability
    (``[G×3, 12%, 81%, B×4]``)."""
    if bis.direction is None:
        return ""
    lo, hi = bis.old.index, bis.new.index
    if bis.mode is SearchMode.PROBABILISTIC:
        post = bis.posterior()
        assert post is not None
        marks = flaky.marks(post, lo, hi, bis.skipped, bis.direction == Direction.REGRESSION)
    else:
        marks = segments.marks(bis.cls, bis.skipped, bis.ref_class, lo, hi)
    return "[" + ", ".join(segments.collapse(marks)) + "]"
