"""``envbisect versions``'s answer: every version of a package, and why each excluded one is.

Pure: ``excluded_reason`` is the one rule (yanked, then a pre-release without ``--pre``, then
no file for the target, then outside the pins); modes/listing.py reads the index and the pins.
The ``--json`` object: ``package``, ``target``, ``candidates`` (one row per version, oldest
first, each with its ``excluded_reason``, null when it is kept).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from packaging.specifiers import SpecifierSet

from envbisect.model import Candidate


def excluded_reason(c: Candidate, pins: SpecifierSet, *, pre: bool) -> str | None:
    """Why ``c`` is not a candidate of a search under ``pins``, or None when it is."""
    if c.yanked:
        return "yanked"
    if c.prerelease and not pre:
        return "pre-release (pass --pre to include)"
    if not c.installable:
        return c.reason
    if not pins.contains(c.version, prereleases=True):
        return f"outside the pins ({pins})"
    return None


@dataclass(frozen=True, slots=True, kw_only=True)
class VersionRow:
    version: str
    upload_time: datetime | None
    yanked: bool
    prerelease: bool
    installable: bool
    in_range: bool  # the pins allow it
    excluded_reason: str | None

    def to_dict(self) -> dict[str, Any]:
        return {
            "version": self.version,
            "upload_time": self.upload_time.isoformat() if self.upload_time else None,
            "yanked": self.yanked,
            "prerelease": self.prerelease,
            "installable": self.installable,
            "in_range": self.in_range,
            "excluded_reason": self.excluded_reason,
        }

    def line(self) -> str:
        when = self.upload_time.isoformat()[:10] if self.upload_time else "no date"
        why = f"  excluded: {self.excluded_reason}" if self.excluded_reason else ""
        return f"  {self.version:<16} {when:<10}{why}"


@dataclass(frozen=True, slots=True, kw_only=True)
class VersionsResult:
    """The typed answer of ``envbisect versions``."""

    package: str  # as the command line named it
    target: str  # the target's short label
    pins: str  # the pins' specifier for the package, "" when they say nothing
    rows: tuple[VersionRow, ...]

    @classmethod
    def of(
        cls,
        package: str,
        target: str,
        pins: SpecifierSet,
        candidates: Iterable[Candidate],
        *,
        pre: bool,
    ) -> VersionsResult:
        rows = tuple(
            VersionRow(
                version=str(c.version),
                upload_time=c.upload_time,
                yanked=c.yanked,
                prerelease=c.prerelease,
                installable=c.installable,
                in_range=pins.contains(c.version, prereleases=True),
                excluded_reason=excluded_reason(c, pins, pre=pre),
            )
            for c in candidates
        )
        return cls(package=package, target=target, pins=str(pins), rows=rows)

    @property
    def kept(self) -> int:
        return sum(1 for r in self.rows if r.excluded_reason is None)

    def lines(self) -> list[str]:
        head = f"{self.package}: {self.kept} candidate(s) of {len(self.rows)} for {self.target}"
        head += f", pins {self.pins}" if self.pins else ""
        return [head, *(r.line() for r in self.rows)]

    def to_dict(self) -> dict[str, Any]:
        return {
            "package": self.package,
            "target": self.target,
            "candidates": [r.to_dict() for r in self.rows],
        }
