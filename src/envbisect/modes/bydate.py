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
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import Any

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from envbisect.core.candidates import build_candidates
from envbisect.core.outcome import same_failure
from envbisect.core.plan import MatchCache, Plan, PlanTarget, Policy, Unresolvable, plan
from envbisect.core.report import RunResult
from envbisect.core.target import Target
from envbisect.errors import NoAnswer, UsageError
from envbisect.index.client import IndexClient
from envbisect.index.source import IndexMetadataSource
from envbisect.model import Outcome, OutcomeKind
from envbisect.modes.drive import answer, bisect
from envbisect.modes.options import (
    SearchOptions,
    check_requirements,
    parse_exclude_newer,
)
from envbisect.modes.outputs import write_outputs
from envbisect.modes.planning import read_pins
from envbisect.modes.session import Session, Want
from envbisect.options import CommonOptions
from envbisect.reporter import Reporter
from envbisect.strategy.bisect import Bisector


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


def run_by_date(opts: DateOptions, reporter: Reporter | None = None) -> RunResult:
    check_requirements("", opts.with_reqs)
    good, bad = _dates(opts)
    with Session(opts.common, reporter) as session:
        return _run(opts, session, good, bad)


def _run(opts: DateOptions, session: Session, good: datetime, bad: datetime) -> RunResult:
    target, client, reporter = session.target, session.client, session.reporter
    env = target.marker_environment()
    roots = [Requirement(r) for r in opts.with_reqs]
    for ps in read_pins(opts.pins, client, cwd=session.repro.origin, extras=opts.extras):
        roots += [p.requirement for p in ps.applicable(env, opts.extras)]
    if not roots:
        raise UsageError(
            "nothing to resolve: --by-date needs the environment's requirements",
            hint="pass --with REQ (e.g. --with datasets==2.14.6) or --pins SOURCE",
            ref="bydate-nothing",
        )
    source = IndexMetadataSource(client, target, allow_sdist=False)
    ptarget = PlanTarget(markers=env, python_version=target.python_version)
    cache: MatchCache = {}

    def as_of(when: datetime) -> Plan | Unresolvable:
        return plan(roots, source, ptarget, policy=Policy.CONTEMPORARY, cutoff=when,
                    pre=opts.pre, cache=cache)  # fmt: skip

    ends = as_of(good), as_of(bad)
    for when, planned in zip((good, bad), ends, strict=True):
        if not isinstance(planned, Plan):
            raise UsageError(
                f"no environment exists as of {when:%Y-%m-%d}: {planned.reason}",
                hint="move the date, or loosen the requirements",
                ref="bydate-unresolvable",
            )
    assert isinstance(ends[0], Plan) and isinstance(ends[1], Plan)
    if session.opts.dry_run:  # both ends, as the search would build them first
        from envbisect.modes.dryrun import plan_views

        wants = [Want(label=f"as of {when:%Y-%m-%d %H:%M:%S}",
                      spec=session.env_spec(end.requirements()))
                 for when, end in zip((good, bad), (ends[0], ends[1]), strict=True)]  # fmt: skip
        result = session.result(package="(by date)", candidates=2, run_id=_run_id(opts, session))
        result.status = "dry-run"
        result.extra = {"dry_run": True, "plans": plan_views(session, wants)}
        return result
    names = sorted(set(ends[0].pins) | set(ends[1].pins))
    moments = [Moment(when=good, releases=()), *timeline(names, client, target, good, bad,
                                                          pre=opts.pre)]  # fmt: skip
    if len(moments) < 2:
        raise UsageError(
            f"no release of any of the {len(names)} packages was uploaded between "
            f"{good:%Y-%m-%d} and {bad:%Y-%m-%d}",
            hint="widen the window: nothing changed inside it",
            ref="bydate-empty",
        )
    reporter.message(
        f"envbisect: {len(moments) - 1} release moment(s) of {len(names)} package(s) between "
        f"{good:%Y-%m-%d} and {bad:%Y-%m-%d}"
    )
    result = session.result(package="(by date)", candidates=len(moments),
                            run_id=_run_id(opts, session))  # fmt: skip
    plans: dict[int, Plan] = {}

    def want(i: int, runs: int) -> Want:
        planned = as_of(moments[i].when)
        label = moments[i].label()
        if not isinstance(planned, Plan):
            return Want(label=label, why_not=f"unresolvable: {planned.reason}")
        plans[i] = planned
        return Want(label=label, spec=session.env_spec(planned.requirements()), runs=runs)

    bis = opts.search.bisector(n=len(moments), good=0, bad=len(moments) - 1,
                               any_failure=session.opts.any_failure,
                               repeat=session.opts.repeat)  # fmt: skip
    try:
        log, result.search = bisect(bis, session, want, labels=lambda i: moments[i].label())
        result.rows = log.rows
        final = bis.result
        assert final is not None
        answer(result, final, lambda i: moments[i].label())
        if final.status != "no-answer":
            assert final.first_new is not None and final.last_old is not None
            # The culprit is confirmed on the environment right before the first bad moment:
            # the last good one, or the one that fails another way just before it.
            before = final.neighbour if final.neighbour is not None else final.last_old
            _culprits(result, final.first_new, before, moments, plans, bis,
                      roots=roots, source=source, ptarget=ptarget,
                      session=session)  # fmt: skip
    except KeyboardInterrupt as e:
        raise session.interrupted(e) from e
    write_outputs(result, session, label="environment as of")
    if result.status == "no-answer":
        err = NoAnswer(
            f"the window does not bracket the failure: {result.reason}",
            hint="--good must be a date whose environment passes, --bad one whose "
            "environment fails",
        )
        err.result = result
        raise err
    return result


