"""A bisection's answer once its search is over: from the segments, or from the posterior.

The plain search ends when no gap has a point left to probe: ``from_segments`` reads the
boundary (and every breakpoint) from the probed points' classes. The probabilistic search
ends when one boundary reaches the confidence asked for, or its probe budget is spent:
``from_posterior`` names the most likely boundary, "found" or, below the confidence or with
untestable points hiding it, "ambiguous". Who uses it: the Bisector (bisect.py).

Pure: classes, counts and outcomes in, a ``BisectResult`` out.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from envbisect.core.outcome import failed
from envbisect.core.results.parts import Direction, Status
from envbisect.model import Outcome
from envbisect.strategy import flaky
from envbisect.strategy.segments import Breakpoint, answer, breakpoints
from envbisect.strategy.verdicts import BisectResult


def from_segments(
    cls: Mapping[int, int],
    *,
    ref_class: int,
    direction: Direction,
    any_failure: bool,
    outcome_at: Callable[[int], Outcome],
    lo: int,
    hi: int,
) -> BisectResult:
    """The answer from the segments of ``[lo, hi]`` (``cls``: each probed testable point's
    class; ``outcome_at``: what a probed point did), once no gap has a point left."""
    a = answer(
        cls, ref_class, regression=direction == Direction.REGRESSION, any_failure=any_failure
    )
    return BisectResult(
        status=Status.FOUND if not a.possible else Status.AMBIGUOUS,
        direction=direction,
        first_new=a.first_new,
        last_old=a.last_old,
        possible=a.possible,
        reason="untestable points hide the boundary" if a.possible else "",
        breakpoints=breakpoints(cls, outcome_at, lo, hi),
        neighbour=a.neighbour,
    )


def from_posterior(
    post: flaky.Posterior,
    *,
    direction: Direction,
    reference: Outcome,
    runs: Mapping[int, Sequence[Outcome]],
    confidence: float,
    probes: int,
) -> BisectResult:
    """The answer from the posterior over the boundary: its most likely boundary, with the
    first failure seen at its failing side (else ``reference``); "ambiguous" with the credible
    set when its probability is below ``confidence`` after ``probes`` probabilistic probes."""
    best, p = post.best()
    k = post.points.index(best)
    last_old = post.points[k - 1]
    hidden = tuple(range(last_old + 1, best + 1))  # untestable points before it, and it
    at = best if direction == Direction.REGRESSION else last_old
    shown = next((o for o in runs.get(at, ()) if failed(o)), reference)
    point = Breakpoint(
        last_old=last_old, first_new=best, outcome=shown, possible=hidden if len(hidden) > 1 else ()
    )
    if p >= confidence:
        return BisectResult(
            status=Status.FOUND if len(hidden) == 1 else Status.AMBIGUOUS,
            direction=direction,
            first_new=best,
            last_old=last_old,
            possible=hidden if len(hidden) > 1 else (),
            reason="" if len(hidden) == 1 else "untestable points hide the boundary",
            probability=p,
            breakpoints=(point,),
        )
    return BisectResult(
        status=Status.AMBIGUOUS,
        direction=direction,
        first_new=best,
        last_old=last_old,
        possible=tuple(post.credible(confidence)),
        reason=(
            f"after {probes} probabilistic probe(s) the most likely "
            f"boundary has probability {p:.2f}, below the confidence {confidence:.2f}"
        ),
        probability=p,
        breakpoints=(point,),
    )
