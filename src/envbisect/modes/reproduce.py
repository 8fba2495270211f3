"""``envbisect repro REPORT``: build a bug report's environment here and run its repro.

Who does what:
    core.bugreport    the report's repro (a Python block, or ``llamafactory-cli train`` and
                      its YAML), its error as an Outcome, what this machine lacks for it
    pinsource/planning the report's environment block as pins (core/pins/from_report.py maps each
                      version; cli/implied.py already set the interpreter and torch's build)
    session           the environment, built and probed (the store answers a rerun)
    drive + Fixed     the one loop every mode uses, over the one point
    core.reproduce    the answer (the same failure, a different one, a pass) and what to
                      run next
This module writes the repro's files (``RESULTS/repro/<digest>/``: the code block, the YAML,
a copy of a report read from stdin) and wires the rest; it decides nothing itself.
"""

from __future__ import annotations

import hashlib
import platform
import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta, timezone
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from envbisect.core.candidates import build_candidates
from envbisect.core.envreport.bugreport import (
    BugReport,
    obstacles,
    read_bug_report,
    reported_outcome,
)
from envbisect.core.envreport.registry import lists_every_package
from envbisect.core.envreport.report import EnvReport
from envbisect.core.markers import applies
from envbisect.core.overrides import off_pins
from envbisect.core.pins.sources import PinSet
from envbisect.core.plan import PlanTarget, Policy, Unresolvable
from envbisect.core.planmemo import plan
from envbisect.core.results.parts import ProbeRow
from envbisect.core.results.reproduce import ReproResult, ReproStatus, decide, next_commands
from envbisect.env.pinsource import STDIN, read_source, report_with_versions
from envbisect.env.repro import Repro, command_step, file_step
from envbisect.errors import EnvbisectError, UsageError
from envbisect.index.source import IndexMetadataSource
from envbisect.model import EnvSpec, ProbeRecord
from envbisect.modes.drive import drive
from envbisect.modes.outputs import inside
from envbisect.modes.planning import read_pins
from envbisect.modes.reportimplied import in_frames, left_by
from envbisect.modes.searchoptions import check_requirements, parse_exclude_newer
from envbisect.modes.session import Session, Want
from envbisect.options import CommonOptions
from envbisect.progress import Progress
from envbisect.store import claim_results
from envbisect.strategy.protocol import Fixed

LABEL = "the report's environment"


@dataclass(frozen=True, slots=True, kw_only=True)
class ReproOptions:
    report: str  # a file, or "-" for standard input
    common: CommonOptions  # its repro is made here, from the report
    with_reqs: tuple[str, ...] = ()
    exclude_newer: str | None = None
    pre: bool = False
    allow_sdist: bool = False
    allow_download: bool = False
    gpu: bool = False  # whether this machine has a GPU (nvidia-smi)
    carry: tuple[str, ...] = ()  # the flags the next commands take as they are (--python...)
    cwd: Path = Path(".")


def run_repro(opts: ReproOptions, progress: Progress | None = None) -> ReproResult:
    """The report's failure here, or why it cannot be tried (module doc)."""
    text, label, env_report, bug = _read(opts)
    folder = _folder(opts, text)
    report_path = opts.report if opts.report != STDIN else _save(folder, "report.md", text)
    repro, files, repro_args = _repro(bug, folder, opts)
    blocked = obstacles(
        bug,
        report_system=env_report.system,
        system=platform.system(),
        gpu=opts.gpu,
        allow_download=opts.allow_download,
        exists=lambda p: (opts.cwd / p).exists(),
    )
    common = replace(opts.common, probing=replace(opts.common.probing, repro=repro))
    with Session(common, progress) as session:
        (pins,) = read_pins([opts.report], session.client, cwd=opts.cwd, named="REPORT")
        assert pins.report is not None  # an environment report: read_report found its rows
        base = ReproResult(
            status=ReproStatus.CANNOT,
            source=label,
            formats=pins.report.formats,
            mapped=pins.report.mapped,
            python=env_report.python,
            repro=repro.describe(),
            files=files,
            expected=reported_outcome(bug),
            why=blocked[0] if blocked else "",
            hint=_hint(blocked[0]) if blocked else "",
        )
        if blocked and not common.dry_run:
            return base
        env = _report_env(opts, session, text, pins)
        follow = next_commands(
            report=report_path,
            pins=_exact(pins),
            error=bug.error,
            subject=env_report.subject,
            repro_args=repro_args,
            flags=opts.carry,
            named=len(env_report.rows),
            overrides=env.overrides,
            within=env.within,
        )
        base = replace(
            base,
            requirements=env.spec.requirements,
            target=f"{session.target.short} (Python {session.target.python_version})",
            env_id=env.spec.env_id,
            off_pins=env.off,
        )
        if common.dry_run:
            from envbisect.modes.dryrun import plan_views

            plans = plan_views(session, [Want(label=LABEL, spec=env.spec)], resolve=True)
            return replace(base, status=ReproStatus.DRY_RUN, plans=tuple(plans))
        if env.unbuilt:
            hint = "the versions named conflict with what their packages need; --exclude-newer"
            hint += " DATE plans the rest as of another day"
            return replace(base, status=ReproStatus.UNTESTABLE, why=env.unbuilt, hint=hint)
        row, rec = _probe(session, env.spec)
    return _answered(base, row, rec, follow)


