"""``envbisect lock``: the newest environment the requirements allow in which the repro
passes, proven, with every held-back package explained.

Who does what. The planner resolves the newest consistent environment under the requirements
and the constraints found so far; it is probed. If it passes, that is the lock. If it fails,
``diff``'s machinery (modes/diff.py: both ends verified, ddmin over the changed packages,
reduced to its verified roots, so a package another one forces is never a culprit, each
culprit bisected between its two versions with the rest held) runs between the last
environment known to pass and this one; the culprit's first bad version, failing the way the
newest did, and the version below it, passing in the same environment, are the constraint's
proof: ``culprit<first_bad``. Then resolve the newest again, and repeat. Once an environment
passes, each constraint is tried away (strategy/lock.py): the lock is the newest resolution
under the constraints that remain, and each that remains fails without it.

The first environment known to pass: ``--from LOCK`` (upgrade mode: the user's working
environment), else the environment as of ``--good-date``, else as of the upload of the newest
exact pin (or the first release moment after it at which the requirements resolve at all).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timezone
from typing import Any

from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import canonicalize_name
from packaging.version import Version

from envbisect.core.candidates import build_candidates
from envbisect.core.outcome import same_failure
from envbisect.core.plan import MatchCache, Plan, PlanTarget, Policy, Unresolvable, plan
from envbisect.core.report import ProbeRow, RunResult
from envbisect.errors import NoAnswer, UsageError
from envbisect.index.source import IndexMetadataSource
from envbisect.model import Outcome, OutcomeKind
from envbisect.modes.bydate import Moment, timeline
from envbisect.modes.diff import Change, _Diff
from envbisect.modes.drive import bisect, drive
from envbisect.modes.lockout import dry_run_outputs, write_lock_outputs
from envbisect.modes.options import check_requirements, parse_exclude_newer
from envbisect.modes.planning import read_pins
from envbisect.modes.session import Session, Want
from envbisect.options import CommonOptions
from envbisect.reporter import Reporter
from envbisect.strategy.base import Fixed
from envbisect.strategy.bisect import Bisector
from envbisect.strategy.lock import Constraint, Constraints
from envbisect.strategy.segments import Breakpoint

MAX_ROUNDS = 25  # constraints found before giving up (each costs a search)
MAX_START_MOMENTS = 200  # release moments tried after the newest pin's upload


@dataclass(frozen=True, slots=True, kw_only=True)
class LockOptions:
    common: CommonOptions
    with_reqs: tuple[str, ...] = ()
    pins: tuple[str, ...] = ()
    extras: tuple[str, ...] = ()
    from_lock: str | None = None
    good_date: str | None = None
    pre: bool = False
    now: datetime | None = None  # for tests; default: the clock


Pins = dict[str, Version]


def run_lock(opts: LockOptions, reporter: Reporter | None = None) -> RunResult:
    check_requirements("", opts.with_reqs)
    if opts.good_date and opts.from_lock:
        raise UsageError(
            "--good-date and --from both give the starting point",
            hint="use --from LOCK for upgrade mode, or --good-date DATE, not both",
            ref="lock-start",
        )
    good_date = _date(opts.good_date) if opts.good_date else None
    with Session(opts.common, reporter) as session:
        return _Lock(opts, session, good_date).run()


class _Lock:
    def __init__(self, opts: LockOptions, session: Session, good_date: datetime | None) -> None:
        self.opts, self.session, self.good_date = opts, session, good_date
        target, client = session.target, session.client
        self.env = target.marker_environment()
        self.source = IndexMetadataSource(client, target, allow_sdist=False)
        self.ptarget = PlanTarget(markers=self.env, python_version=target.python_version)
        self.cache: MatchCache = {}
        self.now = opts.now or datetime.now(timezone.utc)
        self.from_pins: Pins | None = None
        self.roots = self._roots()
        self.constraints = Constraints()
        self.result = session.result(
            package="(lock)", candidates=0, run_id=self._run_id(), mode="lock"
        )
        self.rounds = 0

    # -- inputs ------------------------------------------------------------------------------

    def _roots(self) -> list[Requirement]:
        opts, session = self.opts, self.session
        roots = [Requirement(r) for r in opts.with_reqs]
        for ps in read_pins(opts.pins, session.client, cwd=session.repro.origin,
                            extras=opts.extras):  # fmt: skip
            roots += [p.requirement for p in ps.applicable(self.env, opts.extras)]
        if opts.from_lock:
            (lock,) = read_pins([opts.from_lock], session.client, cwd=session.repro.origin)
            if not lock.is_lock:
                raise UsageError(
                    f"--from {opts.from_lock} is not a lock: it has ranges, not one version "
                    "of each package",
                    hint="give a lockfile (requirements.txt with == pins, pylock.toml) or "
                    "installed:PYTHON; for a project's ranges use --pins",
                    ref="lock-from-not-lock",
                )
            self.from_pins = {canonicalize_name(n): v for n, v in lock.baseline(self.env).items()}
            if not roots:  # upgrade mode on its own: every package of the lock, at its newest
                roots = [Requirement(n) for n in sorted(self.from_pins)]
        if not roots:
            raise UsageError(
                "nothing to lock: no requirements given",
                hint="pass --pins SOURCE (e.g. llamafactory==0.9.5 or a pyproject), "
                "--with REQ, or --from LOCK",
                ref="lock-nothing",
            )
        return roots

    def newest(self, specifiers: Mapping[str, SpecifierSet]) -> Plan | Unresolvable:
        return plan(self.roots, self.source, self.ptarget, pre=self.opts.pre,
                    constraints=specifiers, cache=self.cache)  # fmt: skip

    def as_of(
        self, when: datetime, specifiers: Mapping[str, SpecifierSet] | None = None
    ) -> Plan | Unresolvable:
        return plan(self.roots, self.source, self.ptarget, policy=Policy.CONTEMPORARY,
                    cutoff=when, pre=self.opts.pre, constraints=specifiers,
                    cache=self.cache)  # fmt: skip

    def start(self, newest: Plan) -> tuple[str, Pins, datetime | None]:
        """The first environment known to pass (not yet probed): its label, its pins and,
        unless it is --from's lock, the moment it is the environment of."""
        if self.from_pins is not None:
            return f"--from {self.opts.from_lock}", dict(self.from_pins), None
        when, why = self.good_date, "--good-date"
        if when is None:
            when, why = self._newest_pin_upload()
        planned = self.as_of(when)
        if isinstance(planned, Plan):
            return f"as of {when:%Y-%m-%d %H:%M:%S} ({why})", _pins(planned), when
        names = sorted(str(n) for n in newest.pins)
        moments = timeline(names, self.session.client, self.session.target, when, self.now,
                           pre=self.opts.pre)[:MAX_START_MOMENTS]  # fmt: skip
        for m in moments:
            planned = self.as_of(m.when)
            if isinstance(planned, Plan):
                label = f"as of {m.label()} (first moment after {why} that resolves)"
                return label, _pins(planned), m.when
        raise NoAnswer(
            f"no starting point: the requirements do not resolve as of {when:%Y-%m-%d} ({why}) "
            f"nor at any of the {len(moments)} release moment(s) after it",
            hint="give --good-date DATE of an environment that works, or --from LOCK",
        )

    def _newest_pin_upload(self) -> tuple[datetime, str]:
        client, target = self.session.client, self.session.target
        best: tuple[datetime, str] | None = None
        for r in self.roots:
            exact = [s.version for s in r.specifier if s.operator in ("==", "===")]
            if len(exact) != 1 or "*" in exact[0]:
                continue
            files = client.project_files(r.name).files
            for c in build_candidates(files, target, pre=True).candidates:
                same = c.version == _v(exact[0])
                if same and c.upload_time and (best is None or c.upload_time > best[0]):
                    best = (c.upload_time, f"upload of {r.name}=={exact[0]}")
        if best is None:
            raise UsageError(
                "no starting point: nothing is pinned exactly, so there is no date the "
                "environment is known to have worked",
                hint="give --good-date DATE (an environment that worked then) or --from LOCK "
                "(your working environment)",
                ref="lock-no-start",
            )
        return best

    # -- the search ----------------------------------------------------------------------------

    def run(self) -> RunResult:
        session, result = self.session, self.result
        newest = self.newest({})
        if not isinstance(newest, Plan):
            raise UsageError(
                f"the requirements have no consistent environment: {newest.reason}",
                hint="loosen the pins, or check the --python target",
                ref="lock-unresolvable",
            )
        if session.opts.dry_run:
            return dry_run_outputs(self, newest)
        reporter = session.reporter
        try:
            row = self.probe("newest", newest)
            label: str | None = None
            good: Pins | None = None
            when: datetime | None = None
            while row.outcome.kind is not OutcomeKind.PASS:
                if row.outcome.kind is OutcomeKind.UNTESTABLE:
                    raise NoAnswer(
                        f"the newest environment cannot be tested: {row.outcome.describe()}",
                        hint="see report.md for the build's output; an environment that "
                        "cannot be built is not evidence",
                    )
                if len(self.constraints.held) >= MAX_ROUNDS:
                    raise NoAnswer(f"gave up after {MAX_ROUNDS} constraints",
                                   hint="see report.md for what each round found")  # fmt: skip
                if good is None:
                    label, good, when = self.start(newest)
                    reporter.message(f"envbisect: the newest environment fails; starting "
                                     f"point {label}")  # fmt: skip
                if when is not None:  # the ecosystem's own history: environments as of dates
                    found, when = self.find_by_date(when, newest)
                else:  # upgrade mode: delta debugging against the user's lock
                    c, good = self.find_constraint(label or "", good, newest, row)
                    found = [c]
                for c in found:
                    self.constraints.add(c)
                    reporter.message(f"envbisect: constraint {c.package}{c.specifier}: "
                                     f"{c.describe()}")  # fmt: skip
                label = "the last environment that passed"
                planned = self.newest(self.constraints.specifiers())
                if not isinstance(planned, Plan):
                    raise NoAnswer(
                        f"with {c.package}{c.specifier} the requirements have no consistent "
                        f"environment: {planned.reason}",
                        hint="the release that broke the repro is required by the pins: "
                        "see report.md for the evidence, and widen the pins to go back",
                    )
                newest = planned
                row = self.probe(self._newest_label(), newest)
            newest, row = self.drop_unneeded(newest, row)
        except NoAnswer as e:
            result.reason = e.message
            write_lock_outputs(self, None)
            e.result = result
            raise
        except KeyboardInterrupt as e:
            raise session.interrupted(e) from e
        result.status = "found"
        write_lock_outputs(self, row, newest)
        return result

    def probe(self, label: str, planned: Plan) -> ProbeRow:
        runs = self.session.opts.repeat
        points: Fixed[str] = Fixed([label], repeat=runs)
        want = Want(label=label, spec=self.session.env_spec(planned.requirements()), runs=runs)
        log = drive(points, self.session, lambda p, n: want)
        self.result.rows += log.rows
        self.rounds += log.rounds
        return log.rows[-1]

    def _newest_label(self) -> str:
        held = ", ".join(f"{c.package}{c.specifier}" for c in self.constraints.held)
        return f"newest with {held}" if held else "newest"

    def find_by_date(self, start: datetime, newest: Plan) -> tuple[list[Constraint], datetime]:
        """Bisect the release moments between ``start`` (its environment passes) and now,
        each environment as of its moment under the constraints so far. Every failure fails
        the environment (a lock wants one that works); the search finds every breakpoint (the
        first failure, each moment where the failure changes), each one's culprit the release
        at its moment, proven on the last good moment's environment: with only the culprit
        moved to its first bad release (and what that forces) it fails as that moment did.
        Returns the constraints (the first failure's; a later breakpoint's when another
        package fails alone too) and the last good moment (the next round starts there)."""
        session = self.session
        held = self.constraints.specifiers()
        begin = self.as_of(start, held)
        names = sorted(set(_pins(begin) if isinstance(begin, Plan) else ()) | set(_pins(newest)))
        moments = [Moment(when=start, releases=()),
                   *timeline(names, session.client, session.target, start, self.now,
                             pre=self.opts.pre)]  # fmt: skip
        session.reporter.message(
            f"envbisect: {len(moments) - 1} release moment(s) of {len(names)} package(s) "
            f"since {start:%Y-%m-%d %H:%M:%S}; bisecting by date"
        )
        plans: dict[int, Plan] = {}

        def want(i: int, runs: int) -> Want:
            planned = self.as_of(moments[i].when, held) if i else begin
            label = moments[i].label()
            if not isinstance(planned, Plan):
                return Want(label=label, why_not=f"unresolvable: {planned.reason}")
            plans[i] = planned
            return Want(label=label, spec=session.env_spec(planned.requirements()), runs=runs)

        bis = Bisector(n=len(moments), good=0, bad=len(moments) - 1, any_failure=True,
                       repeat=session.opts.repeat)  # fmt: skip
        log, _ = bisect(bis, session, want, labels=lambda i: moments[i].label())  # fmt: skip
        self.result.rows += log.rows
        self.rounds += log.rounds
        final = bis.result
        starts = [r for r, i in zip(log.rows, log.points, strict=True) if i == 0]
        if starts and starts[0].outcome.kind is not OutcomeKind.PASS:
            raise NoAnswer(
                f"the starting point ({moments[0].label()}) does not pass: "
                f"{starts[0].outcome.describe()}",
                hint="give --good-date DATE of an environment where the repro passes, or "
                "--from LOCK of your working environment",
            )
        if final is None or final.status == "no-answer" or final.last_old is None:
            why = final.reason if final is not None else "the search did not end"
            raise NoAnswer(
                f"the starting point ({moments[0].label()}) and the newest environment do not "
                f"bracket the failure: {why}",
                hint="give --good-date DATE of an environment where the repro passes, or "
                "--from LOCK of your working environment",
            )
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
                session.reporter.message(
                    f"envbisect: the failure changes at {moments[b.first_new].label()} "
                    f"({b.outcome.describe()}); no release of it fails alone on the last good "
                    f"environment{f': {later}' if later else ''}: the next round looks again"
                )
                continue
            out.append(later)
        return out, moments[lg].when

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
                found = self._toggle(str(name), version, str(before), good, moments[lg], held,
                                     point.outcome)  # fmt: skip
                if isinstance(found, str):
                    failures.append(found)
                    continue
                found.moment = moments[point.first_new].label()
                return found
        return "; ".join(failures)

    def moved_alone(
        self, good: Plan, name: str, version: str, held: Mapping[str, SpecifierSet]
    ) -> Plan | Unresolvable:
        """``good`` with only ``name`` at ``version`` and what that forces (baseline policy),
        under the constraints on the other packages."""
        return plan([*self.roots, Requirement(f"{name}=={version}")], self.source, self.ptarget,
                    policy=Policy.BASELINE, baseline={str(k): v for k, v in good.pins.items()},
                    pre=self.opts.pre, cache=self.cache,
                    constraints={k: v for k, v in held.items() if k != name})  # fmt: skip

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
        session = self.session
        toggled = self.moved_alone(good, name, version, held)
        if not isinstance(toggled, Plan):
            return f"{name} {version}: unresolvable on the last good environment"
        label = f"{name} {version} on {moment.label()}"
        row = self.probe(label, toggled)
        if row.outcome.kind is OutcomeKind.PASS or not (
            session.opts.any_failure or same_failure(row.outcome, reference)
        ):
            return f"{name} {version} alone: {row.outcome.describe()}"
        moved = [{"package": str(n), "from": str(b) if b else None, "to": str(v) if v else None}
                 for n, b, v in toggled.moved if str(n) != name]  # fmt: skip
        c = Constraint(
            package=name, first_bad=version, last_good=before, outcome=row.outcome,
            passed=moment.label(), failed=label, moved_with=moved,
            round=len(self.constraints.held) + 1,
        )  # fmt: skip
        return self._just_below(c, good, held, reference)

    def _just_below(
        self, c: Constraint, good: Plan, held: Mapping[str, SpecifierSet], reference: Outcome
    ) -> Constraint:
        """The version right below the first bad one, on the same environment: it passes
        (the proof's lower half, named exactly), or fails the same way (then the break came
        earlier: step down), or is neither (the proof stands on the environment's version)."""
        files = self.session.client.project_files(c.package).files
        lower = sorted(
            (x.version for x in build_candidates(files, self.session.target).candidates
             if x.installable and Version(c.last_good) < x.version < Version(c.first_bad)),
            reverse=True,
        )  # fmt: skip
        for v in lower:
            planned = self.moved_alone(good, c.package, str(v), held)
            if not isinstance(planned, Plan):
                return c
            label = f"{c.package} {v} on {c.passed}"
            row = self.probe(label, planned)
            if row.outcome.kind is OutcomeKind.PASS:
                c.last_good, c.passed = str(v), label
                return c
            if not (self.session.opts.any_failure or same_failure(row.outcome, reference)):
                return c
            c.first_bad, c.failed, c.outcome = str(v), label, row.outcome
        return c

    def find_constraint(
        self, label: str, good: Pins, newest: Plan, bad_row: ProbeRow
    ) -> tuple[Constraint, Pins]:
        """Between ``good`` (known or expected to pass) and the failing newest environment:
        the culprit, its first bad version and the version below it, both probed in one
        environment. Returns the constraint and the passing environment of its proof (the
        next round's starting point: nearer the newest)."""
        session = self.session
        bad = _pins(newest)
        changes: list[Change] = [
            (n, str(good[n]) if n in good else None, str(bad[n]) if n in bad else None)
            for n in sorted(good.keys() | bad.keys())
            if good.get(n) != bad.get(n)
        ]
        if not changes:
            raise NoAnswer(
                f"the environment {label} is the newest one, and it fails: "
                f"{bad_row.outcome.describe()}",
                hint="nothing newer broke it: the repro fails with the starting point itself",
            )
        diff = _Diff(good=good, bad=bad, changes=changes, source=self.source,
                     ptarget=self.ptarget, cache=self.cache, session=session,
                     result=self.result, any_failure=True)  # fmt: skip
        try:
            diff.verify_ends(changes)
        except NoAnswer as e:
            if "GOOD" in e.message:
                raise NoAnswer(
                    f"the starting point ({label}) does not pass either: "
                    + e.message.split(": ", 1)[-1],
                    hint="give --good-date DATE of an environment where the repro passes, or "
                    "--from LOCK of your working environment",
                ) from e
            raise
        session.reporter.message(
            f"envbisect: {len(changes)} package(s) changed since {label}; ddmin"
        )
        culprits = diff.culprits(diff.ddmin(changes))
        # The culprits' changes: the verified roots (never a package another one forces), else
        # ddmin's set; the others are held at BAD in each proof.
        assert diff.found is not None
        minimal = diff.found.culprits
        failures: list[str] = []
        for chosen in self._preference(culprits):
            found = self._prove(diff, chosen, minimal)
            if not isinstance(found, str):
                return found
            failures.append(found)
            # The rest at BAD may not take the culprit's older versions (pyarrow 13 against
            # numpy 2): look for its first bad version in the starting environment instead,
            # where only what it forces moves.
            name, good_v, bad_v = chosen["package"], chosen["good_version"], chosen["bad_version"]
            if good_v is None or bad_v is None:
                continue
            session.reporter.message(
                f"envbisect: looking for the first bad {name} with the rest as it was"
            )
            alone = diff._bisect(name, good_v, bad_v, {}) or {
                "package": name, "good_version": good_v, "bad_version": bad_v,
            }  # fmt: skip
            found = self._prove(diff, alone, [(name, good_v, bad_v)])
            if not isinstance(found, str):
                return found
            failures.append(found)
        raise NoAnswer(
            "no culprit could be proven the break: " + "; ".join(failures),
            hint="a flaky repro? try --repeat N; see report.md for every probe",
        )

    def _prove(
        self, diff: _Diff, chosen: dict[str, Any], minimal: Sequence[Change]
    ) -> tuple[Constraint, Pins] | str:
        """The constraint on ``chosen`` with its proof (the version below passing and the
        first bad failing like the newest, in one environment), or why there is none."""
        session = self.session
        name = chosen["package"]
        first_bad, last_good = chosen["bad_version"], chosen["good_version"]
        if first_bad is None or last_good is None:
            return (f"the failure comes with {name} "
                    f"{'removed' if first_bad is None else 'added'}: no version to hold it "
                    "below")  # fmt: skip
        others = {o[0]: o[2] for o in minimal if o[0] != name}
        # The proof, in one environment: the store answers what the search already ran.
        wants = {
            "pass": diff.want(f"{name} {last_good} (proof)", {**others, name: last_good}, 1),
            "fail": diff.want(f"{name} {first_bad} (proof)", {**others, name: first_bad}, 1),
        }
        proof: Fixed[str] = Fixed(["pass", "fail"], repeat=session.opts.repeat)
        log = drive(proof, session, lambda p, n: replace(wants[p], runs=n))
        self.result.rows += log.rows
        self.rounds += log.rounds
        p_row, f_row = proof.rows["pass"], proof.rows["fail"]
        assert diff.reference is not None
        if p_row.outcome.kind is not OutcomeKind.PASS or not (
            f_row.outcome.kind is not OutcomeKind.PASS
            and (diff.any_failure or same_failure(f_row.outcome, diff.reference))
        ):
            return (f"{name}: with the rest held, {last_good} gave {p_row.outcome.describe()} "
                    f"and {first_bad} gave {f_row.outcome.describe()}")  # fmt: skip
        planned, _ = diff.environment({**others, name: last_good})
        assert planned is not None  # it was just probed
        c = Constraint(
            package=name, first_bad=first_bad, last_good=last_good, outcome=f_row.outcome,
            passed=p_row.version, failed=f_row.version,
            moved_with=chosen.get("moved_with") or [],
            interaction=[o[0] for o in minimal if o[0] != name],
            round=len(self.constraints.held) + 1,
        )  # fmt: skip
        return c, _pins(planned)

    def _preference(self, culprits: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
        """Which culprit to hold back first: alone, it; in an interaction, the one whose first
        bad release came last (the newer release broke what worked), then the others."""
        if len(culprits) == 1:
            return list(culprits)
        client, target = self.session.client, self.session.target

        def uploaded(c: dict[str, Any]) -> datetime:
            if c["bad_version"] is None:
                return datetime.min.replace(tzinfo=timezone.utc)
            files = client.project_files(c["package"]).files
            for cand in build_candidates(files, target, pre=True).candidates:
                if str(cand.version) == c["bad_version"] and cand.upload_time is not None:
                    return cand.upload_time
            return datetime.min.replace(tzinfo=timezone.utc)

        return sorted(culprits, key=uploaded, reverse=True)

    def drop_unneeded(self, newest: Plan, row: ProbeRow) -> tuple[Plan, ProbeRow]:
        """Try each constraint away until none can go: a removal whose newest environment
        passes is dropped (and the lock moves there); one that fails is kept, with that
        probe as its present justification."""
        changed = True
        while changed and self.constraints.held:
            changed = False
            for package in self.constraints.drop_order():
                planned = self.newest(self.constraints.specifiers(without=package))
                c = next(c for c in self.constraints.held if c.package == package)
                if not isinstance(planned, Plan):
                    c.still_needed, c.still_needed_label = None, ""
                    continue
                if _pins(planned) == _pins(newest):
                    self.constraints.drop(package, "no effect: the newest environment is the "
                                                   "same without it")  # fmt: skip
                    changed = True
                    break
                label = f"without {package}{c.specifier}"
                trial = self.probe(label, planned)
                if trial.outcome.kind is OutcomeKind.PASS:
                    self.constraints.drop(package, f"{label} passes: a later release fixed it, "
                                                   "or another constraint covers it")  # fmt: skip
                    self.session.reporter.message(f"envbisect: dropped {package}{c.specifier}: "
                                                  f"{label} passes")  # fmt: skip
                    newest, row, changed = planned, trial, True
                    break
                c.still_needed, c.still_needed_label = trial.outcome, trial.version
        return newest, row

    # -- outputs ---------------------------------------------------------------------------------

    def _run_id(self) -> str:
        o = self.opts
        return self.session.run_id("lock", {
            "with": sorted(o.with_reqs), "pins": list(o.pins), "extras": list(o.extras),
            "from": o.from_lock, "good_date": o.good_date, "pre": o.pre,
        })  # fmt: skip


def _pins(planned: Plan) -> Pins:
    return {str(n): v for n, v in planned.pins.items()}


def _v(text: str) -> Version | None:
    try:
        return Version(text)
    except ValueError:
        return None


def _date(value: str) -> datetime:
    try:
        when = parse_exclude_newer(value)
    except UsageError as e:
        raise UsageError(f"--good-date {value!r} is not a date", hint=e.hint or "",
                         ref="bad-date") from e  # fmt: skip
    assert when is not None
    return when
