"""Keeping a published matrix current: which cells are new, which stay, which leave, which to
check again.

Pure: the cells a table published (``PublishedCell``s) and each axis's versions on
the index now in; an ``UpdatePlan`` out. A cell already published keeps its outcome and its
lockfile: its environment is what it was when it was measured, and nothing moves it. A cell
whose axis value is no longer selected leaves the table, and says why: the version was yanked,
it is gone from the index, or the axis's rule no longer selects it (a newer patch of the same
minor under ``minor-latest``). ``--recheck DAYS`` names the measured cells older than DAYS:
each is probed again in exactly its locked environment (what it had installed), so a verdict
is tested again without a moving environment. Inferred cells are never rechecked (they have
no environment of their own); the measured cells they were inferred from are.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import Any

from envbisect.core.living.cell import CellState, Key, PublishedCell, Versions, combo

__all__ = ["Key", "Versions", "combo"]  # the cell's types, where update's callers found them

YANKED = "yanked on the index"
NOT_LISTED = "no longer on the index"
NOT_SELECTED = "no longer selected by the axis"


@dataclass(frozen=True, slots=True, kw_only=True)
class AxisNow:
    """One axis as the index has it now."""

    package: str
    selected: tuple[str, ...]  # the versions the axis selects, oldest first
    yanked: frozenset[str] = frozenset()  # versions whose every file is yanked
    listed: frozenset[str] = frozenset()  # every version the index lists at all


@dataclass(frozen=True, slots=True, kw_only=True)
class Gone:
    """An axis value that leaves the table, and why."""

    python: str
    package: str
    version: str
    why: str
    cells: int

    def text(self) -> str:
        n = f"{self.cells} cell{'s' * (self.cells != 1)}"
        return f"{self.package} {self.version} ({self.why}; Python {self.python}): {n}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "python": self.python,
            "package": self.package,
            "version": self.version,
            "why": self.why,
            "cells": self.cells,
        }


@dataclass(frozen=True, slots=True, kw_only=True)
class UpdatePlan:
    """What ``matrix --update`` does for one Python."""

    python: str
    new: tuple[Versions, ...]  # cells to probe: in the matrix now, never published
    kept: int  # published cells that stay as they are
    gone: tuple[Gone, ...] = ()
    recheck: tuple[Versions, ...] = field(default=())  # measured cells to probe again, locked

    def to_dict(self) -> dict[str, Any]:
        return {
            "python": self.python,
            "new": [dict(v) for v in self.new],
            "kept": self.kept,
            "gone": [g.to_dict() for g in self.gone],
            "recheck": [dict(v) for v in self.recheck],
        }

    def lines(self) -> list[str]:
        """The plan in words, one line each (``--dry-run``)."""
        leaving = sum(g.cells for g in self.gone)
        head = (
            f"Python {self.python}: {len(self.new)} new cell(s) to probe, {self.kept} "
            f"kept, {leaving} leaving, {len(self.recheck)} to recheck"
        )
        return [
            head,
            *(f"  probe:   {combo(v)}" for v in self.new),
            *(f"  recheck: {combo(v)} (its locked environment)" for v in self.recheck),
            *(f"  leaves:  {g.text()}" for g in self.gone),
        ]


def plan_update(
    python: str,
    published: Sequence[PublishedCell],
    axes_now: Sequence[AxisNow],
    *,
    now: datetime,
    recheck_days: float | None = None,
) -> UpdatePlan:
    """The update of one Python's cells: ``published`` may hold other Pythons' (ignored)."""
    mine = [c for c in published if c.python == python]
    old = {c.versions: c for c in mine}
    wanted = [
        tuple(zip((a.package for a in axes_now), combo_, strict=True))
        for combo_ in itertools.product(*(a.selected for a in axes_now))
    ]
    wanted_set = set(wanted)
    new = tuple(v for v in wanted if v not in old)
    gone: list[Gone] = []
    for i, axis in enumerate(axes_now):
        before = sorted({v[i][1] for v in old})
        for version in (v for v in before if v not in axis.selected):
            n = sum(1 for v in old if v[i][1] == version)
            gone.append(
                Gone(
                    python=python,
                    package=axis.package,
                    version=version,
                    why=_why_gone(axis, version),
                    cells=n,
                )
            )
    kept = [v for v in old if v in wanted_set]
    recheck: tuple[Versions, ...] = ()
    if recheck_days is not None:
        cutoff = now - timedelta(days=recheck_days)
        recheck = tuple(v for v in kept if _recheckable(old[v], cutoff))
    return UpdatePlan(python=python, new=new, kept=len(kept), gone=tuple(gone), recheck=recheck)


def gone_pythons(published: Sequence[PublishedCell], pythons: Sequence[str]) -> list[Gone]:
    """The published Pythons the matrix no longer names: their cells leave the table."""
    counts: dict[str, int] = {}
    for c in published:
        if c.python not in pythons:
            counts[c.python] = counts.get(c.python, 0) + 1
    return [
        Gone(python=py, package="python", version=py, why="no longer in the matrix", cells=n)
        for py, n in sorted(counts.items())
    ]


def _why_gone(axis: AxisNow, version: str) -> str:
    if version in axis.yanked:
        return YANKED
    if version not in axis.listed:
        return NOT_LISTED
    return NOT_SELECTED


def _recheckable(cell: PublishedCell, cutoff: datetime) -> bool:
    """Measured, with an environment to lock, and measured before ``cutoff`` (a date that
    cannot be read counts as old: checking again is the safe side)."""
    if cell.state is not CellState.MEASURED or not cell.installed:
        return False
    return instant(cell.measured_at) <= cutoff


def instant(text: object) -> datetime:
    """A published date as an aware datetime (UTC when it names no zone); one that does not
    parse is the earliest there is."""
    try:
        when = datetime.fromisoformat(str(text).replace("Z", "+00:00"))
    except ValueError:
        return datetime.min.replace(tzinfo=timezone.utc)
    return when if when.tzinfo else when.replace(tzinfo=timezone.utc)


def merge(
    previous: Sequence[PublishedCell],
    fresh: Sequence[PublishedCell],
    axes_now: Mapping[str, Sequence[Sequence[str]]] | None,
) -> list[PublishedCell]:
    """The cells to publish: the published ones, each replaced by the store's cell of the same
    key (``fresh``: measured since), then the store's new ones; with ``axes_now`` (python ->
    each axis's versions, as the last run selected them) only the cells inside them, so a
    value that left the matrix leaves the table. Ordered as the store orders cells."""
    by_key: dict[Key, PublishedCell] = {c.key: c for c in previous}
    by_key.update({c.key: c for c in fresh})
    if axes_now is not None:
        by_key = {
            k: c
            for k, c in by_key.items()
            if k[0] in axes_now
            and len(axes_now[k[0]]) == len(k[1])
            and all(v in axes_now[k[0]][i] for i, (_, v) in enumerate(k[1]))
        }
    return [by_key[k] for k in sorted(by_key, key=lambda k: (k[0], json.dumps(dict(k[1]))))]
