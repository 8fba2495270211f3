"""``envbisect run``: bisect one package's versions.

Who does what:
    session            uv, the interpreter and its target, the index client, the store, the
                       executor, the run id and the result header
    candidates         the package's files as ordered versions, each installable on the target
                       or not
    planning.RunPlanner (with --pins/--baseline/--rest) the range from the pins, and the
                       planned environment of each candidate, or why none exists
    strategy.Bisector  which version to probe next, and when it is done
    drive.bisect       the loop: plan each point, probe through the session, record
    outputs            report.md, the known-good lockfiles
This module turns a candidate into an environment and the search's end into a result; it
never decides an outcome itself.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from envbisect.core.candidates import CandidateList, build_candidates
from envbisect.core.plan import Plan, Unresolvable
from envbisect.core.results.parts import ProbeRow, RowVerdict, SearchSummary, StandIn, Status, moves
from envbisect.core.results.search import RunResult
from envbisect.errors import EnvbisectError, NoCandidates, UnknownVersion, UsageError
from envbisect.index.source import IndexMetadataSource
from envbisect.model import Candidate, EnvSpec, OutcomeKind
from envbisect.modes.drive import answer, bisect
from envbisect.modes.outputs import write_outputs
from envbisect.modes.planning import RunPlanner, choose_policy, read_pins
from envbisect.modes.searchoptions import (  # the checks live there: probe imports no strategy
    CommitRefs,
    SearchOptions,
    check_requirements,
    parse_exclude_newer,
)
from envbisect.modes.session import Session, Want
from envbisect.options import CommonOptions
from envbisect.progress import Progress
from envbisect.strategy.bisect import Bisector


@dataclass(frozen=True, slots=True, kw_only=True)
class RunOptions:
    package: str
    common: CommonOptions
    good: str | None = None
    bad: str | None = None
    with_reqs: tuple[str, ...] = ()
    exclude_newer: str | None = None
    pre: bool = False
    allow_sdist: bool = False
    pins: tuple[str, ...] = ()
    extras: tuple[str, ...] = ()
    baseline: str | None = None
    rest: str | None = None  # "baseline" | "contemporary" | "latest"; None: the default
    search: SearchOptions = field(default_factory=lambda: SearchOptions())
    commits: CommitRefs | None = None  # --commits: then the first bad release's commits


def run_bisect(opts: RunOptions, progress: Progress | None = None) -> RunResult:
    """Bisect the versions of ``opts.package``; the result says whether a boundary was found."""
    check_requirements(opts.package, opts.with_reqs)
    exclude_newer = parse_exclude_newer(opts.exclude_newer)
    with Session(opts.common, progress) as session:
        return _run(opts, session, exclude_newer)


def _run(opts: RunOptions, session: Session, exclude_newer: datetime | None) -> RunResult:
    """The phases: the candidates and the ends, the bisector, the search, the answer (and
    with --commits the commit search), the outputs."""
    progress = session.progress
    planner = _planner(opts, session)
    cl, good_i, bad_i = _candidates(opts, session, planner, exclude_newer)
    bis = opts.search.bisector(
        n=len(cl.candidates),
        good=good_i,
        bad=bad_i,
        untestable=[i for i, c in enumerate(cl.candidates) if not c.installable],
        any_failure=opts.common.probing.any_failure,
        repeat=opts.common.probing.repeat,
        stand_in=True,
    )
    labels = [str(c.version) for c in cl.candidates]
    for s in _stand_ins(bis, cl, good_i, labels):
        progress.message(f"envbisect: {s.describe()} for it")
    window = cl.candidates[bis.old.index : bis.new.index + 1]
    pre_skipped = tuple((str(c.version), c.reason or "") for c in window if not c.installable)
    progress.candidates(opts.package, len(window), len(pre_skipped), session.target.short)
    result = session.result(
        RunResult,
        package=opts.package,
        candidates=len(window),
        run_id=_run_id(opts, session),
        skipped=pre_skipped,
    )
    points = _Points(opts=opts, session=session, planner=planner, cl=cl)
    source = None
    if opts.commits is not None and not session.opts.dry_run:
        from envbisect.modes.commitsource import open_source

        # Before any build: a repository that cannot be had stops the run at once.
        newest = [labels[bis.new.index], labels[bis.old.index]]
        source = open_source(session, opts.package, opts.commits.repo, newest)
    if session.opts.dry_run:  # both ends, as the search would build them first
        from envbisect.modes.dryrun import plan_views

        end_wants = [points.want(i, 1) for i in (bis.old.index, bis.new.index)]
        # Without pins the spec is NAME==V and --with: uv resolves the rest at build time, so
        # the dry run asks uv for the same whole environment now.
        plans = plan_views(session, end_wants, resolve=planner is None)
        return replace(result, status=Status.DRY_RUN, plans=tuple(plans))
    try:
        log, search = bisect(
            bis,
            session,
            points.want,
            labels=labels.__getitem__,
            cached=points.cached,
            hint_for=_static_hint(opts.package, session, cl),
        )
    except KeyboardInterrupt as e:
        raise session.interrupted(e) from e
    result = _answer(
        result, rows=log.rows, search=search, bis=bis, cl=cl, good_i=good_i, labels=labels
    )
    if source is not None and opts.commits is not None and result.answered:
        from envbisect.modes import commits

        ans = commits.after_release(
            session,
            result,
            src=source,
            refs=opts.commits,
            with_reqs=opts.with_reqs,
            allow_sdist=opts.allow_sdist,
            search_opts=opts.search,
        )
        result = replace(result, commits=ans)
    return write_outputs(result, session, label=opts.package, allow_sdist=opts.allow_sdist)


def _candidates(
    opts: RunOptions, session: Session, planner: RunPlanner | None, exclude_newer: datetime | None
) -> tuple[CandidateList, int | None, int | None]:
    """The package's candidates (restricted by the planner) and the indexes of the named
    ends, checked: two different versions, at least two candidates."""
    target = session.target
    files = session.client.project_files(opts.package).files
    ends = [_parse_version(v, flag) for v, flag in ((opts.good, "--good"), (opts.bad, "--bad"))]
    named = [v for v in ends if v is not None]
    cl = build_candidates(
        files,
        target,
        allow_sdist=opts.allow_sdist,
        pre=opts.pre,
        exclude_newer=exclude_newer,
        keep=named,
    )
    if planner is not None:
        cl = planner.restrict(cl, named)
        session.progress.message(
            f"envbisect: planning each environment ({planner.policy.value} policy for the "
            f"rest; {len(planner.roots)} other requirement(s), "
            f"{len(planner.baseline)} baseline pin(s))"
        )
    flags = ("--good", "--bad")
    good_i, bad_i = (_locate(cl, v, f, opts.package) for v, f in zip(ends, flags, strict=True))
    if good_i is not None and good_i == bad_i:
        raise UsageError(
            f"--good and --bad are the same version ({opts.good})",
            hint="give two different versions, or leave one out to use the oldest/newest",
            ref="same-ends",
        )
    if len(cl.candidates) < 2:
        raise NoCandidates(
            f"{opts.package} has {len(cl.candidates)} candidate version(s) "
            f"for {target.short}; nothing to bisect",
            hint="pass --pre for pre-releases, or check --exclude-newer",
        )
    return cl, good_i, bad_i


def _answer(
    result: RunResult,
    *,
    rows: Sequence[ProbeRow],
    search: SearchSummary,
    bis: Bisector,
    cl: CandidateList,
    good_i: int | None,
    labels: list[str],
) -> RunResult:
    """The search's end as the result: its rows, what was untestable, the stand-ins, the
    boundary, and the yanked versions beside it."""
    skipped = [
        (r.version, r.note or r.outcome.signature)
        for r in rows
        if r.outcome.kind is OutcomeKind.UNTESTABLE or r.verdict is RowVerdict.SKIP
    ]
    final = bis.conclude()
    assert final is not None
    result = replace(
        result,
        rows=tuple(rows),
        search=search,
        skipped=(*result.skipped, *skipped),
        stand_ins=tuple(_stand_ins(bis, cl, good_i, labels)),
    )
    result = answer(result, final, labels.__getitem__)
    if not result.answered:
        return result
    result = _yanked_between(result, cl)
    if result.status is Status.AMBIGUOUS and any(r.note for r in result.rows):
        result = replace(
            result, reason="failures unlike the reference, or untestable points, hide it"
        )
    return result


@dataclass(slots=True, kw_only=True)
class _Points:
    """Each candidate's environment: NAME==V plus --with, or what the planner makes of it."""

    opts: RunOptions
    session: Session
    planner: RunPlanner | None
    cl: CandidateList
    _plans: dict[Version, Plan | Unresolvable] = field(default_factory=dict)

    def _spec(self, requirements: list[str], *, exclude_newer: str | None) -> EnvSpec:
        return self.session.env_spec(
            requirements,
            only_binary=not self.opts.allow_sdist,
            exclude_newer=exclude_newer,
            prerelease=self.opts.pre,
        )

    def _plain(self, cand: Candidate) -> EnvSpec:
        reqs = [f"{self.opts.package}=={cand.version}", *self.opts.with_reqs]
        return self._spec(reqs, exclude_newer=self.opts.exclude_newer)

    def cached(self, i: int, runs: int) -> bool:
        """Whether the store already answers for candidate i (without planning it)."""
        cand = self.cl.candidates[i]
        if not cand.installable:
            return False
        if self.planner is not None:
            planned = self._plans.get(cand.version)
            if planned is None or isinstance(planned, Unresolvable):
                return False
            spec = self._spec(planned.requirements(), exclude_newer=None)
        else:
            spec = self._plain(cand)
        return self.session.stored(spec, runs) is not None

    def want(self, i: int, runs: int) -> Want:
        cand = self.cl.candidates[i]
        label = str(cand.version)
        if not cand.installable:
            return Want(label=label, why_not=cand.reason or "no installable file")
        if self.planner is None:
            return Want(label=label, spec=self._plain(cand), runs=runs)
        if cand.version not in self._plans:
            self._plans[cand.version] = self.planner.plan_for(cand)
        planned = self._plans[cand.version]
        if isinstance(planned, Unresolvable):
            return Want(label=label, why_not=f"unresolvable: {planned.reason}")
        spec = self._spec(planned.requirements(), exclude_newer=None)
        return Want(label=label, spec=spec, runs=runs, moved=moves(planned.moved))


