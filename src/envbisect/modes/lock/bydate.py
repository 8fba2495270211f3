"""``envbisect lock``'s search by date: the constraints that the release moments between the
last environment known to pass and the failing newest one show.

Who does what: modes/lock/solve.py runs the rounds and hands each failing newest environment
to ``ByDate.find``, one of the lock's peer strategies; the lock's context (modes/lock/common.py)
plans and probes. The release moments of every package in the window are bisected (``bisect``,
every breakpoint between two kinds of outcome), each breakpoint's moment names its culprit
(the release uploaded there, moved alone on the environment right before it), and each
culprit is held just below its first bad version in the same environment (its proof).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import replace
from datetime import datetime

from packaging.specifiers import SpecifierSet
from packaging.utils import canonicalize_name
from packaging.version import Version

from envbisect.core.candidates import build_candidates
from envbisect.core.outcome import same_failure
from envbisect.core.plan import Plan
from envbisect.core.results.lock import Constraint
from envbisect.core.results.parts import ProbeRow, Status, moves
from envbisect.errors import NoAnswer, Unanswered
from envbisect.model import Outcome, OutcomeKind
from envbisect.modes.bydate import Moment, timeline
from envbisect.modes.drive import bisect
from envbisect.modes.lock.common import LockContext
from envbisect.modes.lock.start import starting_point
from envbisect.modes.session import Want
from envbisect.strategy.bisect import Bisector
from envbisect.strategy.segments import Breakpoint
from envbisect.strategy.verdicts import BisectResult


class ByDate:
    """The search by date, a peer strategy of the lock (module doc). Its own state: the
    moment its next round starts from (the starting point's, then each round's last good
    moment)."""

    def __init__(self, ctx: LockContext) -> None:
        self.ctx = ctx
        self.when: datetime | None = None

    def find(self, newest: Plan, row: ProbeRow) -> list[Constraint]:
        """The round's constraints: from the starting point (found at the first round, said)
        to the failing newest environment."""
        if self.when is None:
            label, _, when = starting_point(self.ctx, newest)
            assert when is not None  # a lock without --from starts at a moment
            self.ctx.session.progress.message(
                f"envbisect: the newest environment fails; starting point {label}"
            )
            self.when = when
        found, self.when = self.find_by_date(self.when, newest)
        return found

    def find_by_date(self, start: datetime, newest: Plan) -> tuple[list[Constraint], datetime]:
        """Bisect the release moments between ``start`` (its environment passes) and now,
        each environment as of its moment under the constraints so far. Every failure fails
        the environment (a lock wants one that works); the search finds every breakpoint (the
        first failure, each moment where the failure changes), each one's culprit the release
        at its moment, proven on the last good moment's environment: with only the culprit
        moved to its first bad release (and what that forces) it fails as that moment did.
        Returns the constraints (the first failure's; a later breakpoint's when another
        package fails alone too) and the last good moment (the next round starts there)."""
        held = self.ctx.constraints.specifiers()
        moments, plans, final = self._bisect_moments(start, newest, held)
        assert final.last_old is not None
        lg, first = final.last_old, final.breakpoints[0]
        # Found: the first bad moment. Ambiguous (moments between that cannot be built): each
        # of them, in order; the proof decides.
        found = self._culprit_at(first, plans, moments, lg, held)
        if isinstance(found, str):
            raise NoAnswer(
                f"the environment broke after {moments[lg].label()}, but no release of "
                f"{len(first.possible) or 1} moment(s) after it fails alone on the last good "
                f"environment" + (f": {found}" if found else ""),
                hint="an interaction between releases of that moment and later ones? try "
                "--from LOCK (delta debugging) from the last good environment; see report.md",
            )
        out = [found]
        for b in final.breakpoints[1:]:  # where the failure changes again further on
            if b.outcome.kind is OutcomeKind.PASS:
                continue  # a failure that a later release fixed: nothing to hold back
            later = self._culprit_at(b, plans, moments, lg, held, exclude={c.package for c in out})
            if isinstance(later, str):
                self.ctx.session.progress.message(
                    f"envbisect: the failure changes at {moments[b.first_new].label()} "
                    f"({b.outcome.describe()}); no release of it fails alone on the last good "
                    f"environment{f': {later}' if later else ''}: the next round looks again"
                )
                continue
            out.append(later)
        return out, moments[lg].when

    def _bisect_moments(
        self, start: datetime, newest: Plan, held: Mapping[str, SpecifierSet]
    ) -> tuple[list[Moment], dict[int, Plan], BisectResult]:
        """The moments since ``start``, the plan of each one probed, and the bisection's end:
        it must bracket the failure, from a start that passes (``NoAnswer`` else)."""
        session = self.ctx.session
        begin = self.ctx.as_of(start, held)
        names = sorted(set(begin.pins if isinstance(begin, Plan) else ()) | set(newest.pins))
        moments = [
            Moment(when=start, releases=()),
            *timeline(names, session.client, session.target, start, self.ctx.now, pre=self.ctx.pre),
        ]
        session.progress.message(
            f"envbisect: {len(moments) - 1} release moment(s) of {len(names)} package(s) "
            f"since {start:%Y-%m-%d %H:%M:%S}; bisecting by date"
        )
        plans: dict[int, Plan] = {}

        def want(i: int, runs: int) -> Want:
            planned = self.ctx.as_of(moments[i].when, held) if i else begin
            label = moments[i].label()
            if not isinstance(planned, Plan):
                return Want(label=label, why_not=f"unresolvable: {planned.reason}")
            plans[i] = planned
            return Want(label=label, spec=session.env_spec(planned.requirements()), runs=runs)

        bis = Bisector(
            n=len(moments),
            good=0,
            bad=len(moments) - 1,
            any_failure=True,
            repeat=session.opts.probing.repeat,
        )
        log, _ = bisect(bis, session, want, labels=lambda i: moments[i].label())
        self.ctx.tally.add(log)
        final = bis.conclude()
        hint = (
            "give --good-date DATE of an environment where the repro passes, or "
            "--from LOCK of your working environment"
        )
        starts = [r for r, i in zip(log.rows, log.points, strict=True) if i == 0]
        if starts and starts[0].outcome.kind is not OutcomeKind.PASS:
            raise NoAnswer(
                f"the starting point ({moments[0].label()}) does not pass: "
                f"{starts[0].outcome.describe()}",
                hint=hint,
                why=Unanswered.GOOD_FAILS,
            )
        if final is None or final.status is Status.NO_ANSWER or final.last_old is None:
            why = final.reason if final is not None else "the search did not end"
            raise NoAnswer(
                f"the starting point ({moments[0].label()}) and the newest "
                f"environment do not bracket the failure: {why}",
                hint=hint,
            )
        return moments, plans, final

    def _culprit_at(
        self,
        point: Breakpoint,
        plans: Mapping[int, Plan],
        moments: Sequence[Moment],
        lg: int,
        held: Mapping[str, SpecifierSet],
        *,
        exclude: Collection[str] = (),
    ) -> Constraint | str:
        """The constraint on a release of the breakpoint's moment (each moment it may hide,
        in order), proven on the last good moment's environment against the breakpoint's
        own failure, or why none is."""
        suspects = list(point.possible) or [point.first_new]
        good, bad = plans[lg], plans.get(point.first_new)
        failures = []
        for fb in suspects:
            for package, version in moments[fb].releases:
                name = canonicalize_name(package)
                before = good.pins.get(name)
                after = bad.pins.get(name) if bad is not None else None
                if before is None or after is None or Version(version) > after:
                    continue  # not what the failing environment took, or nothing to hold
                if str(name) in exclude:
                    failures.append(f"{name} {version}: held back already")
                    continue
                found = self._toggle(
                    str(name), version, str(before), good, moments[lg], held, point.outcome
                )
                if isinstance(found, str):
                    failures.append(found)
                    continue
                return replace(found, moment=moments[point.first_new].label())
        return "; ".join(failures)

    def _toggle(
        self,
        name: str,
        version: str,
        before: str,
        good: Plan,
        moment: Moment,
        held: Mapping[str, SpecifierSet],
        reference: Outcome,
    ) -> Constraint | str:
        session = self.ctx.session
        toggled = self.ctx.moved_alone(good, name, version, held)
        if not isinstance(toggled, Plan):
            return f"{name} {version}: unresolvable on the last good environment"
        label = f"{name} {version} on {moment.label()}"
        row = self.ctx.probe(label, toggled)
        if row.outcome.kind is OutcomeKind.PASS or not (
            session.opts.probing.any_failure or same_failure(row.outcome, reference)
        ):
            return f"{name} {version} alone: {row.outcome.describe()}"
        moved = moves(m for m in toggled.moved if str(m[0]) != name)
        c = Constraint(
            package=name,
            first_bad=version,
            last_good=before,
            outcome=row.outcome,
            passed=moment.label(),
            failed=label,
            moved_with=moved,
            round=self.ctx.next_round(),
        )
        return self._just_below(c, good, held, reference)

    def _just_below(
        self, c: Constraint, good: Plan, held: Mapping[str, SpecifierSet], reference: Outcome
    ) -> Constraint:
        """The version right below the first bad one, on the same environment: it passes
        (the proof's lower half, named exactly), or fails the same way (then the break came
        earlier: step down), or is neither (the proof stands on the environment's version)."""
        files = self.ctx.session.client.project_files(c.package).files
        lower = sorted(
            (
                x.version
                for x in build_candidates(files, self.ctx.session.target).candidates
                if x.installable and Version(c.last_good) < x.version < Version(c.first_bad)
            ),
            reverse=True,
        )
        for v in lower:
            planned = self.ctx.moved_alone(good, c.package, str(v), held)
            if not isinstance(planned, Plan):
                return c
            label = f"{c.package} {v} on {c.passed}"
            row = self.ctx.probe(label, planned)
            if row.outcome.kind is OutcomeKind.PASS:
                return replace(c, last_good=str(v), passed=label)
            if not (
                self.ctx.session.opts.probing.any_failure or same_failure(row.outcome, reference)
            ):
                return c
            c = replace(c, first_bad=str(v), failed=label, outcome=row.outcome)
        return c
