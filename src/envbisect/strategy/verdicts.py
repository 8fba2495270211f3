"""What a bisection says: each point's verdict, the steps it took, and its answer.

Plain data, shared by the Bisector (strategy/bisect.py) and the modes that read its answer;
``judge`` and ``tally`` say what one run, and a point's runs, count as once the direction and
the reference failure are known.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

from envbisect.core.outcome import same_failure
from envbisect.core.results.parts import Direction, Status
from envbisect.model import Outcome, OutcomeKind
from envbisect.strategy.segments import Breakpoint


class Verdict(enum.Enum):
    OLD = "old"  # in the state of the old end (pass in a regression search)
    NEW = "new"  # in the state of the new end (the failure in a regression search)
    SKIP = "skip"  # untestable (or, in the probabilistic mode, a different failure)
    OTHER = "other"  # a failure unlike the reference: a segment of its own


@dataclass(frozen=True, slots=True, kw_only=True)
class Step:
    index: int
    outcome: Outcome
    verdict: Verdict | None  # None while the ends are being verified
    note: str = ""
    runs: int = 1
    fails: int = 0  # runs that failed like the reference (0 before the direction is known)


@dataclass(frozen=True, slots=True, kw_only=True)
class BisectResult:
    status: Status  # found, ambiguous or no answer (never a dry run)
    direction: Direction | None = None
    first_new: int | None = None
    last_old: int | None = None
    possible: tuple[int, ...] = ()  # ambiguous: the first new point is one of these
    reason: str = ""
    probability: float | None = None  # probabilistic mode: P(first_new is the boundary)
    # Every boundary between segments, oldest first (one in a plain two-state range).
    breakpoints: tuple[Breakpoint, ...] = ()
    # The point next to the answer's boundary on the passing side when it fails in another
    # way (regression: the one right before first_new; fix: the one right after last_old).
    neighbour: int | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class SteppedEnd:
    """A named end with no installable file, and the point that stands in for it: the
    bisector's indexes, which a mode names as a ``StandIn`` (core/results/parts.py)."""

    end: Literal["old", "new"]
    asked: int
    used: int


def judge(
    outcome: Outcome, *, direction: Direction, reference: Outcome, any_failure: bool
) -> Verdict:
    """What one run counts as: the old end's state or the new end's; SKIP for an untestable
    run, and (unless ``any_failure``) for a failure unlike the ``reference``."""
    if outcome.kind is OutcomeKind.UNTESTABLE:
        return Verdict.SKIP
    passed = outcome.kind is OutcomeKind.PASS
    if not passed and not any_failure and not same_failure(outcome, reference):
        return Verdict.SKIP
    if direction == Direction.REGRESSION:
        return Verdict.OLD if passed else Verdict.NEW
    return Verdict.NEW if passed else Verdict.OLD


def tally(
    runs: Iterable[Outcome], *, direction: Direction, reference: Outcome, any_failure: bool
) -> tuple[int, int]:
    """(runs failing like the reference, runs passing) among ``runs``: those ``judge`` skips
    count as neither."""
    fails = passes = 0
    for o in runs:
        v = judge(o, direction=direction, reference=reference, any_failure=any_failure)
        if v is Verdict.SKIP:
            continue
        if o.kind is OutcomeKind.PASS:
            passes += 1
        else:
            fails += 1
    return fails, passes
