"""The culprit between two environments: ``envbisect diff GOOD BAD``.

Who does what: the two ends are read as exact pins (lockfiles, ``pylock.toml``,
``installed:PYTHON``; a source with ranges is resolved first); both are probed and must
verify. ``ddmin`` (Zeller's delta debugging: a state machine in strategy/ddmin.py, driven
by the loop every mode uses, so ``--jobs K`` tests K subsets a round) then shrinks the set of
changed packages to a 1-minimal set that still brings the failure; that set is reduced to its
roots (what no other member forces), verified by probes. Finally each culprit package is
bisected between its good and bad versions. Two or more culprits are an interaction: the
failure needs them together.

What was probed, not what was asked. Each subset ddmin tries is the good environment with
those changes applied, made consistent by the planner (baseline GOOD, so the rest moves as
little as it can). The planner may have to move other packages with it (app 2.0 needs lib>=2:
asking for app brings lib along), so the subset's *effective* change set is read from the
plan: every package whose planned version differs from GOOD's. ddmin is told that set and
reasons over it: a failure is evidence against the effective set, never against the subset
asked for, and it shrinks the search only when the effective set is strictly smaller than the
current one (a chunk that drags the rest along is no smaller failure). So the minimal set is
a set of effective changes that failed together, and it names every package the failure
needed (lib, not app, when lib alone fails; both, when neither can be probed without the
other).

The span. Every plan is kept between the two ends: each changed package between its GOOD and
BAD versions (constraints given to the planner), every other package either end names at
GOOD's version. A plan that still moves one outside (a version not between, a package dropped
or added against both ends) is unresolved, never evidence, like a subset with no consistent
environment. A package neither end names (ends that list direct requirements only) is left
to the planner: the ends say nothing of it.

Roots. A member of the minimal set that the others' BAD versions require (a package a new
major version drags in) is forced, not a cause: the set is reduced to its roots and the roots
verified with probes (modes/roots.py); where they do not verify, the culprits are the minimal
set, with a note. A single root is a single culprit, whatever it forces; two or more roots
are an interaction.

Culprits. Each culprit is bisected between its good and bad versions, the other culprits
applied at BAD (so an interaction can show), except those its own change forces, which the
planner moves within their spans; an old version of another package never fails in its
place. Each culprit is reported with what had to move with it (``moved_with``: package,
GOOD's version, the version planned where the culprit's first bad version failed; absent when
nothing moved; what another culprit's change moves is that culprit's) and, once the roots
verified, the members of the minimal set it forces (``forced``; absent when none).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence, Set
from dataclasses import dataclass, field, replace
from typing import Any

from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import canonicalize_name
from packaging.version import Version

from envbisect.core.candidates import build_candidates
from envbisect.core.outcome import same_failure, untestable
from envbisect.core.pins import PinSet
from envbisect.core.plan import MatchCache, Plan, PlanTarget, Policy, plan
from envbisect.core.report import BreakpointRow, ProbeRow, RunResult
from envbisect.core.target import Target
from envbisect.errors import NoAnswer, UsageError
from envbisect.index.source import IndexMetadataSource
from envbisect.model import Outcome, OutcomeKind
from envbisect.modes.drive import Log, drive
from envbisect.modes.outputs import write_outputs
from envbisect.modes.planning import read_pins
from envbisect.modes.roots import Roots, roots_lines, verify
from envbisect.modes.session import Session, Want
from envbisect.options import CommonOptions
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
    diff = _Diff(good=good, bad=bad, changes=changes, source=source, ptarget=ptarget,
                 cache=cache, session=session, result=result)  # fmt: skip
    try:
        diff.verify_ends(changes)
        session.reporter.message(f"envbisect: {len(changes)} changed package(s); ddmin")
        minimal = diff.ddmin(changes)
        culprits = diff.culprits(minimal)
    except NoAnswer as e:
        result.reason = e.message
        write_outputs(result, session, label="environment")
        e.result = result
        raise
    except KeyboardInterrupt as e:
        raise session.interrupted(e) from e
    assert diff.found is not None
    result.status = "found"
    result.first_new, result.last_old = "BAD", "GOOD"
    result.extra = {
        "culprits": culprits,
        "interaction": len(culprits) > 1,
        "roots": diff.found.to_dict(),
        "changed": [{"package": n, "good_version": g, "bad_version": b} for n, g, b in changes],
    }
    result.sections = ["## Culprit\n\n" + "\n".join(f"- {line}" for line in answer(result.extra))]
    write_outputs(result, session, label="environment")
    return result


def answer(extra: Mapping[str, Any]) -> list[str]:
    """The diff's answer in words, from its JSON: the CLI prints these lines, report.md lists
    them, so the two say what ``--json`` says."""
    culprits = extra["culprits"]
    what = "interaction" if extra["interaction"] else "culprit"
    lines = [f"{what}: {culprit_text(c)}" for c in culprits]
    if extra["interaction"]:
        lines.append("an interaction: the failure needs all of them together")
    return lines + roots_lines(extra["roots"], culprits)


Move = tuple[str, str | None, str | None]  # (package, GOOD's version, planned version)


@dataclass(slots=True, kw_only=True)
class _Diff:
    good: dict[str, Version]
    bad: dict[str, Version]
    changes: list[Change]
    source: IndexMetadataSource
    ptarget: PlanTarget
    cache: MatchCache
    session: Session
    result: RunResult
    reference: Outcome | None = None
    # Every failure counts as BAD's (--any-failure; lock: it wants an environment that works).
    any_failure: bool = False
    rounds: int = field(default=0)
    # A probed subset's effective change set (the subset and what its plan forced).
    effective: dict[Subset, Subset] = field(default_factory=dict)
    found: Roots | None = None  # the roots of the minimal set, once culprits() ran
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

    def environment(self, pinned: Mapping[str, str | None]) -> tuple[Plan | None, str]:
        """GOOD with these packages at these versions (None: removed), made consistent by the
        planner inside the span of the two ends."""
        exact = {n: v for n, v in pinned.items() if v is not None}
        dropped = {n for n, v in pinned.items() if v is None}
        roots = [Requirement(f"{n}=={v}") for n, v in exact.items()]
        roots += [Requirement(n) for n in self.good if n not in exact and n not in dropped]
        baseline = {n: v for n, v in self.good.items() if n not in dropped}
        planned = plan(roots, self.source, self.ptarget, policy=Policy.BASELINE,
                       baseline=baseline, constraints=self.spans, cache=self.cache)  # fmt: skip
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
                outside.append(f"{n} {_s(p) or 'removed'} (GOOD {_s(g) or 'absent'}, "
                               f"BAD {_s(b) or 'absent'})")  # fmt: skip
        names = {n for n, _, _ in moves}
        return tuple(c for c in self.changes if c[0] in names), moves, outside

    def want(self, label: str, pinned: Mapping[str, str | None], runs: int,
             key: Subset | None = None) -> Want:  # fmt: skip
        planned, reason = self.environment(pinned)
        if planned is None:
            return Want(label=label, why_not=f"unresolvable: {reason}")
        effective, _, outside = self.effect(planned)
        if outside:
            why = "moves outside the span of GOOD and BAD: " + ", ".join(outside)
            return Want(label=label, why_not=why)
        if key is not None:
            self.effective[key] = effective
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
        self.session.reporter.message(
            "envbisect: GOOD as it installs here: "
            + ", ".join(f"{n} {self.good[n]} -> {v}" for n, v in sorted(moved.items()))
            + " (the lock's version cannot be installed with the rest on this target)"
        )
        self.good.update(moved)
        changes = [(n, str(self.good[n]) if n in self.good else g, b) for n, g, b in self.changes]
        self.changes[:] = [c for c in changes if c[1] != c[2]]
        self._spans()

    def verify_ends(self, changes: Sequence[Change]) -> None:
        self.as_installable()
        changes = [c for c in self.changes if c[0] in {n for n, _, _ in changes}]
        ends: Fixed[tuple[str, Subset]] = Fixed(
            [("GOOD", ()), ("BAD", tuple(changes))], repeat=self.session.opts.repeat
        )
        self._drive(ends, lambda p, runs: self.want(p[0], _applied(p[1]), runs))
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
        if self.any_failure or self.session.opts.any_failure:
            return "fail"
        if same_failure(outcome, self.reference):
            return "fail"
        return "unresolved"  # another bug: not evidence either way

    def ddmin(self, changes: Sequence[Change]) -> list[Change]:
        machine: Ddmin[Change] = Ddmin(changes)
        self._drive(_DdminPoints(machine, self),
                    lambda subset, runs: self.want(_apply_label(subset), _applied(subset), runs,
                                                   key=subset))  # fmt: skip
        assert machine.result is not None
        return machine.result

    def culprits(self, minimal: Sequence[Change]) -> list[dict[str, Any]]:
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
            if self.found.forced_by(c[0]):
                culprit["forced"] = list(self.found.forced_by(c[0]))
            out.append(culprit)
        return out

    def first_bad(
        self, change: Change, others: Mapping[str, str | None], *, theirs: Set[str] = frozenset()
    ) -> dict[str, Any]:
        """The first version of the culprit, between its good and bad versions, that fails,
        and what moved with it there (not ``others``, nor ``theirs``: what they move)."""
        name, good_v, bad_v = change
        found = {"package": name, "good_version": good_v, "bad_version": bad_v}
        if good_v is not None and bad_v is not None:
            found = self._bisect(name, good_v, bad_v, others) or found
        planned, _ = self.environment({**others, name: found["bad_version"]})
        moves = self.effect(planned)[1] if planned else []
        with_it = [{"package": n, "from": g, "to": p} for n, g, p in moves
                   if n != name and n not in others and n not in theirs]  # fmt: skip
        return {**found, "moved_with": with_it} if with_it else found

    def _bisect(
        self, name: str, good_v: str, bad_v: str, others: Mapping[str, str | None]
    ) -> dict[str, Any] | None:
        lo, hi = Version(good_v), Version(bad_v)
        files = self.session.client.project_files(name).files
        versions = [c.version for c in build_candidates(files, self.session.target).candidates
                    if c.installable and lo <= c.version <= hi]  # fmt: skip
        if lo > hi or len(versions) <= 2:
            return None
        self.session.reporter.message(f"envbisect: first bad {name} between {good_v} and {bad_v}")
        any_failure = self.any_failure or self.session.opts.any_failure
        bis = Bisector(n=len(versions), good=0, bad=len(versions) - 1, any_failure=any_failure,
                       repeat=self.session.opts.repeat)  # fmt: skip

        def want(i: int, runs: int) -> Want:
            return self.want(f"{name} {versions[i]}", {**others, name: str(versions[i])}, runs)

        self._drive(_CulpritBisection(bis, self.verdict), want)
        final = bis.result
        if final is None or final.status == "no-answer" or final.first_new is None:
            return None
        last_good = versions[final.last_old] if final.last_old is not None else lo
        found: dict[str, Any] = {"package": name, "good_version": str(last_good),
                                 "bad_version": str(versions[final.first_new])}  # fmt: skip
        if len(final.breakpoints) > 1:  # its versions fail more than one way
            found["breakpoints"] = [
                BreakpointRow(first_new=str(versions[b.first_new]),
                              last_old=str(versions[b.last_old]), outcome=b.outcome,
                              possible=tuple(str(versions[i]) for i in b.possible)).to_dict()
                for b in final.breakpoints
            ]  # fmt: skip
        return found


class _DdminPoints(Points[Subset]):
    """ddmin's subsets as drive points; each probed environment's verdict, and its effective
    change set, go back to it."""

    def __init__(self, machine: Ddmin[Change], diff: _Diff) -> None:
        self.machine, self.diff, self.repeat = machine, diff, diff.session.opts.repeat

    def next_batch(self, k: int) -> list[Subset]:
        return self.machine.next_batch(k)

    def record(self, point: Subset, row: ProbeRow) -> None:
        verdict = self.diff.verdict(row.outcome)
        self.machine.record(point, verdict, self.diff.effective.get(point))

    def label(self, point: Subset, row: ProbeRow) -> ProbeRow:
        return replace(row, verdict=_skip(row))


class _CulpritBisection(Bisection):
    """A culprit's versions. Its bad end must fail like BAD (else it is no evidence of BAD's
    failure: untestable, and the search has no answer); between the ends, a failure unlike
    BAD's is a segment of its own, another bug whose breakpoint is found and reported, never
    taken for the culprit's first bad version."""

    def __init__(self, bis: Bisector, verdict: Any) -> None:
        super().__init__(bis)
        self.verdict = verdict

    def record(self, point: int, row: ProbeRow) -> None:
        outcome, runs = row.outcome, row.run_outcomes or (row.outcome,)
        end = point in (self.bis.old.index, self.bis.new.index)
        if end and self.verdict(outcome) == "unresolved":
            outcome = untestable("another outcome")
            runs = (outcome,)
        self.bis.record(point, outcome, runs)


def _skip(row: ProbeRow) -> str:
    return "skip" if row.outcome.kind is OutcomeKind.UNTESTABLE else ""


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


def culprit_text(c: Mapping[str, Any]) -> str:
    """One culprit in words: ``lib 1.1.0 -> 2.0.0 (moved with it: app 1.5.0 -> 2.0.0)``."""
    text = f"{c['package']} {c['good_version'] or 'absent'} -> {c['bad_version'] or 'removed'}"
    moved = c.get("moved_with") or []
    if moved:
        text += (
            " (moved with it: "
            + ", ".join(
                f"{m['package']} {m['from'] or 'absent'} -> {m['to'] or 'removed'}" for m in moved
            )
            + ")"
        )
    return text


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
