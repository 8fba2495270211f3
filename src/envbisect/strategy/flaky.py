"""The probabilistic side of bisection, for repros that fail only some of the time.

Model. Over the testable points of the range (oldest first), the boundary ``b`` is the first
point in the new end's state. Points on the broken side (the new side of a regression, the old
side of a fix) fail like the reference with an unknown rate ``p`` per run; points on the clean
side fail with an unknown rate ``e`` (a clean version rarely shows the bug, but a flaky machine
might). With Beta priors on both rates the probability of every run seen so far, given ``b``,
has a closed form (two Beta-binomial terms), so the posterior over ``b`` is exact: no sampling,
no point estimates of the rates in it.

Choosing. The next point is the one whose next probe (``runs`` runs there) carries the most
expected information about ``b``. Given ``b`` a probe at ``x`` is a binomial draw with rate
``p`` or ``e``, so the information depends on ``x`` only through F(x) = P(x is broken), and is
computed with the posterior means of ``p`` and ``e``. With several probes per round (``--jobs``)
the points split the posterior into equal parts instead.

Everything here is pure: counts in, numbers out. ``strategy.Bisector`` decides when to use it.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass

# Beta priors (alpha, beta) on the failure rate per run.
BROKEN_PRIOR = (1.0, 1.0)  # the broken side: any rate at all
CLEAN_PRIOR = (0.5, 20.0)  # the clean side: mostly clean (mean 0.024)


@dataclass(frozen=True, slots=True)
class Posterior:
    """P(the first point in the new state is ``points[k]``) for k = 1..len(points)-1."""

    points: tuple[int, ...]  # the testable points, oldest first (points[0] is the old end)
    mass: tuple[float, ...]  # mass[k] for points[k]; mass[0] is always 0
    broken_rate: float  # posterior mean of p
    clean_rate: float  # posterior mean of e
    regression: bool

    def best(self) -> tuple[int, float]:
        """The most probable first-new point and its probability."""
        k = max(range(1, len(self.points)), key=lambda j: (self.mass[j], -j))
        return self.points[k], self.mass[k]

    def credible(self, level: float) -> list[int]:
        """The fewest first-new points whose probabilities add up to ``level``, oldest first."""
        order = sorted(range(1, len(self.points)), key=lambda j: (-self.mass[j], j))
        chosen, total = [], 0.0
        for k in order:
            chosen.append(self.points[k])
            total += self.mass[k]
            if total >= level:
                break
        return sorted(chosen)

    def broken_probability(self, pos: int) -> float:
        """P(points[pos] is on the broken side)."""
        at_or_before = sum(self.mass[1 : pos + 1])  # P(b <= points[pos])
        return at_or_before if self.regression else 1.0 - at_or_before


def posterior(
    points: Sequence[int], counts: Mapping[int, tuple[int, int]], *, regression: bool
) -> Posterior:
    """The posterior over the boundary. ``counts[i]`` = (runs failing like the reference,
    runs passing) at point i; points without runs simply carry no evidence."""
    m = len(points)
    if m < 2:
        raise ValueError("a boundary needs two testable points")
    fails = [counts.get(i, (0, 0))[0] for i in points]
    passes = [counts.get(i, (0, 0))[1] for i in points]
    tot_f, tot_p = sum(fails), sum(passes)
    logs = [-math.inf] * m
    rates: list[tuple[float, float]] = [(0.0, 0.0)] * m
    old_f = old_p = 0
    for k in range(1, m):
        old_f += fails[k - 1]
        old_p += passes[k - 1]
        new_f, new_p = tot_f - old_f, tot_p - old_p
        broken, clean = (
            ((new_f, new_p), (old_f, old_p)) if regression else ((old_f, old_p), (new_f, new_p))
        )
        logs[k] = _log_bb(*broken, BROKEN_PRIOR) + _log_bb(*clean, CLEAN_PRIOR)
        rates[k] = (_mean(*broken, BROKEN_PRIOR), _mean(*clean, CLEAN_PRIOR))
    top = max(logs[1:])
    weights = [0.0] + [math.exp(v - top) for v in logs[1:]]
    z = sum(weights)
    mass = tuple(w / z for w in weights)
    return Posterior(
        points=tuple(points),
        mass=mass,
        broken_rate=sum(mass[k] * rates[k][0] for k in range(1, m)),
        clean_rate=sum(mass[k] * rates[k][1] for k in range(1, m)),
        regression=regression,
    )


def information(f: float, runs: int, p: float, e: float) -> float:
    """Expected information (bits) about the boundary from ``runs`` runs at a point that is
    broken with probability ``f``: I = H(mixture) - f H(Bin(runs, p)) - (1-f) H(Bin(runs, e))."""
    if f <= 0.0 or f >= 1.0:
        return 0.0
    bp, be = _binomial(runs, p), _binomial(runs, e)
    mix = [f * a + (1 - f) * b for a, b in zip(bp, be, strict=True)]
    return _entropy(mix) - f * _entropy(bp) - (1 - f) * _entropy(be)


def choose(post: Posterior, *, runs: int, k: int = 1, exclude: Sequence[int] = ()) -> list[int]:
    """Up to ``k`` points to probe next (fewer when fewer carry information)."""
    positions = [j for j, i in enumerate(post.points) if i not in exclude]
    f = {j: post.broken_probability(j) for j in positions}
    useful = [j for j in positions if 0.0 < f[j] < 1.0]
    if not useful:
        return []
    if k == 1:
        mid = len(post.points) / 2

        def score(j: int) -> tuple[float, float, int]:
            gain = information(f[j], runs, post.broken_rate, post.clean_rate)
            return (-round(gain, 12), abs(j - mid), j)

        return [post.points[min(useful, key=score)]]
    # Several per round: split the posterior over the boundary into k + 1 equal parts.
    cdf, total = {}, 0.0
    for j in range(len(post.points)):
        total += post.mass[j]
        cdf[j] = total  # P(b <= points[j])
    chosen: list[int] = []
    for q in range(1, k + 1):
        target = q / (k + 1)
        left = [j for j in useful if j not in chosen]
        if not left:
            break
        chosen.append(min(left, key=lambda j: (abs(cdf[j] - target), j)))
    return sorted(post.points[j] for j in chosen)


def _log_bb(f: int, s: int, prior: tuple[float, float]) -> float:
    a, b = prior
    return _log_beta(a + f, b + s) - _log_beta(a, b)


def _log_beta(a: float, b: float) -> float:
    return math.lgamma(a) + math.lgamma(b) - math.lgamma(a + b)


def _mean(f: int, s: int, prior: tuple[float, float]) -> float:
    a, b = prior
    return (a + f) / (a + b + f + s)


def _binomial(n: int, p: float) -> list[float]:
    return [math.comb(n, j) * p**j * (1 - p) ** (n - j) for j in range(n + 1)]


def _entropy(dist: Sequence[float]) -> float:
    return -sum(x * math.log2(x) for x in dist if x > 0.0)


def marks(
    post: Posterior, lo: int, hi: int, skipped: Collection[int], regression: bool
) -> list[str]:
    """One mark per point of ``[lo, hi]``: a point that may be the first new one shows its
    probability (``12%``), the others the state they are most likely in (G or B), S
    untestable."""
    old_mark, new_mark = ("G", "B") if regression else ("B", "G")
    mass = dict(zip(post.points, post.mass, strict=True))
    out = []
    for i in range(lo, hi + 1):
        if i in skipped:
            out.append("S")
        elif mass.get(i, 0.0) >= 0.05:
            out.append(f"{mass[i]:.0%}")
        else:
            broken = post.broken_probability(post.points.index(i))
            in_new = broken if regression else 1 - broken
            out.append(new_mark if in_new >= 0.5 else old_mark)
    return out


def default_max_probes(n: int, repeat: int = 1) -> int:
    """The probabilistic mode's default cap on probes: about twenty runs per bit a plain
    bisection needs (at a fail rate of 0.3 the search needs about eight; bench/bench_search.py),
    so a repro that almost never fails cannot keep a search going for ever."""
    bits = math.ceil(math.log2(max(n, 2))) + 2
    return max(20, math.ceil(20 * bits / max(1, repeat)))
