"""Command line: parse, call the engine, show progress on stderr, data on stdout.

Errors become one ``error:`` line and one ``hint:`` line on stderr and the exit code of their
class (errors.py). Exit codes: 0 done, 1 no answer, 2 bad usage, 3 infrastructure, 130 Ctrl-C.
Heavy modules are imported inside the commands so that ``envbisect --help`` starts fast.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import NoReturn

from rich.console import Console

from . import __version__
from .errors import EnvbisectError, UsageError
from .index import mask_text
from .model import IndexConfig, Outcome, OutcomeKind
from .reporter import Reporter

DEFAULT_INDEX = "https://pypi.org/simple"

_STYLE = {
    OutcomeKind.PASS: "green",
    OutcomeKind.FAIL: "red",
    OutcomeKind.CRASH: "bold red",
    OutcomeKind.TIMEOUT: "magenta",
    OutcomeKind.UNTESTABLE: "yellow",
}


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        _print_error(UsageError(message, hint=f"see {self.prog} --help"))
        raise SystemExit(2)


def _positive(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if value <= 0:
        raise argparse.ArgumentTypeError("must be more than 0 seconds")
    return value


def _add_env_options(p: argparse.ArgumentParser) -> None:
    """Where packages come from and what the environments run on (run and probe)."""
    p.add_argument(
        "--with",
        dest="with_reqs",
        action="append",
        default=[],
        metavar="REQ",
        help="a requirement of every environment (repeatable)",
    )
    p.add_argument(
        "--index-url",
        metavar="URL",
        default=os.environ.get("UV_DEFAULT_INDEX")
        or os.environ.get("UV_INDEX_URL")
        or DEFAULT_INDEX,
        help=f"the main index (default {DEFAULT_INDEX})",
    )
    p.add_argument(
        "--extra-index-url",
        action="append",
        default=[],
        metavar="URL",
        help="another index, consulted before the main one as uv does (repeatable)",
    )
    p.add_argument(
        "--find-links",
        action="append",
        default=[],
        metavar="DIR",
        help="a folder of wheels (repeatable)",
    )
    p.add_argument(
        "--python",
        metavar="VERSION",
        help="the interpreter of the environments (a version uv can find, or a path)",
    )
    p.add_argument(
        "--exclude-newer",
        metavar="DATE",
        help="ignore files uploaded after DATE (YYYY-MM-DD or RFC 3339)",
    )
    p.add_argument("--pre", action="store_true", help="include pre-releases")
    p.add_argument(
        "--allow-sdist",
        action="store_true",
        help="let uv build sdists (runs their setup.py; wheels only by default)",
    )


def _add_probe_options(p: argparse.ArgumentParser) -> None:
    """What runs in each environment (run and probe)."""
    p.add_argument(
        "--repro", metavar="FILE", help="a Python file run as python -X faulthandler FILE"
    )
    p.add_argument(
        "--probe",
        dest="probes",
        action="append",
        default=[],
        metavar="NAME[:ARGS]",
        help="a built-in probe: import:PKG[,PKG], datasets-json, lora-step "
        "(repeatable; the environment fails if any fails)",
    )
    p.add_argument(
        "--timeout",
        type=_positive,
        default=600.0,
        metavar="SECONDS",
        help="kill a probe after this long (default 600)",
    )
    p.add_argument(
        "--native-backtrace",
        choices=("auto", "always", "never"),
        default="auto",
        help="re-run a crash under gdb for its native backtrace (default auto: "
        "when gdb is installed)",
    )
    p.add_argument(
        "--results",
        type=Path,
        default=Path("results"),
        metavar="DIR",
        help="where the store, reports and lockfiles go (default ./results)",
    )
    p.add_argument(
        "--keep-envs",
        action="store_true",
        help="keep each environment after its probe (under DIR/.envs)",
    )
    p.add_argument("--json", action="store_true", help="print one JSON object on stdout")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="envbisect",
        description="Find which package version broke a "
        "Python environment, prove it, and hand back one that works.",
    )
    parser.add_argument("--version", action="version", version=f"envbisect {__version__}")
    sub = parser.add_subparsers(dest="command", parser_class=_Parser)
    run = sub.add_parser(
        "run",
        help="bisect one package's versions in fresh uv environments",
        usage="envbisect run --package NAME [options] "
        "[--repro FILE | --probe NAME | -- CMD ARGS...]",
        description="Find the first bad (or first fixed) version of one package: each probe is "
        "a fresh uv virtualenv with NAME==V and the --with requirements, the repro run in it. "
        "With no repro, built-in probes for the package run (import, datasets-json, lora-step).",
    )
    run.add_argument("--package", required=True, metavar="NAME", help="the package to bisect")
    run.add_argument("--good", metavar="V", help="a version that works (default: an end)")
    run.add_argument("--bad", metavar="V", help="a version that fails (default: an end)")
    run.add_argument(
        "--any-failure",
        action="store_true",
        help="count any failure as bad, not only one like the bad end's",
    )
    _add_env_options(run)
    _add_probe_options(run)
    probe = sub.add_parser(
        "probe",
        help="build one environment and run probes in it",
        usage="envbisect probe --with REQ... [options] (--probe NAME | --repro FILE | -- CMD...)",
        description="The quickest way to try one environment: build it, run the probes, print "
        "each outcome, record it in the store.",
    )
    _add_env_options(probe)
    _add_probe_options(probe)
    env = sub.add_parser(
        "env",
        help="report on an environment (versions, torch/CUDA build, driver, GPUs) and check it",
        description="The environment report maintainers ask for, with checks that each come "
        "with a fix.",
    )
    env.add_argument(
        "--python",
        metavar="PATH",
        default=sys.executable,
        help="the interpreter to report on (default: the one running envbisect)",
    )
    env.add_argument(
        "--quick",
        action="store_true",
        help="do not import torch or test compiled packages against numpy",
    )
    env.add_argument("--json", action="store_true", help="print one JSON object on stdout")
    return parser


class RichReporter(Reporter):
    """Progress on stderr; colours only where the terminal wants them (rich honours NO_COLOR)."""

    def __init__(self, console: Console) -> None:
        self.console = console
        self.step = 0

    def message(self, text: str) -> None:
        self.console.print(text, markup=False, highlight=False)

    def candidates(self, package: str, in_range: int, untestable: int, target: str) -> None:
        extra = f", {untestable} without an installable file" if untestable else ""
        self.console.print(
            f"envbisect: {in_range} candidate versions of {package} for {target}{extra}",
            markup=False,
            highlight=False,
        )

    def probe_started(self, version: str, left: int, steps_left: int) -> None:
        self.step += 1
        self.console.print(
            f"[dim][{self.step}] probing {version} ({left} left in range, at most {steps_left} "
            f"more step(s))[/dim]",
            highlight=False,
        )

    def probe_finished(
        self, version: str, outcome: Outcome, seconds: float, reused: bool, drawing: str
    ) -> None:
        style = _STYLE[outcome.kind]
        how = "from the store" if reused else f"{seconds:.1f} s"
        self.console.print(
            f"    {version}: [{style}]{_escape(outcome.describe())}[/{style}] ({how}) {drawing}",
            highlight=False,
        )


def _escape(text: str) -> str:
    return text.replace("[", "\\[")


def _print_error(err: EnvbisectError) -> None:
    console = Console(stderr=True, highlight=False, soft_wrap=True)
    console.print(f"[bold red]error[/bold red]: {_escape(mask_text(err.message))}")
    if err.hint:
        console.print(f"[cyan]hint[/cyan]: {_escape(mask_text(err.hint))}")


def main(argv: Sequence[str] | None = None) -> int:
    args_list = list(sys.argv[1:] if argv is None else argv)
    tail: list[str] = []
    if "--" in args_list:
        cut = args_list.index("--")
        args_list, tail = args_list[:cut], args_list[cut + 1 :]
    parser = build_parser()
    args = parser.parse_args(args_list)
    if args.command is None:
        parser.print_help(sys.stderr)
        return 2
    full = shlex.join(["envbisect", *(sys.argv[1:] if argv is None else argv)])
    try:
        if args.command == "env":
            return _cmd_env(args)
        if args.command == "probe":
            return _cmd_probe(args, tail, full)
        return _cmd_run(args, tail, full)
    except EnvbisectError as e:
        _print_error(e)
        return e.exit_code
    except KeyboardInterrupt:
        _print_error(EnvbisectError("interrupted", hint="run the same command again to resume"))
        return 130


def _indexes(args: argparse.Namespace) -> IndexConfig:
    return IndexConfig(
        index_url=args.index_url,
        extra_index_urls=tuple(args.extra_index_url),
        find_links=tuple(str(Path(p).resolve()) if "://" not in p else p for p in args.find_links),
    )


def _cmd_run(args: argparse.Namespace, tail: list[str], command: str) -> int:
    from .engine import RunOptions, run_bisect
    from .probe import Repro
    from .report import other_failures_hint, to_json, verdict_line

    origin = Path.cwd()
    repro = Repro.build(
        origin=origin,
        repro_file=args.repro,
        command=tail,
        probes=args.probes,
        default_for=args.package,
    )
    opts = RunOptions(
        package=args.package,
        repro=repro,
        good=args.good,
        bad=args.bad,
        with_reqs=tuple(args.with_reqs),
        indexes=_indexes(args),
        python=args.python,
        exclude_newer=args.exclude_newer,
        pre=args.pre,
        allow_sdist=args.allow_sdist,
        timeout=args.timeout,
        results=args.results.resolve(),
        any_failure=args.any_failure,
        keep_envs=args.keep_envs,
        native_backtrace=args.native_backtrace,
        command=command,
    )
    console = Console(stderr=True, soft_wrap=True)
    if not (args.repro or tail or args.probes):
        console.print(
            f"envbisect: no repro given; probing with {repro.describe()}", highlight=False
        )
    result = run_bisect(opts, RichReporter(console))
    if args.json:
        print(json.dumps(to_json(result), indent=2))
    else:
        print(verdict_line(result))
        if result.lock_path:
            print(f"known-good lockfile: {result.lock_path}")
        print(f"report: {result.report_path}")
    other = other_failures_hint(result)
    if other:
        console.print(f"[cyan]hint[/cyan]: {_escape(other)}", highlight=False)
    if result.status == "no-answer":
        console.print(
            "[cyan]hint[/cyan]: the ends did not verify; pick --good/--bad that pass and fail",
            highlight=False,
        )
        return 1
    return 0


def _cmd_probe(args: argparse.Namespace, tail: list[str], command: str) -> int:
    from .engine import probe_one
    from .probe import Repro

    if not args.with_reqs:
        raise UsageError(
            "no environment given",
            hint="name what to install: --with 'datasets==2.14.6' --with 'pyarrow<21'",
            ref="probe-nothing",
        )
    repro = Repro.build(origin=Path.cwd(), repro_file=args.repro, command=tail, probes=args.probes)
    console = Console(stderr=True, soft_wrap=True)
    rec, reused = probe_one(
        with_reqs=tuple(args.with_reqs),
        repro=repro,
        indexes=_indexes(args),
        python=args.python,
        exclude_newer=args.exclude_newer,
        pre=args.pre,
        allow_sdist=args.allow_sdist,
        timeout=args.timeout,
        results=args.results.resolve(),
        keep_envs=args.keep_envs,
        native_backtrace=args.native_backtrace,
        reporter=RichReporter(console),
    )
    o = rec.outcome
    if args.json:
        print(json.dumps({
            "outcome": o.to_dict(),
            "reused": reused,
            "installed": [d.to_dict() for d in rec.installed],
            "build_seconds": round(rec.build_seconds, 3),
            "probe_seconds": round(rec.probe_seconds, 3),
            "reports": _probe_reports(rec.stdout_tail),
            "env_id": rec.env_id,
        }, indent=2))  # fmt: skip
    else:
        style = _STYLE[o.kind]
        how = (
            "from the store"
            if reused
            else f"built in {rec.build_seconds:.1f} s, probed in {rec.probe_seconds:.1f} s"
        )
        console.print(
            f"{repro.describe()}: [{style}]{_escape(o.describe())}[/{style}] ({how})",
            highlight=False,
        )
        for rep in _probe_reports(rec.stdout_tail):
            print(json.dumps(rep, sort_keys=True))
        if o.kind is not OutcomeKind.PASS and o.detail:
            console.print(o.detail, markup=False, highlight=False)
        print(o.describe())
    return 0 if o.kind is OutcomeKind.PASS else 1


def _probe_reports(stdout: str) -> list[dict[str, object]]:
    out = []
    for line in stdout.splitlines():
        if line.startswith("ENVBISECT-REPORT: "):
            try:
                out.append(json.loads(line.split(": ", 1)[1]))
            except ValueError:
                continue
    return out


def _cmd_env(args: argparse.Namespace) -> int:
    from . import envreport

    report = envreport.collect(args.python, deep=not args.quick)
    report["nvidia"] = envreport.read_nvidia_smi()
    found = envreport.checks(report)
    if args.json:
        report["checks"] = [c.to_dict() for c in found]
        print(json.dumps(report, indent=2, sort_keys=True))
    else:
        sys.stdout.write(envreport.render(report, found))
    return 0
