"""What a matrix found, in sentences: the combination to use, and the failures by cause.

Pure: published cells in (``core.living.cell``), value objects out.
``recommended`` picks, per Python, the passing measured cell with the newest versions (axis
order: the first axis counts most), the one ``recommended-py<X>.txt`` is the lockfile of.
``findings`` groups the cells that do not pass by their outcome and their signature (with
the cell's own versions taken out, so "the same failure" in every cell groups together),
splits each group into rectangles of row and column values and says which ranges they cover:
"peft 0.16.0 to 0.17.1 fail with every transformers >= 5.0.0: ImportError: ...".
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from envbisect.core.living.cell import CellState, PublishedCell
from envbisect.core.living.grid import Section, sect_key, vkey
from envbisect.model import OutcomeKind

__all__ = ["Finding", "findings", "recommended", "vkey"]  # vkey: where callers found it

# The outcome a cell counts as: unresolvable first (never built), then the kind measured or
# inferred. Passing cells and cells never measured make no finding.
_VERBS = {
    # kind -> (singular, plural) verb, before "with ..."
    "fail": ("fails", "fail"),
    "crash": ("crashes", "crash"),
    "timeout": ("times out", "time out"),
    "untestable": ("cannot be built or probed", "cannot be built or probed"),
    "unresolvable": ("cannot be installed", "cannot be installed"),
}
# A path in a message, in parentheses: the reason reads the same without it.
_PAREN_PATH = re.compile(r"\s*\((?:<env>|/)[^)]*\)")
MAX_REASON = 120


@dataclass(frozen=True, slots=True, kw_only=True)
class Finding:
    """One rectangle of cells that do not pass for the same reason."""

    section: str  # "Python 3.11" (and any third axis's value)
    kind: str  # fail, crash, timeout, untestable, unresolvable
    text: str  # the sentence, without the reason
    reason: str  # the shared signature, shortened
    cells: int
    inferred: int  # how many of them were inferred, not measured

    def sentence(self) -> str:
        return f"{self.text}: {self.reason}" if self.reason else self.text

    def to_dict(self) -> dict[str, Any]:
        return {
            "section": self.section,
            "kind": self.kind,
            "text": self.sentence(),
            "cells": self.cells,
            "inferred": self.inferred,
        }


def recommended(cells: Sequence[PublishedCell]) -> dict[str, PublishedCell]:
    """Per Python: the passing measured cell with the newest versions, axis by axis (one
    inside the pins where there is one: a table with outside_pins measures past them, and
    recommends what its packages allow)."""
    out: dict[str, PublishedCell] = {}
    passing = [c for c in cells if c.passes]
    for py in sorted({c.python for c in passing}, key=vkey):
        mine = [c for c in passing if c.python == py]
        mine = [c for c in mine if c.outside is None] or mine
        out[py] = max(mine, key=lambda c: [vkey(v) for _, v in c.versions])
    return out


def category(cell: PublishedCell) -> str | None:
    """What a cell counts as in the findings; ``None`` for a pass or an unknown."""
    if cell.state is CellState.UNRESOLVABLE:
        return "unresolvable"
    if cell.state not in (CellState.MEASURED, CellState.INFERRED) or cell.kind in (
        None,
        OutcomeKind.PASS,
    ):
        return None
    return str(cell.kind.value) if cell.kind is not None else None


def normalise(cell: PublishedCell) -> str:
    """The cell's signature without its own versions: the same failure in every cell."""
    text = cell.signature
    if text.startswith("unresolvable: "):
        text = text[len("unresolvable: ") :]
    for name, version in cell.versions:
        v = re.escape(version)
        text = re.sub(rf"(?i)\b({re.escape(name)})(?:==| |-){v}(?![\w.])", r"\1", text)
    return text


def reason(cell: PublishedCell) -> str:
    """A short reason for the cell itself (shown in the cell, the full text on hover)."""
    text = cell.signature
    if cell.state is CellState.UNRESOLVABLE:
        text = text.removeprefix("unresolvable: ").rsplit("; ", 1)[-1]
    return _shorten(text)


def _shorten(text: str) -> str:
    text = " ".join(_PAREN_PATH.sub("", text).split())
    return text if len(text) <= MAX_REASON else text[: MAX_REASON - 1].rstrip() + "…"


