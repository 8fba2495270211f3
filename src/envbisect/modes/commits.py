"""``envbisect commits`` and ``run --commits``: the first bad commit between two releases.

Who does what:
    env/git.py         the mirror (cloned once, fetched each run, as it is with --offline),
                       refs and tags, the first-parent commits, a build's checkout
    core/commits.py    tags for a version, the code host's links, the repository a package's
                       metadata names, the build backend and whether it compiles
    strategy.Bisector  which commit to probe next, and every breakpoint (as for releases)
    drive.bisect       the loop: plan each commit, probe through the session, record
    session            the store, the executor, --jobs, --repeat: a commit probe is a probe
    env/srcbuild.py    (in the worker) the commit's checkout and its build, through uv
    commitsource.py    the repository (its mirror), the refs, the range of commits
This module holds the rest of the environment fixed and turns the search's end into a
``CommitAnswer``; it never decides an outcome itself.

The points are the good end and every first-parent commit after it up to the bad end,
oldest first (a merge is one point: what it brought in is judged as one change, as the
project's history shows it). Every point's environment is the rest held exactly (each other
distribution pinned as the good environment had it: the last good release's probe, or the
good commit's own build) with only this package built from the commit.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from packaging.utils import canonicalize_name
from packaging.version import Version

from envbisect.core.commits import (
    BuildInfo,
    Commit,
)
from envbisect.core.results.commits import CommitAnswer, CommitBreakpoint, ProbedCommit
from envbisect.core.results.parts import Direction, ProbeRow, Status
from envbisect.core.results.search import RunResult
from envbisect.errors import EnvbisectError, InfrastructureError, NoAnswer
from envbisect.model import InstalledDist, OutcomeKind, SourceBuild
from envbisect.modes.commitsource import (
    Range,
    Ref,
    Source,
    commit_range,
    find_ref,
    is_version,
    open_source,
)
from envbisect.modes.drive import bisect
from envbisect.modes.outputs import inside, write_report
from envbisect.modes.searchoptions import CommitRefs, SearchOptions
from envbisect.modes.session import Session, Want
from envbisect.options import CommonOptions
from envbisect.progress import Progress
from envbisect.strategy.bisect import Bisector, BisectResult


@dataclass(frozen=True, slots=True, kw_only=True)
class CommitOptions:
    """``envbisect commits``: ``good`` and ``bad`` are refs (a tag, a branch, a commit id) or
    release versions (mapped to their tags)."""

    package: str
    common: CommonOptions
    good: str
    bad: str
    repo: str | None = None
    with_reqs: tuple[str, ...] = ()
    allow_sdist: bool = False
    search: SearchOptions = field(default_factory=lambda: SearchOptions())


# -- the search ---------------------------------------------------------------------------------


@dataclass(slots=True, kw_only=True)
class _Points:
    """Each commit's environment: the rest pinned as the good one had it, the package built
    from that commit. ``first``: the good end's own spec when its build made the rest."""

    session: Session
    package: str
    src: Source
    rng: Range
    rest: tuple[str, ...]
    only_binary: bool
    first: Want | None = None

    def spec_of(self, i: int) -> Want:
        if i == 0 and self.first is not None:
            return self.first
        c = self.rng.points[i]
        source = SourceBuild(package=self.package, commit=c.sha)
        spec = self.session.env_spec(self.rest, only_binary=self.only_binary, source=source)
        return Want(label=c.short, spec=spec, source_repo=str(self.src.mirror))

    def want(self, i: int, runs: int) -> Want:
        w = self.spec_of(i)
        return Want(label=w.label, spec=w.spec, runs=runs, source_repo=w.source_repo)

    def cached(self, i: int, runs: int) -> bool:
        w = self.spec_of(i)
        return w.spec is not None and self.session.stored(w.spec, runs) is not None


def rest_of(installed: Sequence[InstalledDist], package: str) -> tuple[str, ...]:
    """Every distribution of an environment but ``package``, pinned exactly."""
    key = canonicalize_name(package)
    return tuple(
        sorted(f"{d.name}=={d.version}" for d in installed if canonicalize_name(d.name) != key)
    )


