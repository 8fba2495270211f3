"""Bisect by date: "it worked last month, a fresh install today fails".

Who does what: the planner resolves the whole environment as of a moment (every release
uploaded later hidden, the user's exact pins kept); ``timeline`` lists the moments inside the
window at which a release of a package of either end's environment was uploaded, so the
search walks releases, not calendar days, and ends on one; the ``Bisector`` walks those
moments exactly as ``run`` walks versions; identical environments at neighbouring moments are
one store entry. Then the culprit, the release uploaded at the first bad moment, is confirmed
by adding that one package alone to the last good environment (the planner adds what it
forces, and says so).

Indexes without upload times (the PyTorch index) borrow PyPI's (``torchindex``); a package
with no upload time at all is held at the version both ends agree on, with a warning.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta, timezone

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from envbisect.core.candidates import build_candidates
from envbisect.core.outcome import same_failure
from envbisect.core.plan import Fallback, MatchCache, Plan, PlanTarget, Policy, Unresolvable
from envbisect.core.planmemo import plan
from envbisect.core.results.bydate import Confirmation, DateResult
from envbisect.core.results.diff import Culprit
from envbisect.core.results.parts import Status, moves
from envbisect.core.target import Target
from envbisect.errors import NoAnswer, UsageError
from envbisect.index.client import IndexClient
from envbisect.index.source import IndexMetadataSource
from envbisect.model import Outcome, OutcomeKind
from envbisect.modes.drive import answer, bisect
from envbisect.modes.outputs import write_outputs
from envbisect.modes.planning import read_pins
from envbisect.modes.searchoptions import (
    SearchOptions,
    check_requirements,
    parse_date_flag,
)
from envbisect.modes.session import Session, Want
from envbisect.options import CommonOptions
from envbisect.progress import Progress


@dataclass(frozen=True, slots=True, kw_only=True)
class DateOptions:
    good: str
    bad: str
    common: CommonOptions
    with_reqs: tuple[str, ...] = ()
    pins: tuple[str, ...] = ()
    extras: tuple[str, ...] = ()
    pre: bool = False
    now: datetime | None = None  # for tests; default: the clock
    search: SearchOptions = field(default_factory=lambda: SearchOptions())


@dataclass(frozen=True, slots=True, kw_only=True)
class Moment:
    when: datetime
    releases: tuple[tuple[str, str], ...]  # (package, version) uploaded at that second

    def label(self) -> str:
        what = ", ".join(f"{p} {v}" for p, v in self.releases) or "start of the window"
        return f"{self.when:%Y-%m-%d %H:%M:%S} ({what})"


def timeline(
    names: Sequence[str],
    client: IndexClient,
    target: Target,
    start: datetime,
    end: datetime,
    *,
    pre: bool = False,
) -> list[Moment]:
    """Moments in (start, end] at which an installable release of one of ``names`` appeared."""
    at: dict[datetime, list[tuple[str, str]]] = defaultdict(list)
    latest: dict[datetime, datetime] = {}
    for name in names:
        for c in build_candidates(client.project_files(name).files, target, pre=True).candidates:
            if not c.installable or c.upload_time is None or (c.prerelease and not pre):
                continue
            if start < c.upload_time <= end:
                second = c.upload_time.replace(microsecond=0)
                at[second].append((name, str(c.version)))
                latest[second] = max(latest.get(second, c.upload_time), c.upload_time)
    # A moment is the exact time of its last upload: the environment "as of" it includes
    # every release of that second (a cut-off at the whole second would miss them).
    return [Moment(when=latest[t], releases=tuple(sorted(r))) for t, r in sorted(at.items())]


def run_by_date(opts: DateOptions, progress: Progress | None = None) -> DateResult:
    check_requirements("", opts.with_reqs)
    good, bad = _dates(opts)
    with Session(opts.common, progress) as session:
        return _run(opts, session, good, bad)


@dataclass(frozen=True, slots=True, kw_only=True)
class _Planning:
    """The environment as of a moment: the requirements and the planner's inputs."""

    roots: tuple[Requirement, ...]
    source: IndexMetadataSource
    ptarget: PlanTarget
    pre: bool
    cache: MatchCache = field(default_factory=dict)
    fallback: Fallback | None = None  # uv, where resolvelib gives up

    def as_of(self, when: datetime) -> Plan | Unresolvable:
        return plan(
            list(self.roots),
            self.source,
            self.ptarget,
            policy=Policy.CONTEMPORARY,
            cutoff=when,
            pre=self.pre,
            cache=self.cache,
            fallback=self.fallback,
        )


