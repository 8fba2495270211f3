"""``envbisect diff``'s answer: the culprits between two environments, and their evidence.

Pure values: a ``Culprit`` (a package, the versions that bracket its break, what moved with
it, what it forces), the ``Roots`` of ddmin's set and the ``Check`` probes that verify them,
and the ``DiffResult`` that holds them, with its ``--json`` keys (``culprits``,
``interaction``, ``roots``, ``changed``) and its lines in words, which the CLI prints and
report.md lists, so that the two say what ``--json`` says. modes/diff/mode.py fills it;
modes/diff/engine.py finds what goes in it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from envbisect.core.results.parts import BreakpointRow, Moved
from envbisect.core.results.search import SearchResult

Change = tuple[str, str | None, str | None]  # (package, good version, bad version)


@dataclass(frozen=True, slots=True, kw_only=True)
class Culprit:
    """One package the failure needs: ``good_version`` passes, ``bad_version`` (its first bad
    version, when its versions between the ends could be bisected) fails. ``moved_with``:
    what the planner moved with it where its first bad version failed; ``forced``: the members
    of ddmin's set its change forces (once the roots verified); ``breakpoints``: when its
    versions fail more than one way."""

    package: str
    good_version: str | None  # None: absent from GOOD
    bad_version: str | None  # None: removed in BAD
    breakpoints: tuple[BreakpointRow, ...] = ()
    moved_with: tuple[Moved, ...] = ()
    forced: tuple[str, ...] = ()

    @property
    def change(self) -> Change:
        return (self.package, self.good_version, self.bad_version)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "package": self.package,
            "good_version": self.good_version,
            "bad_version": self.bad_version,
        }
        if self.breakpoints:
            out["breakpoints"] = [b.to_dict() for b in self.breakpoints]
        if self.moved_with:
            out["moved_with"] = [m.to_dict() for m in self.moved_with]
        if self.forced:
            out["forced"] = list(self.forced)
        return out

    def describe(self) -> str:
        """``lib 1.1.0 -> 2.0.0 (moved with it: app 1.5.0 -> 2.0.0)``."""
        text = f"{self.package} {self.good_version or 'absent'} -> {self.bad_version or 'removed'}"
        if self.moved_with:
            text += f" (moved with it: {', '.join(m.describe() for m in self.moved_with)})"
        return text


@dataclass(frozen=True, slots=True, kw_only=True)
class Check:
    """One verification probe: the environment (``GOOD + ...``), what it had to do, what it
    did (an outcome kind, or ``unresolvable``: no consistent environment inside the span)."""

    environment: str
    expected: str  # "fail like BAD" | "fail" | "pass or unresolvable"
    outcome: str
    held: bool

    def to_dict(self) -> dict[str, Any]:
        return {
            "environment": self.environment,
            "expected": self.expected,
            "outcome": self.outcome,
            "held": self.held,
        }


@dataclass(frozen=True, slots=True, kw_only=True)
class Roots:
    """ddmin's set, its roots, what each root forces, and the verification of the roots.

    ``culprits``: the roots when they verified, else ddmin's set (``note`` says why)."""

    ddmin: tuple[Change, ...]
    roots: tuple[Change, ...]
    forced: Mapping[str, tuple[str, ...]]  # root -> the members of ddmin's set it forces
    checks: tuple[Check, ...]
    verified: bool
    note: str = ""

    @property
    def culprits(self) -> tuple[Change, ...]:
        return self.roots if self.verified else self.ddmin

    def forced_by(self, name: str) -> tuple[str, ...]:
        """The members forced by culprit ``name`` (none when the roots did not verify)."""
        return self.forced.get(name, ()) if self.verified else ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "ddmin": [c[0] for c in self.ddmin],
            "roots": [c[0] for c in self.roots],
            "verified": self.verified,
            "checks": [c.to_dict() for c in self.checks],
            **({"note": self.note} if self.note else {}),
        }

    def lines(self, culprits: tuple[Culprit, ...]) -> list[str]:
        """The reduction in words, for the text answer and report.md alike."""
        lines = [
            f"forced by {c.package} {c.bad_version}: {', '.join(c.forced)} (its requirements; "
            "not culprits)"
            for c in culprits
            if c.forced
        ]
        checks = "; ".join(f"{c.environment}: {c.outcome}" for c in self.checks)
        lines.append(
            f"roots verified: {checks}" if self.verified else f"roots not verified: {self.note}"
        )
        return lines


@dataclass(frozen=True, slots=True, kw_only=True)
class DiffResult(SearchResult):
    """The search between GOOD and BAD (``first_new`` is ``BAD``, ``last_old`` ``GOOD``,
    ``candidates`` the number of changed packages), and once found its culprits, the roots
    of ddmin's set, and every change between the two ends."""

    culprits: tuple[Culprit, ...] = ()
    roots: Roots | None = None
    changed: tuple[Change, ...] = ()

    @property
    def interaction(self) -> bool:
        """Two or more culprits: the failure needs them together."""
        return len(self.culprits) > 1

    def lines(self) -> list[str]:
        """The answer in words: the CLI prints these lines, report.md lists them."""
        what = "interaction" if self.interaction else "culprit"
        lines = [f"{what}: {c.describe()}" for c in self.culprits]
        if self.interaction:
            lines.append("an interaction: the failure needs all of them together")
        return lines + (self.roots.lines(self.culprits) if self.roots is not None else [])

    def mode_dict(self) -> dict[str, Any]:
        if self.roots is None:  # no answer: nothing was isolated
            return {}
        return {
            "culprits": [c.to_dict() for c in self.culprits],
            "interaction": self.interaction,
            "roots": self.roots.to_dict(),
            "changed": [
                {"package": n, "good_version": g, "bad_version": b} for n, g, b in self.changed
            ],
        }


def changes_between(good: Mapping[str, Any], bad: Mapping[str, Any]) -> list[Change]:
    """Every package whose version differs between two sets of pins, by name."""
    return [
        (n, str(good[n]) if n in good else None, str(bad[n]) if n in bad else None)
        for n in sorted(good.keys() | bad.keys())
        if good.get(n) != bad.get(n)
    ]
