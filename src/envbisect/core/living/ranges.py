"""The two questions a two-axis table is asked, read off its grid.

"Which transformers works with my llamafactory?": per row, the columns that pass (as runs
of neighbouring columns), the first failure on each side with its message, and which of the
passing ones lie outside the row's pins. "Which llamafactory do I need for transformers
5.2?": per column, the rows that pass. Pure: ``Section``s in (``core.living.grid``), value
objects out; ``tables`` and ``page`` print them. Only measured cells count (an inferred cell
says what its neighbours say, and the answer names the cells it rests on).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from envbisect.core.living.cell import CellState, Key, PublishedCell
from envbisect.core.living.grid import Section, vkey
from envbisect.model import OutcomeKind

MAX_MESSAGE = 110
_VERB = {"fail": "fails", "crash": "crashes", "timeout": "times out"}


@dataclass(frozen=True, slots=True, kw_only=True)
class RowRange:
    """One row's answer: ``runs`` of passing columns (first, last), oldest first."""

    section: str
    row: str
    runs: tuple[tuple[str, str], ...]
    outside: tuple[str, ...]  # passing columns outside the row's pins
    below: tuple[str, str] | None  # (column, why) of the failure just below the first run
    above: tuple[str, str] | None  # the same just above the last run

    def sentence(self, col_axis: str) -> str:
        if not self.runs:
            return "no measured cell passes"
        works = ", ".join(a if a == b else f"{a} to {b}" for a, b in self.runs)
        text = f"works with {col_axis} {works}"
        if self.outside:
            text += f" ({_listed(self.outside)} outside its pins)".replace(",)", ")")
        for side, found in (("below", self.below), ("above", self.above)):
            if found is not None:
                text += f"; {side}: {found[0]} {found[1]}"
        return text


@dataclass(frozen=True, slots=True, kw_only=True)
class ColumnWorks:
    section: str
    col: str
    rows: tuple[str, ...]  # the rows that pass with it, oldest first
    outside: tuple[str, ...]  # of those, the ones outside their pins


def row_ranges(sections: Sequence[Section]) -> list[RowRange]:
    out = []
    for s in sections:
        for r in s.rows:
            line = [(c, s.cells.get((r, c))) for c in s.cols]
            runs: list[tuple[str, str]] = []
            start = prev = None
            for col, cell in line:
                ok = _passes(cell)
                if ok and start is None:
                    start = col
                if not ok and start is not None and cell is not None and _counts(cell):
                    runs.append((start, str(prev)))
                    start = None
                if ok:
                    prev = col
            if start is not None:
                runs.append((start, str(prev)))
            passing = [c for c, cell in line if _passes(cell)]
            outside = tuple(c for c, cell in line if _passes(cell) and cell and cell.outside)
            below = above = None
            if passing:
                first, last = s.cols.index(passing[0]), s.cols.index(passing[-1])
                below = _nearest(line[:first][::-1])
                above = _nearest(line[last + 1 :])
            out.append(
                RowRange(
                    section=s.title,
                    row=r,
                    runs=tuple(runs),
                    outside=outside,
                    below=below,
                    above=above,
                )
            )
    return out


def column_works(sections: Sequence[Section]) -> list[ColumnWorks]:
    out = []
    for s in sections:
        for c in s.cols:
            cells = [(r, s.cells.get((r, c))) for r in s.rows]
            rows = tuple(r for r, cell in cells if _passes(cell))
            outside = tuple(r for r, cell in cells if _passes(cell) and cell and cell.outside)
            out.append(ColumnWorks(section=s.title, col=c, rows=rows, outside=outside))
    return out


def _passes(cell: PublishedCell | None) -> bool:
    return cell is not None and cell.passes


def _counts(cell: PublishedCell) -> bool:
    """A cell that says "does not work": measured and not passing, or unresolvable."""
    return cell.state is CellState.UNRESOLVABLE or (
        cell.state is CellState.MEASURED and cell.kind is not OutcomeKind.PASS
    )


def _nearest(line: Sequence[tuple[str, PublishedCell | None]]) -> tuple[str, str] | None:
    for col, cell in line:
        if cell is not None and _counts(cell):
            verb = (
                "cannot be installed"
                if cell.state is CellState.UNRESOLVABLE
                else _VERB.get(cell.kind.value if cell.kind else "", "cannot be built or probed")
            )
            where = f"{col} (outside its pins)" if cell.outside else col
            return where, _short(f"{verb}: {cell.signature}" if cell.signature else verb)
    return None


def _short(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= MAX_MESSAGE else text[: MAX_MESSAGE - 1] + "…"


def _listed(cols: Sequence[str]) -> str:
    if len(cols) <= 3:
        return ", ".join(cols)
    return f"{len(cols)} of them, {cols[0]} to {cols[-1]},"


def edge_positions(passes: Sequence[bool], inside: Sequence[bool]) -> list[int]:
    """The edges of a row's passing range, as positions in column order: the first and the
    last cell that passed, and the last that passed ``inside`` the pins (what the row
    recommends); each once. ``deep_probes`` run there (modes/living/deep.py)."""
    passing = [i for i, p in enumerate(passes) if p]
    if not passing:
        return []
    within = [i for i in passing if inside[i]]
    return sorted({passing[0], passing[-1], *within[-1:]})


def edge_keys(cells: Sequence[PublishedCell]) -> set[Key]:
    """The keys of every row's edge cells (``edge_positions``) in a published table: rows are
    the cells that differ only in the last axis, in that axis's version order."""
    rows: dict[tuple[str, tuple[tuple[str, str], ...]], list[PublishedCell]] = {}
    for c in cells:
        rows.setdefault((c.python, c.versions[:-1]), []).append(c)
    out: set[Key] = set()
    for row in rows.values():
        row.sort(key=lambda c: vkey(c.versions[-1][1]))
        at = edge_positions([c.passes for c in row], [c.outside is None for c in row])
        out |= {row[i].key for i in at}
    return out