def _run(opts: DateOptions, session: Session, good: datetime, bad: datetime) -> DateResult:
    """The phases: the two ends planned, the moments between them, the bisection over the
    moments, the culprits of the first bad one, the outputs."""
    planning = _planning(opts, session)
    ends = _ends(planning, good, bad)
    if session.opts.dry_run:  # both ends, as the search would build them first
        from envbisect.modes.dryrun import plan_views

        wants = [
            Want(label=f"as of {when:%Y-%m-%d %H:%M:%S}", spec=session.env_spec(end.requirements()))
            for when, end in zip((good, bad), ends, strict=True)
        ]
        return session.result(
            DateResult,
            package="(by date)",
            candidates=2,
            run_id=_run_id(opts, session),
            status=Status.DRY_RUN,
            plans=tuple(plan_views(session, wants)),
        )
    moments = _moments(session, ends, good, bad, pre=opts.pre)
    result = session.result(
        DateResult, package="(by date)", candidates=len(moments), run_id=_run_id(opts, session)
    )
    try:
        result = _search(result, opts, session, planning, moments)
    except KeyboardInterrupt as e:
        raise session.interrupted(e) from e
    result = write_outputs(result, session, label="environment as of")
    if result.status is Status.NO_ANSWER:
        err = NoAnswer(
            f"the window does not bracket the failure: {result.reason}",
            hint="--good must be a date whose environment passes, --bad one whose "
            "environment fails",
        )
        err.result = result
        raise err
    return result


def _planning(opts: DateOptions, session: Session) -> _Planning:
    target = session.target
    env = target.marker_environment()
    roots = [Requirement(r) for r in opts.with_reqs]
    for ps in read_pins(opts.pins, session.client, cwd=session.repro.origin, extras=opts.extras):
        roots += [p.requirement for p in ps.applicable(env, opts.extras)]
    if not roots:
        raise UsageError(
            "nothing to resolve: --by-date needs the environment's requirements",
            hint="pass --with REQ (e.g. --with datasets==2.14.6) or --pins SOURCE",
            ref="bydate-nothing",
        )
    return _Planning(
        roots=tuple(roots),
        source=IndexMetadataSource(
            session.client, target, allow_sdist=False, overrides=session.opts.planning.overrides
        ),
        ptarget=PlanTarget(markers=env, python_version=target.python_version),
        pre=opts.pre,
        fallback=session.uv_planner(),
    )


def _ends(planning: _Planning, good: datetime, bad: datetime) -> tuple[Plan, Plan]:
    """The environments as of both dates; each must exist."""
    ends = []
    for when in (good, bad):
        planned = planning.as_of(when)
        if not isinstance(planned, Plan):
            raise UsageError(
                f"no environment exists as of {when:%Y-%m-%d}: {planned.reason}",
                hint="move the date, or loosen the requirements",
                ref="bydate-unresolvable",
            )
        ends.append(planned)
    return ends[0], ends[1]


def _moments(
    session: Session, ends: tuple[Plan, Plan], good: datetime, bad: datetime, *, pre: bool
) -> list[Moment]:
    """The start of the window, then each moment inside it a release of either end's
    packages appeared."""
    names = sorted(set(ends[0].pins) | set(ends[1].pins))
    moments = [
        Moment(when=good, releases=()),
        *timeline(names, session.client, session.target, good, bad, pre=pre),
    ]
    if len(moments) < 2:
        raise UsageError(
            f"no release of any of the {len(names)} packages was uploaded between "
            f"{good:%Y-%m-%d} and {bad:%Y-%m-%d}",
            hint="widen the window: nothing changed inside it",
            ref="bydate-empty",
        )
    session.progress.message(
        f"envbisect: {len(moments) - 1} release moment(s) of {len(names)} package(s) between "
        f"{good:%Y-%m-%d} and {bad:%Y-%m-%d}"
    )
    return moments


def _search(
    result: DateResult,
    opts: DateOptions,
    session: Session,
    planning: _Planning,
    moments: Sequence[Moment],
) -> DateResult:
    """Bisect the moments; once found, the culprits of the first bad one."""
    plans: dict[int, Plan] = {}

    def want(i: int, runs: int) -> Want:
        planned = planning.as_of(moments[i].when)
        label = moments[i].label()
        if not isinstance(planned, Plan):
            return Want(label=label, why_not=f"unresolvable: {planned.reason}")
        plans[i] = planned
        return Want(label=label, spec=session.env_spec(planned.requirements()), runs=runs)

    bis = opts.search.bisector(
        n=len(moments),
        good=0,
        bad=len(moments) - 1,
        any_failure=session.opts.probing.any_failure,
        repeat=session.opts.probing.repeat,
    )
    log, search = bisect(bis, session, want, labels=lambda i: moments[i].label())
    final = bis.conclude()
    assert final is not None
    result = replace(result, rows=tuple(log.rows), search=search)
    result = answer(result, final, lambda i: moments[i].label())
    if final.status is Status.NO_ANSWER:
        return result
    assert final.first_new is not None and final.last_old is not None
    # The culprit is confirmed on the environment right before the first bad moment: the last
    # good one, or the one that fails another way just before it.
    before = final.neighbour if final.neighbour is not None else final.last_old
    result = _culprits(
        result,
        final.first_new,
        before,
        moments,
        plans,
        planning=planning,
        session=session,
        reference=bis.reference,
    )
    return replace(result, sections=(result.section(),))