def _stand_ins(
    bis: Bisector, cl: CandidateList, good_i: int | None, labels: list[str]
) -> list[StandIn]:
    """The named ends the search stepped inward, as the user named them."""
    return [
        StandIn(
            flag="--good" if s.asked == good_i else "--bad",
            asked=labels[s.asked],
            used=labels[s.used],
            reason=cl.candidates[s.asked].reason or "no installable file",
        )
        for s in bis.stand_ins
    ]


def _yanked_between(result: RunResult, cl: CandidateList) -> RunResult:
    """Yanked versions between the two that bracket the answer were never candidates: the
    answer is the first bad one that is not yanked, and a user who has a yanked one installed
    must be told (naming it with --good or --bad tests it)."""
    assert result.first_new is not None and result.last_old is not None
    lo, hi = sorted((Version(result.first_new), Version(result.last_old)))
    between = sorted(v for v, why in cl.dropped.items() if why == "yanked" and lo < v < hi)
    if not between:
        return result
    names = tuple(str(v) for v in between)
    why = "yanked: left out of the candidates; name it with --good or --bad to test it"
    return replace(
        result, yanked_between=names, skipped=(*result.skipped, *((v, why) for v in names))
    )


def _parse_version(text: str | None, flag: str) -> Version | None:
    if text is None:
        return None
    try:
        return Version(text)
    except InvalidVersion as e:
        raise UnknownVersion(
            f"{flag} {text!r} is not a version", hint="use a version such as 2.14.6"
        ) from e


