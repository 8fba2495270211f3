"""The one place that wires the core to the edges for ``envbisect run``.

Who does what:
    index.IndexClient      reads the package's files from the indexes (httpx)
    candidates             turns them into ordered versions, each installable on the target or not
    planning.RunPlanner    (with --pins/--baseline/--rest) the range from the pins, and the
                           planned environment of each candidate, or why none exists
    strategy.Bisector      decides which version to probe next, and when it is done
    prober.Prober          probes one environment: store lookup, uv build, the repro's steps,
                           outcome.classify, gdb forensics on a crash, the environment report
    report                 verdict, report.md, lockfiles, JSON
The engine owns the loop and the files under ``results/``; it never decides an outcome itself.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import threading
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from pathlib import Path

import httpx
from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from envbisect import __version__
from envbisect.core.candidates import CandidateList, build_candidates, file_version
from envbisect.core.outcome import untestable
from envbisect.core.plan import Plan, Unresolvable
from envbisect.core.report import (
    LockEntry,
    ProbeRow,
    RunResult,
    pylock,
    report_markdown,
    requirements_lock,
)
from envbisect.core.target import Target
from envbisect.env.prober import Prober
from envbisect.env.repro import Repro
from envbisect.env.uv import find_python, find_uv, inspect_target
from envbisect.env.uvplan import UvFallback
from envbisect.errors import (
    EnvbisectError,
    Interrupted,
    NoCandidates,
    UnknownVersion,
    UsageError,
)
from envbisect.index.client import IndexClient, default_cache_dir, local_sha256
from envbisect.index.source import IndexMetadataSource
from envbisect.model import Candidate, EnvSpec, IndexConfig, InstalledDist, OutcomeKind
from envbisect.modes.drive import drive
from envbisect.modes.planning import RunPlanner, choose_policy, read_pins
from envbisect.redact import mask_text
from envbisect.reporter import Reporter
from envbisect.store import ProbeRecord, Store
from envbisect.strategy.bisect import SearchOptions


@dataclass(frozen=True, slots=True, kw_only=True)
class RunOptions:
    package: str
    repro: Repro
    good: str | None = None
    bad: str | None = None
    with_reqs: tuple[str, ...] = ()
    indexes: IndexConfig = field(default_factory=IndexConfig)
    python: str | None = None
    exclude_newer: str | None = None
    pre: bool = False
    allow_sdist: bool = False
    timeout: float = 600.0
    results: Path = Path("results")
    any_failure: bool = False
    keep_envs: bool = False
    native_backtrace: str = "auto"
    command: str = ""
    pins: tuple[str, ...] = ()
    extras: tuple[str, ...] = ()
    baseline: str | None = None
    rest: str | None = None  # "baseline" | "contemporary" | "latest"; None: the default
    offline: bool = False
    cache_dir: Path | None = None
    search: SearchOptions = field(default_factory=lambda: SearchOptions())


def parse_exclude_newer(value: str | None) -> datetime | None:
    """A date (midnight UTC) or an RFC 3339 timestamp, as uv accepts them."""
    if value is None:
        return None
    try:
        dt = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError as e:
        raise UsageError(
            f"--exclude-newer {value!r} is not a date",
            hint="use YYYY-MM-DD or an RFC 3339 timestamp such as 2024-03-01T00:00:00Z",
            ref="bad-date",
        ) from e
    return dt if dt.tzinfo else dt.replace(tzinfo=timezone.utc)


def check_requirements(package: str, reqs: tuple[str, ...]) -> None:
    for text in reqs:
        try:
            req = Requirement(text)
        except InvalidRequirement as e:
            raise UsageError(
                f"--with {text!r} is not a valid requirement ({e})",
                hint="use PEP 508 syntax, e.g. --with 'pyarrow<15' --with numpy==1.26.4",
                ref="bad-requirement",
            ) from e
        if package and canonicalize_name(req.name) == canonicalize_name(package):
            raise UsageError(
                f"--with {text!r} names the package under test",
                hint="set the range with --good/--bad instead",
                ref="bad-requirement",
            )


def run_bisect(
    opts: RunOptions,
    reporter: Reporter | None = None,
    *,
    transport: httpx.BaseTransport | None = None,
) -> RunResult:
    """Bisect the versions of ``opts.package``; the result says whether a boundary was found."""
    reporter = reporter or Reporter()
    check_requirements(opts.package, opts.with_reqs)
    exclude_newer = parse_exclude_newer(opts.exclude_newer)
    uv = find_uv()
    python = find_python(uv, opts.python)
    target = inspect_target(python)
    client = IndexClient(
        opts.indexes,
        transport=transport,
        cache_dir=opts.cache_dir or default_cache_dir(),
        offline=opts.offline,
    )
    with client:
        planner = _planner(opts, client, target, uv=uv, python=python)
        files = client.project_files(opts.package).files
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
            reporter.message(
                f"envbisect: planning each environment ({planner.policy.value} policy for the "
                f"rest; {len(planner.roots)} other requirement(s), "
                f"{len(planner.baseline)} baseline pin(s))"
            )
        good_i, bad_i = (
            _locate(cl, v, flag, opts.package)
            for v, flag in zip(ends, ("--good", "--bad"), strict=True)
        )
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
        bis = opts.search.bisector(
            n=len(cl.candidates),
            good=good_i,
            bad=bad_i,
            untestable=[i for i, c in enumerate(cl.candidates) if not c.installable],
            any_failure=opts.any_failure,
        )
        window = cl.candidates[bis.old.index : bis.new.index + 1]
        pre_skipped = [(str(c.version), c.reason or "") for c in window if not c.installable]
        reporter.candidates(opts.package, len(window), len(pre_skipped), target.short)
        run_id = _run_id(opts, target)
        prober = Prober(
            uv=uv,
            python=python,
            target=target,
            repro=opts.repro,
            results=opts.results,
            timeout=opts.timeout,
            keep_envs=opts.keep_envs,
            native_backtrace=opts.native_backtrace,
            reporter=reporter,
        )
        run = _Run(opts=opts, prober=prober, planner=planner)
        result = RunResult(
            package=opts.package,
            status="no-answer",
            direction=None,
            first_new=None,
            last_old=None,
            candidates=len(window),
            target=f"{target.short} ({python}, Python {target.python_version})",
            command=mask_text(opts.command),
            repro=opts.repro.describe(),
            run_id=run_id,
            skipped=list(pre_skipped),
        )
        labels = [str(c.version) for c in cl.candidates]
        try:
            log = drive(
                bis,
                jobs=opts.search.jobs,
                results=opts.results,
                probe=lambda store, i, runs: run.probe(store, cl.candidates[i], runs),
                cached=lambda store, i, runs: run.cached(store, cl.candidates[i], runs),
                labels=labels.__getitem__,
                reporter=reporter,
            )
        except KeyboardInterrupt as e:
            raise Interrupted(
                f"interrupted; finished probes are kept in {opts.results / 'envbisect.db'}",
                hint="run the same command again to resume: finished probes are reused",
            ) from e
        result.rows = log.rows
        result.skipped += [
            (r.version, r.note or r.outcome.signature)
            for r in log.rows
            if r.outcome.kind is OutcomeKind.UNTESTABLE or r.verdict == "skip"
        ]
        result.search = log.summary(bis, jobs=opts.search.jobs, labels=labels.__getitem__)
        final = bis.result
        assert final is not None
        result.status = final.status
        result.direction = final.direction
        result.reason = final.reason
        if final.status != "no-answer":
            assert final.first_new is not None and final.last_old is not None
            result.first_new = str(cl.candidates[final.first_new].version)
            result.last_old = str(cl.candidates[final.last_old].version)
            result.possible = [str(cl.candidates[i].version) for i in final.possible]
            result.probability = final.probability
            if final.status == "ambiguous" and any(r.note for r in result.rows):
                result.reason = "failures unlike the reference, or untestable points, hide it"
        _write_outputs(result, opts, target, client)
    return result


def probe_one(
    *,
    with_reqs: tuple[str, ...],
    repro: Repro,
    pins: tuple[str, ...] = (),
    extras: tuple[str, ...] = (),
    lock: str | None = None,
    offline: bool = False,
    cache_dir: Path | None = None,
    indexes: IndexConfig,
    python: str | None = None,
    exclude_newer: str | None = None,
    pre: bool = False,
    allow_sdist: bool = False,
    timeout: float = 600.0,
    results: Path = Path("results"),
    keep_envs: bool = False,
    native_backtrace: str = "auto",
    reporter: Reporter | None = None,
    runs: int = 1,
) -> tuple[ProbeRecord, bool]:
    """Build one environment, run the repro (``runs`` times), record it (``envbisect probe``).

    The environment is ``with_reqs`` plus the requirements of ``pins`` that apply to the
    target (uv resolves them) plus every pin of ``lock`` (exactly those versions).
    """
    check_requirements("", with_reqs)
    parse_exclude_newer(exclude_newer)
    uv = find_uv()
    interpreter = find_python(uv, python)
    target = inspect_target(interpreter)
    requirements = list(with_reqs)
    if pins or lock:
        client = IndexClient(indexes, cache_dir=cache_dir or default_cache_dir(), offline=offline)
        with client:
            env = target.marker_environment()
            for ps in read_pins(pins, client, cwd=repro.origin, extras=extras):
                requirements += [str(p.requirement) for p in ps.applicable(env, extras)]
            if lock:
                locked = read_pins([lock], client, cwd=repro.origin)[0]
                if not locked.is_lock:
                    raise UsageError(
                        f"--lock {lock} does not pin every requirement with ==",
                        hint="use --pins for a file with ranges; --lock takes a lockfile",
                        ref="not-a-lock",
                    )
                requirements += [f"{n}=={v}" for n, v in locked.baseline(env).items()]
    prober = Prober(
        uv=uv,
        python=interpreter,
        target=target,
        repro=repro,
        results=results,
        timeout=timeout,
        keep_envs=keep_envs,
        native_backtrace=native_backtrace,
        reporter=reporter or Reporter(),
    )
    spec = EnvSpec.build(
        requirements,
        python=prober.python_label(),
        indexes=indexes,
        only_binary=not allow_sdist,
        exclude_newer=exclude_newer,
        prerelease=pre,
    )
    with Store(results) as store:
        try:
            return prober.probe(store, spec, runs)
        except KeyboardInterrupt as e:
            raise Interrupted(
                "interrupted; the probe's process group was stopped",
                hint="run the same command again",
            ) from e


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


def _run_id(opts: RunOptions, target: Target) -> str:
    blob = json.dumps(
        {
            "package": canonicalize_name(opts.package),
            "good": opts.good,
            "bad": opts.bad,
            "with": sorted(opts.with_reqs),
            "repro": opts.repro.repro_id,
            "python": target.executable,
            "indexes": opts.indexes.to_dict(),
            "exclude_newer": opts.exclude_newer,
            "pre": opts.pre,
            "sdist": opts.allow_sdist,
            "any_failure": opts.any_failure,
            "pins": list(opts.pins),
            "extras": list(opts.extras),
            "baseline": opts.baseline,
            "rest": opts.rest,
            # How sure the answer is differs with these (not with --jobs): their own report.
            **({"repeat": opts.search.repeat} if opts.search.repeat != 1 else {}),
            **({"probabilistic": True} if opts.search.probabilistic else {}),
        },
        sort_keys=True,
    )
    return f"{canonicalize_name(opts.package)}-{hashlib.sha256(blob.encode()).hexdigest()[:8]}"


def _planner(
    opts: RunOptions, client: IndexClient, target: Target, *, uv: str, python: str
) -> RunPlanner | None:
    """A planner when pins, a baseline or a --rest policy were given; else uv resolves."""
    if not (opts.pins or opts.baseline or opts.rest):
        return None
    pinsets = read_pins(opts.pins, client, cwd=opts.repro.origin, extras=opts.extras)
    base = read_pins([opts.baseline], client, cwd=opts.repro.origin)[0] if opts.baseline else None
    has_baseline = base is not None or any(p.is_lock for p in pinsets)
    baseline_versions = base.baseline(target.marker_environment()) if base else {}
    return RunPlanner(
        package=opts.package,
        target=target,
        source=IndexMetadataSource(
            client, target, allow_sdist=opts.allow_sdist, preferred=baseline_versions
        ),
        pins=pinsets,
        baseline_pins=base,
        with_reqs=opts.with_reqs,
        policy=choose_policy(opts.rest, has_baseline=has_baseline),
        pre=opts.pre,
        extras=opts.extras,
        fallback=UvFallback(
            uv=uv, python=python, indexes=opts.indexes, only_binary=not opts.allow_sdist
        ),
    )


@dataclass(slots=True, kw_only=True)
class _Run:
    opts: RunOptions
    prober: Prober
    planner: RunPlanner | None = None
    _plans: dict[Version, Plan | Unresolvable] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def spec(self, cand: Candidate) -> EnvSpec:
        return EnvSpec.build(
            [f"{self.opts.package}=={cand.version}", *self.opts.with_reqs],
            python=self.prober.python_label(),
            indexes=self.opts.indexes,
            only_binary=not self.opts.allow_sdist,
            exclude_newer=self.opts.exclude_newer,
            prerelease=self.opts.pre,
        )

    def cached(self, store: Store, cand: Candidate, runs: int) -> bool:
        """Whether the store already answers for this candidate (without planning it)."""
        if not cand.installable:
            return False
        if self.planner is not None:
            planned = self._plans.get(cand.version)
            if planned is None or isinstance(planned, Unresolvable):
                return False
            spec = self._planned_spec(planned)
        else:
            spec = self.spec(cand)
        rec = store.get(spec.env_id, self.prober.repro.repro_id)
        return rec is not None and len(rec.all_runs) >= runs

    def _plan(self, cand: Candidate) -> Plan | Unresolvable:
        assert self.planner is not None
        with self._lock:
            if cand.version not in self._plans:
                self._plans[cand.version] = self.planner.plan_for(cand)
            return self._plans[cand.version]

    def _planned_spec(self, planned: Plan) -> EnvSpec:
        return EnvSpec.build(
            planned.requirements(),
            python=self.prober.python_label(),
            indexes=self.opts.indexes,
            only_binary=not self.opts.allow_sdist,
            prerelease=self.opts.pre,
        )

    def probe(self, store: Store, cand: Candidate, runs: int = 1) -> ProbeRow:
        """Probe one candidate, or take its outcome from the store."""
        spec = self.spec(cand)
        version = str(cand.version)
        moved: tuple[tuple[str, str | None, str | None], ...] = ()
        if self.planner is not None and cand.installable:
            planned = self._plan(cand)
            if isinstance(planned, Unresolvable):
                return ProbeRow(
                    version=version,
                    outcome=untestable(f"unresolvable: {planned.reason}"),
                    verdict="",
                    reused=False,
                    build_seconds=0.0,
                    probe_seconds=0.0,
                    env_id="",
                )
            spec = self._planned_spec(planned)
            moved = tuple(
                (n, str(b) if b else None, str(v) if v else None) for n, b, v in planned.moved
            )
        if not cand.installable:
            return ProbeRow(
                version=version,
                outcome=untestable(cand.reason or "no installable file"),
                verdict="",
                reused=False,
                build_seconds=0.0,
                probe_seconds=0.0,
                env_id=spec.env_id,
            )
        rec, reused = self.prober.probe(store, spec, runs)
        return record_row(version, rec, reused, env_id=spec.env_id, moved=moved)


def record_row(
    version: str,
    rec: ProbeRecord,
    reused: bool,
    *,
    env_id: str,
    moved: tuple[tuple[str, str | None, str | None], ...] = (),
) -> ProbeRow:
    """The report row of a probe record (every run of it, for a flaky repro)."""
    return ProbeRow(
        version=version,
        outcome=rec.outcome,
        verdict="",
        reused=reused,
        build_seconds=rec.build_seconds,
        probe_seconds=rec.probe_seconds,
        env_id=env_id,
        installed=rec.installed,
        moved=moved,
        runs=len(rec.all_runs),
        fails=rec.fails,
        run_outcomes=rec.runs,
    )


def _write_outputs(
    result: RunResult, opts: RunOptions, target: Target, client: IndexClient
) -> None:
    write_outputs(
        result,
        results=opts.results,
        allow_sdist=opts.allow_sdist,
        label=opts.package,
        target=target,
        client=client,
    )


def write_outputs(
    result: RunResult,
    *,
    results: Path,
    allow_sdist: bool,
    label: str,
    target: Target,
    client: IndexClient,
) -> None:
    """report.md, and the working environment's requirements.txt and pylock.toml."""
    run_dir = results / result.run_id
    run_dir.mkdir(parents=True, exist_ok=True)
    working = None
    if result.status != "no-answer":
        working = result.row(
            result.last_old if result.direction == "regression" else result.first_new
        )
    if working is not None and working.installed:
        entries = lock_entries(working.installed, target, client, allow_sdist=allow_sdist)
        header = [
            f"Known-good environment written by envbisect {__version__} for {target.short}",
            f"{label} {working.version}: {working.outcome.describe()} with `{result.repro}`",
            "Install: uv pip install --require-hashes -r requirements.txt",
        ]
        lock = run_dir / "requirements.txt"
        lock.write_text(requirements_lock(entries, header=header), encoding="utf-8")
        py = f"=={target.version[0]}.{target.version[1]}.*"
        env_marker = (
            f"python_version == '{target.version[0]}.{target.version[1]}' and "
            f"sys_platform == '{target.marker_environment().get('sys_platform', '')}' and "
            f"platform_machine == '{target.marker_environment().get('platform_machine', '')}'"
        )
        pl = run_dir / "pylock.toml"
        pl.write_text(
            pylock(
                entries, requires_python=py, environment=env_marker, when=datetime.now(timezone.utc)
            ),
            encoding="utf-8",
        )
        result.lock_path, result.pylock_path = str(lock), str(pl)
    report = run_dir / "report.md"
    result.report_path = str(report)
    report.write_text(report_markdown(result), encoding="utf-8")


