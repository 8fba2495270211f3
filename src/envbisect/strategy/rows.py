"""Walking a compatibility matrix's rows as a strategy: which cells to probe, which to infer.

A row is the cells that differ only in the last axis, oldest first. Outcomes along a row are
taken to be monotone, so each row's ends are probed, and when they agree the cells between
are *inferred* (marked so, never shown as measured); when they differ the boundary is
bisected with the same ``Bisector`` as ``envbisect run`` (any failure counts as bad: a table
shows every kind, each as measured). When the ends agree the middle cell is checked too: a
pass-fail-pass row (a bug in a few middle releases) is not monotone, and one probe often
shows it; then each half is searched on its own. ``full``: every cell is probed.

Each row is a generator that yields the next cell it needs and is sent that cell's outcome;
``MatrixRows`` runs up to ``k`` rows side by side, one pending cell each.
"""

from __future__ import annotations

import json
from collections.abc import Generator, Sequence
from dataclasses import dataclass

from envbisect.core.living.cell import CellState
from envbisect.core.results.parts import ProbeRow
from envbisect.model import EnvSpec, InstalledDist, Outcome, OutcomeKind
from envbisect.strategy.bisect import Bisector
from envbisect.strategy.protocol import Points

# Middle cells checked in a row whose ends agree (more finds more non-monotone rows, and costs
# a probe each): one per agreeing segment, two levels deep.
SPOT_CHECKS = 2

Walk = Generator["Cell", Outcome, None]


@dataclass(slots=True, kw_only=True)
class Cell:
    python: str
    versions: tuple[tuple[str, str], ...]  # (package, version), in axis order
    state: CellState = CellState.PENDING
    outcome: Outcome | None = None
    spec: EnvSpec | None = None
    reason: str = ""
    inferred_from: str | None = None
    installed: tuple[InstalledDist, ...] = ()
    seconds: float = 0.0
    reused: bool = False

    @property
    def key(self) -> str:
        return json.dumps(dict(self.versions), sort_keys=False)

    def label(self) -> str:
        return " ".join(f"{p}=={v}" for p, v in self.versions)

    def measure(self, row: ProbeRow) -> None:
        self.state, self.outcome, self.installed = CellState.MEASURED, row.outcome, row.installed
        self.seconds, self.reused = row.build_seconds + row.probe_seconds, row.reused


def walk_row(row: Sequence[Cell], *, full: bool = False) -> Walk:
    """Yield each cell to probe (it is measured before the walk goes on); infer the rest."""
    if full or len(row) < 2:
        for cell in row:
            if cell.state is not CellState.UNRESOLVABLE:
                yield from _probe(cell)
        return
    yield from _search(row, list(range(len(row))), SPOT_CHECKS)
    infer(row)


def _probe(cell: Cell) -> Generator[Cell, Outcome, Outcome]:
    if cell.state is CellState.MEASURED and cell.outcome is not None:
        return cell.outcome  # a segment's end measured by the enclosing search
    return (yield cell)


def _search(row: Sequence[Cell], seg: list[int], spot_checks: int) -> Walk:
    bis = Bisector(
        n=len(seg),
        untestable=[k for k, i in enumerate(seg) if row[i].state is CellState.UNRESOLVABLE],
        any_failure=True,
    )
    while (k := bis.next()) is not None:
        bis.record(k, (yield from _probe(row[seg[k]])))
    ends = bis.old.outcome, bis.new.outcome
    if spot_checks <= 0 or ends[0] is None or ends[1] is None:
        return
    if _passes(ends[0]) != _passes(ends[1]):
        return  # the bisection found the boundary
    lo, hi = bis.old.index, bis.new.index
    middle = [k for k in range(lo + 1, hi) if row[seg[k]].state is CellState.PENDING]
    if not middle:
        return
    mid = middle[len(middle) // 2]
    seen = yield from _probe(row[seg[mid]])
    if _passes(seen) is None or _passes(seen) == _passes(ends[0]):
        return
    yield from _search(row, seg[lo : mid + 1], spot_checks - 1)
    yield from _search(row, seg[mid : hi + 1], spot_checks - 1)


def infer(row: Sequence[Cell]) -> None:
    """Monotone rows: a cell between two measured cells that agree is inferred to agree with
    them. Anything else stays unknown (shown as such, never as measured)."""
    # Measured cells that said pass or fail (untestable ones say nothing either way).
    known = [
        i
        for i, c in enumerate(row)
        if c.state is CellState.MEASURED
        and c.outcome is not None
        and _passes(c.outcome) is not None
    ]
    for i, cell in enumerate(row):
        if cell.state is not CellState.PENDING:
            continue
        left = max((j for j in known if j < i), default=None)
        right = min((j for j in known if j > i), default=None)
        if left is None or right is None:
            cell.state, cell.reason = CellState.UNKNOWN, "outside the measured cells"
            continue
        a, b = row[left].outcome, row[right].outcome
        assert a is not None and b is not None
        if _passes(a) != _passes(b):
            cell.state, cell.reason = CellState.UNKNOWN, "between cells that disagree"
            continue
        cell.state = CellState.INFERRED
        cell.outcome = a
        cell.inferred_from = row[left].key


class MatrixRows(Points[Cell]):
    """Every row walked, up to ``k`` side by side (rows in order, one pending cell each).

    ``full``: no cell depends on another, so each cell is a walk of its own and up to ``k``
    cells of any rows run at once (a wide cluster is not held to one probe per row)."""

    def __init__(self, rows: Sequence[Sequence[Cell]], *, full: bool, repeat: int = 1) -> None:
        walks = [[c] for r in rows for c in r] if full else rows
        self._waiting = [walk_row(w, full=full) for w in walks]
        self._active: list[tuple[Walk, Cell]] = []
        self.repeat = repeat

    def next_batch(self, k: int) -> list[Cell]:
        while len(self._active) < k and self._waiting:
            walk = self._waiting.pop(0)
            cell = next(walk, None)
            if cell is not None:
                self._active.append((walk, cell))
        return [cell for _, cell in self._active]

    def record(self, point: Cell, row: ProbeRow) -> None:
        point.measure(row)
        for n, (walk, cell) in enumerate(self._active):
            if cell is point:
                nxt = _send(walk, row.outcome)
                if nxt is None:
                    del self._active[n]
                else:
                    self._active[n] = (walk, nxt)
                return


def _send(walk: Walk, outcome: Outcome) -> Cell | None:
    try:
        return walk.send(outcome)
    except StopIteration:
        return None


def _passes(o: Outcome) -> bool | None:
    if o.kind is OutcomeKind.UNTESTABLE:
        return None
    return o.kind is OutcomeKind.PASS