@dataclass(frozen=True, slots=True, kw_only=True)
class _ReportEnv:
    """The report's environment as planned here: its spec (or why it cannot be built), the
    versions off its own pins and the overrides that build them as listed."""

    spec: EnvSpec
    unbuilt: str
    off: tuple[str, ...]
    overrides: tuple[str, ...]
    within: dict[str, str]


def _report_env(opts: ReproOptions, session: Session, text: str, pins: PinSet) -> _ReportEnv:
    """The report's environment, the rest of it planned as of the report's day (each choice
    said through the progress hooks)."""
    off, overrides, within = _off_pins(session, pins)
    if off:
        session.progress.message(
            f"envbisect: off the pins: {'; '.join(off)}: built as the report lists them "
            "(overridden, as uv's --override)"
        )
    opts = replace(opts, with_reqs=(*opts.with_reqs, *in_frames(session, text, pins)))
    day = opts.exclude_newer or _report_day(session, pins)
    spec, unbuilt = _spec_of_day(replace(opts, exclude_newer=day), session, pins, overrides)
    if unbuilt:
        session.progress.message(f"envbisect: the report's environment: {unbuilt}")
    return _ReportEnv(
        spec=spec, unbuilt=unbuilt, off=tuple(off), overrides=overrides, within=within
    )


def _answered(
    base: ReproResult,
    row: ProbeRow,
    rec: ProbeRecord | None,
    follow: tuple[tuple[str, str], ...],
) -> ReproResult:
    """``base`` with what the probe saw, decided against what the report says it saw."""
    status = decide(base.expected, row.outcome)
    why = row.outcome.signature if status is ReproStatus.UNTESTABLE else ""
    return replace(
        base,
        status=status,
        seen=row.outcome,
        why=why,
        reused=row.reused,
        installed=row.installed,
        hint="",
        output=rec.stdout_tail if rec is not None else "",
        next=follow
        if status in (ReproStatus.REPRODUCED, ReproStatus.FAILS, ReproStatus.DIFFERENT)
        else (),
    )


def _read(opts: ReproOptions) -> tuple[str, str, EnvReport, BugReport]:
    """The report's text, its label, its environment and its bug, checked: a report that names
    no versions or no repro is a usage error, before anything is read from an index."""
    check_requirements("", opts.with_reqs)
    parse_exclude_newer(opts.exclude_newer)
    text, label = read_source(opts.report, opts.cwd)
    if not text.strip():
        raise UsageError(
            f"the report {label} is empty",
            hint="save the issue's text (its System Info and its repro) to a file",
            ref="repro-empty",
        )
    env_report = report_with_versions(text, f"the report {label}")
    bug = read_bug_report(text)
    _check_repro(bug, label)
    return text, label, env_report, bug


def _probe(session: Session, spec: EnvSpec) -> tuple[ProbeRow, ProbeRecord | None]:
    """The reporter's environment built and probed (``--repeat`` runs), and its stored record
    (what the repro printed)."""
    repeat = session.opts.probing.repeat
    try:
        log = drive(
            Fixed([0], repeat=repeat),
            session,
            lambda _p, runs: Want(label=LABEL, spec=spec, runs=runs),
        )
    except KeyboardInterrupt as e:
        raise session.interrupted(e) from e
    return log.rows[0], session.stored(spec, repeat)


def _check_repro(bug: BugReport, label: str) -> None:
    if bug.command and bug.config is None:
        raise UsageError(
            f"the report {label} runs llamafactory-cli train {bug.config_name} but holds no "
            "YAML block for it",
            hint=f"paste {bug.config_name} into the report as a ```yaml block",
            ref="repro-no-config",
        )
    if not bug.has_repro:
        raise UsageError(
            f"the report {label} has no code block to run",
            hint="put the repro in a ```python block, or give the llamafactory-cli train "
            "CONFIG.yaml command with the config in a ```yaml block",
            ref="repro-no-code",
        )