def lock_entries(
    installed: tuple[InstalledDist, ...],
    target: Target,
    client: IndexClient,
    *,
    allow_sdist: bool,
) -> list[LockEntry]:
    """For each installed distribution, the files of that version usable on the target."""
    supported = frozenset(target.supported_tags())
    with contextlib.suppress(EnvbisectError):  # one at a time below, each failure its own
        client.project_files_many(d.name for d in installed)

    def one(dist: InstalledDist) -> LockEntry:
        name, version = dist.name, dist.version
        try:
            pf = client.project_files(name)
        except EnvbisectError:
            return LockEntry(name=name, version=version, index=None, files=())
        files = []
        for f in pf.files:
            v = file_version(f.filename)
            if v is None or v != _safe_version(version) or f.yanked:
                continue
            if f.is_wheel and not target.wheel_compatible(f.filename, supported):
                continue
            if not f.is_wheel and not allow_sdist:
                continue
            if not f.hash("sha256"):
                digest = local_sha256(f.url)
                if digest:
                    f = replace(f, hashes=(("sha256", digest),))
            files.append(f)
        index = pf.source if pf.source.startswith(("http://", "https://")) else None
        return LockEntry(name=name, version=version, index=index, files=tuple(files))

    return [one(d) for d in installed]


def _safe_version(text: str) -> Version | None:
    try:
        return Version(text)
    except InvalidVersion:
        return None
