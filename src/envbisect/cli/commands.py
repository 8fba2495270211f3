"""The subcommands: each turns parsed arguments into engine calls and prints the answer.

Data goes to stdout (text, or one JSON object with ``--json``); progress and hints to stderr
through the console the CLI passes in. Heavy modules are imported inside each command so that
``envbisect --help`` stays fast.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from rich.console import Console

from envbisect.errors import UsageError
from envbisect.model import IndexConfig, OutcomeKind
from envbisect.reporter import Reporter

STYLE = {
    OutcomeKind.PASS: "green",
    OutcomeKind.FAIL: "red",
    OutcomeKind.CRASH: "bold red",
    OutcomeKind.TIMEOUT: "magenta",
    OutcomeKind.UNTESTABLE: "yellow",
}


def escape(text: str) -> str:
    return text.replace("[", "\\[")


def indexes(args: argparse.Namespace) -> IndexConfig:
    return IndexConfig(
        index_url=args.index_url,
        extra_index_urls=tuple(args.extra_index_url),
        find_links=tuple(str(Path(p).resolve()) if "://" not in p else p for p in args.find_links),
        torch_index=_torch_index(args),
    )


def _torch_index(args: argparse.Namespace) -> str | None:
    from envbisect.index import pytorch as torchindex

    backend = getattr(args, "torch_backend", None)
    base = getattr(args, "torch_index_url", None) or torchindex.OFFICIAL
    if backend is None:
        if getattr(args, "torch_index_url", None):
            raise UsageError(
                "--torch-index-url needs --torch-backend",
                hint="e.g. --torch-backend cu121 --torch-index-url https://mirror/whl",
                ref="bad-torch-backend",
            )
        return None
    if not torchindex.valid_backend(backend):
        raise UsageError(
            f"--torch-backend {backend!r} is not a PyTorch index variant",
            hint="use cpu, cu118, cu121, cu124, cu126, cu128, rocm6.2, xpu or auto",
            ref="bad-torch-backend",
        )
    if backend == "auto":
        from envbisect.env.envreport import read_nvidia_smi

        smi = read_nvidia_smi()
        backend = torchindex.resolve_backend("auto", smi.get("cuda") if smi else None)
        print(f"envbisect: --torch-backend auto chose {backend}", file=sys.stderr)
    return torchindex.variant_url(backend, base)


def _settings(args: argparse.Namespace, command: str) -> dict[str, Any]:
    """What every search (run, run --by-date, diff) takes from the same flags."""
    return {
        "indexes": indexes(args),
        "python": args.python,
        "timeout": args.timeout,
        "results": args.results.resolve(),
        "any_failure": args.any_failure,
        "keep_envs": args.keep_envs,
        "native_backtrace": args.native_backtrace,
        "command": command,
        "offline": args.offline,
        "cache_dir": args.cache_dir,
    }


def _search(args: argparse.Namespace) -> Any:
    from envbisect.strategy.bisect import SearchOptions

    return SearchOptions(
        jobs=args.jobs,
        repeat=args.repeat,
        confidence=args.confidence,
        probabilistic=args.probabilistic,
        max_probes=args.max_probes,
    )


def _extras(args: argparse.Namespace) -> tuple[str, ...]:
    return tuple(e.strip() for e in (args.extras or "").split(",") if e.strip())


def _client(args: argparse.Namespace) -> Any:
    from envbisect.index.client import IndexClient, default_cache_dir

    return IndexClient(
        indexes(args), cache_dir=args.cache_dir or default_cache_dir(), offline=args.offline
    )


def _target(args: argparse.Namespace) -> Any:
    from envbisect.core.target import with_platform
    from envbisect.env.uv import find_python, find_uv, inspect_target

    target = inspect_target(find_python(find_uv(), args.python))
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


def cmd_run(args: argparse.Namespace, tail: list[str], command: str, reporter: Reporter,
            console: Console) -> int:  # fmt: skip
    from envbisect.core.report import other_failures_hint, to_json, verdict_line
    from envbisect.env.repro import Repro
    from envbisect.modes.run import RunOptions, run_bisect

    if args.by_date:
        return _run_by_date(args, tail, command, reporter)
    if not args.package:
        raise UsageError(
            "nothing to bisect",
            hint="name the package (--package datasets), or bisect by date (--by-date "
            "--good 2025-01-01 --bad 2025-09-01)",
            ref="bad-usage",
        )
    repro = Repro.build(
        origin=Path.cwd(),
        repro_file=args.repro,
        command=tail,
        probes=args.probes,
        default_for=args.package,
        # LLaMA-Factory refuses to start outside its checked ranges: we test outside them.
        extra_env={"DISABLE_VERSION_CHECK": "1"} if args.pins else None,
    )
    opts = RunOptions(
        package=args.package,
        repro=repro,
        good=args.good,
        bad=args.bad,
        with_reqs=tuple(args.with_reqs),
        exclude_newer=args.exclude_newer,
        pre=args.pre,
        allow_sdist=args.allow_sdist,
        pins=tuple(args.pins),
        extras=_extras(args),
        baseline=args.baseline,
        rest=args.rest,
        search=_search(args),
        **_settings(args, command),
    )
    if not (args.repro or tail or args.probes):
        console.print(
            f"envbisect: no repro given; probing with {repro.describe()}", highlight=False
        )
    result = run_bisect(opts, reporter)
    if args.json:
        print(json.dumps(to_json(result), indent=2))
    else:
        print(verdict_line(result))
        if result.lock_path:
            print(f"known-good lockfile: {result.lock_path}")
        print(f"report: {result.report_path}")
    other = other_failures_hint(result)
    if other:
        console.print(f"[cyan]hint[/cyan]: {escape(other)}", highlight=False)
    if result.status == "no-answer":
        console.print(
            "[cyan]hint[/cyan]: the ends did not verify; pick --good/--bad that pass and fail",
            highlight=False,
        )
        return 1
    return 0


def _run_by_date(
    args: argparse.Namespace, tail: list[str], command: str, reporter: Reporter
) -> int:
    from envbisect.core.report import to_json
    from envbisect.env.repro import Repro
    from envbisect.modes.bydate import DateOptions, run_by_date

    if not (args.good and args.bad):
        raise UsageError(
            "--by-date needs --good DATE and --bad DATE",
            hint="e.g. --good 2025-01-01 --bad 2026-11-30 (YYYY-MM-DD or RFC 3339)",
            ref="bad-date",
        )
    if args.package:
        raise UsageError(
            "--by-date moves the whole environment; --package moves one package",
            hint="use one of them (pin the package with --with NAME==V to hold it fixed)",
            ref="bad-usage",
        )
    repro = Repro.build(
        origin=Path.cwd(),
        repro_file=args.repro,
        command=tail,
        probes=args.probes,
        extra_env={"DISABLE_VERSION_CHECK": "1"} if args.pins else None,
    )
    res = run_by_date(
        DateOptions(
            good=args.good,
            bad=args.bad,
            repro=repro,
            with_reqs=tuple(args.with_reqs),
            pins=tuple(args.pins),
            extras=_extras(args),
            pre=args.pre,
            search=_search(args),
            **_settings(args, command),
        ),
        reporter,
    )
    if args.json:
        print(json.dumps(to_json(res), indent=2))
        return 0
    sure = f" (probability {res.probability:.2f})" if res.probability is not None else ""
    print(f"first bad: {res.first_new}{sure}")
    print(f"last good: {res.last_old}")
    conf = {c["package"]: c for c in res.extra.get("confirmation", [])}
    for c in res.extra.get("culprits", []):
        how = conf.get(c["package"], {}).get("confirmed")
        said = {True: "confirmed alone on the last good environment",
                False: "not confirmed alone", None: "not confirmed"}[how]  # fmt: skip
        print(f"culprit: {c['package']} {c['bad_version']} (was {c['good_version'] or 'absent'})"
              f", {said}")  # fmt: skip
    if res.lock_path:
        print(f"known-good lockfile: {res.lock_path}")
    print(f"report: {res.report_path}")
    return 0


def cmd_diff(args: argparse.Namespace, tail: list[str], command: str, reporter: Reporter) -> int:
    from envbisect.core.report import to_json
    from envbisect.env.repro import Repro
    from envbisect.modes.diff import DiffOptions, run_diff

    repro = Repro.build(origin=Path.cwd(), repro_file=args.repro, command=tail,
                        probes=args.probes)  # fmt: skip
    res = run_diff(
        DiffOptions(
            good=args.good,
            bad=args.bad,
            repro=repro,
            repeat=args.repeat,
            **_settings(args, command),
        ),
        reporter,
    )
    if args.json:
        print(json.dumps(to_json(res), indent=2))
        return 0
    culprits = res.extra["culprits"]
    what = "interaction" if res.extra["interaction"] else "culprit"
    for c in culprits:
        print(f"{what}: {c['package']} {c['good_version'] or 'absent'} -> "
              f"{c['bad_version'] or 'removed'}")  # fmt: skip
    if res.lock_path:
        print(f"known-good lockfile: {res.lock_path}")
    print(f"report: {res.report_path}")
    return 0


def cmd_probe(args: argparse.Namespace, tail: list[str], reporter: Reporter,
              console: Console) -> int:  # fmt: skip
    from envbisect.env.repro import Repro
    from envbisect.modes.run import probe_one

    if not (args.with_reqs or args.pins or args.lock):
        raise UsageError(
            "no environment given",
            hint="name what to install: --with 'datasets==2.14.6', --pins SOURCE or --lock FILE",
            ref="probe-nothing",
        )
    repro = Repro.build(
        origin=Path.cwd(),
        repro_file=args.repro,
        command=tail,
        probes=args.probes,
        extra_env={"DISABLE_VERSION_CHECK": "1"} if (args.pins or args.lock) else None,
    )
    rec, reused = probe_one(
        with_reqs=tuple(args.with_reqs),
        pins=tuple(args.pins),
        extras=_extras(args),
        lock=args.lock,
        offline=args.offline,
        cache_dir=args.cache_dir,
        repro=repro,
        indexes=indexes(args),
        python=args.python,
        exclude_newer=args.exclude_newer,
        pre=args.pre,
        allow_sdist=args.allow_sdist,
        timeout=args.timeout,
        results=args.results.resolve(),
        keep_envs=args.keep_envs,
        native_backtrace=args.native_backtrace,
        reporter=reporter,
        runs=args.repeat,
    )
    o = rec.outcome
    reports = probe_reports(rec.stdout_tail)
    runs = rec.all_runs
    if args.json:
        print(json.dumps({
            "outcome": o.to_dict(),
            "reused": reused,
            "installed": [d.to_dict() for d in rec.installed],
            "build_seconds": round(rec.build_seconds, 3),
            "probe_seconds": round(rec.probe_seconds, 3),
            "reports": reports,
            "env_id": rec.env_id,
            **({"runs": len(runs), "fails": rec.fails,
                "run_outcomes": [r.to_dict() for r in runs]} if len(runs) > 1 else {}),
        }, indent=2))  # fmt: skip
    else:
        style = STYLE[o.kind]
        how = (
            "from the store"
            if reused
            else f"built in {rec.build_seconds:.1f} s, probed in {rec.probe_seconds:.1f} s"
        )
        rate = f"; {rec.fails} of {len(runs)} runs failed" if len(runs) > 1 else ""
        console.print(
            f"{repro.describe()}: [{style}]{escape(o.describe())}[/{style}] ({how}{rate})",
            highlight=False,
        )
        for rep in reports:
            print(json.dumps(rep, sort_keys=True))
        if o.kind is not OutcomeKind.PASS and o.detail:
            console.print(o.detail, markup=False, highlight=False)
        print(o.describe())
    return 0 if o.kind is OutcomeKind.PASS else 1


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


def cmd_env(args: argparse.Namespace) -> int:
    from envbisect.env import envreport

    report = envreport.collect(args.python, deep=not args.quick)
    report["nvidia"] = envreport.read_nvidia_smi()
    found = envreport.checks(report)
    if args.json:
        report["checks"] = [c.to_dict() for c in found]
        print(json.dumps(report, indent=2, sort_keys=True))
    else:
        sys.stdout.write(envreport.render(report, found))
    return 0


def cmd_pins(args: argparse.Namespace) -> int:
    from envbisect.modes.planning import read_pins

    target = _target(args)
    env = target.marker_environment()
    extras = _extras(args)
    with _client(args) as client:
        (pins,) = read_pins([args.source], client, cwd=Path.cwd(), extras=extras)
    data = pins.to_dict(env, extras)
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


def cmd_versions(args: argparse.Namespace) -> int:
    from packaging.specifiers import SpecifierSet

    from envbisect.core.candidates import build_candidates
    from envbisect.modes.planning import read_pins

    target = _target(args)
    env = target.marker_environment()
    extras = _extras(args)
    with _client(args) as client:
        spec = SpecifierSet()
        for ps in read_pins(args.pins, client, cwd=Path.cwd(), extras=extras):
            spec &= ps.specifier_for(args.package, env, extras)
        files = client.project_files(args.package).files
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
        rows.append({
            "version": str(c.version),
            "upload_time": c.upload_time.isoformat() if c.upload_time else None,
            "yanked": c.yanked,
            "prerelease": c.prerelease,
            "installable": c.installable,
            "in_range": in_range,
            "excluded_reason": reason,
        })  # fmt: skip
    if args.json:
        print(json.dumps({"package": args.package, "target": target.short, "candidates": rows},
                         indent=2))  # fmt: skip
        return 0
    kept = sum(1 for r in rows if r["excluded_reason"] is None)
    print(f"{args.package}: {kept} candidate(s) of {len(rows)} for {target.short}"
          + (f", pins {spec}" if str(spec) else ""))  # fmt: skip
    for r in rows:
        when = (r["upload_time"] or "")[:10] or "no date"
        why = f"  excluded: {r['excluded_reason']}" if r["excluded_reason"] else ""
        print(f"  {r['version']:<16} {when:<10}{why}")
    return 0


def cmd_matrix(args: argparse.Namespace, command: str, reporter: Reporter, console: Console) -> int:
    from envbisect.core.matrixspec import load_matrix
    from envbisect.modes.matrix import run_matrix

    spec = load_matrix(Path(args.file))
    results = args.results.resolve()
    res = run_matrix(
        spec,
        results=results,
        jobs=args.jobs,
        full=args.full,
        max_cells=args.max_cells,
        command=command,
        reporter=reporter,
        offline=args.offline,
        cache_dir=args.cache_dir,
    )
    run_meta = {
        "command": command,
        "measured": res.started,
        "machine": _machine(),
        "targets": res.targets,
        "counts": res.counts(),
        "full": args.full,
        "jobs": args.jobs,
    }
    out = results / spec.name
    out.mkdir(parents=True, exist_ok=True)
    (out / "run.json").write_text(json.dumps(run_meta, indent=2) + "\n", encoding="utf-8")
    written = _publish(spec, results, args)
    counts = res.counts()
    if args.json:
        print(json.dumps({"matrix": spec.name, **run_meta, "files": [str(p) for p in written]},
                         indent=2))  # fmt: skip
    else:
        print(f"{spec.name}: {counts['cells']} cells: {counts['built']} built, "
              f"{counts['reused']} reused, {counts['inferred']} inferred, "
              f"{counts['unresolvable']} unresolvable")  # fmt: skip
        print(f"tables: {out / 'table.md'}, {out / 'table.html'}")
    return 0


def cmd_publish(args: argparse.Namespace) -> int:
    from envbisect.core.matrixspec import load_matrix

    files = [Path(f) for f in args.files] or sorted(Path("matrices").glob("*.toml"))
    if not files:
        raise UsageError("no matrix to publish", hint="name matrices/*.toml files",
                         ref="matrix-missing")  # fmt: skip
    for f in files:
        spec = load_matrix(f)
        for p in _publish(spec, args.results.resolve(), args):
            print(p)
    return 0


def _machine() -> str:
    import os
    import platform

    return (f"{platform.system()} {platform.machine()}, {os.cpu_count()} cores, "
            f"Python {platform.python_version()}")  # fmt: skip


def _publish(spec: Any, results: Path, args: argparse.Namespace) -> list[Path]:
    """Write every published file of one matrix from the store; returns their paths."""
    from packaging.version import Version

    from envbisect.core import publish
    from envbisect.core.report import requirements_lock
    from envbisect.env.uv import find_python, find_uv, inspect_target
    from envbisect.index.client import IndexClient, default_cache_dir
    from envbisect.model import InstalledDist
    from envbisect.modes.matrix import matrix_indexes, published_cells
    from envbisect.modes.run import lock_entries
    from envbisect.store import Store

    out = results / spec.name
    out.mkdir(parents=True, exist_ok=True)
    with Store(results) as store:
        cells = published_cells(spec, store)
    if not cells:
        raise UsageError(
            f"the store in {results} has no cell of the matrix {spec.name}",
            hint=f"run it first: envbisect matrix {spec.path}",
            ref="matrix-not-run",
        )
    run_file = out / "run.json"
    run_meta = json.loads(run_file.read_text()) if run_file.is_file() else {}
    axes = [a.package for a in spec.axes]
    probes = [*spec.probes, *([spec.repro] if spec.repro else [])]
    meta = {"name": spec.name, "description": spec.description, "axes": axes,
            "probes": probes, **run_meta}  # fmt: skip
    written: list[Path] = []
    passing = [c for c in cells if c["state"] == "measured" and c["kind"] == "pass"]
    if passing:
        uv = find_uv()
        cache = getattr(args, "cache_dir", None) or default_cache_dir()
        offline = getattr(args, "offline", False)
        with IndexClient(matrix_indexes(spec), cache_dir=cache, offline=offline) as client:
            for py in sorted({str(c["python"]) for c in passing}):
                target = inspect_target(find_python(uv, py))
                mine = [c for c in passing if c["python"] == py]
                for c in mine:
                    versions: dict[str, str] = c["versions"]
                    slug = "__".join(f"{k}-{v}" for k, v in versions.items())
                    path = out / "locks" / f"py{py}" / f"{slug}.txt"
                    path.parent.mkdir(parents=True, exist_ok=True)
                    installed = tuple(InstalledDist(**d) for d in c["installed"])
                    entries = lock_entries(installed, target, client, allow_sdist=False)
                    header = [f"{spec.name}: {', '.join(f'{k}=={v}' for k, v in versions.items())}"
                              f" passes {', '.join(meta['probes'])} on {target.short}",
                              "Install: uv pip install --require-hashes -r THIS_FILE"]  # fmt: skip
                    path.write_text(requirements_lock(entries, header=header), encoding="utf-8")
                    c["lock"] = str(path.relative_to(out))
                    written.append(path)
                best = max(mine, key=lambda c: [Version(v) for v in c["versions"].values()])
                rec = out / f"recommended-py{py}.txt"
                rec.write_text((out / str(best["lock"])).read_text(), encoding="utf-8")
                written.append(rec)
    files = {
        "table.md": publish.markdown(meta, cells),
        "table.html": publish.html_page(meta, cells),
        "heatmap.svg": publish.svg(meta, cells),
        "results.csv": publish.csv_text(cells, axes),
        "results.json": json.dumps({"matrix": meta, "cells": cells}, indent=2) + "\n",
    }
    for name, text in files.items():
        (out / name).write_text(text, encoding="utf-8")
        written.append(out / name)
    return written
