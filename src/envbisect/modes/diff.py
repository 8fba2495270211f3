"""The culprit between two environments: ``envbisect diff GOOD BAD``.

Who does what: the two ends are read as exact pins (lockfiles, ``pylock.toml``,
``installed:PYTHON``; a source with ranges is resolved first); both are probed and must
verify. ``ddmin`` (Zeller's delta debugging: a state machine in strategy/ddmin.py, driven
by the loop every mode uses, so ``--jobs K`` tests K subsets a round) then shrinks the set of
changed packages to a 1-minimal set that still brings the failure; each subset it tries is the good
environment with those changes applied, made consistent by the planner (what it forces is
recorded, and a subset with no consistent environment counts as unresolved, never as a
pass or a failure). Finally each culprit package is bisected between its good and bad
versions, the other culprits applied. A minimal set of two or more packages is an
interaction: the failure needs them together.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

from envbisect.core.candidates import build_candidates
from envbisect.core.outcome import same_failure, untestable
from envbisect.core.pins import PinSet
from envbisect.core.plan import MatchCache, Plan, PlanTarget, Policy, plan
from envbisect.core.report import ProbeRow, RunResult
from envbisect.core.target import Target
from envbisect.errors import NoAnswer, UsageError
from envbisect.index.source import IndexMetadataSource
from envbisect.model import Outcome, OutcomeKind
from envbisect.modes.drive import Log, drive
from envbisect.modes.options import CommonOptions
from envbisect.modes.outputs import write_outputs
from envbisect.modes.planning import read_pins
from envbisect.modes.session import Session, Want
from envbisect.reporter import Reporter
from envbisect.strategy.base import Bisection, Fixed, Points
from envbisect.strategy.bisect import Bisector
from envbisect.strategy.ddmin import Ddmin, Result

Change = tuple[str, str | None, str | None]  # (package, good version, bad version)
Subset = tuple[Change, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class DiffOptions:
    good: str
    bad: str
    common: CommonOptions


def run_diff(opts: DiffOptions, reporter: Reporter | None = None) -> RunResult:
    """Both ends verified, ddmin over the changed packages, each culprit's first bad version.

    Ends that do not verify raise ``NoAnswer`` once report.md is written."""
    with Session(opts.common, reporter) as session:
        return _run(opts, session)


def _run(opts: DiffOptions, session: Session) -> RunResult:
    target, client = session.target, session.client
    env = target.marker_environment()
    source = IndexMetadataSource(client, target)
    ptarget = PlanTarget(markers=env, python_version=target.python_version)
    cache: MatchCache = {}
    good_set, bad_set = read_pins([opts.good, opts.bad], client, cwd=session.repro.origin)
    _same_python(good_set, bad_set, target)
    good = _exact(good_set, "GOOD", source, ptarget, env, cache)
    bad = _exact(bad_set, "BAD", source, ptarget, env, cache)
    changes: list[Change] = [
        (n, str(good[n]) if n in good else None, str(bad[n]) if n in bad else None)
        for n in sorted(good.keys() | bad.keys())
        if good.get(n) != bad.get(n)
    ]
    if not changes:
        raise UsageError(
            "GOOD and BAD pin the same versions: nothing to isolate",
            hint="compare two different environments",
            ref="diff-same",
        )
    result = session.result(package="(diff)", candidates=len(changes), direction="regression",
                            run_id=_run_id(opts, session))  # fmt: skip
    diff = _Diff(good=good, source=source, ptarget=ptarget, cache=cache, session=session,
                 result=result)  # fmt: skip
    try:
        diff.verify_ends(changes)
        session.reporter.message(f"envbisect: {len(changes)} changed package(s); ddmin")
        minimal = diff.ddmin(changes)
        culprits = [diff.first_bad(c, [o for o in minimal if o != c]) for c in minimal]
    except NoAnswer as e:
        result.reason = e.message
        write_outputs(result, session, label="environment")
        e.result = result
        raise
    except KeyboardInterrupt as e:
        raise session.interrupted(e) from e
    result.status = "found"
    result.first_new, result.last_old = "BAD", "GOOD"
    result.extra = {
        "culprits": culprits,
        "interaction": len(minimal) > 1,
        "changed": [{"package": n, "good_version": g, "bad_version": b} for n, g, b in changes],
    }
    names = ", ".join(f"{c['package']} {c['good_version']} -> {c['bad_version']}"
                      for c in culprits)  # fmt: skip
    kind = "an interaction: the failure needs all of them together" if len(minimal) > 1 else ""
    result.sections = [f"## Culprit\n\n- {names}" + (f"\n- {kind}" if kind else "")]
    write_outputs(result, session, label="environment")
    return result


@dataclass(slots=True, kw_only=True)
class _Diff:
    good: dict[str, Version]
    source: IndexMetadataSource
    ptarget: PlanTarget
    cache: MatchCache
    session: Session
    result: RunResult
    reference: Outcome | None = None
    rounds: int = field(default=0)

    def environment(self, applied: Sequence[Change]) -> tuple[Plan | None, str]:
        """The good environment with these changes applied, made consistent by the planner."""
        exact = {n: b for n, _, b in applied if b is not None}
        dropped = {n for n, _, b in applied if b is None}
        roots = [Requirement(f"{n}=={v}") for n, v in exact.items()]
        roots += [Requirement(n) for n in self.good if n not in exact and n not in dropped]
        baseline = {n: v for n, v in self.good.items() if n not in dropped}
        planned = plan(roots, self.source, self.ptarget, policy=Policy.BASELINE,
                       baseline=baseline, cache=self.cache)  # fmt: skip
        if not isinstance(planned, Plan):
            return None, planned.reason
        return planned, ""

    def want(self, label: str, applied: Sequence[Change], runs: int) -> Want:
        planned, reason = self.environment(applied)
        if planned is None:
            return Want(label=label, why_not=f"unresolvable: {reason}")
        moved = tuple((n, str(b) if b else None, str(v) if v else None)
                      for n, b, v in planned.moved)  # fmt: skip
        spec = self.session.env_spec(planned.requirements())
        return Want(label=label, spec=spec, runs=runs, moved=moved)

    def _drive(self, strategy: Any, plan: Any) -> Log[Any]:
        log = drive(strategy, self.session, plan)
        self.result.rows += log.rows
        self.rounds += log.rounds
        self.result.search = {"jobs": self.session.opts.jobs, "rounds": self.rounds,
                              "repeat": self.session.opts.repeat}  # fmt: skip
        return log

    def verify_ends(self, changes: Sequence[Change]) -> None:
        ends: Fixed[tuple[str, Subset]] = Fixed(
            [("GOOD", ()), ("BAD", tuple(changes))], repeat=self.session.opts.repeat
        )
        self._drive(ends, lambda p, runs: self.want(p[0], p[1], runs))
        good_row, bad_row = ends.rows[("GOOD", ())], ends.rows[("BAD", tuple(changes))]
        if good_row.outcome.kind is not OutcomeKind.PASS:
            raise NoAnswer(f"the GOOD environment does not pass: {good_row.outcome.describe()}",
                           hint="GOOD must be an environment where the repro passes")  # fmt: skip
        if bad_row.outcome.kind in (OutcomeKind.PASS, OutcomeKind.UNTESTABLE):
            raise NoAnswer(f"the BAD environment does not fail: {bad_row.outcome.describe()}",
                           hint="BAD must be an environment where the repro fails")  # fmt: skip
        self.reference = bad_row.outcome

    def verdict(self, outcome: Outcome) -> Result:
        if outcome.kind is OutcomeKind.PASS:
            return "pass"
        if outcome.kind is OutcomeKind.UNTESTABLE:
            return "unresolved"
        assert self.reference is not None
        if self.session.opts.any_failure or same_failure(outcome, self.reference):
            return "fail"
        return "unresolved"  # another bug: not evidence either way

    def ddmin(self, changes: Sequence[Change]) -> list[Change]:
        machine: Ddmin[Change] = Ddmin(changes)
        self._drive(_DdminPoints(machine, self.verdict, self.session.opts.repeat),
                    lambda subset, runs: self.want(_apply_label(subset), subset, runs))  # fmt: skip
        assert machine.result is not None
        return machine.result

    def first_bad(self, change: Change, others: Sequence[Change]) -> dict[str, Any]:
        """The first version of the culprit, between its good and bad versions, that fails
        (the other culprits applied, so that an interaction can show)."""
        name, good_v, bad_v = change
        if good_v is None or bad_v is None:
            return {"package": name, "good_version": good_v, "bad_version": bad_v}
        lo, hi = Version(good_v), Version(bad_v)
        files = self.session.client.project_files(name).files
        versions = [c.version for c in build_candidates(files, self.session.target).candidates
                    if c.installable and lo <= c.version <= hi]  # fmt: skip
        if lo > hi or len(versions) <= 2:
            return {"package": name, "good_version": good_v, "bad_version": bad_v}
        self.session.reporter.message(f"envbisect: first bad {name} between {good_v} and {bad_v}")
        bis = Bisector(n=len(versions), good=0, bad=len(versions) - 1, any_failure=True,
                       repeat=self.session.opts.repeat)  # fmt: skip

        def want(i: int, runs: int) -> Want:
            applied = [*others, (name, good_v, str(versions[i]))]
            return self.want(f"{name} {versions[i]}", applied, runs)

        self._drive(_CulpritBisection(bis, self.verdict), want)
        final = bis.result
        if final is None or final.status == "no-answer" or final.first_new is None:
            return {"package": name, "good_version": good_v, "bad_version": bad_v}
        last_good = versions[final.last_old] if final.last_old is not None else lo
        return {"package": name, "good_version": str(last_good),
                "bad_version": str(versions[final.first_new])}  # fmt: skip


class _DdminPoints(Points[Subset]):
    """ddmin's subsets as drive points; each probed environment's verdict goes back to it."""

    def __init__(self, machine: Ddmin[Change], verdict: Any, repeat: int) -> None:
        self.machine, self.verdict, self.repeat = machine, verdict, repeat

    def next_batch(self, k: int) -> list[Subset]:
        return self.machine.next_batch(k)

    def record(self, point: Subset, row: ProbeRow) -> None:
        self.machine.record(point, self.verdict(row.outcome))

    def label(self, point: Subset, row: ProbeRow) -> ProbeRow:
        return replace(row, verdict=_skip(row))


class _CulpritBisection(Bisection):
    """A culprit's versions: a failure unlike BAD's is another bug, not evidence."""

    def __init__(self, bis: Bisector, verdict: Any) -> None:
        super().__init__(bis)
        self.verdict = verdict

    def record(self, point: int, row: ProbeRow) -> None:
        outcome = row.outcome
        if self.verdict(outcome) == "unresolved":
            outcome = untestable("another outcome")
        self.bis.record(point, outcome)


def _skip(row: ProbeRow) -> str:
    return "skip" if row.outcome.kind is OutcomeKind.UNTESTABLE else ""


def _apply_label(subset: Sequence[Change]) -> str:
    return "apply " + ", ".join(f"{n} {g or '-'}->{b or '-'}" for n, g, b in subset)


def _exact(
    pins: PinSet,
    which: str,
    source: IndexMetadataSource,
    ptarget: PlanTarget,
    env: dict[str, str],
    cache: MatchCache,
) -> dict[str, Version]:
    """Exact versions of a lock; a source with ranges is resolved (newest versions)."""
    if pins.is_lock:
        return {canonicalize_name(n): v for n, v in pins.baseline(env).items()}
    planned = plan([p.requirement for p in pins.applicable(env)], source, ptarget, cache=cache)
    if not isinstance(planned, Plan):
        raise UsageError(
            f"{which} ({pins.source}) has no consistent environment: {planned.reason}",
            hint="check the pins",
            ref="diff-unresolvable",
        )
    return {str(n): v for n, v in planned.pins.items()}


def _same_python(good: PinSet, bad: PinSet, target: Target) -> None:
    """Two locks for different Pythons cannot be compared on one interpreter."""
    for which, ps in (("GOOD", good), ("BAD", bad)):
        wanted = ps.requires_python
        if wanted and not target.accepts_requires_python(wanted):
            raise UsageError(
                f"{which} ({ps.source}) is for Python {wanted}; the target is Python "
                f"{target.python_version}",
                hint="lock both for the same Python, or pass --python to match them",
                ref="diff-python",
            )


def _run_id(opts: DiffOptions, session: Session) -> str:
    return session.run_id("diff", {"good": opts.good, "bad": opts.bad})
