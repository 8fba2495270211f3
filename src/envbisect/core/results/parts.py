"""The parts every mode's result is made of: its status, its rows, its breakpoints.

Pure, frozen values, each with its ``to_dict`` for ``--json`` (docs/reference/json.md): the
status of every result (``Status``), one probed point (``ProbeRow``) and what it counted as
(``RowVerdict``), a boundary between two
segments of a range (``BreakpointRow``), a named end that another version stood in for
(``StandIn``), a package that moved with another (``Moved``) and how a search ran
(``SearchSummary``). The results themselves are built from these:

    search   SearchResult (every search: run, commits), RunResult (run)
    bydate   DateResult (run --by-date): its culprits and their confirmation
    diff     DiffResult (diff): Culprit, the roots of ddmin's set and their checks
    lock     LockResult (lock): Constraint, and LockOutcome, what lock hands its outputs
"""

from __future__ import annotations

import enum
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from envbisect.model import InstalledDist, Outcome, ProbeRecord


class Direction(enum.Enum):
    """Which way the search looks: its ``--json`` ``direction``."""

    REGRESSION = "regression"  # old passes and new fails: find the first bad
    FIX = "fix"  # old fails and new passes: find the first fixed


class Status(enum.Enum):
    """How a mode's question ended: its ``--json`` ``status``."""

    FOUND = "found"
    AMBIGUOUS = "ambiguous"  # untestable points hide the boundary: one of ``possible``
    NO_ANSWER = "no-answer"  # the ends did not verify, or no culprit could be proven
    DRY_RUN = "dry-run"  # planned, nothing built (the plans are printed instead)


class RowVerdict(enum.Enum):
    """What a probed point counted as, as the report names it: its ``--json`` ``verdict``.

    Not the bisector's ``Verdict`` (strategy/verdicts.py: the old end's state or the new
    end's), which this is read from in the search's direction (strategy/protocol.py
    ``verdict``); a mode that does not bisect says ``NONE`` or its own good / bad."""

    GOOD = "good"
    BAD = "bad"
    SKIP = "skip"  # untestable (or a failure unlike the reference): narrows nothing
    OTHER = "other"  # a failure unlike the reference: a segment of its own
    END = "end"  # one of the ends, probed to verify them
    GUESS = "guess"  # built beside the ends before they decided the direction: relabelled
    NONE = ""  # no verdict: a mode that does not bisect (lock's probes, ddmin's subsets)


@dataclass(frozen=True, slots=True, kw_only=True)
class ProbeRow:
    """One point of the search, in the order it was visited."""

    version: str
    outcome: Outcome
    verdict: RowVerdict
    reused: bool
    build_seconds: float
    probe_seconds: float
    env_id: str
    installed: tuple[InstalledDist, ...] = ()
    note: str = ""
    moved: tuple[Moved, ...] = ()  # what moved with it against the baseline
    runs: int = 1  # --repeat: runs made in this environment (all of them, stored ones too)
    fails: int = 0  # of which did not pass
    round: int = 0  # --jobs: the round it was probed in (1-based; 0 outside a search)
    run_outcomes: tuple[Outcome, ...] = ()  # every run's outcome, when there were several
    host: str = ""  # the node the probe ran on ("" for one answered without a build)

    @classmethod
    def of_record(
        cls,
        version: str,
        rec: ProbeRecord,
        reused: bool,
        *,
        env_id: str,
        moved: tuple[Moved, ...] = (),
    ) -> ProbeRow:
        """The report row of a probe record (every run of it, for a flaky repro)."""
        return cls(
            version=version,
            outcome=rec.outcome,
            verdict=RowVerdict.NONE,
            reused=reused,
            build_seconds=rec.build_seconds,
            probe_seconds=rec.probe_seconds,
            env_id=env_id,
            installed=rec.installed,
            moved=moved,
            runs=len(rec.all_runs),
            fails=rec.fails,
            run_outcomes=rec.runs,
            host=rec.host,
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "version": self.version,
            "outcome": self.outcome.to_dict(),
            "verdict": self.verdict.value,
            "build_seconds": round(self.build_seconds, 3),
            "probe_seconds": round(self.probe_seconds, 3),
            "env_id": self.env_id,
            **({"host": self.host} if self.host else {}),
            "installed": [d.to_dict() for d in self.installed],
            **({"note": self.note} if self.note else {}),
            **({"runs": self.runs, "fails": self.fails} if self.runs > 1 else {}),
            **({"round": self.round} if self.round else {}),
            **({"moved": [m.to_dict() for m in self.moved]} if self.moved else {}),
        }