def _folder(opts: ReproOptions, text: str) -> Path:
    """Where the report's repro files go: one folder per report text, under --results."""
    results = opts.common.results
    claim_results(results)  # the report's files are written before any store is opened
    digest = hashlib.sha256(text.encode()).hexdigest()[:12]
    return inside(results, results / "repro" / digest)


def _save(folder: Path, name: str, text: str) -> str:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(text, encoding="utf-8")
    return str(path)


_DATA_DIR = re.compile(r"^(\s*dataset_dir\s*:\s*)(['\"]?)(?P<dir>[^\s'\"#]+)\2", re.MULTILINE)


def _repro(
    bug: BugReport, folder: Path, opts: ReproOptions
) -> tuple[Repro, tuple[str, ...], list[str]]:
    """The repro as steps, the files written for it, and how a later command names it."""
    env = {"DISABLE_VERSION_CHECK": "1"}  # LLaMA-Factory refuses versions outside its ranges
    user = dict(opts.common.probing.env)
    if bug.code is not None:
        path = _save(folder, "repro.py", bug.code)
        step = file_step(path, opts.cwd)
        repro = Repro(
            steps=(step,),
            origin=opts.cwd,
            extra_env=tuple(env.items()),
            user_env=tuple(sorted(user.items())),
        )
        return repro, (path,), ["--repro", path]
    assert bug.config is not None and bug.config_name is not None
    path = _save(folder, bug.config_name, _config_here(bug.config, opts.cwd))
    step = command_step([*bug.command[:2], path], opts.cwd)
    repro = Repro(
        steps=(step,),
        origin=opts.cwd,
        extra_env=tuple(env.items()),
        user_env=tuple(sorted(user.items())),
    )
    return repro, (path,), ["--", *bug.command[:2], path]


def _config_here(config: str, cwd: Path) -> str:
    """The config with its data set folder made absolute when it lies here: each probe runs
    in a fresh folder of its own, where a relative ``dataset_dir`` would not be found."""
    m = _DATA_DIR.search(config)
    folder = m["dir"] if m else "data"
    here = cwd / folder
    if Path(folder).is_absolute() or not here.is_dir():
        return config
    line = f"dataset_dir: {here.resolve()}"
    return _DATA_DIR.sub(line, config, count=1) if m else f"{config.rstrip()}\n{line}\n"


def _spec_of_day(
    opts: ReproOptions, session: Session, pins: PinSet, overrides: Sequence[str]
) -> tuple[EnvSpec, str]:
    """The report's environment: with a day (a report that names some packages), the rest
    planned as of that day by the planner (a package with no file here that day moved to its
    first that installs, as lock does: fire had no wheel until 2025; said), its exact pins
    installed; and why it cannot be built, naming the requirements that conflict, or ""."""
    spec = _spec(opts, session, pins, overrides)
    if not opts.exclude_newer:
        return spec, ""
    day = parse_exclude_newer(opts.exclude_newer)
    assert day is not None
    roots = [Requirement(r) for r in spec.requirements]
    target = session.target
    source = IndexMetadataSource(session.client, target, overrides=overrides)
    try:
        planned = plan(
            roots,
            source,
            PlanTarget(markers=target.marker_environment(), python_version=target.python_version),
            policy=Policy.CONTEMPORARY,
            cutoff=day,
            pre=opts.pre,
            forward=True,
            fallback=replace(
                session.uv_planner(only_binary=not opts.allow_sdist), overrides=tuple(overrides)
            ),
        )
    finally:
        source.close()
    if isinstance(planned, Unresolvable) and overrides:
        # pip installs a package over the pins with what it needs: a package the report does
        # not list is taken as that install left it (its requirement wins), said
        left = left_by(session, overrides, pins)
        if left:
            again = IndexMetadataSource(session.client, target, overrides=[*overrides, *left])
            try:
                retried = plan(
                    roots,
                    again,
                    PlanTarget(
                        markers=target.marker_environment(), python_version=target.python_version
                    ),
                    policy=Policy.CONTEMPORARY,
                    cutoff=day,
                    pre=opts.pre,
                    forward=True,
                    fallback=replace(
                        session.uv_planner(only_binary=not opts.allow_sdist),
                        overrides=(*overrides, *left),
                    ),
                )
            finally:
                again.close()
            if not isinstance(retried, Unresolvable):
                session.progress.message(
                    "envbisect: as pip leaves them after installing "
                    f"{', '.join(overrides)} over the pins: {', '.join(left)}"
                )
                planned, overrides = retried, (*overrides, *left)
    if isinstance(planned, Unresolvable):
        return spec, f"cannot be built here: {planned.reason}"
    if planned.forward:
        moved = ", ".join(f"{n} {planned.pins[n]}" for n in planned.forward)
        session.progress.message(
            f"envbisect: no file here on the report's day, taken at their first release that "
            f"installs: {moved}"
        )
    planned_spec = session.env_spec(
        planned.requirements(),
        only_binary=not opts.allow_sdist,
        prerelease=opts.pre,
        overrides=tuple(overrides),
    )
    return planned_spec, ""


