"""What a bisection says: each point's verdict, the steps it took, and its answer.

Plain data, shared by the Bisector (strategy/bisect.py) and the modes that read its answer.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Literal

from envbisect.model import Outcome
from envbisect.strategy.segments import Breakpoint

Direction = Literal["regression", "fix"]


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
    status: Literal["found", "ambiguous", "no-answer"]
    direction: Direction | None = None
    first_new: int | None = None
    last_old: int | None = None
    possible: tuple[int, ...] = ()  # "ambiguous": the first new point is one of these
    reason: str = ""
    probability: float | None = None  # probabilistic mode: P(first_new is the boundary)
    # Every boundary between segments, oldest first (one in a plain two-state range).
    breakpoints: tuple[Breakpoint, ...] = ()
    # The point next to the answer's boundary on the passing side when it fails in another
    # way (regression: the one right before first_new; fix: the one right after last_old).
    neighbour: int | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class StandIn:
    """A named end with no installable file, and the point that stands in for it."""

    end: Literal["old", "new"]
    asked: int
    used: int