def findings(
    cells: Sequence[PublishedCell], axes: Sequence[str], sections: Sequence[Section]
) -> list[Finding]:
    """Every rectangle of non-passing cells with one cause, biggest first.

    ``sections`` are ``tables.grid``'s: their row and column values give the ranges their
    order and their ends ("every X >= v" when a range runs to the last value)."""
    out: list[Finding] = []
    for sect in sections:
        rows, cols = list(sect.rows), list(sect.cols)
        groups: dict[tuple[str, str], dict[str, set[str]]] = {}
        members: dict[tuple[str, str], list[PublishedCell]] = {}
        for (r, c), cell in sect.cells.items():
            cat = category(cell)
            if cat is None:
                continue
            key = (cat, normalise(cell))
            groups.setdefault(key, {}).setdefault(r, set()).add(c)
            members.setdefault(key, []).append(cell)
        for (cat, sig), by_row in groups.items():
            # Rows with the same set of columns make one rectangle.
            shapes: dict[frozenset[str], list[str]] = {}
            for r, cs in by_row.items():
                shapes.setdefault(frozenset(cs), []).append(r)
            mine = members[(cat, sig)]
            short = _shorten(sig.rsplit("; ", 1)[-1] if cat == "unresolvable" else sig)
            for colset, rowlist in shapes.items():
                picked = [
                    c
                    for c in mine
                    if sect_key(c, axes) in {(r, k) for r in rowlist for k in colset}
                ]
                text = _describe(cat, axes, rows, cols, set(rowlist), set(colset), picked)
                out.append(
                    Finding(
                        section=sect.title,
                        kind=cat,
                        text=text,
                        reason=short,
                        cells=len(picked),
                        inferred=sum(1 for c in picked if c.state is CellState.INFERRED),
                    )
                )
    out.sort(key=lambda f: (-f.cells, f.section, f.text))
    return out


def _describe(
    cat: str,
    axes: Sequence[str],
    rows: list[str],
    cols: list[str],
    rowset: set[str],
    colset: set[str],
    picked: Sequence[PublishedCell],
) -> str:
    row_text, row_open, row_one = _span(axes[0], rows, rowset)
    verb_one, verb_many = _VERBS.get(cat, (cat, cat))
    if cat == "crash":
        signals = sorted({c.signal for c in picked if c.signal})
        if signals:
            verb_one, verb_many = (
                f"{verb_one} ({', '.join(signals)})",
                f"{verb_many} ({', '.join(signals)})",
            )
    if len(axes) < 2:
        return f"{row_text} {verb_one if row_one else verb_many}"
    col_text, col_open, col_one = _span(axes[1], cols, colset)
    # The subject is the bounded range (the releases at fault); the open one is "every ...".
    flip = row_open and not col_open
    subject, one = (col_text, col_one) if flip else (row_text, row_one)
    other, other_open = (row_text, row_open) if flip else (col_text, col_open)
    verb = verb_one if one else verb_many
    every = "every " if other_open and not other.startswith("every ") else ""
    return f"{subject} {verb} with {every}{other}"


def _span(axis: str, values: list[str], chosen: set[str]) -> tuple[str, bool, bool]:
    """``chosen`` as ranges of ``values``: the text, whether a range is open-ended, whether
    it is one value."""
    runs: list[tuple[int, int]] = []
    for i, v in enumerate(values):
        if v not in chosen:
            continue
        if runs and runs[-1][1] == i - 1:
            runs[-1] = (runs[-1][0], i)
        else:
            runs.append((i, i))
    last = len(values) - 1
    parts: list[str] = []
    open_ended = False
    for lo, hi in runs:
        if lo == 0 and hi == last and last > 0:
            open_ended = True
            parts.append("")
        elif hi == last and lo < hi:
            open_ended = True
            parts.append(f">= {values[lo]}")
        elif lo == 0 and lo < hi:
            open_ended = True
            parts.append(f"<= {values[hi]}")
        elif lo == hi:
            parts.append(values[lo])
        else:
            parts.append(f"{values[lo]} to {values[hi]}")
    if parts == [""]:
        return f"every {axis}", True, False
    joined = ", ".join(p for p in parts if p) if len(parts) <= 3 else f"{len(chosen)} versions"
    return f"{axis} {joined}", open_ended, len(chosen) == 1
