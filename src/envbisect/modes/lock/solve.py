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
from dataclasses import replace

from envbisect.core.plan import Plan
from envbisect.core.results.lock import Constraint, LockOutcome, LockResult
from envbisect.core.results.parts import ProbeRow, Status
from envbisect.errors import NoAnswer, UsageError
from envbisect.model import OutcomeKind
from envbisect.modes.lock.bydate import ByDate
from envbisect.modes.lock.common import LockContext, LockOptions, Peer, Strategy, open_lock
from envbisect.modes.lock.descent import Descent
from envbisect.modes.lock.outputs import write_lock_outputs
from envbisect.modes.lock.start import other_builds, starting_point
from envbisect.modes.lock.upgrade import Upgrade
from envbisect.modes.searchoptions import (
    check_requirements,
    parse_date_flag,
)
from envbisect.modes.session import Session, Want
from envbisect.progress import Progress

__all__ = ["LockOptions", "Strategy", "run_lock"]

MAX_ROUNDS = 25  # constraints found before giving up (each costs a search)


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
        return _Lock(open_lock(opts, session, good_date)).run()


class _Lock:
    """The rounds of one lock: which peer strategy finds each round's constraint (``_round``),
    then each constraint tried away (``drop_unneeded``)."""

    def __init__(self, ctx: LockContext) -> None:
        self.ctx, self.session = ctx, ctx.session
        self.header = ctx.session.result(
            LockResult, package="(lock)", candidates=0, run_id=self._run_id()
        )
        strategy = ctx.opts.strategy
        # auto: each round first holds back the package its failure names, if it names one
        # (a bisection of one package's versions, no search of the history).
        self.owner_first = Descent(ctx) if strategy is Strategy.AUTO else None
        # the search of the history: by date, or against --from's lock (upgrade mode)
        self.history: ByDate | Upgrade | None = None
        if strategy is not Strategy.DESCENT:
            self.history = Upgrade(ctx) if ctx.from_pins is not None else ByDate(ctx)
        self.descent: Descent | None = None
        if strategy is Strategy.DESCENT:
            self.descent = Descent(ctx, why="--strategy descent: descending from the newest")

    def _round(self, newest: Plan, row: ProbeRow) -> list[Constraint]:
        """The constraints of one round, found by the strategy whose turn it is: the owner
        the failure names (auto), else the history, else (or once the history has no
        starting point that passes or builds) the descent, for the rest of the lock."""
        if self.descent is None and self.owner_first is not None:
            named = self.owner_first.owner_step(newest, row)
            if named is not None:
                return [named]
        if self.descent is None and self.history is not None:
            try:
                return self.history.find(newest, row)
            except NoAnswer as e:  # no start that passes, none that builds: descend
                self.session.progress.message(
                    f"envbisect: {e.message}; following the failures down from the newest "
                    "environment instead (descent)"
                )
                self.descent = Descent(self.ctx, why=f"why: {e.message}")
        assert self.descent is not None
        peer: Peer = self.descent
        return peer.find(newest, row)

    def run(self) -> LockResult:
        session = self.session
        newest = self.ctx.newest({})
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
        unconstrained = self.ctx.newest({})
        done = self.outcome(
            status=Status.FOUND,
            passing=row,
            locked=_str_pins(newest),
            unconstrained=_str_pins(unconstrained) if isinstance(unconstrained, Plan) else None,
        )
        return write_lock_outputs(done, session)

    def search_passing(self, newest: Plan) -> tuple[Plan, ProbeRow]:
        """Rounds until the newest environment under the constraints passes: each failing one
        gives one or more constraints (``_round``)."""
        ctx, progress = self.ctx, self.session.progress
        row = ctx.probe("newest", newest)
        while row.outcome.kind is not OutcomeKind.PASS:
            if row.outcome.kind is OutcomeKind.UNTESTABLE:
                raise NoAnswer(
                    f"the newest environment cannot be tested: {row.outcome.describe()}",
                    hint="see report.md for the build's output; an environment that "
                    "cannot be built is not evidence",
                )
            if len(ctx.constraints.held) >= MAX_ROUNDS:
                raise NoAnswer(
                    f"gave up after {MAX_ROUNDS} constraints",
                    hint="see report.md for what each round found",
                )
            found = self._round(newest, row)
            for c in found:
                ctx.constraints.add(c)
                progress.message(f"envbisect: constraint {c.package}{c.specifier}: {c.describe()}")
            planned = ctx.newest(ctx.constraints.specifiers())
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
            row = ctx.probe(self._newest_label(), newest)
        return newest, row

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
        ctx = self.ctx
        engines = self.history.engines if isinstance(self.history, Upgrade) else []
        search = engines[-1].search if engines else None
        result = replace(
            self.header, status=status, reason=reason, rows=tuple(ctx.tally.rows), search=search
        )
        return LockOutcome(
            result=result,
            held=tuple(ctx.constraints.held),
            dropped=tuple(ctx.constraints.dropped),
            rounds=ctx.tally.rounds,
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
            label, pins, _ = (
                starting_point(self.ctx, newest) if self.descent is None else ("", {}, None)
            )
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

    def _newest_label(self) -> str:
        held = ", ".join(f"{c.package}{c.specifier}" for c in self.ctx.constraints.held)
        return f"newest with {held}" if held else "newest"

    def drop_unneeded(self, newest: Plan, row: ProbeRow) -> tuple[Plan, ProbeRow]:
        """Try each constraint away until none can go: a removal whose newest environment
        passes is dropped (and the lock moves there); one that fails is kept, with that
        probe as its present justification."""
        ctx, changed = self.ctx, True
        while changed and ctx.constraints.held:
            changed = False
            for package in ctx.constraints.drop_order():
                planned = ctx.newest(ctx.constraints.specifiers(without=package))
                c = ctx.constraints.get(package)
                if not isinstance(planned, Plan):
                    ctx.constraints.still_needed(package, None, "")
                    continue
                if dict(planned.pins) == dict(newest.pins):
                    ctx.constraints.drop(
                        package, "no effect: the newest environment is the same without it"
                    )
                    changed = True
                    break
                label = f"without {package}{c.specifier}"
                trial = ctx.probe(label, planned)
                if trial.outcome.kind is OutcomeKind.PASS:
                    ctx.constraints.drop(
                        package,
                        f"{label} passes: a later release fixed it, "
                        "or another constraint covers it",
                    )
                    self.session.progress.message(
                        f"envbisect: dropped {package}{c.specifier}: {label} passes"
                    )
                    newest, row, changed = planned, trial, True
                    break
                ctx.constraints.still_needed(package, trial.outcome, trial.version)
        return newest, row

    # -- outputs ---------------------------------------------------------------------------------

    def _run_id(self) -> str:
        o = self.ctx.opts
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
                **({"strategy": o.strategy.value} if o.strategy is not Strategy.AUTO else {}),
                **({"no_project": True} if o.no_project else {}),
            },
        )


def _str_pins(planned: Plan) -> dict[str, str]:
    return {str(n): str(v) for n, v in planned.pins.items()}
