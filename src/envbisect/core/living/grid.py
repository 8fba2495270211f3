"""A table's grids: its sections, their rows and columns, and the cell at each square.

Pure: published cells in (``core.living.cell``), ``Section``s out, one per Python and per
value of each axis after the second; rows are the first axis's values and columns the
second's, in version order. ``core.living.findings`` reads ranges off them; ``tables`` and
``page`` draw them.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from packaging.version import InvalidVersion, Version

from envbisect.core.living.cell import PublishedCell


def vkey(text: str) -> tuple[int, Any]:
    """Sort key for version strings: versions in order, anything else after them."""
    try:
        return (0, Version(text))
    except InvalidVersion:
        return (1, text)


def sect_key(cell: PublishedCell, axes: Sequence[str]) -> tuple[str, str]:
    """Where the cell sits in its section: (row, column)."""
    return (cell.version(axes[0]), cell.version(axes[1]) if len(axes) > 1 else "")


@dataclass(frozen=True, slots=True, kw_only=True)
class Section:
    """One grid of a table: a Python (and a value of each axis after the second)."""

    title: str  # "Python 3.11" (", c 2.0" for a third axis)
    rows: tuple[str, ...]  # the first axis's values, oldest first
    cols: tuple[str, ...]  # the second's ("" alone when there is none)
    cells: Mapping[
        tuple[str, str], PublishedCell
    ]  # (row, column) -> the cell there, where there is one


def grid(cells: Sequence[PublishedCell], axes: Sequence[str]) -> list[Section]:
    """Sections (one per Python and third-axis value): rows, columns and the cell at each."""
    out = []
    pythons = sorted({c.python for c in cells})
    extra = axes[2:]
    for py in pythons:
        mine = [c for c in cells if c.python == py]
        values = {a: sorted({c.version(a) for c in mine}, key=vkey) for a in axes}
        for combo in itertools.product(*(values[a] for a in extra)):
            fixed = dict(zip(extra, combo, strict=True))
            sect = [c for c in mine if all(c.version(a) == v for a, v in fixed.items())]
            title = f"Python {py}" + "".join(f", {a} {v}" for a, v in fixed.items())
            out.append(
                Section(
                    title=title,
                    rows=tuple(values[axes[0]]),
                    cols=tuple(values[axes[1]]) if len(axes) > 1 else ("",),
                    cells={sect_key(c, axes): c for c in sect},
                )
            )
    return out
