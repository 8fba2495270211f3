"""A search's result: what every mode answers, typed and frozen, with its ``--json``.

``SearchResult`` is the answer of a search over ordered points (versions, release moments,
commits): the boundary, the points that may hide it, every breakpoint, the rows in the order
probed, the files written. A mode that knows more says it in a subclass (``RunResult``,
``bydate.DateResult``, ``diff.DiffResult``, ``lock.LockResult``) whose
``mode_dict`` adds its keys after the common ones, so that ``to_dict`` is the object
docs/reference/json.md describes. A mode builds its result once it knows the answer (with
``dataclasses.replace`` as the files are written); nothing here is changed in place.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from envbisect.core.results.parts import (
    BreakpointRow,
    Direction,
    ProbeRow,
    SearchSummary,
    StandIn,
    Status,
)
from envbisect.model import Outcome

if TYPE_CHECKING:  # the commit search's answer: its modules load with that search
    from envbisect.core.results.commits import CommitAnswer


@dataclass(frozen=True, slots=True, kw_only=True)
class SearchResult:
    """The answer of one search, and where it was asked (the header: package, target,
    command, repro, env, run id). ``first_new`` is the first bad point (a fix search: the
    first fixed one), ``last_old`` the last good one (last broken); both None without an
    answer. ``sections``: the mode's own report.md sections; ``verdict``: a mode's own
    verdict line, when it is not a search's; ``plans``: ``--dry-run``'s."""

    package: str
    status: Status = Status.NO_ANSWER
    direction: Direction | None = None
    first_new: str | None = None
    last_old: str | None = None
    possible: tuple[str, ...] = ()
    reason: str = ""
    rows: tuple[ProbeRow, ...] = ()
    skipped: tuple[tuple[str, str], ...] = ()  # (point, why it is untestable)
    candidates: int = 0
    target: str = ""
    command: str = ""
    repro: str = ""
    env: Mapping[str, str] = field(default_factory=dict)  # --env, credentials masked
    overrides: tuple[str, ...] = ()  # --override, as every environment took them
    run_id: str = ""
    report_path: str | None = None
    lock_path: str | None = None
    pylock_path: str | None = None
    sections: tuple[str, ...] = ()
    search: SearchSummary | None = None
    probability: float | None = None  # probabilistic mode: P(first_new is the boundary)
    stand_ins: tuple[StandIn, ...] = ()
    verdict: str | None = None
    # Every boundary between segments of the range, oldest first (one when the outcome
    # changes once); ``neighbour``: the point next to the answer's boundary on the passing
    # side when it fails another way (its failure is another bug: breakpoints name it).
    breakpoints: tuple[BreakpointRow, ...] = ()
    neighbour: str | None = None
    commits: CommitAnswer | None = None  # run --commits, envbisect commits: the commit search
    plans: tuple[dict[str, Any], ...] = ()

    def row(self, version: str | None) -> ProbeRow | None:
        """The latest row for ``version`` (a point probed again has more runs)."""
        for r in reversed(self.rows):
            if r.version == version:
                return r
        return None

    @property
    def first_new_outcome(self) -> Outcome | None:
        r = self.row(self.first_new)
        return r.outcome if r else None

    @property
    def fix(self) -> bool:
        return self.direction == Direction.FIX

    @property
    def answered(self) -> bool:
        """Whether the search has an answer (found, or one of several points)."""
        return self.status is not Status.NO_ANSWER

    def good_row(self) -> ProbeRow | None:
        """The row of the environment that works at the boundary (the last good point; a fix
        search: the first fixed one), when there is an answer."""
        if not self.answered:
            return None
        return self.row(self.first_new if self.fix else self.last_old)

    def bad_row(self) -> ProbeRow | None:
        """The row of the environment that fails at the boundary, when there is an answer."""
        if not self.answered:
            return None
        return self.row(self.last_old if self.fix else self.first_new)

    def to_dict(self) -> dict[str, Any]:
        """The object ``--json`` prints (docs/reference/json.md); ``--dry-run``: the plans."""
        if self.status is Status.DRY_RUN:
            return {"dry_run": True, "plans": list(self.plans)}
        fix, answered = self.fix, self.answered
        new_key, old_key = ("first_fixed", "last_broken") if fix else ("first_bad", "last_good")
        out: dict[str, Any] = {
            "package": self.package,
            "status": self.status.value,
            "direction": self.direction.value if self.direction else None,
            "candidates": self.candidates,
            new_key: self.first_new if answered else None,
            old_key: self.last_old if answered else None,
        }
        if self.status is Status.AMBIGUOUS:
            out[f"{new_key}_candidates"] = list(self.possible)
        if not answered:
            out["reason"] = self.reason
        if answered and self.breakpoints:
            out["breakpoints"] = [b.to_dict(fix=fix) for b in self.breakpoints]
            if self.neighbour:
                out["fails_another_way"] = self.neighbour
        out.update(self._rows_dict())
        bad = self.bad_row()
        out["first_bad_outcome"] = bad.outcome.to_dict() if bad else None
        out["first_fixed_lock" if fix else "last_good_lock"] = self.lock_path
        if fix:
            out["last_good_lock"] = self.lock_path  # the environment that works, whichever search
        out["pylock"] = self.pylock_path
        out["report"] = self.report_path
        out.update(self.header_dict())
        if self.search is not None:
            out["search"] = self.search.to_dict()
        if self.commits is not None:
            key = "first_fixed_commit" if self.commits.fix else "first_bad_commit"
            out[key] = self.commits.first_bad()
            out["commits"] = self.commits.to_dict()
        out.update(self.mode_dict())
        return out

    def _rows_dict(self) -> dict[str, Any]:
        return {
            "probes": [r.to_dict() for r in self.rows if not r.reused],
            "reused": [r.to_dict() for r in self.rows if r.reused],
            "skipped": [{"version": v, "reason": why} for v, why in self.skipped],
            "stand_ins": [s.to_dict() for s in self.stand_ins],
        }

    def header_dict(self) -> dict[str, Any]:
        """Where the question was asked: the target, ``--env`` and the run id."""
        return {
            "target": self.target,
            "env": dict(self.env),
            **({"overrides": list(self.overrides)} if self.overrides else {}),
            "run_id": self.run_id,
        }

    def mode_dict(self) -> dict[str, Any]:
        """The mode's own keys, after the common ones (none for a plain search)."""
        return {}


@dataclass(frozen=True, slots=True, kw_only=True)
class RunResult(SearchResult):
    """``envbisect run``: one package's versions. ``yanked_between``: yanked versions between
    the two that bracket the answer, never candidates (name one with --good or --bad)."""

    yanked_between: tuple[str, ...] = ()

    def mode_dict(self) -> dict[str, Any]:
        return {"yanked_between": list(self.yanked_between)} if self.yanked_between else {}