@dataclass(frozen=True, slots=True, kw_only=True)
class Moved:
    """A package that moved with another: from ``before`` (None: absent) to ``after``
    (None: removed)."""

    package: str
    before: str | None
    after: str | None

    def to_dict(self) -> dict[str, str | None]:
        return {"package": self.package, "from": self.before, "to": self.after}

    def describe(self) -> str:
        """``app 1.5.0 -> 2.0.0`` (``absent``, ``removed`` for the missing ends)."""
        return f"{self.package} {self.before or 'absent'} -> {self.after or 'removed'}"


def moves(moved: Iterable[tuple[str, object | None, object | None]]) -> tuple[Moved, ...]:
    """A plan's moves, ``(package, baseline, planned)`` with versions or None, as ``Moved``."""
    return tuple(
        Moved(
            package=str(n),
            before=None if b is None else str(b),
            after=None if v is None else str(v),
        )
        for n, b, v in moved
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class StandIn:
    """A named end (``--good``/``--bad``) with no installable file, and the nearest testable
    version inward that the search used in its place."""

    flag: str  # "--good" / "--bad"
    asked: str
    used: str
    reason: str  # why the asked version cannot be tested

    def to_dict(self) -> dict[str, str]:
        return {"flag": self.flag, "asked": self.asked, "used": self.used, "reason": self.reason}

    def describe(self) -> str:
        return f"{self.flag} {self.asked} cannot be tested ({self.reason}); {self.used} stands in"


@dataclass(frozen=True, slots=True, kw_only=True)
class BreakpointRow:
    """Where one segment of the range ends and the next begins, as the report names them:
    ``first_new`` did ``outcome`` (a failure, or a pass where a failure ends), ``last_old`` is
    the last point before it; ``possible``: untestable points hide it (one of these)."""

    first_new: str
    last_old: str
    outcome: Outcome
    possible: tuple[str, ...] = ()

    def to_dict(self, *, fix: bool = False) -> dict[str, Any]:
        new_key, old_key = ("first_fixed", "last_broken") if fix else ("first_bad", "last_good")
        out: dict[str, Any] = {
            new_key: self.first_new,
            old_key: self.last_old,
            "outcome": self.outcome.to_dict(),
        }
        if self.possible:
            out[f"{new_key}_candidates"] = list(self.possible)
        return out

    def describe(self) -> str:
        where = f"one of {', '.join(self.possible)}" if self.possible else self.first_new
        return f"{where}: {self.outcome.describe()}"


@dataclass(frozen=True, slots=True, kw_only=True)
class FailRate:
    """How often one point failed (``--repeat``, a probabilistic search)."""

    version: str
    runs: int
    fails: int

    def to_dict(self) -> dict[str, Any]:
        return {"version": self.version, "runs": self.runs, "fails": self.fails}


class SearchMode(enum.Enum):
    """How a bisection searched: its ``--json`` ``search.mode``."""

    PLAIN = "plain"  # one run a point, segments by outcome class
    PROBABILISTIC = "probabilistic"  # runs counted, a posterior over the boundary


@dataclass(frozen=True, slots=True, kw_only=True)
class SearchSummary:
    """How a search ran: its ``--json`` ``search``. ``mode`` is None where the search is no
    bisection (diff: ddmin, then bisections); ``confidence`` and ``switch_reason`` are a
    probabilistic search's; ``fail_rates`` is None where the runs were not counted."""

    mode: SearchMode | None = None
    jobs: int = 1
    rounds: int = 0
    repeat: int = 1
    confidence: float | None = None
    switch_reason: str | None = None
    fail_rates: tuple[FailRate, ...] | None = None

    @property
    def plain(self) -> bool:
        """A plain bisection, one probe a round, one run a probe: nothing to report."""
        return self.mode is SearchMode.PLAIN and self.repeat == 1 and self.jobs == 1

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {} if self.mode is None else {"mode": self.mode.value}
        out.update(jobs=self.jobs, rounds=self.rounds, repeat=self.repeat)
        if self.mode is SearchMode.PROBABILISTIC:
            out.update(confidence=self.confidence, switch_reason=self.switch_reason)
        if self.fail_rates is not None:
            out["fail_rates"] = [r.to_dict() for r in self.fail_rates]
        return out
