"""Bisection over ordered candidates, as a state machine: ``next()`` / ``record(i, outcome)``.

The strategy never runs anything: the engine asks it which index to probe next and tells it
what happened. It works on indices into the candidate list (oldest first) so that it knows
nothing about versions or environments.

Phases:
    ends    probe the old end, then the new end. An end the user did not name is stepped
            inward past untestable points; a named end must verify. The ends decide the
            direction: old passes and new fails -> "regression" (find the first bad);
            old fails and new passes -> "fix" (find the first fixed).
    search  binary search between the last point in the old state and the first point in
            the new state. Untestable points are stepped around and never narrow the range:

                [G, ?, ?, ?, B]  probe the middle
                [G, ?, S, ?, B]  middle untestable: probe its nearest neighbour
                [G, G, S, ?, B]  ...
                [G, G, S, B, B]  nothing left to probe: "the first bad is one of S, B"

A failure unlike the reference failure (the failing end's: another kind, signal or exception
type) counts as untestable unless ``any_failure``: it is a different bug.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Literal

from .model import Outcome, OutcomeKind
from .outcome import same_failure

Direction = Literal["regression", "fix"]


class Verdict(enum.Enum):
    OLD = "old"  # in the state of the old end (pass in a regression search)
    NEW = "new"  # in the state of the new end (the failure in a regression search)
    SKIP = "skip"  # untestable, or a different failure


@dataclass(frozen=True, slots=True, kw_only=True)
class Step:
    index: int
    outcome: Outcome
    verdict: Verdict | None  # None while the ends are being verified
    note: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class BisectResult:
    status: Literal["found", "ambiguous", "no-answer"]
    direction: Direction | None = None
    first_new: int | None = None
    last_old: int | None = None
    possible: tuple[int, ...] = ()  # "ambiguous": the first new point is one of these
    reason: str = ""


@dataclass(slots=True)
class _End:
    index: int
    fixed: bool
    inward: int  # +1 for the old end, -1 for the new end
    outcome: Outcome | None = None


@dataclass(slots=True)
class Bisector:
    """Find the boundary between the old end's behaviour and the new end's.

    ``good`` and ``bad`` are indices the user named (either may be None: the ends then default
    to the oldest and newest testable points). ``untestable`` are indices known up front to be
    untestable (no installable file): never probed.
    """

    n: int
    good: int | None = None
    bad: int | None = None
    untestable: Iterable[int] = ()
    any_failure: bool = False
    history: list[Step] = field(default_factory=list)
    skipped: set[int] = field(init=False)
    old: _End = field(init=False)
    new: _End = field(init=False)
    direction: Direction | None = field(init=False, default=None)
    reference: Outcome | None = field(init=False, default=None)
    lo: int = field(init=False, default=-1)
    hi: int = field(init=False, default=-1)
    _result: BisectResult | None = field(init=False, default=None)

    def __post_init__(self) -> None:
        self.skipped = set(self.untestable)
        if self.n < 2:
            self._result = BisectResult(status="no-answer", reason="fewer than two candidates")
        old_i, new_i, old_fixed, new_fixed = self._ends()
        self.old = _End(index=old_i, fixed=old_fixed, inward=+1)
        self.new = _End(index=new_i, fixed=new_fixed, inward=-1)

    def _ends(self) -> tuple[int, int, bool, bool]:
        g, b, last = self.good, self.bad, self.n - 1
        if g is not None and b is not None:
            return (g, b, True, True) if g < b else (b, g, True, True)
        if g is not None:
            return (g, last, True, False) if g < last else (0, g, False, True)
        if b is not None:
            return (0, b, False, True) if b > 0 else (b, last, True, False)
        return (0, last, False, False)

    @property
    def expected_direction(self) -> Direction | None:
        if self.good is None and self.bad is None:
            return None
        if self.good is not None:
            return "regression" if self.good == self.old.index else "fix"
        return "regression" if self.bad == self.new.index else "fix"

    # -- asking -------------------------------------------------------------------------------

    def next(self) -> int | None:
        """The index to probe next, or None when a result is ready."""
        if self._result is not None:
            return None
        for end in (self.old, self.new):
            if end.outcome is None:
                if not self._settle(end):
                    return None
                return end.index
        candidates = [i for i in range(self.lo + 1, self.hi) if i not in self.skipped]
        if not candidates:
            self._finish()
            return None
        mid = (self.lo + self.hi) / 2
        return min(candidates, key=lambda i: (abs(i - mid), i))

    def _settle(self, end: _End) -> bool:
        """Move an unnamed end inward past known-untestable points. False if none is left."""
        while end.index in self.skipped:
            if end.fixed:
                self._no_answer(
                    f"the {self._end_name(end)} end cannot be tested (no installable file)"
                )
                return False
            end.index += end.inward
            if self.old.index >= self.new.index:
                self._no_answer("fewer than two testable candidates in the range")
                return False
        return True

    # -- telling ------------------------------------------------------------------------------

    def record(self, index: int, outcome: Outcome) -> Verdict | None:
        """Record the outcome of probing ``index``; returns the verdict it counted as."""
        for end in (self.old, self.new):
            if end.outcome is None and index == end.index:
                self._record_end(end, outcome)
                return None
        verdict = self.verdict(outcome)
        note = ""
        if verdict is Verdict.SKIP:
            self.skipped.add(index)
            if outcome.kind is not OutcomeKind.UNTESTABLE:
                note = "a different failure than the reference: counted as untestable"
        elif verdict is Verdict.OLD:
            if index > self.lo:
                self.lo = index
        elif index < self.hi:
            self.hi = index
        self.history.append(Step(index=index, outcome=outcome, verdict=verdict, note=note))
        return verdict

    def verdict(self, outcome: Outcome) -> Verdict:
        assert self.direction is not None and self.reference is not None
        if outcome.kind is OutcomeKind.UNTESTABLE:
            return Verdict.SKIP
        passed = outcome.kind is OutcomeKind.PASS
        if not passed and not self.any_failure and not same_failure(outcome, self.reference):
            return Verdict.SKIP
        if self.direction == "regression":
            return Verdict.OLD if passed else Verdict.NEW
        return Verdict.NEW if passed else Verdict.OLD

    def _record_end(self, end: _End, outcome: Outcome) -> None:
        self.history.append(Step(index=end.index, outcome=outcome, verdict=None))
        if outcome.kind is OutcomeKind.UNTESTABLE:
            self.skipped.add(end.index)
            if end.fixed:
                self._no_answer(
                    f"the {self._end_name(end)} end is untestable: {outcome.describe()}"
                )
            return None
        end.outcome = outcome
        if self.old.outcome is not None and self.new.outcome is not None:
            self._decide_direction(self.old.outcome, self.new.outcome)
        return None

    def _decide_direction(self, old: Outcome, new: Outcome) -> None:
        old_pass = old.kind is OutcomeKind.PASS
        new_pass = new.kind is OutcomeKind.PASS
        if old_pass == new_pass:
            both = "pass" if old_pass else "fail"
            self._no_answer(
                f"both ends {both} (old end: {old.describe()}; new end: {new.describe()})"
            )
            return
        found: Direction = "regression" if old_pass else "fix"
        expected = self.expected_direction
        if expected is not None and expected != found:
            good_end = self.old if expected == "regression" else self.new
            bad_end = self.new if expected == "regression" else self.old
            assert good_end.outcome is not None and bad_end.outcome is not None
            self._no_answer(
                f"the good end does not pass ({good_end.outcome.describe()}) "
                f"and the bad end does not fail ({bad_end.outcome.describe()})"
            )
            return
        self.direction = found
        self.reference = new if found == "regression" else old
        self.lo, self.hi = self.old.index, self.new.index

    def _end_name(self, end: _End) -> str:
        return "old" if end is self.old else "new"

    # -- answers ------------------------------------------------------------------------------

    def _no_answer(self, reason: str) -> None:
        self._result = BisectResult(status="no-answer", direction=self.direction, reason=reason)

    def _finish(self) -> None:
        assert self.direction is not None
        if self.hi == self.lo + 1:
            self._result = BisectResult(
                status="found", direction=self.direction, first_new=self.hi, last_old=self.lo
            )
            return
        possible = (*range(self.lo + 1, self.hi), self.hi)
        self._result = BisectResult(
            status="ambiguous",
            direction=self.direction,
            first_new=self.hi,
            last_old=self.lo,
            possible=possible,
            reason="untestable points hide the boundary",
        )

    @property
    def result(self) -> BisectResult | None:
        if self._result is None:
            self.next()
        return self._result

    # -- progress -----------------------------------------------------------------------------

    def remaining(self) -> tuple[int, int]:
        """(candidates left in the open range, probes left at most) for progress displays."""
        if self._result is not None:
            return 0, 0
        if self.direction is None:
            open_range = max(0, self.new.index - self.old.index - 1)
            ends_left = sum(1 for e in (self.old, self.new) if e.outcome is None)
            left = sum(
                1 for i in range(self.old.index + 1, self.new.index) if i not in self.skipped
            )
            return left, ends_left + math.ceil(math.log2(left + 1)) if open_range else ends_left
        left = sum(1 for i in range(self.lo + 1, self.hi) if i not in self.skipped)
        return left, math.ceil(math.log2(left + 1))

    def drawing(self, labels: list[str] | None = None) -> str:
        """The current range as ``[G, ?, S, ?, B]`` (old state G, new state B, S untestable)."""
        if self.direction is None:
            return ""
        old_mark, new_mark = ("G", "B") if self.direction == "regression" else ("B", "G")
        marks = []
        verdicts = {s.index: s.verdict for s in self.history if s.verdict is not None}
        for i in range(self.old.index, self.new.index + 1):
            if i in self.skipped:
                marks.append("S")
            elif i <= self.lo or verdicts.get(i) is Verdict.OLD:
                marks.append(old_mark)
            elif i >= self.hi or verdicts.get(i) is Verdict.NEW:
                marks.append(new_mark)
            else:
                marks.append("?")
        return "[" + ", ".join(_runs(marks)) + "]"


def _runs(marks: list[str]) -> list[str]:
    """Collapse long runs (``G, G, G, G`` -> ``G×4``) so a wide range fits on one line."""
    out: list[str] = []
    i = 0
    while i < len(marks):
        j = i
        while j < len(marks) and marks[j] == marks[i]:
            j += 1
        count = j - i
        out += [f"{marks[i]}×{count}"] if count > 3 else marks[i:j]
        i = j
    return out