def _locate(cl: CandidateList, version: Version | None, flag: str, package: str) -> int | None:
    if version is None:
        return None
    i = cl.find(version)
    if i is None:
        near = ", ".join(str(c.version) for c in cl.candidates[-5:])
        raise UnknownVersion(
            f"{flag} {version}: {package} has no such version on the index",
            hint=f"the newest candidates are {near}" if near else "check the index URL",
        )
    return i


def _run_id(opts: RunOptions, session: Session) -> str:
    return session.run_id(
        opts.package,
        {
            "package": canonicalize_name(opts.package),
            "good": opts.good,
            "bad": opts.bad,
            "with": sorted(opts.with_reqs),
            "exclude_newer": opts.exclude_newer,
            "pre": opts.pre,
            "sdist": opts.allow_sdist,
            "pins": list(opts.pins),
            "extras": list(opts.extras),
            "baseline": opts.baseline,
            "rest": opts.rest,
            # How sure the answer is differs with this (not with --jobs): its own report.
            **({"probabilistic": True} if opts.search.probabilistic else {}),
            **(_commits_id(opts.commits) if opts.commits is not None else {}),
        },
    )


def _commits_id(refs: CommitRefs) -> dict[str, object]:
    return {"commits": [refs.repo, refs.good_ref, refs.bad_ref]}


