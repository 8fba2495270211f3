"""The lock solver's bookkeeping: the constraints found so far, each with its evidence, and
the texts they become (constraints.txt lines, report lines, JSON).

A constraint holds one package below the release that broke the repro. It is added only with
its proof: in one environment (the rest held), ``last_good`` passed and ``first_bad`` failed
the way the newest environment did. Once the newest environment under the constraints
passes, each constraint is tried away; one whose removal still passes (a later release fixed
it, or it was an interaction that another constraint now covers) is dropped, and the lock
moves to the newer environment; one whose removal fails is kept, with that failure as its
present justification. Pure: no IO; modes/lock.py runs the probes.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from packaging.specifiers import SpecifierSet
from packaging.version import Version

from envbisect.model import Outcome


@dataclass(slots=True, kw_only=True)
class Constraint:
    package: str
    first_bad: str
    last_good: str
    outcome: Outcome  # how first_bad failed
    passed: str  # the label of the probe where last_good passed
    failed: str  # the label of the probe where first_bad failed
    moved_with: list[dict[str, Any]] = field(default_factory=list)
    interaction: list[str] = field(default_factory=list)  # the other packages it needs
    round: int = 0
    # The release moment where the failure it answers started (a by-date search), "" else.
    moment: str = ""
    # The drop check against the final lock: without this constraint, what failed.
    still_needed: Outcome | None = None
    still_needed_label: str = ""

    @property
    def specifier(self) -> str:
        return f"<{self.first_bad}"

    def line(self) -> str:
        """One constraints.txt line, its comment saying why (package metadata never reaches
        the comment unescaped: names and versions are checked, the signature is one line)."""
        sig = " ".join((self.outcome.signature or self.outcome.describe()).split())
        return (
            f"{self.package}{self.specifier}  # {self.first_bad} {self.outcome.kind.value}"
            f"{f' ({sig})' if sig else ''}; {self.last_good} passes"
        )

    def describe(self) -> str:
        moved = ", ".join(f"{m['package']} {m['from'] or 'absent'} -> {m['to'] or 'removed'}"
                          for m in self.moved_with)  # fmt: skip
        text = (
            f"{self.package} held below {self.first_bad}: {self.first_bad} "
            f"{self.outcome.describe()}; {self.last_good} passes in the same environment"
        )
        if moved:
            text += f" (moved with it: {moved})"
        if self.interaction:
            text += f" (an interaction with {', '.join(self.interaction)})"
        return text

    def to_dict(self) -> dict[str, Any]:
        o = self.outcome
        return {
            "package": self.package,
            "specifier": self.specifier,
            "first_bad": self.first_bad,
            "last_good": self.last_good,
            "outcome": {"kind": o.kind.value, "signal": o.signal, "signature": o.signature},
            "evidence": {"passed": self.passed, "failed": self.failed},
            "moved_with": self.moved_with,
            "interaction": self.interaction,
            "round": self.round,
            **({"breakpoint": self.moment} if self.moment else {}),
            "still_needed": (
                {"label": self.still_needed_label, "outcome": self.still_needed.to_dict()}
                if self.still_needed is not None
                else None
            ),
        }


@dataclass(slots=True, kw_only=True)
class Constraints:
    """The constraints in the order found; ``specifiers`` is what the planner is given."""

    held: list[Constraint] = field(default_factory=list)
    dropped: list[tuple[Constraint, str]] = field(default_factory=list)  # and why

    def specifiers(self, without: str | None = None) -> dict[str, SpecifierSet]:
        return {c.package: SpecifierSet(c.specifier) for c in self.held if c.package != without}

    def add(self, c: Constraint) -> None:
        """Hold ``c``; a package held already keeps the lower bound (it broke again lower
        down, or this constraint answers a later failure that the held one covers)."""
        same = [h for h in self.held if h.package == c.package]
        if same and all(Version(h.first_bad) <= Version(c.first_bad) for h in same):
            return
        self.held = [h for h in self.held if h.package != c.package]
        self.held.append(c)

    def drop(self, package: str, why: str) -> None:
        for c in self.held:
            if c.package == package:
                self.dropped.append((c, why))
        self.held = [c for c in self.held if c.package != package]

    def drop_order(self) -> list[str]:
        """The newest constraint first: the one most likely made unnecessary by a later one."""
        return [c.package for c in reversed(self.held)]

    def text(self, header: Iterable[str]) -> str:
        out = [f"# {h}" for h in header]
        out += [c.line() for c in sorted(self.held, key=lambda c: c.package)]
        return "\n".join(out) + "\n"


def held_back(newest: Mapping[str, str], locked: Mapping[str, str]) -> list[tuple[str, str, str]]:
    """(package, locked version, newest allowed without the constraints) where they differ."""
    return [
        (n, locked[n], newest[n])
        for n in sorted(locked.keys() & newest.keys())
        if locked[n] != newest[n]
    ]
