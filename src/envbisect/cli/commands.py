"""The subcommands: each turns its parsed options into one mode call and prints the answer.

Every command has one signature, ``cmd(ctx) -> exit code``, and the table in main.py names
them. Data goes to stdout (text, or one JSON object with ``--json``); progress and hints to
stderr through the console in the context. Heavy modules are imported inside each command so
that ``envbisect --help`` stays fast.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from envbisect.cli.commitcmd import commit_lines, commit_refs
from envbisect.cli.context import Context, machine, print_result, repro_for, search_options
from envbisect.cli.display import STYLE, escape
from envbisect.cli.flags import common_options, extras, matrix_common
from envbisect.core.names import project_name
from envbisect.core.results.parts import Status
from envbisect.errors import NoAnswer, UsageError
from envbisect.model import OutcomeKind
from envbisect.redact import mask_env_map
from envbisect.textsafe import for_terminal

if TYPE_CHECKING:
    from envbisect.core.results.search import SearchResult

# envbisect probe: the environment was built and probed, and it does not pass (1 is kept
# for "the question has no answer" in every mode).
EXIT_PROBE_FAILED = 4


def _print_plans(ctx: Context, plans: Sequence[dict[str, Any]]) -> int:
    """``--dry-run``: the plans on stdout (one JSON object with --json), exit 0."""
    from envbisect.modes.dryrun import render

    if ctx.args.json:
        print(json.dumps({"dry_run": True, "plans": list(plans)}, indent=2))
    else:
        print("\n".join(render(plans)))
    return 0


def no_answer(
    ctx: Context, res: SearchResult, why: NoAnswer | None = None, *, hint: str = ""
) -> int:
    """One behaviour for "no answer" in every mode: the verdict and the report on stdout (or
    the result with an ``error`` object, with --json), the error and a hint on stderr, exit 1."""
    from envbisect.cli.display import error_json, print_error
    from envbisect.core.runreport import verdict_line

    if why is None:
        why = NoAnswer(
            f"the ends did not verify: {res.reason}",
            hint=hint or "pick --good/--bad that pass and fail",
        )
        print_line = verdict_line(res)
    else:
        print_line = why.message
    if ctx.args.json:
        print(json.dumps({**res.to_dict(), "error": error_json(why)}, indent=2))
    else:
        print(for_terminal(print_line))
        print(f"report: {res.report_path}")
    print_error(why)
    return 1


def cmd_run(ctx: Context) -> int:
    from envbisect.core.runreport import breakpoints_line, other_failures_hint, verdict_line
    from envbisect.modes.run import RunOptions, run_bisect

    a = ctx.args
    if a.by_date:
        commit_refs(a)  # --commits, --repo...: not with --by-date
        return _run_by_date(ctx)
    if not a.package:
        raise UsageError(
            "nothing to bisect",
            hint="name the package (--package datasets), or bisect by date (--by-date "
            "--good 2025-01-01 --bad 2025-09-01)",
            ref="bad-usage",
        )
    project_name(a.package, what="--package")  # before anything is read, built or written
    refs = commit_refs(a)
    repro = repro_for(ctx, default_for=a.package, pins=bool(a.pins))
    opts = RunOptions(
        package=a.package,
        common=common_options(a, command=ctx.command, repro=repro),
        good=a.good,
        bad=a.bad,
        with_reqs=tuple(a.with_reqs),
        exclude_newer=a.exclude_newer,
        pre=a.pre,
        allow_sdist=a.allow_sdist,
        pins=tuple(a.pins),
        extras=extras(a),
        baseline=a.baseline,
        rest=a.rest,
        search=search_options(a),
        commits=refs,
    )
    if not (a.repro or ctx.tail or a.probes):
        ctx.console.print(
            f"envbisect: no repro given; probing with {escape(repro.describe())}", highlight=False
        )
    result = run_bisect(opts, ctx.progress)
    if result.status is Status.DRY_RUN:
        return _print_plans(ctx, result.plans)
    if result.status is Status.NO_ANSWER:
        return no_answer(ctx, result, hint=swapped_hint(a.good, a.bad, result.reason or ""))
    points = breakpoints_line(result)
    lines = [verdict_line(result), *([points] if points else []), *commit_lines(result)]
    print_result(ctx, result, lines)
    other = other_failures_hint(result)
    if other:
        ctx.console.print(f"[cyan]hint[/cyan]: {escape(other)}", highlight=False)
    return 0


def swapped_hint(good: str | None, bad: str | None, reason: str) -> str:
    """The ends verified the other way round (--good fails, --bad passes): say to swap them."""
    if not (good and bad) or not reason.startswith("the good end does not pass"):
        return ""
    return (
        f"--good {good} fails and --bad {bad} passes: were they swapped? "
        f"--good {bad} --bad {good} searches that way round"
    )


def _run_by_date(ctx: Context) -> int:
    from envbisect.modes.bydate import DateOptions, run_by_date

    a = ctx.args
    if not (a.good and a.bad):
        raise UsageError(
            "--by-date needs --good DATE and --bad DATE",
            hint="e.g. --good 2025-01-01 --bad 2026-11-30 (YYYY-MM-DD or RFC 3339)",
            ref="bad-date",
        )
    if a.package:
        raise UsageError(
            "--by-date moves the whole environment; --package moves one package",
            hint="use one of them (pin the package with --with NAME==V to hold it fixed)",
            ref="bad-usage",
        )
    repro = repro_for(ctx, pins=bool(a.pins))
    opts = DateOptions(
        good=a.good,
        bad=a.bad,
        common=common_options(a, command=ctx.command, repro=repro),
        with_reqs=tuple(a.with_reqs),
        pins=tuple(a.pins),
        extras=extras(a),
        pre=a.pre,
        search=search_options(a),
    )
    res = run_by_date(opts, ctx.progress)  # no answer: NoAnswer with the result (main.py)
    if res.status is Status.DRY_RUN:
        return _print_plans(ctx, res.plans)
    from envbisect.core.runreport import breakpoints_line

    sure = f" (probability {res.probability:.2f})" if res.probability is not None else ""
    lines = [f"first bad: {res.first_new}{sure}", f"last good: {res.last_old}"]
    if res.neighbour:
        lines.insert(1, f"fails another way right before it: {res.neighbour}")
    points = breakpoints_line(res)
    lines += [points] if points else []
    for c in res.culprits:
        conf = res.confirmation_of(c.package)
        said = conf.said() if conf is not None else "not confirmed"
        lines.append(
            f"culprit: {c.package} {c.bad_version} (was {c.good_version or 'absent'}), {said}"
        )
    print_result(ctx, res, lines)
    return 0


def cmd_diff(ctx: Context) -> int:
    from envbisect.modes.diff.mode import DiffOptions, run_diff

    a = ctx.args
    opts = DiffOptions(
        good=a.good, bad=a.bad, common=common_options(a, command=ctx.command, repro=repro_for(ctx))
    )
    res = run_diff(opts, ctx.progress)  # no answer: NoAnswer with the result (main.py)
    print_result(ctx, res, res.lines())
    return 0


def cmd_lock(ctx: Context) -> int:
    from envbisect.modes.lock.solve import LockOptions, run_lock

    a = ctx.args
    repro = repro_for(ctx, pins=bool(a.pins or a.from_lock))
    opts = LockOptions(
        common=common_options(a, command=ctx.command, repro=repro),
        with_reqs=tuple(a.with_reqs),
        pins=tuple(a.pins),
        extras=extras(a),
        from_lock=a.from_lock,
        good_date=a.good_date,
        pre=a.pre,
        strategy=a.strategy,
        no_project=a.no_project,
    )
    res = run_lock(opts, ctx.progress)  # no answer: NoAnswer with the result (main.py)
    if res.status is Status.DRY_RUN:
        return _print_plans(ctx, res.plans)
    from envbisect.core.runreport import verdict_line

    if a.json:
        print(json.dumps(res.to_dict(), indent=2))
        return 0
    print(for_terminal(verdict_line(res)))
    for c in res.constraints:
        print(for_terminal(c.held_line()))
    print(f"lockfile: {res.lock_path}")
    print(f"pylock: {res.pylock_path}")
    print(f"constraints: {res.constraints_file}")
    print(f"report: {res.report_path}")
    return 0


def cmd_probe(ctx: Context) -> int:
    from envbisect.modes.probe import ProbeOptions, plan_one, probe_one

    a = ctx.args
    if not (a.with_reqs or a.pins or a.lock):
        raise UsageError(
            "no environment given",
            hint="name what to install: --with 'datasets==2.14.6', --pins SOURCE or --lock FILE",
            ref="probe-nothing",
        )
    repro = repro_for(ctx, pins=bool(a.pins or a.lock))
    popts = ProbeOptions(
        common=common_options(a, command=ctx.command, repro=repro),
        with_reqs=tuple(a.with_reqs),
        pins=tuple(a.pins),
        extras=extras(a),
        lock=a.lock,
        exclude_newer=a.exclude_newer,
        pre=a.pre,
        allow_sdist=a.allow_sdist,
    )
    if a.dry_run:
        return _print_plans(ctx, plan_one(popts, ctx.progress))
    rec, reused = probe_one(popts, ctx.progress)
    ctx.progress.close()  # the live display ends before the outcome is printed
    o = rec.outcome
    reports = probe_reports(rec.stdout_tail)
    runs = rec.all_runs
    if a.json:
        print(
            json.dumps(
                {
                    "outcome": o.to_dict(),
                    "reused": reused,
                    "installed": [d.to_dict() for d in rec.installed],
                    "build_seconds": round(rec.build_seconds, 3),
                    "probe_seconds": round(rec.probe_seconds, 3),
                    "reports": reports,
                    "env_id": rec.env_id,
                    "env": mask_env_map(repro.user_env),
                    **(
                        {
                            "runs": len(runs),
                            "fails": rec.fails,
                            "run_outcomes": [r.to_dict() for r in runs],
                        }
                        if len(runs) > 1
                        else {}
                    ),
                },
                indent=2,
            )
        )
    else:
        style = STYLE[o.kind]
        how = (
            "from the store"
            if reused
            else f"built in {rec.build_seconds:.1f} s, probed in {rec.probe_seconds:.1f} s"
        )
        rate = f"; {rec.fails} of {len(runs)} runs failed" if len(runs) > 1 else ""
        ctx.console.print(
            f"{escape(repro.describe())}: [{style}]{escape(o.describe())}[/{style}] ({how}{rate})",
            highlight=False,
        )
        for rep in reports:
            print(json.dumps(rep, sort_keys=True))
        if o.kind is not OutcomeKind.PASS and o.detail:
            ctx.console.print(for_terminal(o.detail), markup=False, highlight=False)
        print(for_terminal(o.describe()))
    return 0 if o.kind is OutcomeKind.PASS else EXIT_PROBE_FAILED


def cmd_repro(ctx: Context) -> int:
    from envbisect.env import envreport
    from envbisect.modes.reproduce import ReproOptions, run_repro

    a = ctx.args
    ropts = ReproOptions(
        report=a.report,
        common=common_options(a, command=ctx.command),
        with_reqs=tuple(a.with_reqs),
        exclude_newer=a.exclude_newer,
        pre=a.pre,
        allow_sdist=a.allow_sdist,
        allow_download=a.allow_download,
        gpu=bool((envreport.read_nvidia_smi() or {}).get("gpus")),
        carry=_carried(a),
        cwd=Path.cwd(),
    )
    res = run_repro(ropts, ctx.progress)
    ctx.progress.close()  # the live display ends before the answer
    if a.json:
        print(json.dumps(res.to_dict(), indent=2))
    else:
        for line in res.lines():
            print(for_terminal(line))
        if res.plans:
            from envbisect.modes.dryrun import render

            print("\n".join(render(list(res.plans))))
    if res.hint:
        ctx.console.print(f"[cyan]hint[/cyan]: {escape(res.hint)}", highlight=False)
    return res.exit_code


def _carried(a: argparse.Namespace) -> tuple[str, ...]:
    """The flags a next command takes as this one had them (index URLs masked: a password is
    never printed)."""
    from envbisect.redact import mask_url

    out: list[str] = []
    for flag, value in (
        ("--python", a.python),
        ("--torch-backend", a.torch_backend),
        ("--torch-index-url", a.torch_index_url),
        ("--index-url", a.index_url),
        ("--results", str(a.results) if a.results != Path("results") else None),
    ):
        if value:
            out += [flag, mask_url(value) if "url" in flag else value]
    for url in a.extra_index_url:
        out += ["--extra-index-url", mask_url(url)]
    for folder in a.find_links:
        out += ["--find-links", folder]
    if a.no_config:
        out.append("--no-config")
    return tuple(out)


def probe_reports(stdout: str) -> list[dict[str, object]]:
    """The ``ENVBISECT-REPORT: {json}`` lines the built-in probes print."""
    out = []
    for line in stdout.splitlines():
        if line.startswith("ENVBISECT-REPORT: "):
            try:
                out.append(json.loads(line.split(": ", 1)[1]))
            except ValueError:
                continue
    return out


def cmd_env(ctx: Context) -> int:
    from envbisect.env import envreport

    args = ctx.args
    python = args.python
    if python is None:  # what a user asks about: the environment they are in
        from envbisect.env.pyrequest import active_venv

        venv = active_venv(os.environ, Path.cwd())
        python = venv.request if venv is not None else sys.executable
        origin = venv.origin if venv is not None else "the interpreter running envbisect"
        ctx.progress.message(f"envbisect: reporting on {python} ({origin}; --python for another)")
    report = envreport.collect(python, deep=not args.quick)
    report["nvidia"] = envreport.read_nvidia_smi()
    found = envreport.checks(report)
    if args.json:
        report["checks"] = [c.to_dict() for c in found]
        print(json.dumps(report, indent=2, sort_keys=True))
    else:
        sys.stdout.write(envreport.render(report, found))
    return 0


def cmd_pins(ctx: Context) -> int:
    from envbisect.modes.planning import read_pins

    args, groups = ctx.args, extras(ctx.args)
    with _reader(ctx) as session:
        target = _target(session, args)
        (pins,) = read_pins([args.source], session.client, cwd=Path.cwd(), extras=groups)
    data = pins.to_dict(target.marker_environment(), groups)
    if args.json:
        print(json.dumps(data, indent=2))
        return 0
    print(f"{data['source']}  (for {target.short}, Python {target.python_version})")
    for row in data["requirements"]:
        applies = "" if row["applies"] else "   [does not apply here]"
        extras_txt = f"[{','.join(row['extras'])}]" if row["extras"] else ""
        marker = f" ; {row['marker']}" if row["marker"] else ""
        print(f"  {row['name']}{extras_txt} {row['specifier'] or '(any)'}{marker}{applies}")
    return 0


def cmd_versions(ctx: Context) -> int:
    from packaging.specifiers import SpecifierSet

    from envbisect.core.candidates import build_candidates
    from envbisect.modes.planning import read_pins

    args, groups = ctx.args, extras(ctx.args)
    with _reader(ctx) as session:
        target = _target(session, args)
        env = target.marker_environment()
        spec = SpecifierSet()
        for ps in read_pins(args.pins, session.client, cwd=Path.cwd(), extras=groups):
            spec &= ps.specifier_for(args.package, env, groups)
        files = session.client.project_files(args.package).files
    # Every version stays in the listing (yanked ones too), each with its reason.
    everything = build_candidates(files, target, allow_sdist=args.allow_sdist, pre=True)
    every_version = [*everything.dropped, *(c.version for c in everything.candidates)]
    cl = build_candidates(files, target, allow_sdist=args.allow_sdist, pre=True, keep=every_version)
    rows: list[dict[str, Any]] = []
    for c in cl.candidates:
        in_range = spec.contains(c.version, prereleases=True)
        reason = None
        if c.yanked:
            reason = "yanked"
        elif c.prerelease and not args.pre:
            reason = "pre-release (pass --pre to include)"
        elif not c.installable:
            reason = c.reason
        elif not in_range:
            reason = f"outside the pins ({spec})"
        rows.append(
            {
                "version": str(c.version),
                "upload_time": c.upload_time.isoformat() if c.upload_time else None,
                "yanked": c.yanked,
                "prerelease": c.prerelease,
                "installable": c.installable,
                "in_range": in_range,
                "excluded_reason": reason,
            }
        )
    if args.json:
        print(
            json.dumps(
                {"package": args.package, "target": target.short, "candidates": rows}, indent=2
            )
        )
        return 0
    kept = sum(1 for r in rows if r["excluded_reason"] is None)
    print(
        f"{args.package}: {kept} candidate(s) of {len(rows)} for {target.short}"
        + (f", pins {spec}" if str(spec) else "")
    )
    for r in rows:
        when = (r["upload_time"] or "")[:10] or "no date"
        why = f"  excluded: {r['excluded_reason']}" if r["excluded_reason"] else ""
        print(f"  {r['version']:<16} {when:<10}{why}")
    return 0


def _reader(ctx: Context) -> Any:
    """A session for a command that only reads (the index, the target)."""
    from envbisect.modes.session import Session

    return Session(common_options(ctx.args, command=ctx.command), ctx.progress, plan_only=True)


def _target(session: Any, args: argparse.Namespace) -> Any:
    from envbisect.core.target import with_platform

    target = session.target
    if getattr(args, "platform", None):
        try:
            target = with_platform(target, args.platform)
        except ValueError:
            raise UsageError(
                f"--platform {args.platform!r} is not a wheel platform tag",
                hint="e.g. manylinux_2_28_x86_64, manylinux2014_aarch64, macosx_11_0_arm64, "
                "win_amd64",
                ref="bad-platform",
            ) from None
    return target


def cmd_matrix(ctx: Context) -> int:
    from envbisect.modes.living.matrix import load_matrix, matrix_options, run_matrix
    from envbisect.modes.living.publish import publish_table
    from envbisect.modes.outputs import inside
    from envbisect.modes.session import Session

    a = ctx.args
    spec = load_matrix(Path(a.file))
    common = matrix_common(a, spec, command=ctx.command)
    res = run_matrix(spec, common, full=a.full, max_cells=a.max_cells, progress=ctx.progress)
    if common.dry_run:
        return _print_plans(ctx, res.plans)
    run_meta = {
        "command": ctx.command,
        "measured": res.started,
        "machine": machine(),
        "targets": res.targets,
        "axis_versions": res.axes,
        "counts": res.counts(),
        "full": a.full,
        "jobs": a.jobs,
        **({"env": mask_env_map(common.env)} if common.env else {}),
    }
    out = inside(common.results, common.results / spec.name)
    out.mkdir(parents=True, exist_ok=True)
    (out / "run.json").write_text(json.dumps(run_meta, indent=2) + "\n", encoding="utf-8")
    with Session(matrix_options(spec, common), ctx.progress) as session:
        pub = publish_table(spec, session)
    counts = res.counts()
    if a.json:
        print(json.dumps({"matrix": spec.name, **run_meta, **pub.to_dict()}, indent=2))
    else:
        print(
            f"{spec.name}: {counts['cells']} cells: {counts['built']} built, "
            f"{counts['reused']} reused, {counts['inferred']} inferred, "
            f"{counts['unresolvable']} unresolvable"
        )
        print(f"tables: {out / 'table.md'}, {out / 'table.html'}")
    return 0


def cmd_publish(ctx: Context) -> int:
    from envbisect.modes.living.matrix import load_matrix, matrix_options
    from envbisect.modes.living.publish import publish_table
    from envbisect.modes.session import Session

    files = [Path(f) for f in ctx.args.files] or sorted(Path("matrices").glob("*.toml"))
    if not files:
        raise UsageError(
            "no matrix to publish", hint="name matrices/*.toml files", ref="matrix-missing"
        )
    common = common_options(ctx.args, command=ctx.command)
    published = []
    for f in files:
        spec = load_matrix(f)
        with Session(matrix_options(spec, common), ctx.progress) as session:
            pub = publish_table(spec, session)
        published.append({"matrix": spec.name, "file": str(f), **pub.to_dict()})
        if not ctx.args.json:
            for p in pub.files:
                print(p)
    if ctx.args.json:
        print(json.dumps({"status": "ok", "published": published}, indent=2))
    return 0


def cmd_completion(ctx: Context) -> int:
    """A completion script from the parser itself. shtab rather than argcomplete: the script
    is static, so a TAB runs no Python (argcomplete starts envbisect on every TAB), and it
    needs no global activation step."""
    import shtab

    print(shtab.complete(ctx.parser, shell=ctx.args.shell))
    return 0
