"""The engine between two environments, shared by ``diff`` and ``lock``: GOOD and BAD
verified, ddmin over the changed packages, its set reduced to verified roots, each culprit's
first bad version.

Who does what: ``DiffEngine`` plans every environment it probes (GOOD with some changes applied,
made consistent by the planner inside the span of the two ends; see modes/diff/mode.py for why the
effective change set, not the asked one, is what ddmin is told), drives the strategies (ddmin,
the checks of the roots that modes/diff/roots.py reduces the set to: ``verify``, below; a culprit's
bisection) through the loop every mode uses, and logs every row in the order probed. It returns
typed answers (``Culprit``, ``Roots``); the modes make their results of them. Ends that do not
verify raise ``NoAnswer`` with its reason (``Unanswered``), which a caller may act on.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence, Set
from dataclasses import dataclass, field, replace
from typing import Any

from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.version import Version

from envbisect.core.candidates import build_candidates
from envbisect.core.outcome import same_failure, untestable
from envbisect.core.plan import MatchCache, Plan, PlanTarget, Policy
from envbisect.core.planmemo import plan
from envbisect.core.results.diff import Change, Check, Culprit, Roots
from envbisect.core.results.parts import (
    BreakpointRow,
    Moved,
    ProbeRow,
    RowVerdict,
    SearchSummary,
    Status,
    moves,
)
from envbisect.errors import NoAnswer, Unanswered
from envbisect.index.source import IndexMetadataSource
from envbisect.model import Outcome, OutcomeKind
from envbisect.modes.diff.roots import reduce
from envbisect.modes.drive import Log, drive
from envbisect.modes.session import Session, Want
from envbisect.strategy.bisect import Bisector
from envbisect.strategy.ddmin import Ddmin, Result
from envbisect.strategy.protocol import Bisection, Fixed, Points, Strategy

Subset = tuple[Change, ...]
Move = tuple[str, str | None, str | None]  # (package, GOOD's version, planned version)


@dataclass(slots=True, kw_only=True)
class DiffEngine:
    """The search between ``good`` and ``bad`` (exact pins) over ``changes`` (every package
    whose version differs). ``any_failure``: every failure counts as BAD's (lock: it wants
    an environment that works). ``rows``: every row probed, appended in order (a caller may
    pass its own list: one log of its whole search); ``rounds``: the rounds that built or ran
    anything; ``found``: the roots of the minimal set, once ``culprits`` ran."""

    good: dict[str, Version]
    bad: dict[str, Version]
    changes: list[Change]
    source: IndexMetadataSource
    ptarget: PlanTarget
    cache: MatchCache
    session: Session
    any_failure: bool = False
    rows: list[ProbeRow] = field(default_factory=list)
    rounds: int = 0
    reference: Outcome | None = None
    found: Roots | None = None
    # A probed subset's effective change set (the subset and what its plan forced).
    effective: dict[Subset, Subset] = field(default_factory=dict)
    spans: dict[str, SpecifierSet] = field(init=False, default_factory=dict)

    def __post_init__(self) -> None:
        self._spans()

    def _spans(self) -> None:
        for n in self.good.keys() | self.bad.keys():
            g, b = self.good.get(n), self.bad.get(n)
            if g is not None and b is not None and g != b:
                lo, hi = sorted((g, b))
                self.spans[n] = SpecifierSet(f">={lo},<={hi}")
            else:
                self.spans[n] = SpecifierSet(f"=={g if g is not None else b}")

    @property
    def search(self) -> SearchSummary:
        """How the search ran (no bisection mode: ddmin, then bisections)."""
        opts = self.session.opts
        return SearchSummary(
            jobs=opts.parallel.jobs, rounds=self.rounds, repeat=opts.probing.repeat
        )

    def environment(self, pinned: Mapping[str, str | None]) -> tuple[Plan | None, str]:
        """GOOD with these packages at these versions (None: removed), made consistent by the
        planner inside the span of the two ends."""
        exact = {n: v for n, v in pinned.items() if v is not None}
        dropped = {n for n, v in pinned.items() if v is None}
        roots = [Requirement(f"{n}=={v}") for n, v in exact.items()]
        roots += [Requirement(n) for n in self.good if n not in exact and n not in dropped]
        baseline = {n: v for n, v in self.good.items() if n not in dropped}
        planned = plan(
            roots,
            self.source,
            self.ptarget,
            policy=Policy.BASELINE,
            baseline=baseline,
            constraints=self.spans,
            cache=self.cache,
            fallback=self.session.uv_planner(),
        )
        if not isinstance(planned, Plan):
            return None, planned.reason
        return planned, ""

    def effect(self, planned: Plan) -> tuple[Subset, list[Move], list[str]]:
        """The plan against GOOD: the changes it holds (in the order of ``changes``), each
        move, and the moves outside the span of GOOD and BAD. A package neither end names
        (a lock of direct requirements only) is free: the ends say nothing of it."""
        pins = {str(n): v for n, v in planned.pins.items()}
        moves: list[Move] = []
        outside: list[str] = []
        for n in sorted(self.good.keys() | self.bad.keys()):
            g, b, p = self.good.get(n), self.bad.get(n), pins.get(n)
            if p == g:
                continue
            moves.append((n, _s(g), _s(p)))
            if not _in_span(p, g, b):
                outside.append(
                    f"{n} {_s(p) or 'removed'} (GOOD {_s(g) or 'absent'}, BAD {_s(b) or 'absent'})"
                )
        names = {n for n, _, _ in moves}
        return tuple(c for c in self.changes if c[0] in names), moves, outside

    def want(
        self, label: str, pinned: Mapping[str, str | None], runs: int, key: Subset | None = None
    ) -> Want:
        """The environment to probe for ``pinned``, or why there is none; ``key``: the subset
        whose effective change set it is."""
        planned, reason = self.environment(pinned)
        if planned is None:
            return Want(label=label, why_not=f"unresolvable: {reason}")
        effective, _, outside = self.effect(planned)
        if outside:
            why = "moves outside the span of GOOD and BAD: " + ", ".join(outside)
            return Want(label=label, why_not=why)
        if key is not None:
            self.effective[key] = effective
        spec = self.session.env_spec(planned.requirements())
        return Want(label=label, spec=spec, runs=runs, moved=moves(planned.moved))

    def drive(self, strategy: Strategy[Any], plan: Callable[[Any, int], Want]) -> Log[Any]:
        """One strategy run through the loop, its rows logged."""
        log = drive(strategy, self.session, plan)
        self.rows += log.rows
        self.rounds += log.rounds
        return log

    def as_installable(self) -> None:
        """GOOD as it can be installed here. A lock's version with no file for the target (an
        old release without wheels for this Python) is moved by the planner, inside the span;
        from then on GOOD is what was probed, so that ddmin and the roots never count GOOD's
        own move as a change (it would tie that package to every failing subset)."""
        planned, _ = self.environment({})
        if planned is None:
            return
        pins = {str(n): v for n, v in planned.pins.items()}
        moved = {n: pins[n] for n in self.good if n in pins and pins[n] != self.good[n]}
        if not moved:
            return
        self.session.progress.message(
            "envbisect: GOOD as it installs here: "
            + ", ".join(f"{n} {self.good[n]} -> {v}" for n, v in sorted(moved.items()))
            + " (the lock's version cannot be installed with the rest on this target)"
        )
        self.good.update(moved)
        changes = [(n, str(self.good[n]) if n in self.good else g, b) for n, g, b in self.changes]
        self.changes[:] = [c for c in changes if c[1] != c[2]]
        self._spans()

    def verify_ends(self, changes: Sequence[Change]) -> None:
        """GOOD must pass and BAD fail (``NoAnswer`` with ``GOOD_FAILS`` or ``BAD_PASSES``
        else); BAD's failure is the reference."""
        self.as_installable()
        changes = [c for c in self.changes if c[0] in {n for n, _, _ in changes}]
        ends: Fixed[tuple[str, Subset]] = Fixed(
            [("GOOD", ()), ("BAD", tuple(changes))], repeat=self.session.opts.probing.repeat
        )
        self.drive(ends, lambda p, runs: self.want(p[0], _applied(p[1]), runs))
        good_row, bad_row = ends.rows[("GOOD", ())], ends.rows[("BAD", tuple(changes))]
        if good_row.outcome.kind is not OutcomeKind.PASS:
            raise NoAnswer(
                f"the GOOD environment does not pass: {good_row.outcome.describe()}",
                hint="GOOD must be an environment where the repro passes",
                why=Unanswered.GOOD_FAILS,
            )
        if bad_row.outcome.kind in (OutcomeKind.PASS, OutcomeKind.UNTESTABLE):
            raise NoAnswer(
                f"the BAD environment does not fail: {bad_row.outcome.describe()}",
                hint="BAD must be an environment where the repro fails",
                why=Unanswered.BAD_PASSES,
            )
        self.reference = bad_row.outcome

    def verdict(self, outcome: Outcome) -> Result:
        if outcome.kind is OutcomeKind.PASS:
            return Result.PASS
        if outcome.kind is OutcomeKind.UNTESTABLE:
            return Result.UNRESOLVED
        assert self.reference is not None
        if self.any_failure or self.session.opts.probing.any_failure:
            return Result.FAIL
        if same_failure(outcome, self.reference):
            return Result.FAIL
        return Result.UNRESOLVED  # another bug: not evidence either way

    def ddmin(self, changes: Sequence[Change]) -> list[Change]:
        """A 1-minimal set of changes that fails (in effective terms)."""
        machine: Ddmin[Change] = Ddmin(changes)
        self.drive(
            _DdminPoints(machine, self),
            lambda subset, runs: self.want(
                _apply_label(subset), _applied(subset), runs, key=subset
            ),
        )
        assert machine.result is not None
        return machine.result

    def culprits(self, minimal: Sequence[Change]) -> tuple[Culprit, ...]:
        """The minimal set reduced to its roots and verified (``found``; the minimal set when
        they do not verify), then each culprit's first bad version, the other culprits
        applied at BAD (so that an interaction can show) except what its own change forces."""
        self.found = verify(self, minimal)
        chosen = self.found.culprits
        out = []
        for c in chosen:
            planned, _ = self.environment(_applied([c]))
            forced = {n for n, _, _ in self.effect(planned)[0]} if planned else set()
            others = {o[0]: o[2] for o in chosen if o != c and o[0] not in forced}
            theirs: set[str] = set()
            if others:  # what the others move on their own is theirs, unless c forces it too
                alone, _ = self.environment(others)
                theirs = {n for n, _, _ in self.effect(alone)[1]} if alone else set()
                theirs -= set(self.found.forced_by(c[0]))
            culprit = self.first_bad(c, others, theirs=theirs)
            out.append(replace(culprit, forced=self.found.forced_by(c[0])))
        return tuple(out)

    def first_bad(
        self, change: Change, others: Mapping[str, str | None], *, theirs: Set[str] = frozenset()
    ) -> Culprit:
        """The first version of the culprit, between its good and bad versions, that fails,
        and what moved with it there (not ``others``, nor ``theirs``: what they move)."""
        name, good_v, bad_v = change
        found = Culprit(package=name, good_version=good_v, bad_version=bad_v)
        if good_v is not None and bad_v is not None:
            found = self.bisect_culprit(name, good_v, bad_v, others) or found
        planned, _ = self.environment({**others, name: found.bad_version})
        moves = self.effect(planned)[1] if planned else []
        with_it = tuple(
            Moved(package=n, before=g, after=p)
            for n, g, p in moves
            if n != name and n not in others and n not in theirs
        )
        return replace(found, moved_with=with_it)

    def bisect_culprit(
        self, name: str, good_v: str, bad_v: str, others: Mapping[str, str | None]
    ) -> Culprit | None:
        """``name``'s first bad version between ``good_v`` and ``bad_v``, ``others`` applied
        (its bad end must fail like BAD); None when there is nothing between them to bisect
        or the search has no answer."""
        lo, hi = Version(good_v), Version(bad_v)
        files = self.session.client.project_files(name).files
        versions = [
            c.version
            for c in build_candidates(files, self.session.target).candidates
            if c.installable and lo <= c.version <= hi
        ]
        if lo > hi or len(versions) <= 2:
            return None
        self.session.progress.message(f"envbisect: first bad {name} between {good_v} and {bad_v}")
        any_failure = self.any_failure or self.session.opts.probing.any_failure
        bis = Bisector(
            n=len(versions),
            good=0,
            bad=len(versions) - 1,
            any_failure=any_failure,
            repeat=self.session.opts.probing.repeat,
        )

        def want(i: int, runs: int) -> Want:
            return self.want(f"{name} {versions[i]}", {**others, name: str(versions[i])}, runs)

        self.drive(_CulpritBisection(bis, self.verdict), want)
        final = bis.conclude()
        if final is None or final.status is Status.NO_ANSWER or final.first_new is None:
            return None
        last_good = versions[final.last_old] if final.last_old is not None else lo
        points: tuple[BreakpointRow, ...] = ()
        if len(final.breakpoints) > 1:  # its versions fail more than one way
            points = tuple(
                BreakpointRow(
                    first_new=str(versions[b.first_new]),
                    last_old=str(versions[b.last_old]),
                    outcome=b.outcome,
                    possible=tuple(str(versions[i]) for i in b.possible),
                )
                for b in final.breakpoints
            )
        return Culprit(
            package=name,
            good_version=str(last_good),
            bad_version=str(versions[final.first_new]),
            breakpoints=points,
        )


