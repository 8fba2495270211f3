"""``envbisect lock --from LOCK`` (upgrade mode): one round's constraint, found by delta
debugging between the user's working lock and the failing newest environment.

Who does what: ``DiffEngine`` (modes/diff/engine.py) verifies both ends, runs ddmin over the
changed packages, reduces its set to verified roots and bisects each culprit; here the
culprit to hold back is chosen (in an interaction, the newest release first) and proven in
one environment, the rest held: the version below its first bad one passes, the first bad
one fails like the newest environment. modes/lock/solve.py runs the rounds and hands each
failing newest environment to ``Upgrade.find``, one of the lock's peer strategies; the lock's
context (modes/lock/common.py) plans and probes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime, timezone

from envbisect.core.candidates import build_candidates
from envbisect.core.outcome import same_failure
from envbisect.core.plan import Plan
from envbisect.core.results.diff import Change, Culprit, changes_between
from envbisect.core.results.lock import Constraint
from envbisect.core.results.parts import ProbeRow
from envbisect.errors import NoAnswer, Unanswered
from envbisect.model import OutcomeKind
from envbisect.modes.diff.engine import DiffEngine
from envbisect.modes.drive import drive
from envbisect.modes.lock.common import LockContext, Pins
from envbisect.modes.lock.start import starting_point
from envbisect.strategy.protocol import Fixed


class Upgrade:
    """Upgrade mode, a peer strategy of the lock. Its own state: the environment its next
    round starts from (--from's lock, then the passing environment of each round's proof) and
    the diff engines of its rounds (the last one's search summary goes in the result)."""

    def __init__(self, ctx: LockContext) -> None:
        self.ctx = ctx
        self.label = ""
        self.good: Pins | None = None
        self.engines: list[DiffEngine] = []

    def find(self, newest: Plan, row: ProbeRow) -> list[Constraint]:
        if self.good is None:
            self.label, self.good, _ = starting_point(self.ctx, newest)
            self.ctx.session.progress.message(
                f"envbisect: the newest environment fails; starting point {self.label}"
            )
        c, self.good = self._round(self.label, self.good, newest, row)
        self.label = "the last environment that passed"
        return [c]

    def _round(
        self, label: str, good: Pins, newest: Plan, bad_row: ProbeRow
    ) -> tuple[Constraint, Pins]:
        """Between ``good`` (known or expected to pass) and the failing newest environment:
        the culprit, its first bad version and the version below it, both probed in one
        environment. Returns the constraint and the passing environment of its proof (the
        next round's starting point: nearer the newest)."""
        ctx, session = self.ctx, self.ctx.session
        bad = {str(n): v for n, v in newest.pins.items()}
        changes = changes_between(good, bad)
        if not changes:
            raise NoAnswer(
                f"the environment {label} is the newest one, and it fails: "
                f"{bad_row.outcome.describe()}",
                hint="nothing newer broke it: the repro fails with the starting point itself",
            )
        diff = DiffEngine(
            good=good,
            bad=bad,
            changes=changes,
            source=ctx.source,
            ptarget=ctx.ptarget,
            cache=ctx.cache,
            session=session,
            any_failure=True,
            rows=ctx.tally.rows,
        )
        self.engines.append(diff)
        try:
            diff.verify_ends(changes)
        except NoAnswer as e:
            if e.why is Unanswered.GOOD_FAILS:
                raise NoAnswer(
                    f"the starting point ({label}) does not pass either: "
                    + e.message.split(": ", 1)[-1],
                    hint="give --good-date DATE of an environment where the repro passes, or "
                    "--from LOCK of your working environment",
                ) from e
            raise
        session.progress.message(
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
            name, good_v, bad_v = chosen.change
            if good_v is None or bad_v is None:
                continue
            session.progress.message(
                f"envbisect: looking for the first bad {name} with the rest as it was"
            )
            alone = diff.bisect_culprit(name, good_v, bad_v, {}) or Culprit(
                package=name, good_version=good_v, bad_version=bad_v
            )
            found = self._prove(diff, alone, [(name, good_v, bad_v)])
            if not isinstance(found, str):
                return found
            failures.append(found)
        raise NoAnswer(
            "no culprit could be proven the break: " + "; ".join(failures),
            hint="a flaky repro? try --repeat N; see report.md for every probe",
        )

    def _prove(
        self, diff: DiffEngine, chosen: Culprit, minimal: Sequence[Change]
    ) -> tuple[Constraint, Pins] | str:
        """The constraint on ``chosen`` with its proof (the version below passing and the
        first bad failing like the newest, in one environment), or why there is none."""
        session = self.ctx.session
        name, last_good, first_bad = chosen.change
        if first_bad is None or last_good is None:
            return (
                f"the failure comes with {name} "
                f"{'removed' if first_bad is None else 'added'}: no version to hold it "
                "below"
            )
        others = {o[0]: o[2] for o in minimal if o[0] != name}
        # The proof, in one environment: the store answers what the search already ran.
        wants = {
            "pass": diff.want(f"{name} {last_good} (proof)", {**others, name: last_good}, 1),
            "fail": diff.want(f"{name} {first_bad} (proof)", {**others, name: first_bad}, 1),
        }
        proof: Fixed[str] = Fixed(["pass", "fail"], repeat=session.opts.probing.repeat)
        log = drive(proof, session, lambda p, n: replace(wants[p], runs=n))
        self.ctx.tally.add(log)
        p_row, f_row = proof.rows["pass"], proof.rows["fail"]
        assert diff.reference is not None
        if p_row.outcome.kind is not OutcomeKind.PASS or not (
            f_row.outcome.kind is not OutcomeKind.PASS
            and (diff.any_failure or same_failure(f_row.outcome, diff.reference))
        ):
            return (
                f"{name}: with the rest held, {last_good} gave {p_row.outcome.describe()} "
                f"and {first_bad} gave {f_row.outcome.describe()}"
            )
        planned, _ = diff.environment({**others, name: last_good})
        assert planned is not None  # it was just probed
        c = Constraint(
            package=name,
            first_bad=first_bad,
            last_good=last_good,
            outcome=f_row.outcome,
            passed=p_row.version,
            failed=f_row.version,
            moved_with=chosen.moved_with,
            interaction=tuple(o[0] for o in minimal if o[0] != name),
            round=self.ctx.next_round(),
            found_by="from",
        )
        return c, {str(n): v for n, v in planned.pins.items()}

    def _preference(self, culprits: Sequence[Culprit]) -> list[Culprit]:
        """Which culprit to hold back first: alone, it; in an interaction, the one whose first
        bad release came last (the newer release broke what worked), then the others."""
        if len(culprits) == 1:
            return list(culprits)
        client, target = self.ctx.session.client, self.ctx.session.target

        def uploaded(c: Culprit) -> datetime:
            if c.bad_version is None:
                return datetime.min.replace(tzinfo=timezone.utc)
            files = client.project_files(c.package).files
            for cand in build_candidates(files, target, pre=True).candidates:
                if str(cand.version) == c.bad_version and cand.upload_time is not None:
                    return cand.upload_time
            return datetime.min.replace(tzinfo=timezone.utc)

        return sorted(culprits, key=uploaded, reverse=True)
