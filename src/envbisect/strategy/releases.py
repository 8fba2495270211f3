"""A yes/no question asked of a project's releases: every boundary where its answer changes.

``envbisect why`` asks "is the name there in this release?", "does this release's caller
still pass that keyword?"; a *static probe* answers by reading a wheel, not by building an
environment. The search is the bisection over segments that every mode uses
(strategy/segments.py): the points probed so far with their classes, every gap between two
neighbouring points of different classes halved until it closes. A first round reads the
points the caller must know (the release the report runs, the newest) and a few spread
evenly over the range, so a name that came and went between the ends is seen too:

    [?, ?, ?, ?, ?, ?, ?, ?, ?]   first round: the ends, the installed one, two between
    [Y, ?, Y, ?, Y, ?, N, ?, N]   one gap: Y..N
    [Y, ?, Y, ?, Y, Y, N, ?, N]   closed: the boundary is between 5 and 6

An unknown answer (a source that cannot say) is stepped around, never counted as either
class. Pure: indices and classes in, the next points and the boundaries out.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass

from envbisect.strategy import segments


@dataclass(frozen=True, slots=True, kw_only=True)
class Boundary:
    """The answer changes between ``last_old`` (class ``old``) and ``first_new`` (``new``);
    ``hidden``: unknown points between them (the change is at one of those or at
    ``first_new``)."""

    last_old: int
    first_new: int
    old: int
    new: int
    hidden: tuple[int, ...] = ()


class ReleaseSearch:
    """``next_batch(k)`` gives up to ``k`` release indices to read, ``record(i, cls)`` takes
    each answer (``None``: unknown), ``done`` when no gap is left; ``boundaries()`` then."""

    def __init__(self, count: int, *, must: Sequence[int] = (), spread: int = 3) -> None:
        if count <= 0:
            raise ValueError("no release to search")
        self.count = count
        self.classes: dict[int, int] = {}
        self.skipped: set[int] = set()
        first = {0, count - 1, *(i for i in must if 0 <= i < count)}
        for j in range(1, spread + 1):
            first.add(round((count - 1) * j / (spread + 1)))
        self._first = sorted(first)
        self._asked: set[int] = set()
        self.reads = 0

    def _unknown(self, i: int) -> bool:
        return i not in self.classes and i not in self.skipped

    def next_batch(self, k: int) -> list[int]:
        todo = [i for i in self._first if self._unknown(i) and i not in self._asked]
        if todo:
            return self._ask(todo)
        if any(i in self._asked for i in self._first if self._unknown(i)):
            return []
        if not self.classes:  # every first-round point unknown: try the rest, newest first
            rest = [i for i in range(self.count - 1, -1, -1) if self._unknown(i)]
            return self._ask(rest[:k])
        gaps = self._gaps()
        return self._ask(segments.choose(gaps, max(1, k), None))

    def _ask(self, points: list[int]) -> list[int]:
        self._asked.update(points)
        return points

    def _gaps(self) -> list[segments.Gap]:
        return [g for g in segments.gaps(self.classes, self.skipped, 0, self.count - 1) if g.open]

    def record(self, i: int, cls: int | None) -> None:
        self.reads += 1
        self._asked.discard(i)
        if cls is None:
            self.skipped.add(i)
        else:
            self.classes[i] = cls

    @property
    def done(self) -> bool:
        if self._asked:
            return False
        if any(self._unknown(i) for i in self._first):
            return False
        if not self.classes:
            return all(not self._unknown(i) for i in range(self.count))
        return not self._gaps()

    def widen(self) -> bool:
        """One more spread round: a point between each two neighbouring points read (for a
        question whose answer never changed where it was read: a name that came and went
        between them). False where every release has been read."""
        read = sorted([*self.classes, *self.skipped])
        more = {(a + b) // 2 for a, b in itertools.pairwise(read) if b - a > 1}
        more = {i for i in more if self._unknown(i)}
        self._first = sorted({*self._first, *more})
        return bool(more)

    def boundaries(self) -> list[Boundary]:
        """Every change of class between neighbouring known points, oldest first."""
        points = sorted(self.classes.items())
        out = []
        for (a, ca), (b, cb) in itertools.pairwise(points):
            if ca != cb:
                hidden = tuple(i for i in range(a + 1, b) if i in self.skipped)
                out.append(Boundary(last_old=a, first_new=b, old=ca, new=cb, hidden=hidden))
        return out

    def class_at(self, i: int) -> int | None:
        """The class of release ``i`` as far as the segments tell (None: not known)."""
        return segments.inferred(self.classes, 0, self.count - 1).get(i)
