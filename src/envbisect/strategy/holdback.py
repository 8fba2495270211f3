"""One step of lock's descent: how far one package must be held back for one failure to go.

The points are indices into the package's versions, oldest first; the newest, ``n - 1``, is
the version the failing environment has, known to fail with the ``reference`` failure. A
point *has* the failure when its probe fails the same way (``same_failure``); a pass, or a
different failure (the next one a masked failure lets through), does not. The search wants
the newest version without the failure:

    [?, ?, ?, ?, F]   probe the oldest first: if it has the failure too, the package cannot
    [x, ?, ?, ?, F]   be held back far enough ("exhausted": the next suspect is tried)
    [x, ?, F, ?, F]   then halve the gap between the newest point without the failure (x)
    [x, x, F, ?, F]   and the oldest point above it with it (F)
                      -> last_good 1, first_bad 2

An untestable point (unresolvable with the rest, no installable file, a failed build) never
narrows the gap: its nearest untried neighbour is probed instead. Probes: at most
1 + ceil(log2(n - 1)) for n versions, all testable. Pure: no IO.

``floor``: the oldest point the rest of the newest environment allows as it is (below it, a
package that requires the newer versions, trl's ``transformers>=X``, must be held back too:
coupled). The search starts at the floor, as if the points below did not exist, and goes
below it only when the floor has the failure too (or nothing from it up is testable): a
coupled hold-back costs its second search only where one is needed, at most
2 + ceil(log2(floor)) + ceil(log2(n - floor)) probes in all.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from envbisect.core.outcome import same_failure
from envbisect.core.results.parts import ProbeRow, RowVerdict
from envbisect.model import Outcome, OutcomeKind
from envbisect.strategy.protocol import Points
from envbisect.strategy.segments import collapse


@dataclass(slots=True, kw_only=True)
class HoldBack(Points[int]):
    n: int
    reference: Outcome
    same: Callable[[Outcome, Outcome], bool] = same_failure
    repeat: int = 1
    floor: int = 0
    # Where the wheels say the change is (``envbisect why``): (the last release with what the
    # failure names, the first without), probed first; the probes still decide.
    hint: tuple[int, int] | None = None
    seen: dict[int, bool] = field(default_factory=dict)  # testable point -> has the failure
    other: set[int] = field(default_factory=set)  # points that failed another way
    skipped: set[int] = field(default_factory=set)

    def __post_init__(self) -> None:
        self.seen[self.n - 1] = True

    # -- the state ------------------------------------------------------------------------------

    @property
    def last_good(self) -> int | None:
        """The newest point probed without the failure (None: none yet)."""
        return max((i for i, has in self.seen.items() if not has), default=None)

    @property
    def first_bad(self) -> int:
        """The oldest point with the failure above ``last_good``."""
        lo = self.last_good
        return min(i for i, has in self.seen.items() if has and (lo is None or i > lo))

    @property
    def exhausted(self) -> bool:
        """Every point below the failing one is untestable or has the failure."""
        return self.done and self.last_good is None

    @property
    def done(self) -> bool:
        return not self._open()

    def _open(self) -> list[int]:
        """The points still worth probing, in the order they would be chosen."""
        lo, hi = self.last_good, self.first_bad
        untried = [i for i in range(0 if lo is None else lo + 1, hi) if self._untried(i)]
        if not untried:
            return []
        if self.hint is not None:  # the static guess first: its two sides, while they help
            first = self.hint[0] if lo is None else self.hint[1] if lo == self.hint[0] else None
            if first is not None and first in untried:
                return [first, *(i for i in self._unhinted(untried, lo, hi) if i != first)]
        return self._unhinted(untried, lo, hi)

    def _unhinted(self, untried: list[int], lo: int | None, hi: int) -> list[int]:
        if lo is None:  # the oldest testable point first, the floor's part before the rest
            return [i for i in untried if i >= self.floor] or untried
        mid = (lo + hi) // 2
        return sorted(untried, key=lambda i: (abs(i - mid), i))

    def _untried(self, i: int) -> bool:
        return i not in self.seen and i not in self.skipped

    # -- the Strategy protocol --------------------------------------------------------------

    def next_batch(self, k: int) -> list[int]:
        """The next point; with ``k > 1``, the gap split ``k + 1`` ways (the oldest point
        first while no point below the failing one was probed)."""
        order = self._open()
        if not order or k <= 1:
            return order[:1]
        lo, hi = self.last_good, self.first_bad
        start = -1 if lo is None else lo
        picks = [order[0]]
        for j in range(1, k + 1):
            i = start + round(j * (hi - start) / (k + 1))
            if start < i < hi and self._untried(i) and i not in picks:
                picks.append(i)
        return sorted(picks[:k])

    def record(self, point: int, row: ProbeRow) -> None:
        o = row.outcome
        if o.kind is OutcomeKind.UNTESTABLE:
            self.skipped.add(point)
        else:
            self.seen[point] = o.kind is not OutcomeKind.PASS and self.same(o, self.reference)
            if o.kind is not OutcomeKind.PASS and not self.seen[point]:
                self.other.add(point)

    def label(self, point: int, row: ProbeRow) -> ProbeRow:
        if point in self.skipped:
            return replace(row, verdict=RowVerdict.SKIP)
        return replace(row, verdict=RowVerdict.BAD if self.seen.get(point) else RowVerdict.GOOD)

    def progress(self) -> tuple[int, int]:
        left = len(self._open())
        return left, (1 + math.ceil(math.log2(left))) if left else 0

    def drawing(self) -> str:
        """The versions as run draws a range (strategy/segments.py ``marks``): B the failure
        held back, G a pass, F another failure (not this one: below it, as a pass is), S
        untestable, ? not yet known; long runs collapsed."""
        cells = []
        for i in range(self.n):
            if i in self.skipped:
                cells.append("S")
            elif i in self.seen:
                cells.append("B" if self.seen[i] else "F" if i in self.other else "G")
            else:
                cells.append("?")
        return "[" + ", ".join(collapse(cells)) + "]"


def bound(n: int) -> int:
    """The most probes ``HoldBack`` makes over ``n`` versions, all testable."""
    return 1 + math.ceil(math.log2(n - 1)) if n > 2 else max(n - 1, 0)
