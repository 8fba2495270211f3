"""What changed between two publishes of a matrix: the short history ``results.json`` keeps.

Pure: the cells published before and the cells published now in (``PublishedCell``s), a
``Change`` out, or ``None`` when nothing changed. A change names the cells
added (new rows, new columns, and what was found among them), the cells removed and why (a
version yanked, gone or no longer selected), and the outcomes that changed (on a recheck, in
the same locked environment, or because the cell was measured again). Its ``lines`` are
written when it is made, from the cells of that moment, so the feed and the page say later
what was true then. ``append`` keeps the last ``LIMIT`` changes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from envbisect.core.living import findings, tables
from envbisect.core.living.cell import Key, PublishedCell, combo

LIMIT = 20
Cell = PublishedCell


def _versions(d: Mapping[str, Any]) -> tuple[tuple[str, str], ...]:
    return tuple((str(k), str(v)) for k, v in d["versions"].items())


@dataclass(frozen=True, slots=True, kw_only=True)
class Entry:
    """A cell as a change names it: its Python and versions, and what it showed (an added
    cell) or had shown (a removed one: ``why`` it left, the ``value`` that took it out)."""

    python: str
    versions: tuple[tuple[str, str], ...]
    outcome: str
    why: str | None = None  # removed only
    value: str | None = None  # removed only: "" when no value of its own took it out

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "python": self.python,
            "versions": dict(self.versions),
            "outcome": self.outcome,
        }
        if self.why is not None:
            out |= {"why": self.why, "value": self.value or ""}
        return out

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Entry:
        why = d.get("why")
        return cls(
            python=str(d["python"]),
            versions=_versions(d),
            outcome=str(d["outcome"]),
            why=None if why is None else str(why),
            value=None if why is None else str(d.get("value") or ""),
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class Changed:
    """A cell whose outcome changed: before and after, on a recheck in its locked environment
    or because it was measured again, and the reason its new outcome gives."""

    python: str
    versions: tuple[tuple[str, str], ...]
    before: str
    after: str
    recheck: bool
    reason: str | None

    def to_dict(self) -> dict[str, Any]:
        return {
            "python": self.python,
            "versions": dict(self.versions),
            "before": self.before,
            "after": self.after,
            "recheck": self.recheck,
            "reason": self.reason,
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Changed:
        reason = d.get("reason")
        return cls(
            python=str(d["python"]),
            versions=_versions(d),
            before=str(d["before"]),
            after=str(d["after"]),
            recheck=bool(d.get("recheck", False)),
            reason=None if reason is None else str(reason),
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class Change:
    """One publish that changed the table."""

    date: str  # when it was published (RFC 3339, UTC)
    since: str | None  # the publish before it (None: the first)
    command: str
    added: tuple[Entry, ...] = ()
    removed: tuple[Entry, ...] = ()  # each with why it left
    changed: tuple[Changed, ...] = ()
    rechecked: int = 0
    lines: tuple[str, ...] = ()  # the change in words, as it was when published
    run: str = ""  # the run it came from (run.json's "measured"): a run's rechecks count once

    def headline(self) -> str:
        parts = []
        if self.since is None:
            parts.append(f"first published: {len(self.added)} cells")
        elif self.added:
            parts.append(f"{len(self.added)} new cell{'s' * (len(self.added) != 1)}")
        if self.removed:
            parts.append(f"{len(self.removed)} removed")
        if self.changed:
            parts.append(f"{len(self.changed)} changed")
        if self.rechecked and not self.changed:
            parts.append(f"{self.rechecked} rechecked, none changed")
        return ", ".join(parts) or "no change"

    def title(self) -> str:
        return f"New since {self.since}" if self.since else f"Published {self.date}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "date": self.date,
            "since": self.since,
            "command": self.command,
            "headline": self.headline(),
            "added": [e.to_dict() for e in self.added],
            "removed": [e.to_dict() for e in self.removed],
            "changed": [e.to_dict() for e in self.changed],
            "rechecked": self.rechecked,
            "lines": list(self.lines),
            "run": self.run,
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Change:
        return cls(
            date=str(d["date"]),
            since=None if d.get("since") is None else str(d["since"]),
            command=str(d.get("command", "")),
            added=tuple(Entry.from_dict(e) for e in d.get("added", ())),
            removed=tuple(Entry.from_dict(e) for e in d.get("removed", ())),
            changed=tuple(Changed.from_dict(e) for e in d.get("changed", ())),
            rechecked=int(d.get("rechecked", 0)),
            lines=tuple(str(x) for x in d.get("lines", ())),
            run=str(d.get("run", "")),
        )


def read(data: object) -> list[Change]:
    """The history a ``results.json`` holds (none in one an older envbisect wrote); an entry
    that cannot be read is left out."""
    out = []
    for d in data if isinstance(data, list) else []:
        try:
            out.append(Change.from_dict(d))
        except (KeyError, TypeError, ValueError):
            continue
    return out


def append(history: Sequence[Change], change: Change | None, limit: int = LIMIT) -> list[Change]:
    out = [*history, *([change] if change is not None else [])]
    return out[-limit:]


def _summary(cell: Cell, *, why: str | None = None, value: str | None = None) -> Entry:
    versions = tuple((str(k), str(v)) for k, v in cell.versions_dict().items())
    return Entry(
        python=cell.python, versions=versions, outcome=tables.plain(cell), why=why, value=value
    )


def diff(
    previous: Sequence[Cell] | None,
    cells: Sequence[Cell],
    axes: Sequence[str],
    *,
    date: str,
    since: str | None,
    command: str = "",
    why_removed: Mapping[tuple[str, str, str], str] | None = None,
    rechecked: frozenset[Key] = frozenset(),
    run: str = "",
) -> Change | None:
    """The change from ``previous`` (None: nothing was published) to ``cells``, or None.

    ``why_removed``: (python, package, version) -> why that value left the table (from the
    update's plan); a removed cell with none of its values there "is no longer in the
    matrix". ``rechecked``: the cells probed again, locked."""
    before = {c.key: c for c in previous or ()}
    now = {c.key: c for c in cells}
    added = [c for k, c in now.items() if k not in before]
    removed = []
    for k, c in before.items():
        if k in now:
            continue
        values = [*k[1], ("python", k[0])]
        found = [(f"{p} {v}", w) for p, v in values if (w := (why_removed or {}).get((k[0], p, v)))]
        value, why = found[0] if found else ("", "no longer in the matrix")
        removed.append(_summary(c, why=why, value=value))
    changed = []
    for k, c in now.items():
        old = before.get(k)
        # a cell measured before and inferred now (or back) with the same outcome has not
        # changed: the page marks how each was known, "New since" lists outcomes that moved
        if old is not None and _outcome(old) != _outcome(c):
            changed.append(
                Changed(
                    python=k[0],
                    versions=tuple((str(p), str(v)) for p, v in k[1]),
                    before=tables.plain(old),
                    after=tables.plain(c),
                    recheck=k in rechecked,
                    reason=findings.reason(c),
                )
            )
    n_rechecked = sum(1 for k in rechecked if k in now and k in before)
    if previous is not None and not (added or removed or changed or n_rechecked):
        return None
    change = Change(
        date=date,
        since=since if previous is not None else None,
        command=command,
        added=tuple(_summary(c) for c in added),
        removed=tuple(removed),
        changed=tuple(changed),
        rechecked=n_rechecked,
        run=run,
    )
    lines = describe(change, added, cells, axes) if previous is not None else ()
    return Change(**{**_fields(change), "lines": tuple(lines)})


def _fields(c: Change) -> dict[str, Any]:
    return {f: getattr(c, f) for f in Change.__dataclass_fields__}


def describe(
    change: Change, added: Sequence[Cell], cells: Sequence[Cell], axes: Sequence[str]
) -> list[str]:
    """The change in plain sentences: new rows and columns, what was found among the new
    cells, what left the table and why, what changed on a recheck."""
    out = []
    fresh_keys = {c.key for c in added}
    old = [c for c in cells if c.key not in fresh_keys]
    for py in sorted({c.python for c in added}, key=findings.vkey):
        mine = [c for c in added if c.python == py]
        rest = [c for c in old if c.python == py]
        for i, axis in enumerate(axes[:2]):
            values = sorted({c.version(axis) for c in mine}, key=findings.vkey)
            known = {c.version(axis) for c in rest}
            fresh = [v for v in values if v not in known]
            if fresh and rest:
                what = "row" if i == 0 else "column"
                out.append(
                    f"new {what}{'s' * (len(fresh) != 1)} on Python {py}: {axis} {', '.join(fresh)}"
                )
    if added:
        out.append(
            f"{len(added)} new cell{'s' * (len(added) != 1)}: "
            + _counts([tables.plain(c) for c in added])
        )
        found = findings.findings(added, axes, tables.grid(added, axes))
        out += [f"found: {tables.where(f, found)}" for f in found]
    out += _left(change.removed)
    if change.rechecked:
        n = sum(1 for c in change.changed if c.recheck)
        what = f"{n} changed" if n else "no outcome changed"
        out.append(
            f"rechecked {change.rechecked} cell{'s' * (change.rechecked != 1)} in their "
            f"locked environments: {what}"
        )
    for c in change.changed:
        how = "on a recheck in its locked environment" if c.recheck else "measured again"
        why = f": {c.reason}" if c.reason else ""
        out.append(f"changed {how}: {_combo(c)}: {c.before} → {c.after}{why}")
    return out


def _outcome(cell: Cell) -> str:
    return tables.plain(cell).removesuffix(" (inferred)")


def _left(removed: Sequence[Entry]) -> list[str]:
    """The cells that left, by the value that took them out (a yanked release takes its
    whole row or column); a cell that left for no value of its own, one by one."""
    groups: dict[tuple[str, str, str], list[Entry]] = {}
    out = []
    for r in removed:
        if not r.value:
            out.append(f"left the table: {_combo(r)} ({r.why}; it was {r.outcome})")
            continue
        groups.setdefault((r.python, r.value, str(r.why)), []).append(r)
    for (python, value, why), cells in groups.items():
        n = f"{len(cells)} cell{'s' * (len(cells) != 1)}"
        out.append(
            f"left the table: {value} on Python {python} ({why}): {n}, "
            f"they were {_counts([c.outcome for c in cells])}"
        )
    return out


def _combo(entry: Entry | Changed) -> str:
    return f"{combo(entry.versions)} (Python {entry.python})"


def _counts(outcomes: Sequence[str]) -> str:
    """``3 pass, 1 fail``: the outcomes (each cell's in words), the commonest first."""
    counts: dict[str, int] = {}
    for what in outcomes:
        counts[what] = counts.get(what, 0) + 1
    return ", ".join(f"{n} {k}" for k, n in sorted(counts.items(), key=lambda kv: -kv[1]))


def latest(history: Sequence[Change]) -> Change | None:
    """The change the page and table.md lead with: the last one after the first publish."""
    return history[-1] if history and history[-1].since is not None else None
