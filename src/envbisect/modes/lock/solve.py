"""``envbisect lock``: the newest environment the requirements allow in which the repro
passes, proven, with every held-back package explained.

Who does what. The planner resolves the newest consistent environment under the requirements
and the constraints found so far; it is probed. If it passes, that is the lock. If it fails,
``diff``'s engine (modes/diff/engine.py: both ends verified, ddmin over the changed packages,
reduced to its verified roots, so a package another one forces is never a culprit, each
culprit bisected between its two versions with the rest held; modes/lock/upgrade.py picks and
proves the culprit) runs between the last environment known to pass and this one; the
culprit's first bad version, failing the way the newest did, and the version below it,
passing in the same environment, are the constraint's proof: ``culprit<first_bad``. Then
resolve the newest again, and repeat. Once an environment passes, each constraint is tried
away (strategy/constraints.py): the lock is the newest resolution under the constraints that remain,
and each that remains fails without it. The search hands its end to its outputs
(modes/lock/outputs.py) as a frozen ``LockOutcome``.

The first environment known to pass: ``--from LOCK`` (upgrade mode: the user's working
environment), else the environment as of ``--good-date``, else as of the upload of the newest
exact pin (or the first release moment after it at which the requirements resolve at all).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from datetime import datetime, timezone

from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import canonicalize_name
from packaging.version import Version

from envbisect.core.plan import MatchCache, Plan, PlanTarget, Policy, Unresolvable
from envbisect.core.planmemo import plan
from envbisect.core.results.lock import Constraint, LockOutcome, LockResult
from envbisect.core.results.parts import ProbeRow, Status
from envbisect.errors import NoAnswer, UsageError
from envbisect.index.source import IndexMetadataSource
from envbisect.model import OutcomeKind
from envbisect.modes.bydate import timeline
from envbisect.modes.drive import drive
from envbisect.modes.lock.bydate import DateSearch
from envbisect.modes.lock.descent import Descent
from envbisect.modes.lock.outputs import write_lock_outputs
from envbisect.modes.lock.start import newest_pin_upload, other_builds
from envbisect.modes.lock.upgrade import Upgrade
from envbisect.modes.planning import read_pins
from envbisect.modes.searchoptions import (
    check_requirements,
    parse_date_flag,
)
from envbisect.modes.session import Session, Want
from envbisect.options import CommonOptions
from envbisect.progress import Progress
from envbisect.strategy.constraints import Constraints
from envbisect.strategy.protocol import Fixed

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
    # "auto": each round holds back the package the failure names, if it names one, else
    # searches by date (or against --from's lock), descending from the newest environment
    # where no starting point passes or none can be built; "history": the search by date or
    # against --from's lock every round; "descent": descend from the start.
    strategy: str = "auto"
    no_project: bool = False  # a release named as the pins source stays out of the lock
    now: datetime | None = None  # for tests; default: the clock


Pins = dict[str, Version]


def run_lock(opts: LockOptions, progress: Progress | None = None) -> LockResult:
    check_requirements("", opts.with_reqs)
    if opts.good_date and opts.from_lock:
        raise UsageError(
            "--good-date and --from both give the starting point",
            hint="use --from LOCK for upgrade mode, or --good-date DATE, not both",
            ref="lock-start",
        )
    good_date = parse_date_flag("--good-date", opts.good_date) if opts.good_date else None
    with Session(opts.common, progress) as session:
        return _Lock(opts, session, good_date).run()


class _Lock(DateSearch):
    opts: LockOptions

    def __init__(self, opts: LockOptions, session: Session, good_date: datetime | None) -> None:
        self.opts, self.session, self.good_date = opts, session, good_date
        target, client = session.target, session.client
        self.env = target.marker_environment()
        self.ptarget = PlanTarget(markers=self.env, python_version=target.python_version)
        self.cache: MatchCache = {}
        # What resolvelib gives up on, uv plans (said once): in every plan of the lock, the
        # descent's and the search by date's included, as in run mode.
        self.fallback = session.uv_planner()
        self.now = opts.now or datetime.now(timezone.utc)
        self.from_pins: Pins | None = None
        self.roots = self._roots()
        self.source = IndexMetadataSource(
            client,
            target,
            allow_sdist=False,
            overrides=session.opts.overrides,
            provided=session.provided(r.name for r in self.roots),  # --inherit
        )
        self.constraints = Constraints()
        self.header = session.result(
            LockResult, package="(lock)", candidates=0, run_id=self._run_id()
        )
        self.rows: list[ProbeRow] = []  # every probe, in order (the diff engine's too)
        self.rounds = 0
        self.upgrades: list[Upgrade] = []  # the rounds against --from's lock
        self.descent: Descent | None = Descent(self) if opts.strategy == "descent" else None
        if self.descent is not None:
            self.descent.steps.append("--strategy descent: descending from the newest")
        # auto: each round first holds back the package its failure names, if it names one
        # (a bisection of one package's versions, no search of the history).
        self.owner_first: Descent | None = Descent(self) if opts.strategy == "auto" else None

    @property
    def pre(self) -> bool:
        return self.opts.pre

    # -- inputs ------------------------------------------------------------------------------

    def _roots(self) -> list[Requirement]:
        opts, session = self.opts, self.session
        roots = [Requirement(r) for r in opts.with_reqs]
        for ps in read_pins(
            opts.pins, session.client, cwd=session.repro.origin, extras=opts.extras
        ):
            roots += [p.requirement for p in ps.applicable(self.env, opts.extras)]
            if ps.release and not opts.no_project:
                roots.append(Requirement(ps.release))
                session.progress.message(
                    f"envbisect: the lock holds {ps.release} itself, the release its pins "
                    "come from (--no-project leaves it out)"
                )
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
        return plan(
            self.roots,
            self.source,
            self.ptarget,
            pre=self.opts.pre,
            constraints=specifiers,
            cache=self.cache,
            fallback=self.fallback,
        )

    def as_of(
        self, when: datetime, specifiers: Mapping[str, SpecifierSet] | None = None
    ) -> Plan | Unresolvable:
        return plan(
            self.roots,
            self.source,
            self.ptarget,
            policy=Policy.CONTEMPORARY,
            cutoff=when,
            pre=self.opts.pre,
            constraints=specifiers,
            cache=self.cache,
            fallback=self.fallback,
            forward=True,  # a package with no file here that day: its first one that installs
        )

    def start(self, newest: Plan) -> tuple[str, Pins, datetime | None]:
        """The first environment known to pass (not yet probed): its label, its pins and,
        unless it is --from's lock, the moment it is the environment of."""
        if self.from_pins is not None:
            return f"--from {self.opts.from_lock}", dict(self.from_pins), None
        when, why = self.good_date, "--good-date"
        if when is None:
            when, why = newest_pin_upload(
                self.roots,
                self.session.client,
                self.session.target,
                torch_index=bool(self.session.opts.indexes.torch_index),
                say=self.session.progress.message,
            )
        planned = self.as_of(when)
        if isinstance(planned, Plan):
            label = f"as of {when:%Y-%m-%d %H:%M:%S} ({why})"
            return label + _forward(planned), _pins(planned), when
        names = sorted(str(n) for n in newest.pins)
        moments = timeline(
            names, self.session.client, self.session.target, when, self.now, pre=self.opts.pre
        )[:MAX_START_MOMENTS]
        for m in moments:
            planned = self.as_of(m.when)
            if isinstance(planned, Plan):
                label = f"as of {m.label()} (first moment after {why} that resolves)"
                return label + _forward(planned), _pins(planned), m.when
        raise NoAnswer(
            f"no starting point: the requirements do not resolve as of {when:%Y-%m-%d} ({why}) "
            f"nor at any of the {len(moments)} release moment(s) after it",
            hint="give --good-date DATE of an environment that works, or --from LOCK",
        )

    # -- the search ----------------------------------------------------------------------------

    def run(self) -> LockResult:
        session = self.session
        newest = self.newest({})
        if not isinstance(newest, Plan):
            raise UsageError(
                f"the requirements have no consistent environment: {newest.reason}",
                hint="loosen the pins, or check the --python target",
                ref="lock-unresolvable",
            )
        note = other_builds(newest)
        if note:
            session.progress.message(f"envbisect: {note}")
        if session.opts.dry_run:
            return self.dry_run(newest)
        try:
            newest, row = self.drop_unneeded(*self.search_passing(newest))
        except NoAnswer as e:
            e.result = write_lock_outputs(self.outcome(reason=e.message), session)
            raise
        except KeyboardInterrupt as e:
            raise session.interrupted(e) from e
        unconstrained = self.newest({})
        done = self.outcome(
            status=Status.FOUND,
            passing=row,
            locked=_str_pins(newest),
            unconstrained=_str_pins(unconstrained) if isinstance(unconstrained, Plan) else None,
        )
        return write_lock_outputs(done, session)

    def search_passing(self, newest: Plan) -> tuple[Plan, ProbeRow]:
        """Rounds until the newest environment under the constraints passes: each failing one
        gives one or more constraints, found by date or against --from's lock."""
        progress = self.session.progress
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
                raise NoAnswer(
                    f"gave up after {MAX_ROUNDS} constraints",
                    hint="see report.md for what each round found",
                )
            found: list[Constraint] = []
            named = None
            if self.descent is None and self.owner_first is not None:
                named = self.owner_first.owner_step(newest, row)
            if named is not None:
                found = [named]
            elif self.descent is None:
                try:
                    if good is None:
                        label, good, when = self.start(newest)
                        progress.message(
                            f"envbisect: the newest environment fails; starting point {label}"
                        )
                    if when is not None:  # the ecosystem's own history: environments as of dates
                        found, when = self.find_by_date(when, newest)
                    else:  # upgrade mode: delta debugging against the user's lock
                        c, good = self._upgrade(label or "", good, newest, row)
                        found = [c]
                except NoAnswer as e:  # no start that passes, none that builds: descend
                    progress.message(
                        f"envbisect: {e.message}; following the failures down from the newest "
                        "environment instead (descent)"
                    )
                    self.descent = Descent(self)
                    self.descent.steps.append(f"why: {e.message}")
            if self.descent is not None:
                found = [self.descent.step(newest, row)]
            for c in found:
                self.constraints.add(c)
                progress.message(f"envbisect: constraint {c.package}{c.specifier}: {c.describe()}")
            label = "the last environment that passed"
            planned = self.newest(self.constraints.specifiers())
            if not isinstance(planned, Plan):
                raise NoAnswer(
                    f"with {c.package}{c.specifier} the requirements have no consistent "
                    f"environment: {planned.reason}",
                    hint="the release that broke the repro is required by the pins: "
                    "see report.md for the evidence, and widen the pins to go back",
                )
            if self.descent is not None and planned.pins == newest.pins:
                raise NoAnswer(  # a guard: the descent's constraints always move the newest
                    f"the descent's constraint {c.package}{c.specifier} leaves the newest "
                    "environment as it was",
                    hint="see report.md for the descent's steps",
                )
            newest = planned
            row = self.probe(self._newest_label(), newest)
        return newest, row

    def _upgrade(
        self, label: str, good: Pins, newest: Plan, row: ProbeRow
    ) -> tuple[Constraint, Pins]:
        """One round of upgrade mode: delta debugging against the user's lock; the
        constraint and the next round's starting point."""
        upgrade = Upgrade(
            session=self.session,
            source=self.source,
            ptarget=self.ptarget,
            cache=self.cache,
            rows=self.rows,
            round=len(self.constraints.held) + 1,
        )
        self.upgrades.append(upgrade)
        return upgrade.find(label, good, newest, row)

    def outcome(
        self,
        *,
        status: Status = Status.NO_ANSWER,
        reason: str = "",
        passing: ProbeRow | None = None,
        locked: Mapping[str, str] | None = None,
        unconstrained: Mapping[str, str] | None = None,
    ) -> LockOutcome:
        """Where the search ended, for its outputs."""
        engines = [u.engine for u in self.upgrades if u.engine is not None]
        search = engines[-1].search if engines else None
        result = replace(
            self.header, status=status, reason=reason, rows=tuple(self.rows), search=search
        )
        rounds = self.rounds + sum(u.rounds for u in self.upgrades)
        return LockOutcome(
            result=result,
            held=tuple(self.constraints.held),
            dropped=tuple(self.constraints.dropped),
            rounds=rounds,
            passing=passing,
            locked=locked or {},
            unconstrained=unconstrained,
            descent=tuple(
                self.descent.steps
                if self.descent is not None
                else (self.owner_first.steps if self.owner_first is not None else ())
            ),
        )

    def dry_run(self, newest: Plan) -> LockResult:
        """``--dry-run``: the plans of the newest environment and of the starting point."""
        from envbisect.modes.dryrun import plan_views

        session = self.session
        wants = [Want(label="newest", spec=session.env_spec(newest.requirements()))]
        try:
            label, pins, _ = self.start(newest) if self.descent is None else ("", {}, None)
        except NoAnswer as e:
            session.progress.message(
                f"envbisect: {e.message}: a failure of the newest would be followed down "
                "from it (descent)"
            )
            pins = {}
        if pins:
            reqs = [f"{n}=={v}" for n, v in sorted(pins.items())]
            wants.append(Want(label=f"starting point: {label}", spec=session.env_spec(reqs)))
        return replace(self.header, status=Status.DRY_RUN, plans=tuple(plan_views(session, wants)))

    def probe(self, label: str, planned: Plan) -> ProbeRow:
        runs = self.session.opts.repeat
        points: Fixed[str] = Fixed([label], repeat=runs)
        want = Want(label=label, spec=self.session.env_spec(planned.requirements()), runs=runs)
        log = drive(points, self.session, lambda p, n: want)
        self.rows += log.rows
        self.rounds += log.rounds
        return log.rows[-1]

    def _newest_label(self) -> str:
        held = ", ".join(f"{c.package}{c.specifier}" for c in self.constraints.held)
        return f"newest with {held}" if held else "newest"

    def drop_unneeded(self, newest: Plan, row: ProbeRow) -> tuple[Plan, ProbeRow]:
        """Try each constraint away until none can go: a removal whose newest environment
        passes is dropped (and the lock moves there); one that fails is kept, with that
        probe as its present justification."""
        changed = True
        while changed and self.constraints.held:
            changed = False
            for package in self.constraints.drop_order():
                planned = self.newest(self.constraints.specifiers(without=package))
                c = self.constraints.get(package)
                if not isinstance(planned, Plan):
                    self.constraints.still_needed(package, None, "")
                    continue
                if _pins(planned) == _pins(newest):
                    self.constraints.drop(
                        package, "no effect: the newest environment is the same without it"
                    )
                    changed = True
                    break
                label = f"without {package}{c.specifier}"
                trial = self.probe(label, planned)
                if trial.outcome.kind is OutcomeKind.PASS:
                    self.constraints.drop(
                        package,
                        f"{label} passes: a later release fixed it, "
                        "or another constraint covers it",
                    )
                    self.session.progress.message(
                        f"envbisect: dropped {package}{c.specifier}: {label} passes"
                    )
                    newest, row, changed = planned, trial, True
                    break
                self.constraints.still_needed(package, trial.outcome, trial.version)
        return newest, row

    # -- outputs ---------------------------------------------------------------------------------

    def _run_id(self) -> str:
        o = self.opts
        return self.session.run_id(
            "lock",
            {
                "with": sorted(o.with_reqs),
                "pins": list(o.pins),
                "extras": list(o.extras),
                "from": o.from_lock,
                "good_date": o.good_date,
                "pre": o.pre,
                # only when not the default: the ids of runs from before stay as they were
                **({"strategy": o.strategy} if o.strategy != "auto" else {}),
                **({"no_project": True} if o.no_project else {}),
            },
        )


def _forward(planned: Plan) -> str:
    """What a start of mixed dates says: the packages moved past its date, and where to."""
    if not planned.forward:
        return ""
    moved = ", ".join(f"{n} {planned.pins[n]}" for n in planned.forward)
    return f"; with no file here that day, at their first release that installs: {moved}"


def _pins(planned: Plan) -> Pins:
    return {str(n): v for n, v in planned.pins.items()}


def _str_pins(planned: Plan) -> dict[str, str]:
    return {str(n): str(v) for n, v in planned.pins.items()}


def _v(text: str) -> Version | None:
    try:
        return Version(text)
    except ValueError:
        return None
