"""A range as segments: the probed points' outcome classes in index order, the gaps still to
search, and the breakpoints between segments.

A range whose outcomes change more than once is a sequence of segments, each with one class
(a pass, failure F1, failure F2, ...). Between two probed points of one class nothing is
searched: the segment assumption, as a plain bisection assumes one boundary. Between two
probed points of different classes lies at least one boundary, and probing the middle of that
gap halves it:

    [G, ?, ?, ?, ?, ?, B]   probe the middle
    [G, ?, ?, F, ?, ?, B]   another failure: two gaps, G..F and F..B
    [G, G, F, F, B, ?, B]   ... each searched to its boundary

Cost. A gap of L open points that holds b boundaries costs at most b·ceil(log2(L + 1))
probes: its middle splits it into halves holding b1 + b2 = b boundaries, and a half whose two
ends agree is never searched. So a range of n candidates with k failure classes after a pass
(k boundaries) takes at most k·ceil(log2(n - 1)) + 2 probes with the ends, untestable points
aside (each one is stepped around, as in a plain bisection). Never a walk.

Pure: indices and class numbers in, gaps and breakpoints out.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, replace
from itertools import pairwise

from envbisect.model import Outcome

PASS_CLASS = 0  # the class of every pass; failure classes are numbered from 1


@dataclass(frozen=True, slots=True, kw_only=True)
class Gap:
    """Two neighbouring probed points of different classes, and the points still to probe
    between them (untestable ones left out)."""

    lo: int
    hi: int
    open: tuple[int, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class Breakpoint:
    """Where one segment ends and the next begins: ``last_old`` is the last point of the
    segment before, ``first_new`` the first of the new one, ``outcome`` what ``first_new``
    did. ``possible``: untestable points hide the boundary, and the new segment starts at one
    of these (``first_new`` is the last of them)."""

    last_old: int
    first_new: int
    outcome: Outcome
    possible: tuple[int, ...] = ()


def known(classes: Mapping[int, int], lo: int, hi: int) -> list[tuple[int, int]]:
    """The probed points in ``[lo, hi]`` with their classes, in index order."""
    return sorted((i, c) for i, c in classes.items() if lo <= i <= hi)


def gaps(classes: Mapping[int, int], skipped: Collection[int], lo: int, hi: int) -> list[Gap]:
    """Every pair of neighbouring probed points of different classes, in index order."""
    points = known(classes, lo, hi)
    out = []
    for (a, ca), (b, cb) in pairwise(points):
        if ca != cb:
            out.append(Gap(lo=a, hi=b, open=tuple(i for i in range(a + 1, b) if i not in skipped)))
    return out


def breakpoints(
    classes: Mapping[int, int], outcome_at: Callable[[int], Outcome], lo: int, hi: int
) -> tuple[Breakpoint, ...]:
    """The boundaries between segments, oldest first, once no gap has a point left to probe
    (every point between two neighbouring probed points is then untestable)."""
    points = known(classes, lo, hi)
    out = []
    for (a, ca), (b, cb) in pairwise(points):
        if ca != cb:
            hidden = tuple(range(a + 1, b + 1)) if b > a + 1 else ()
            out.append(Breakpoint(last_old=a, first_new=b, outcome=outcome_at(b), possible=hidden))
    return tuple(out)


def inferred(classes: Mapping[int, int], lo: int, hi: int) -> dict[int, int | None]:
    """Each point's class as far as the segments tell: a probed point's own, a point between
    two probed points of one class theirs, a point in a gap None (not yet known)."""
    points = known(classes, lo, hi)
    out: dict[int, int | None] = {}
    for (a, ca), (b, cb) in pairwise(points):
        out[a] = ca
        for i in range(a + 1, b):
            out[i] = ca if ca == cb else None
    if points:
        out[points[-1][0]] = points[-1][1]
    return out


def split_among(gaps_: list[Gap], k: int) -> list[tuple[Gap, int]]:
    """How many of ``k`` probes each gap gets this round: the gaps in index order, one each
    while they last, the rest shared out evenly (a gap never gets more than its open points)."""
    active = [g for g in gaps_ if g.open]
    shares = {id(g): 0 for g in active}
    left = k
    while left > 0:
        hungry = [g for g in active if shares[id(g)] < len(g.open)]
        if not hungry:
            break
        for g in hungry:
            if left == 0:
                break
            shares[id(g)] += 1
            left -= 1
    return [(g, shares[id(g)]) for g in active if shares[id(g)]]


def choose(open_gaps: list[Gap], k: int, cached: Callable[[int], bool] | None) -> list[int]:
    """Up to ``k`` points to probe this round, split among the gaps (``split_among``), in index
    order. ``cached(i)``: whether point i's outcome is stored already; while any stored point
    lies in a gap, only those are chosen from (the ones nearest the split points: no build)."""
    if cached is not None:
        free = [replace(g, open=tuple(i for i in g.open if cached(i))) for g in open_gaps]
        if any(g.open for g in free):
            open_gaps = free
    chosen = []
    for g, m in split_among(open_gaps, k):
        chosen += split(list(g.open), g.lo, g.hi, m)
    return sorted(chosen)


@dataclass(frozen=True, slots=True, kw_only=True)
class Answer:
    """Where the reference failure starts (regression) or ends (fix), and its neighbours."""

    first_new: int  # regression: the first bad point; fix: the first pass after last_old
    last_old: int  # regression: the last pass before first_new; fix: the last broken point
    neighbour: int | None  # next to the boundary on the passing side, failing another way
    possible: tuple[int, ...]  # untestable points hide the boundary: one of these


def answer(
    classes: Mapping[int, int], ref_class: int, *, regression: bool, any_failure: bool
) -> Answer:
    """The answer once no gap is left to probe. Regression: ``first_new`` is the first point
    of the reference's class (with ``any_failure``, of any failure), ``last_old`` the last
    pass before it; a fix search is the mirror image."""
    points = sorted(classes.items())
    bad = [i for i, c in points if c == ref_class or (any_failure and c != PASS_CLASS)]
    if regression:
        first_new = min(bad)
        last_old = max(i for i, c in points if c == PASS_CLASS and i < first_new)
        near = max(i for i, _ in points if i < first_new)
        lo, hi, neighbour = near, first_new, near if near != last_old else None
    else:
        last_old = max(bad)
        first_new = min(i for i, c in points if c == PASS_CLASS and i > last_old)
        near = min(i for i, _ in points if i > last_old)
        lo, hi, neighbour = last_old, near, near if near != first_new else None
    possible = () if hi == lo + 1 else tuple(range(lo + 1, hi + 1))
    return Answer(first_new=first_new, last_old=last_old, neighbour=neighbour, possible=possible)


def marks(
    classes: Mapping[int, int], skipped: Collection[int], ref_class: int, lo: int, hi: int
) -> list[str]:
    """One mark per point of ``[lo, hi]``: G a pass, B the reference failure, F another
    failure, S untestable, ? not yet known."""
    known = inferred(classes, lo, hi)
    out = []
    for i in range(lo, hi + 1):
        c = known.get(i)
        if i in skipped:
            out.append("S")
        elif c is None:
            out.append("?")
        else:
            out.append("G" if c == PASS_CLASS else "B" if c == ref_class else "F")
    return out


def split(candidates: list[int], lo: int, hi: int, k: int) -> list[int]:
    """Up to ``k`` of ``candidates`` splitting (lo, hi) into k + 1 equal parts (k = 1: the
    middle, the lower on a tie)."""
    if k <= 0 or not candidates:
        return []
    if len(candidates) <= k:
        return list(candidates)
    chosen: list[int] = []
    for j in range(1, k + 1):
        target = lo + (hi - lo) * j / (k + 1)
        left = [i for i in candidates if i not in chosen]
        chosen.append(min(left, key=lambda i: (abs(i - target), i)))
    return sorted(chosen)


def collapse(marks: list[str]) -> list[str]:
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