def _culprits(
    result: RunResult,
    first_bad: int,
    last_good: int,
    moments: Sequence[Moment],
    plans: dict[int, Plan],
    bis: Bisector,
    *,
    roots: Sequence[Requirement],
    source: IndexMetadataSource,
    ptarget: PlanTarget,
    session: Session,
) -> None:
    """Name the release(s) at the first bad moment, and confirm each alone on top of the
    environment right before it, ``last_good`` (the last good one, or the neighbour that fails
    another way); what the planner forces with it is recorded."""
    good_pins = plans.get(last_good)
    bad_pins = plans.get(first_bad)
    culprits: list[dict[str, Any]] = []
    confirmations: dict[str, dict[str, Any]] = {}
    for package, version in moments[first_bad].releases:
        before = good_pins.pins.get(canonicalize_name(package)) if good_pins else None
        after = bad_pins.pins.get(canonicalize_name(package)) if bad_pins else None
        if after is not None and str(after) != version:
            continue  # uploaded then, but not what the environment took: not the change
        culprits.append(
            {
                "package": package,
                "good_version": str(before) if before else None,
                "bad_version": version,
            }
        )
        if good_pins is not None:
            confirmations[package] = _confirm(
                package, version, good_pins, roots=roots, source=source, ptarget=ptarget,
                session=session, reference=bis.reference,
            )  # fmt: skip
    result.extra = {
        "culprits": culprits,
        "first_bad_date": moments[first_bad].when.isoformat(),
        "last_good_date": moments[last_good].when.isoformat(),
        "confirmation": list(confirmations.values()),
    }
    when = f"{moments[first_bad].when:%Y-%m-%d %H:%M:%S} UTC"
    lines = ["## Culprit", ""]
    for c in culprits:
        was = c["good_version"] or "absent"
        lines.append(f"- **{c['package']} {c['bad_version']}** (was {was}), uploaded {when}")
        conf = confirmations.get(c["package"])
        if conf and conf["confirmed"]:
            moved = ", ".join(
                f"{m['package']} {m['from']}→{m['to']}" for m in conf["moved_with_it"]
            )
            tail = f" (moved with it: {moved})" if moved else ""
            env = "previous" if result.neighbour else "last good"
            lines.append(
                f"  - confirmed: the {env} environment with only this change fails like the "
                f"first bad one{tail}"
            )
        elif conf:
            lines.append(f"  - not confirmed alone: {conf.get('reason') or conf.get('outcome')}")
    result.sections = ["\n".join(lines)]


def _confirm(
    package: str,
    version: str,
    good: Plan,
    *,
    roots: Sequence[Requirement],
    source: IndexMetadataSource,
    ptarget: PlanTarget,
    session: Session,
    reference: Outcome | None,
) -> dict[str, Any]:
    """The last good environment with only ``package==version`` changed (plus what the planner
    forces): does it fail the way the first bad environment did? (In any of the ``--repeat``
    runs, for a flaky repro.)"""
    baseline = {str(k): v for k, v in good.pins.items()}
    toggled = plan([*roots, Requirement(f"{package}=={version}")], source, ptarget,
                   policy=Policy.BASELINE, baseline=baseline)  # fmt: skip
    if not isinstance(toggled, Plan):
        return {"package": package, "confirmed": None, "reason": f"unresolvable: {toggled.reason}"}
    session.reporter.message(
        f"envbisect: confirming {package} {version} alone on the last good one"
    )
    rec, _ = session.probe(session.env_spec(toggled.requirements()))
    confirmed = (
        rec.outcome.kind is not OutcomeKind.PASS
        and reference is not None
        and same_failure(rec.outcome, reference)
    )
    moved = [
        {"package": n, "from": str(b) if b else None, "to": str(v) if v else None}
        for n, b, v in toggled.moved
        if n != canonicalize_name(package)
    ]
    return {
        "package": package,
        "confirmed": confirmed,
        "outcome": rec.outcome.to_dict(),
        "moved_with_it": moved,
    }


def _date(flag: str, value: str) -> datetime:
    try:
        when = parse_exclude_newer(value)
    except UsageError as e:
        raise UsageError(
            f"{flag} {value!r} is not a date", hint=e.hint or "", ref="bad-date"
        ) from e
    assert when is not None
    return when


def _dates(opts: DateOptions) -> tuple[datetime, datetime]:
    good, bad = _date("--good", opts.good), _date("--bad", opts.bad)
    now = opts.now or datetime.now(timezone.utc)
    for flag, value in (("--good", good), ("--bad", bad)):
        if value > now + timedelta(minutes=5):
            raise UsageError(f"{flag} {value:%Y-%m-%d} is in the future",
                             hint="give dates up to today", ref="bad-date")  # fmt: skip
    if good >= bad:
        raise UsageError(
            f"--good {good:%Y-%m-%d} is not before --bad {bad:%Y-%m-%d}",
            hint="--by-date searches forward in time: the good date comes first",
            ref="bad-date",
        )
    return good, bad


def _run_id(opts: DateOptions, session: Session) -> str:
    return session.run_id("by-date", {
        "good": opts.good, "bad": opts.bad, "with": sorted(opts.with_reqs),
        "pins": list(opts.pins), "extras": list(opts.extras), "pre": opts.pre,
        **({"probabilistic": True} if opts.search.probabilistic else {}),
    })  # fmt: skip