def search(
    session: Session,
    *,
    package: str,
    src: Source,
    rng: Range,
    good: Ref,
    bad: Ref,
    rest: tuple[str, ...],
    rest_from: str,
    only_binary: bool,
    search_opts: SearchOptions,
    fix: bool = False,
    first: Want | None = None,
) -> tuple[CommitAnswer, list[ProbeRow]]:
    """Bisect the range's commits; the answer and the rows, in the order probed."""
    key = canonicalize_name(package)
    n = len(rng.points)
    bis = search_opts.bisector(
        n=n,
        good=n - 1 if fix else 0,
        bad=0 if fix else n - 1,
        any_failure=session.opts.probing.any_failure,
        repeat=session.opts.probing.repeat,
    )
    points = _Points(
        session=session,
        package=key,
        src=src,
        rng=rng,
        rest=rest,
        only_binary=only_binary,
        first=first,
    )
    labels = [c.short for c in rng.points]
    try:
        log, _ = bisect(bis, session, points.want, labels=labels.__getitem__, cached=points.cached)
    except KeyboardInterrupt as e:
        raise session.interrupted(e) from e
    final = bis.conclude()
    assert final is not None
    _check_ends(final, log.rows, log.points, rng, package, bis)
    tested, skipped = _tested(log.rows, log.points, rng, key)
    ans = CommitAnswer(
        package=package,
        repo=src.repo.shown,
        web=src.web,
        good_ref=good.name,
        bad_ref=bad.name,
        status=final.status,
        direction=final.direction,
        reason=final.reason,
        commits=n,
        tested=tested,
        untestable=tuple(dict.fromkeys(skipped)),
        build=rng.build,
        rest=rest_from,
        start=rng.start,
        first_new=rng.points[final.first_new] if final.first_new is not None else None,
        last_old=rng.points[final.last_old] if final.last_old is not None else None,
        possible=tuple(rng.points[i] for i in final.possible),
        breakpoints=tuple(
            CommitBreakpoint(
                first_new=rng.points[b.first_new],
                last_old=rng.points[b.last_old],
                outcome=b.outcome,
                possible=tuple(rng.points[i] for i in b.possible),
            )
            for b in final.breakpoints
        ),
    )
    return ans, log.rows


def _tested(
    rows: Sequence[ProbeRow], points: Sequence[int], rng: Range, key: str
) -> tuple[tuple[ProbedCommit, ...], tuple[tuple[Commit, str], ...]]:
    """Every probed commit in the order probed, and the untestable ones with why."""
    tested = tuple(
        ProbedCommit(
            commit=rng.points[i],
            outcome=r.outcome,
            verdict=r.verdict,
            version=_version_of(r.installed, key),
            env_id=r.env_id,
            reused=r.reused,
            build_seconds=r.build_seconds,
            probe_seconds=r.probe_seconds,
        )
        for r, i in zip(rows, points, strict=True)
    )
    skipped = tuple(
        (rng.points[i], r.outcome.signature or "untestable")
        for r, i in zip(rows, points, strict=True)
        if r.outcome.kind is OutcomeKind.UNTESTABLE
    )
    return tested, skipped


def _check_ends(
    final: BisectResult,
    rows: Sequence[ProbeRow],
    points: Sequence[int],
    rng: Range,
    package: str,
    bis: Bisector,
) -> None:
    """An end that does not build from source: this machine cannot build the package (the
    release was built once, somewhere): one line and a hint, never an answer."""
    if final.status is not Status.NO_ANSWER:
        return
    ends = {bis.old.index, bis.new.index}
    for r, i in zip(rows, points, strict=True):
        built = r.outcome.kind is not OutcomeKind.UNTESTABLE or r.probe_seconds > 0
        if i in ends and not built:  # (an untestable repro run, exit 125, did build)
            cannot_build(package, rng.points[i], r.outcome.signature, rng.build)


def cannot_build(package: str, c: Commit, why: str, info: BuildInfo) -> None:
    needs = (
        f"it compiles ({info.why}): install its toolchain and headers, or raise --build-timeout"
        if info.compiles
        else "check that its build backend is on the index (or in uv's cache with --offline)"
    )
    raise InfrastructureError(
        f"{package} cannot be built from source here ({c.short}: {why})",
        hint=f"{needs}; -v shows uv's build output",
        ref="cannot-build",
    )


def _version_of(installed: Sequence[InstalledDist], key: str) -> str | None:
    return next((d.version for d in installed if canonicalize_name(d.name) == key), None)


# -- envbisect commits ----------------------------------------------------------------------------


def run_commits(opts: CommitOptions, progress: Progress | None = None) -> RunResult:
    """Bisect the commits between two refs (no release search)."""
    with Session(opts.common, progress) as session:
        return _run(opts, session)


def _run(opts: CommitOptions, session: Session) -> RunResult:
    package = opts.package
    versions = [v for v in (opts.bad, opts.good) if is_version(v)]
    src = open_source(session, package, opts.repo, versions)
    good = find_ref(src, package, opts.good, "--good")
    bad = find_ref(src, package, opts.bad, "--bad")
    rng = commit_range(src, package, good, bad, session.progress)
    rest, rest_from, first = _base(session, opts, src, good, rng)
    ans, rows = search(
        session,
        package=package,
        src=src,
        rng=rng,
        good=good,
        bad=bad,
        rest=rest,
        rest_from=rest_from,
        only_binary=not opts.allow_sdist,
        search_opts=opts.search,
        first=first,
    )
    run_id = session.run_id(
        package,
        {
            "commits": True,
            "package": canonicalize_name(package),
            "good": good.sha,
            "bad": bad.sha,
            "with": sorted(opts.with_reqs),
            "sdist": opts.allow_sdist,
        },
    )
    answered = ans.first_new is not None and ans.last_old is not None
    result = session.result(
        RunResult,
        package=package,
        candidates=len(rng.points),
        run_id=run_id,
        rows=tuple(rows),
        status=ans.status,
        direction=ans.direction,
        reason=ans.reason,
        first_new=ans.first_new.short if answered and ans.first_new else None,
        last_old=ans.last_old.short if answered and ans.last_old else None,
        possible=tuple(c.short for c in ans.possible) if answered else (),
        commits=ans,  # --json's first_bad_commit and commits, report.md's section
        verdict=ans.verdict(),
    )
    run_dir = inside(session.opts.results, session.opts.results / result.run_id)
    run_dir.mkdir(parents=True, exist_ok=True)
    result = write_report(result, run_dir)
    if ans.status is Status.NO_ANSWER:
        err = NoAnswer(
            f"the ends did not verify: {ans.reason}",
            hint="pick --good/--bad refs that pass and fail",
        )
        err.result = result
        raise err
    return result