class _DdminPoints(Points[Subset]):
    """ddmin's subsets as drive points; each probed environment's verdict, and its effective
    change set, go back to it."""

    def __init__(self, machine: Ddmin[Change], engine: DiffEngine) -> None:
        self.machine, self.engine, self.repeat = machine, engine, engine.session.opts.probing.repeat

    def next_batch(self, k: int) -> list[Subset]:
        return self.machine.next_batch(k)

    def record(self, point: Subset, row: ProbeRow) -> None:
        verdict = self.engine.verdict(row.outcome)
        self.machine.record(point, verdict, self.engine.effective.get(point))

    def label(self, point: Subset, row: ProbeRow) -> ProbeRow:
        return replace(
            row,
            verdict=RowVerdict.SKIP
            if row.outcome.kind is OutcomeKind.UNTESTABLE
            else RowVerdict.NONE,
        )


class _CulpritBisection(Bisection):
    """A culprit's versions. Its bad end must fail like BAD (else it is no evidence of BAD's
    failure: untestable, and the search has no answer); between the ends, a failure unlike
    BAD's is a segment of its own, another bug whose breakpoint is found and reported, never
    taken for the culprit's first bad version."""

    def __init__(self, bis: Bisector, verdict: Callable[[Outcome], Result]) -> None:
        super().__init__(bis)
        self.verdict = verdict

    def record(self, point: int, row: ProbeRow) -> None:
        outcome, runs = row.outcome, row.run_outcomes or (row.outcome,)
        end = point in (self.bis.old.index, self.bis.new.index)
        if end and self.verdict(outcome) is Result.UNRESOLVED:
            outcome = untestable("another outcome")
            runs = (outcome,)
        self.bis.record(point, outcome, runs)


