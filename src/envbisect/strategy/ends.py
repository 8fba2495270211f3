"""The two ends of a bisection, and how an end the user did not name finds its point.

An unnamed end is the first testable point from its side of the range (the oldest testable
candidate, or the newest). Candidates known to be untestable up front (no installable file)
are stepped over for free. Points found untestable only when probed (a version whose
environment cannot be resolved: ``--with app==1.0`` and every release of the package below
app's lower bound) would cost one probe each if stepped over one at a time, so ``look`` finds
the end in log time instead:

- once any testable point is known (either end's, or a guess probed beside them), the end is
  between it and the nearest point known untestable on this end's side: bisect that gap;
- else gallop: look 1, 2, 4, 8... points further in from this end's side;
- a gallop that reaches the far side of the range without a testable point has jumped over
  the testable ones (they are fewer than its stride): look at the middle of the widest run of
  points not yet probed.

    [S, S, S, S, S, S, S, S, S, S, T, T, ...]   (S untestable, T testable)
     0  1     3           7                      gallop: 0, 1, 3, 7 untestable; 15 testable
                       back: 11 testable, 9 untestable, 10 testable: the end is 10

About 2·log2(k) probes for k untestable points instead of k. The two ends look in turn (the
one that has probed less goes first), so a gallop from one side meets the other side's
testable points before it can run past them. Every testable point probed on the way lies in
the range, and the search counts it once the direction is known. Testable points are assumed
to lie in one block; where they do not, the end is still a testable point with an untestable
one right outside it.

``place`` puts the two ends where the user's ``--good`` / ``--bad`` say (``step_in``: a named
end with no installable file becomes an unnamed one, its stand-in), ``waiting`` says which
ends probe next, ``point`` where an unnamed end looks, and ``decide`` reads the direction from
both ends' outcomes once each has its point.

Pure: indices in, indices out.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from envbisect.core.results.parts import Direction
from envbisect.model import Outcome, OutcomeKind
from envbisect.strategy.verdicts import SteppedEnd

Name = Literal["old", "new"]


@dataclass(slots=True, kw_only=True)
class End:
    index: int
    fixed: bool  # named by the user: it must verify, it never moves
    inward: int  # +1 for the old end, -1 for the new end
    outcome: Outcome | None = None
    retry: bool = False  # probe it again (a flaky end not yet failing)
    retries: int = 0
    tries: int = 0  # points this end has been probed at
    start: int = -1  # the outermost point it may take (its side's edge, or the one asked for)
    reach: int | None = None  # the innermost point its gallop found untestable
    jump: int = 1  # the gallop's next stride from there

    def __post_init__(self) -> None:
        self.start = self.index

    def landed_untestable(self) -> None:
        """Its point was probed untestable: the gallop goes on from there, twice as far."""
        before, self.reach = self.reach, self.index
        self.jump = 1 if before is None else 2 * max(1, abs(self.index - before))

    def key(self, i: int) -> int:
        """``i``'s distance inward from this end's side (for choosing the nearest)."""
        return (i - self.start) * self.inward


def look(
    end: End,
    *,
    far: int,
    untestable: Collection[int],
    free: Collection[int],
    testable: Collection[int],
) -> int | None:
    """Where an unnamed ``end`` looks next: a point to probe, or its own point once found (a
    member of ``testable`` with nothing unknown between it and the untestable points outside
    it). ``far``: the other side's edge (the gallop stops there); ``untestable``: every point
    known untestable, ``free`` those of them known without a probe; ``testable``: every
    testable point probed. None: no point is left."""
    wall = end.start
    while wall in free and wall != far:  # what is known untestable up front costs nothing
        wall += end.inward
    if wall not in untestable:
        return wall  # its own edge first (past what is known untestable up front)
    inside = [t for t in testable if 0 <= end.key(t) <= end.key(far)]
    t = min(inside, key=end.key) if inside else None  # the nearest testable point known
    reach, jump = wall, 1
    if end.reach is not None and end.key(end.reach) >= end.key(wall):
        reach, jump = end.reach, end.jump
    while True:
        if t is not None:
            lo = max(
                (i for i in untestable if 0 <= end.key(i) < end.key(t)),
                key=end.key,
                default=end.start - end.inward,
            )
            if abs(t - lo) <= 1:
                return t  # nothing unknown between it and the untestable points outside
        nxt = reach + end.inward * jump
        if t is not None and end.key(nxt) >= end.key(t):
            return (lo + t) // 2  # the gallop would reach it: bisect the gap before it
        if end.key(reach) >= end.key(far):
            break
        nxt = far if end.key(nxt) > end.key(far) else nxt
        if nxt not in untestable:
            return nxt
        reach, jump = nxt, jump * 2  # known untestable already: gallop on for free
    # The gallop reached the far side: the middle of the widest run of points not yet probed.
    lo, hi = sorted((end.start, far))
    unknown = [i for i in range(lo, hi + 1) if i not in untestable]
    if not unknown:
        return None
    runs: list[list[int]] = []
    for i in unknown:
        if runs and runs[-1][-1] == i - 1:
            runs[-1].append(i)
        else:
            runs.append([i])
    widest = max(runs, key=len)
    return widest[len(widest) // 2]


def place(n: int, good: int | None, bad: int | None) -> tuple[End, End, Direction | None]:
    """The old and the new end of a range of ``n`` points, given the points the user named
    (``good``, ``bad``: either may be None, and then that end is unnamed: the range's edge),
    and the direction those names expect (None: neither is named)."""
    old_i, new_i, old_fixed, new_fixed = _bounds(n, good, bad)
    expected: Direction | None = None
    if good is not None:
        expected = Direction.REGRESSION if good == old_i else Direction.FIX
    elif bad is not None:
        expected = Direction.REGRESSION if bad == new_i else Direction.FIX
    old = End(index=old_i, fixed=old_fixed, inward=+1)
    new = End(index=new_i, fixed=new_fixed, inward=-1)
    return old, new, expected


def step_in(old: End, new: End, skipped: Collection[int]) -> dict[Name, int]:
    """Each named end known untestable up front (no installable file), made unnamed: from here
    on it is stepped past untestable points (this one now, any found untestable when probed
    later), and the point found stands in for it. Which ends, and the point each named."""
    asked: dict[Name, int] = {}
    pairs: tuple[tuple[Name, End], ...] = (("old", old), ("new", new))
    for name, end in pairs:
        if end.fixed and end.index in skipped:
            asked[name] = end.index
            end.fixed = False
    return asked


def stand_ins(old: End, new: End, asked: Mapping[Name, int]) -> list[SteppedEnd]:
    """The named ends stepped inward (``step_in``), with the point standing in for each
    (where it is now: a stand-in found untestable when probed moves on)."""
    pairs: tuple[tuple[Name, End], ...] = (("old", old), ("new", new))
    return [
        SteppedEnd(end=name, asked=asked[name], used=end.index)
        for name, end in pairs
        if name in asked
    ]


def waiting(old: End, new: End) -> list[int]:
    """The points the ends that have no outcome yet probe next, in order: while both look for
    their point, the one that has probed less goes first (a gallop from one side must not run
    into the other's untestable points before the other side has looked)."""
    ends = sorted((e for e in (old, new) if e.outcome is None), key=lambda e: (e.tries, e is new))
    return list(dict.fromkeys(e.index for e in ends))


def point(
    end: End,
    other: End,
    *,
    probed: Collection[int],
    untestable: Collection[int],
    free: Collection[int],
) -> int | None:
    """Where the unnamed ``end`` looks next (``look``; ``probed``: every point probed), or
    None: no point is left before the ``other`` end (it met it)."""
    testable = [i for i in probed if i not in untestable]
    at = look(end, far=other.start, untestable=untestable, free=free, testable=testable)
    if at is None:
        return None
    settled = other.outcome is not None or other.fixed
    if settled and end.key(at) >= end.key(other.index):  # it met the other end
        return None
    return at


def unfailed(old: End, new: End, expected: Direction | None) -> End | None:
    """The end expected to fail when both ends passed so far (the new end, unless the user
    named the good end newer than the bad): a flaky failure may just not have shown there
    yet. None when either end has failed."""
    assert old.outcome is not None and new.outcome is not None
    if old.outcome.kind is not OutcomeKind.PASS or new.outcome.kind is not OutcomeKind.PASS:
        return None
    return old if expected == Direction.FIX else new


def cost(old: End, new: End, skipped: Collection[int]) -> tuple[int, int]:
    """(candidates left between the ends, probes left at most) before the direction is known:
    the ends still to probe, then a bisection of what lies between them."""
    ends_left = sum(1 for e in (old, new) if e.outcome is None)
    if new.index - old.index - 1 <= 0:
        return 0, ends_left
    left = sum(1 for i in range(old.index + 1, new.index) if i not in skipped)
    return left, ends_left + math.ceil(math.log2(left + 1))


def _bounds(n: int, good: int | None, bad: int | None) -> tuple[int, int, bool, bool]:
    g, b, last = good, bad, n - 1
    if g is not None and b is not None:
        return (g, b, True, True) if g < b else (b, g, True, True)
    if g is not None:
        return (g, last, True, False) if g < last else (0, g, False, True)
    if b is not None:
        return (0, b, False, True) if b > 0 else (b, last, True, False)
    return (0, last, False, False)


def decide(
    old: End,
    new: End,
    expected: Direction | None,
    *,
    old_runs: Sequence[Outcome],
    new_runs: Sequence[Outcome],
) -> tuple[Direction | None, str]:
    """The direction both ends' outcomes show (the old end passes and the new one fails: a
    regression; the other way round: a fix) with "", or None with why there is no answer (both
    pass or both fail, or the direction is not the one the user's named ends ``expected``).
    ``old_runs``, ``new_runs``: every run at each end (a rate is shown for several)."""
    assert old.outcome is not None and new.outcome is not None
    old_pass = old.outcome.kind is OutcomeKind.PASS
    new_pass = new.outcome.kind is OutcomeKind.PASS
    if old_pass == new_pass:
        both = "pass" if old_pass else "fail"
        return None, (
            f"both ends {both} (old end: {_rate(old_runs)}{old.outcome.describe()}; "
            f"new end: {_rate(new_runs)}{new.outcome.describe()})"
        )
    found: Direction = Direction.REGRESSION if old_pass else Direction.FIX
    if expected is not None and expected != found:
        good_end = old if expected == Direction.REGRESSION else new
        bad_end = new if expected == Direction.REGRESSION else old
        assert good_end.outcome is not None and bad_end.outcome is not None
        return None, (
            f"the good end does not pass ({good_end.outcome.describe()}) "
            f"and the bad end does not fail ({bad_end.outcome.describe()})"
        )
    return found, ""


def _rate(runs: Sequence[Outcome]) -> str:
    if len(runs) < 2:
        return ""
    failed = sum(1 for o in runs if o.kind is not OutcomeKind.PASS)
    return f"{failed} of {len(runs)} runs failed, "
