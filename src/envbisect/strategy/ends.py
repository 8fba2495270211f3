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

Pure: indices in, indices out.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass

from envbisect.model import Outcome


@dataclass(slots=True)
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
            lo = max((i for i in untestable if 0 <= end.key(i) < end.key(t)), key=end.key,
                     default=end.start - end.inward)  # fmt: skip
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
