"""``envbisect run --by-date``'s answer: the release moment that broke the environment, its
culprit releases, and whether each failed alone on the last good environment.

Pure values; modes/bydate.py fills them. The ``--json`` keys (``culprits``,
``first_bad_date``, ``last_good_date``, ``confirmation``) come after the search's.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from envbisect.core.results.diff import Culprit
from envbisect.core.results.parts import Moved
from envbisect.core.results.search import SearchResult
from envbisect.model import Outcome


@dataclass(frozen=True, slots=True, kw_only=True)
class Confirmation:
    """One culprit release added alone to the environment right before the first bad moment:
    ``confirmed`` when it fails as the first bad environment did, None when no consistent
    environment has it (``reason``); ``moved_with_it``: what the planner moved with it."""

    package: str
    confirmed: bool | None
    reason: str = ""
    outcome: Outcome | None = None
    moved_with_it: tuple[Moved, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        if self.outcome is None:
            return {"package": self.package, "confirmed": self.confirmed, "reason": self.reason}
        return {
            "package": self.package,
            "confirmed": self.confirmed,
            "outcome": self.outcome.to_dict(),
            "moved_with_it": [m.to_dict() for m in self.moved_with_it],
        }

    def said(self) -> str:
        """How it went, in a few words (the CLI's culprit line)."""
        if self.confirmed is None:
            return "not confirmed"
        if self.confirmed:
            return "confirmed alone on the last good environment"
        return "not confirmed alone"


@dataclass(frozen=True, slots=True, kw_only=True)
class DateResult(SearchResult):
    """The search over release moments (``package`` is ``(by date)``), and once found the
    releases of the first bad moment that the failing environment took (``culprits``,
    ``good_version`` None when the package was absent) and each one's confirmation."""

    culprits: tuple[Culprit, ...] = ()
    first_bad_date: datetime | None = None
    last_good_date: datetime | None = None
    confirmation: tuple[Confirmation, ...] = ()

    def confirmation_of(self, package: str) -> Confirmation | None:
        return next((c for c in self.confirmation if c.package == package), None)

    def section(self) -> str:
        """report.md's ``## Culprit`` section."""
        assert self.first_bad_date is not None
        when = f"{self.first_bad_date:%Y-%m-%d %H:%M:%S} UTC"
        lines = ["## Culprit", ""]
        for c in self.culprits:
            was = c.good_version or "absent"
            lines.append(f"- **{c.package} {c.bad_version}** (was {was}), uploaded {when}")
            conf = self.confirmation_of(c.package)
            if conf is None:
                continue
            if conf.confirmed:
                moved = ", ".join(f"{m.package} {m.before}→{m.after}" for m in conf.moved_with_it)
                tail = f" (moved with it: {moved})" if moved else ""
                env = "previous" if self.neighbour else "last good"
                lines.append(
                    f"  - confirmed: the {env} environment with only this change fails like "
                    f"the first bad one{tail}"
                )
            else:
                why = conf.reason or (conf.outcome.describe() if conf.outcome else "")
                lines.append(f"  - not confirmed alone: {why}")
        return "\n".join(lines)

    def mode_dict(self) -> dict[str, Any]:
        if self.first_bad_date is None or self.last_good_date is None:
            return {}  # no answer: no moment to name
        return {
            "culprits": [c.to_dict() for c in self.culprits],
            "first_bad_date": self.first_bad_date.isoformat(),
            "last_good_date": self.last_good_date.isoformat(),
            "confirmation": [c.to_dict() for c in self.confirmation],
        }