def _spec(opts: ReproOptions, session: Session, pins: PinSet, overrides: Sequence[str]) -> EnvSpec:
    env = session.target.marker_environment()
    requirements = [*opts.with_reqs, *(str(p.requirement) for p in pins.applicable(env))]
    return session.env_spec(
        requirements,
        only_binary=not opts.allow_sdist,
        exclude_newer=opts.exclude_newer,
        prerelease=opts.pre,
        overrides=overrides,
    )


def _report_day(session: Session, pins: PinSet) -> str | None:
    """For a report that lists only some packages: the newest upload among the versions it
    lists, as uv's --exclude-newer, so that the packages it does not list are those of its
    day, not today's (said). None for a complete list, or when no upload time is known."""
    assert pins.report is not None
    if lists_every_package(pins.report.formats):
        return None
    env = session.target.marker_environment()
    newest: tuple[datetime, str] | None = None
    for p in pins.applicable(env):
        v = p.exact_version
        if v is None:
            continue
        try:
            files = session.client.project_files(p.name).files
        except EnvbisectError:
            continue
        for c in build_candidates(files, session.target, pre=True).candidates:
            if c.version == v and c.upload_time and (newest is None or c.upload_time > newest[0]):
                newest = (c.upload_time, f"{p.name} {v}")
    if newest is None:
        return None
    when = (newest[0] + timedelta(seconds=1)).astimezone(timezone.utc)
    text = when.strftime("%Y-%m-%dT%H:%M:%SZ")
    session.progress.message(
        f"envbisect: the report names {len(pins.requirements)} package(s) "
        f"({', '.join(pins.report.formats)}): the rest as of {text}, the newest upload among "
        f"them ({newest[1]}); --exclude-newer DATE chooses another day"
    )
    return text


def _off_pins(session: Session, pins: PinSet) -> tuple[list[str], tuple[str, ...], dict[str, str]]:
    """The report's versions that its own packages' requirements exclude (each said once),
    the overrides that build them as listed ("name==version" of each such package), and for
    each such package the newest release below it that every requirement allows (the good
    end of a bisection back into the pins). One metadata read per package the report pins;
    a package whose metadata cannot be read is left out of the check (the build will say
    what is wrong with it)."""
    env = session.target.marker_environment()
    versions = {
        canonicalize_name(p.name): str(p.exact_version)
        for p in pins.applicable(env)
        if p.exact_version is not None
    }
    source = IndexMetadataSource(session.client, session.target)
    markers = {**env, "extra": ""}
    requires: list[tuple[str, Requirement]] = []
    for name, version in versions.items():
        try:
            deps = source.dependencies(name, Version(version))
        except (EnvbisectError, InvalidVersion):
            continue
        requires += [(f"{name} {version}", r) for r in deps if applies(r.marker, markers)]
    off = off_pins(requires, versions)
    names = {canonicalize_name(text.split(" ", 1)[0]) for text in off}
    within: dict[str, str] = {}
    for n in sorted(names):
        allowed = [r.specifier for _, r in requires if canonicalize_name(r.name) == n]
        try:
            files = session.client.project_files(n).files
        except EnvbisectError:
            continue
        found = [
            c.version
            for c in build_candidates(files, session.target).candidates
            if c.version < Version(versions[n])
            and all(a.contains(c.version, prereleases=False) for a in allowed)
        ]
        if found:
            within[n] = str(max(found))
    return off, tuple(f"{n}=={versions[n]}" for n in sorted(names)), within


def _exact(pins: PinSet) -> dict[str, str]:
    """The report's packages pinned exactly (in its order), and the version each was given."""
    return {p.name: str(p.exact_version) for p in pins.requirements if p.exact_version}


def _hint(why: str) -> str:
    if "downloads" in why:
        return (
            "pass --allow-download to let the repro download it, or point the repro at a local copy"
        )
    if "GPU" in why:
        return "run envbisect repro on a machine with an NVIDIA GPU"
    if "the report is from" in why:
        return "run envbisect repro on the reporter's operating system"
    return "run envbisect repro from a LLaMA-Factory checkout (its data/ folder)"
