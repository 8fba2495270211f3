"""What an environment report says beyond its pins: its facts, each mapped row, each commit.

Plain data, held by the ``PinSet`` a report was read into (``PinSet.report``, core/pins/sources.py)
and made by core/pins/from_report.py, which says what the facts mean on this machine. Apart from
both, so that the pins know the type without importing the mapping.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from envbisect.core.envreport.report import EnvReport


@dataclass(frozen=True, slots=True, kw_only=True)
class Mapped:
    """A row whose pin is not its version as written: what was reported, what is used, why.
    ``used`` None: no pin (the row names no package envbisect can install)."""

    name: str
    reported: str
    used: str | None
    why: str
    line: int
    warning: bool = True

    def to_dict(self) -> dict[str, Any]:
        return {
            "package": self.name,
            "reported": self.reported,
            "used": self.used,
            "why": self.why,
            "line": self.line,
        }


@dataclass(frozen=True, slots=True, kw_only=True)
class ReportedCommit:
    """A git commit a report names for a package, and where its repository is (if known)."""

    package: str
    commit: str
    repository: str | None

    def to_dict(self) -> dict[str, Any]:
        return {"package": self.package, "commit": self.commit, "repository": self.repository}


@dataclass(frozen=True, slots=True, kw_only=True)
class ReportFacts:
    """What an environment report says beyond its pins (``PinSet.report``)."""

    report: EnvReport
    origin: str
    variant: str | None = None  # torch's build: cu126, cpu, rocm6.2 (None: not said)
    mapped: tuple[Mapped, ...] = ()
    commits: tuple[ReportedCommit, ...] = ()

    @property
    def formats(self) -> tuple[str, ...]:
        return self.report.formats

    @property
    def python(self) -> str | None:
        return self.report.python

    def to_dict(self) -> dict[str, Any]:
        r = self.report
        return {
            "formats": list(r.formats),
            "python": r.python,
            "platform": r.platform,
            "system": r.system,
            "machine": r.machine,
            "gpu": r.gpu,
            "torch_variant": self.variant,
            "subject": r.subject,
            "mapped": [m.to_dict() for m in self.mapped],
            "commits": [c.to_dict() for c in self.commits],
            "left_out": list(r.left_out),
        }
