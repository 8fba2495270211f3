"""The lock solver's bookkeeping: the constraints found so far, each with its evidence
(``core.results.lock.Constraint``: a frozen value, its texts and JSON), and constraints.txt.

A constraint holds one package below the release that broke the repro. It is added only with
its proof: in one environment (the rest held), ``last_good`` passed and ``first_bad`` failed
the way the newest environment did. Once the newest environment under the constraints
passes, each constraint is tried away; one whose removal still passes (a later release fixed
it, or it was an interaction that another constraint now covers) is dropped, and the lock
moves to the newer environment; one whose removal fails is kept, with that failure as its
present justification. Pure: no IO; modes/lock/solve.py runs the probes.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace

from packaging.specifiers import SpecifierSet
from packaging.version import Version

from envbisect.core.results.lock import Constraint, Dropped, HeldBack
from envbisect.model import Outcome


@dataclass(slots=True, kw_only=True)
class Constraints:
    """The constraints in the order found; ``specifiers`` is what the planner is given."""

    held: list[Constraint] = field(default_factory=list)
    dropped: list[Dropped] = field(default_factory=list)

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
                self.dropped.append(Dropped(constraint=c, why=why))
        self.held = [c for c in self.held if c.package != package]

    def get(self, package: str) -> Constraint:
        return next(c for c in self.held if c.package == package)

    def still_needed(self, package: str, outcome: Outcome | None, label: str) -> None:
        """The drop check of ``package``'s constraint: without it, ``label`` did ``outcome``
        (None: the requirements do not resolve without it)."""
        self.held = [
            replace(c, still_needed=outcome, still_needed_label=label)
            if c.package == package
            else c
            for c in self.held
        ]

    def drop_order(self) -> list[str]:
        """The newest constraint first: the one most likely made unnecessary by a later one."""
        return [c.package for c in reversed(self.held)]

    def text(self, header: Iterable[str]) -> str:
        out = [f"# {h}" for h in header]
        out += [c.line() for c in sorted(self.held, key=lambda c: c.package)]
        return "\n".join(out) + "\n"


def held_back(newest: Mapping[str, str], locked: Mapping[str, str]) -> tuple[HeldBack, ...]:
    """Each package whose locked version differs from the newest allowed without the
    constraints."""
    return tuple(
        HeldBack(package=n, locked=locked[n], newest=newest[n])
        for n in sorted(locked.keys() & newest.keys())
        if locked[n] != newest[n]
    )