def _applied(subset: Sequence[Change]) -> dict[str, str | None]:
    return {n: b for n, _, b in subset}


def _s(v: Version | None) -> str | None:
    return None if v is None else str(v)


def _in_span(p: Version | None, g: Version | None, b: Version | None) -> bool:
    """Whether version ``p`` (None: absent) is one of the two ends or between them."""
    if p in (g, b):
        return True
    if p is None or g is None or b is None:
        return False
    lo, hi = sorted((g, b))
    return lo <= p <= hi


def _apply_label(subset: Sequence[Change]) -> str:
    return "apply " + ", ".join(f"{n} {g or '-'}->{b or '-'}" for n, g, b in subset)


# -- the roots of ddmin's set, verified -------------------------------------------------------


def verify(diff: DiffEngine, minimal: Sequence[Change]) -> Roots:
    """The roots of ``minimal``, and the probes that verify them (the store answers those
    ddmin already ran)."""
    roots, forced = reduce(minimal, diff.good, diff.source.dependencies, diff.ptarget.markers)
    diff.session.progress.message(
        f"envbisect: {len(minimal)} package(s) in the minimal set, root(s): "
        f"{', '.join(r[0] for r in roots)}; verifying"
    )
    expect_fail = "fail" if diff.session.opts.probing.any_failure else "fail like BAD"
    points: list[tuple[str, str]] = [("", "")] + [("without", r[0]) for r in roots]
    wants: dict[tuple[str, str], Want] = {}
    for point in points:
        left_out = point[1]
        pinned = {n: (g if n == left_out else b) for n, g, b in roots}
        what = _environment(roots, left_out)
        wants[point] = _want(diff, f"roots: {what}", pinned, left_out)
    strategy: Fixed[tuple[str, str]] = Fixed(points, repeat=diff.session.opts.probing.repeat)
    diff.drive(strategy, lambda p, runs: replace(wants[p], runs=runs))
    checks = []
    for point in points:
        row, want = strategy.rows[point], wants[point]
        if not point[1]:
            held = diff.verdict(row.outcome) is Result.FAIL
            checks.append(
                Check(
                    environment=_environment(roots, ""),
                    expected=expect_fail,
                    outcome=_outcome(row, want),
                    held=held,
                )
            )
        else:
            held = want.spec is None or row.outcome.kind is OutcomeKind.PASS
            checks.append(
                Check(
                    environment=_environment(roots, point[1]),
                    expected="pass or unresolvable",
                    outcome=_outcome(row, want),
                    held=held,
                )
            )
    verified = all(c.held for c in checks)
    note = ""
    if not verified:
        failed = "; ".join(
            f"{c.environment}: {c.outcome}, expected {c.expected}" for c in checks if not c.held
        )
        note = (
            f"the roots ({', '.join(r[0] for r in roots)}) did not verify ({failed}): "
            "the culprits are ddmin's set"
        )
    return Roots(
        ddmin=tuple(minimal),
        roots=roots,
        forced=forced,
        checks=tuple(checks),
        verified=verified,
        note=note,
    )


def _want(diff: DiffEngine, label: str, pinned: Mapping[str, str | None], left_out: str) -> Want:
    """The environment of a check; one in which the root left out comes back anyway (the
    others force it) has no consistent environment without it."""
    if left_out:
        planned, _ = diff.environment(pinned)
        if planned is not None and left_out in {c[0] for c in diff.effect(planned)[0]}:
            return Want(label=label, why_not=f"unresolvable: {left_out} comes with the others")
    return diff.want(label, pinned, 1)


def _outcome(row: ProbeRow, want: Want) -> str:
    if want.spec is None:
        return "unresolvable"
    return row.outcome.kind.value


def _environment(roots: Sequence[Change], left_out: str) -> str:
    """``GOOD + app 2.0.0, lib 1.1.0``; ``GOOD + lib 1.1.0 (without app)``; ``GOOD``."""
    kept = [f"{n} {b or 'removed'}" for n, _, b in roots if n != left_out]
    text = "GOOD" + (" + " + ", ".join(kept) if kept else "")
    return text + (f" (without {left_out})" if left_out else "")