def _culprits(
    result: DateResult,
    first_bad: int,
    last_good: int,
    moments: Sequence[Moment],
    plans: dict[int, Plan],
    *,
    planning: _Planning,
    session: Session,
    reference: Outcome | None,
) -> DateResult:
    """Name the release(s) at the first bad moment, and confirm each alone on top of the
    environment right before it, ``last_good`` (the last good one, or the neighbour that fails
    another way); what the planner forces with it is recorded."""
    good_pins = plans.get(last_good)
    bad_pins = plans.get(first_bad)
    culprits: list[Culprit] = []
    confirmations: dict[str, Confirmation] = {}
    for package, version in moments[first_bad].releases:
        before = good_pins.pins.get(canonicalize_name(package)) if good_pins else None
        after = bad_pins.pins.get(canonicalize_name(package)) if bad_pins else None
        if after is not None and str(after) != version:
            continue  # uploaded then, but not what the environment took: not the change
        culprits.append(
            Culprit(
                package=package, good_version=str(before) if before else None, bad_version=version
            )
        )
        if good_pins is not None:
            confirmations[package] = _confirm(
                package, version, good_pins, planning=planning, session=session, reference=reference
            )
    return replace(
        result,
        culprits=tuple(culprits),
        first_bad_date=moments[first_bad].when,
        last_good_date=moments[last_good].when,
        confirmation=tuple(confirmations.values()),
    )


def _confirm(
    package: str,
    version: str,
    good: Plan,
    *,
    planning: _Planning,
    session: Session,
    reference: Outcome | None,
) -> Confirmation:
    """The last good environment with only ``package==version`` changed (plus what the planner
    forces): does it fail the way the first bad environment did? (In any of the ``--repeat``
    runs, for a flaky repro.)"""
    baseline = {str(k): v for k, v in good.pins.items()}
    toggled = plan(
        [*planning.roots, Requirement(f"{package}=={version}")],
        planning.source,
        planning.ptarget,
        policy=Policy.BASELINE,
        baseline=baseline,
        fallback=planning.fallback,
    )
    if not isinstance(toggled, Plan):
        return Confirmation(
            package=package, confirmed=None, reason=f"unresolvable: {toggled.reason}"
        )
    session.progress.message(
        f"envbisect: confirming {package} {version} alone on the last good one"
    )
    rec, _ = session.probe(session.env_spec(toggled.requirements()))
    confirmed = (
        rec.outcome.kind is not OutcomeKind.PASS
        and reference is not None
        and same_failure(rec.outcome, reference)
    )
    moved = moves(m for m in toggled.moved if m[0] != canonicalize_name(package))
    return Confirmation(
        package=package, confirmed=confirmed, outcome=rec.outcome, moved_with_it=moved
    )


def _dates(opts: DateOptions) -> tuple[datetime, datetime]:
    good, bad = parse_date_flag("--good", opts.good), parse_date_flag("--bad", opts.bad)
    now = opts.now or datetime.now(timezone.utc)
    for flag, value in (("--good", good), ("--bad", bad)):
        if value > now + timedelta(minutes=5):
            raise UsageError(
                f"{flag} {value:%Y-%m-%d} is in the future",
                hint="give dates up to today",
                ref="bad-date",
            )
    if good >= bad:
        raise UsageError(
            f"--good {good:%Y-%m-%d} is not before --bad {bad:%Y-%m-%d}",
            hint="--by-date searches forward in time: the good date comes first",
            ref="bad-date",
        )
    return good, bad


def _run_id(opts: DateOptions, session: Session) -> str:
    return session.run_id(
        "by-date",
        {
            "good": opts.good,
            "bad": opts.bad,
            "with": sorted(opts.with_reqs),
            "pins": list(opts.pins),
            "extras": list(opts.extras),
            "pre": opts.pre,
            **({"probabilistic": True} if opts.search.probabilistic else {}),
        },
    )