# -- run --commits ------------------------------------------------------------------------------


def after_release(
    session: Session,
    result: RunResult,
    *,
    src: Source,
    refs: CommitRefs,
    with_reqs: Sequence[str] = (),
    allow_sdist: bool = False,
    search_opts: SearchOptions,
) -> CommitAnswer:
    """The commits between the two releases a run's answer brackets (the last good and the
    first bad; a fix search: the last broken and the first fixed), the rest of each
    environment held as in the passing release's probe."""
    package = result.package
    assert result.first_new is not None and result.last_old is not None
    fix = result.direction == Direction.FIX
    good_v, bad_v = (
        (result.first_new, result.last_old) if fix else (result.last_old, result.first_new)
    )
    verb = "fixed" if fix else "bad"
    session.progress.message(
        f"envbisect: first {verb} release of {package}: {result.first_new}; "
        f"now the commits since {result.last_old}"
    )
    good = find_ref(src, package, refs.good_ref or good_v, "--good-ref")
    bad = find_ref(src, package, refs.bad_ref or bad_v, "--bad-ref")
    old, new = (bad, good) if fix else (good, bad)
    rng = commit_range(src, package, old, new, session.progress)
    passing = result.row(good_v)
    installed = passing.installed if passing is not None else ()
    rest = rest_of(installed, package) if installed else tuple(with_reqs)
    where = f"as in {package} {good_v}'s probe (the last good release's environment)"
    ans, _ = search(
        session,
        package=package,
        src=src,
        rng=rng,
        good=good,
        bad=bad,
        rest=rest,
        rest_from=where,
        only_binary=not allow_sdist,
        search_opts=search_opts,
        fix=fix,
    )
    return ans


def _base(
    session: Session, opts: CommitOptions, src: Source, good: Ref, rng: Range
) -> tuple[tuple[str, ...], str, Want | None]:
    """The rest of every environment: as in the good release's probe when the good ref is a
    release the index has (the same environment ``run`` probes, so its stored probe answers),
    else as uv resolves it for the good commit's own build (which is then the good end)."""
    only_binary = not opts.allow_sdist
    if good.version is not None and _on_index(session, opts.package, good.version):
        spec = session.env_spec(
            [f"{opts.package}=={good.version}", *opts.with_reqs], only_binary=only_binary
        )
        row = _probe_base(session, Want(label=good.version, spec=spec))
        if row.outcome.kind is not OutcomeKind.UNTESTABLE:
            where = f"as in {opts.package} {good.version}'s environment ({row.outcome.describe()})"
            session.progress.message(f"envbisect: the rest of each environment {where}")
            return rest_of(row.installed, opts.package), where, None
    key = canonicalize_name(opts.package)
    c = rng.points[0]
    spec = session.env_spec(
        list(opts.with_reqs), only_binary=only_binary, source=SourceBuild(package=key, commit=c.sha)
    )
    first = Want(label=c.short, spec=spec, source_repo=str(src.mirror))
    row = _probe_base(session, first)
    if row.outcome.kind is OutcomeKind.UNTESTABLE:
        cannot_build(opts.package, c, row.outcome.signature, rng.build)
    where = f"as uv resolved it for {c.short}'s build ({good.name})"
    session.progress.message(f"envbisect: the rest of each environment {where}")
    return rest_of(row.installed, opts.package), where, first


def _probe_base(session: Session, want: Want) -> ProbeRow:
    """The probe that gives the rest of every environment, with its progress lines."""
    progress = session.progress
    progress.probe_started(want.label, 0, 0)
    try:
        (row,) = session.rows([want])
    except KeyboardInterrupt as e:
        raise session.interrupted(e) from e
    progress.probe_finished(
        row.version, row.outcome, row.build_seconds + row.probe_seconds, row.reused, ""
    )
    return row


def _on_index(session: Session, package: str, version: str) -> bool:
    try:
        return bool(session.client.project_files(package).files_of(Version(version)))
    except EnvbisectError:
        return False