def _planner(opts: RunOptions, session: Session) -> RunPlanner | None:
    """A planner when pins, a baseline or a --rest policy were given; else uv resolves."""
    if not (opts.pins or opts.baseline or opts.rest):
        return None
    client, target, origin = session.client, session.target, session.repro.origin
    pinsets = read_pins(opts.pins, client, cwd=origin, extras=opts.extras)
    base = (
        read_pins([opts.baseline], client, cwd=origin, named="--baseline")[0]
        if opts.baseline
        else None
    )
    has_baseline = base is not None or any(p.is_lock for p in pinsets)
    baseline_versions = base.baseline(target.marker_environment()) if base else {}
    if base is not None and not baseline_versions:
        raise UsageError(
            f"--baseline {opts.baseline} pins no version exactly (no NAME==V that applies to "
            f"{target.short})",
            hint="a baseline is an environment: a lockfile, pylock.toml or installed:PYTHON; "
            "pass a file of ranges with --pins",
            ref="baseline-no-pins",
        )
    return RunPlanner(
        package=opts.package,
        target=target,
        source=IndexMetadataSource(
            client,
            target,
            allow_sdist=opts.allow_sdist,
            preferred=baseline_versions,
            overrides=session.opts.planning.overrides,
            # --inherit: the interpreter's packages as they are, but the one bisected and the
            # ones asked for with --with (installed in front of the interpreter's).
            provided=session.provided(
                [opts.package, *(Requirement(r).name for r in opts.with_reqs)]
            ),
        ),
        pins=pinsets,
        baseline_pins=base,
        with_reqs=opts.with_reqs,
        policy=choose_policy(opts.rest, has_baseline=has_baseline),
        pre=opts.pre,
        extras=opts.extras,
        fallback=session.uv_planner(only_binary=not opts.allow_sdist),
    )


def _static_hint(
    package: str, session: Session, cl: CandidateList
) -> Callable[[ProbeRow], tuple[int, int] | None]:
    """Where the wheels say the failing end's failure began in ``package`` (``envbisect
    why``, the end's own versions stated, nothing built): the candidate before the release
    that removed what the failure names, and that release; probed first, decided by probes."""

    def hint(row: ProbeRow) -> tuple[int, int] | None:
        from envbisect.core.evidence.failure import read_failure
        from envbisect.modes.why import explain

        text = row.outcome.detail or row.outcome.signature
        if not read_failure(text).items:
            return None
        held = "\n".join(f"{d.name}=={d.version}" for d in row.installed)
        minor = ".".join(str(p) for p in session.target.version[:2])
        try:
            found = explain(
                f"{held}\n\n{text}", origin=row.version, client=session.client, python=minor
            )
        except EnvbisectError:  # a static guess that cannot be made: none
            return None
        for fix in found.fixes:
            if canonicalize_name(fix.package) != canonicalize_name(package) or fix.op != "<":
                continue
            first_bad = Version(fix.version)
            at = next((i for i, c in enumerate(cl.candidates) if c.version >= first_bad), None)
            if at:
                session.progress.message(
                    f"envbisect: the wheels say {package} {cl.candidates[at].version} removed what "
                    f"the failure names: {cl.candidates[at - 1].version} and "
                    f"{cl.candidates[at].version} probed first"
                )
                return at - 1, at
        return None

    return hint
