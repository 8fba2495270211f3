"""Command line: parse, call the engine, show progress on stderr, data on stdout.

Errors become one ``error:`` line and one ``hint:`` line on stderr and the exit code of their
class (errors.py). Exit codes: 0 done, 1 no answer, 2 bad usage, 3 infrastructure, 130 Ctrl-C.
Heavy modules are imported inside the commands so that ``envbisect --help`` starts fast.
"""

from __future__ import annotations

import argparse
import os
import shlex
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import NoReturn

from rich.console import Console

from envbisect import __version__
from envbisect.cli.commands import STYLE, escape
from envbisect.errors import EnvbisectError, UsageError
from envbisect.model import Outcome
from envbisect.redact import mask_text
from envbisect.reporter import Reporter

DEFAULT_INDEX = "https://pypi.org/simple"


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


def _count(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError("must be 1 or more")
    return value


def _probability(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a probability") from None
    if not 0.5 <= value < 1.0:
        raise argparse.ArgumentTypeError("must be at least 0.5 and below 1 (e.g. 0.95)")
    return value


def _add_search_options(p: argparse.ArgumentParser) -> None:
    """How the search runs (run, run --by-date)."""
    p.add_argument(
        "--jobs",
        type=_count,
        default=1,
        metavar="K",
        help="probe K points per round, built and run in parallel: the range splits K+1 ways, "
        "about log_{K+1}(n) rounds (default 1)",
    )
    p.add_argument(
        "--repeat",
        type=_count,
        default=1,
        metavar="N",
        help="run the repro N times in each environment: a failure in any run marks it, the "
        "fail rate is recorded; runs that disagree switch to a probabilistic search",
    )
    p.add_argument(
        "--confidence",
        type=_probability,
        default=0.95,
        metavar="P",
        help="probabilistic search: stop when one boundary has this probability (default 0.95)",
    )
    p.add_argument(
        "--probabilistic",
        action="store_true",
        help="start with the probabilistic search (the repro is known to be flaky)",
    )
    p.add_argument(
        "--max-probes",
        type=_count,
        metavar="N",
        help="probabilistic search: give up after N probes (default: about 20 runs per bit "
        "of the range)",
    )


def _add_index_options(p: argparse.ArgumentParser) -> None:
    """Where packages come from, and the metadata cache."""
    default = os.environ.get("UV_DEFAULT_INDEX") or os.environ.get("UV_INDEX_URL") or DEFAULT_INDEX
    p.add_argument(
        "--index-url",
        metavar="URL",
        default=default,
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
        "--offline",
        action="store_true",
        help="answer from the metadata cache only (run once online first)",
    )
    p.add_argument(
        "--cache-dir",
        type=Path,
        metavar="DIR",
        help="the metadata cache (default $ENVBISECT_CACHE_DIR, else ~/.cache/envbisect)",
    )
    p.add_argument(
        "--torch-backend",
        metavar="VARIANT",
        help="take torch, torchvision, torchaudio from PyTorch's index for this variant: "
        "cpu, cu118, cu121, cu124, cu126, cu128, rocm6.2..., or auto (from nvidia-smi)",
    )
    p.add_argument(
        "--torch-index-url",
        metavar="URL",
        help="a mirror laid out like https://download.pytorch.org/whl (variant folders)",
    )


def _add_env_options(p: argparse.ArgumentParser) -> None:
    """What goes into the environments and what they run on (run and probe)."""
    p.add_argument(
        "--with",
        dest="with_reqs",
        action="append",
        default=[],
        metavar="REQ",
        help="a requirement of every environment (repeatable)",
    )
    _add_index_options(p)
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
        help="a built-in probe: import:PKG[,PKG], datasets-json, lora-step, llamafactory-train "
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
        help="re-run a crash under gdb for its native backtrace (default auto: when gdb "
        "is installed)",
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


def _add_pins_options(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--pins",
        action="append",
        default=[],
        metavar="SOURCE",
        help="the project's pins: a folder, pyproject.toml, requirements file, "
        "pylock.toml, installed:PYTHON, or name==version from the index (repeatable)",
    )
    p.add_argument("--extras", metavar="A,B", help="optional-dependency groups of the pins")


def _add_target_options(p: argparse.ArgumentParser) -> None:
    """For commands that only read: the target, the indexes, --json."""
    p.add_argument(
        "--python",
        metavar="VERSION",
        help="the target interpreter (a version uv can find, or a path)",
    )
    p.add_argument(
        "--platform",
        metavar="TAG",
        help="another platform, as a wheel tag: manylinux_2_28_x86_64, macosx_11_0_arm64, "
        "win_amd64...",
    )
    _add_index_options(p)
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
        usage="envbisect run (--package NAME | --by-date) [options] "
        "[--repro FILE | --probe NAME | -- CMD ARGS...]",
        description="Find the first bad (or first fixed) version of one package: each probe is "
        "a fresh uv virtualenv with NAME==V and the --with requirements, the repro run in it. "
        "With no repro, built-in probes for the package run (import, datasets-json, lora-step).",
    )
    run.add_argument("--package", metavar="NAME", help="the package to bisect")
    run.add_argument(
        "--by-date",
        action="store_true",
        help="bisect the whole environment by date: --good and --bad are dates, each probe "
        "resolves everything as of a release's upload time, and the culprit release is named",
    )
    run.add_argument("--good", metavar="V", help="a version that works (default: an end)")
    run.add_argument("--bad", metavar="V", help="a version that fails (default: an end)")
    run.add_argument(
        "--any-failure",
        action="store_true",
        help="count any failure as bad, not only one like the bad end's",
    )
    _add_pins_options(run)
    run.add_argument(
        "--baseline",
        metavar="SOURCE",
        help="an environment to stay close to: a lockfile, pylock.toml or installed:PYTHON "
        "(the broken environment, typically)",
    )
    run.add_argument(
        "--rest",
        choices=("baseline", "contemporary", "latest"),
        help="the rest of each environment: kept at the baseline where possible, as of the "
        "candidate's upload time, or latest (default: baseline when one is given, "
        "else latest)",
    )
    _add_search_options(run)
    _add_env_options(run)
    _add_probe_options(run)
    probe = sub.add_parser(
        "probe",
        help="build one environment and run probes in it",
        usage="envbisect probe (--with REQ... | --pins SOURCE | --lock FILE) [options] "
        "(--probe NAME | --repro FILE | -- CMD...)",
        description="The quickest way to try one environment: build it, run the probes, print "
        "each outcome, record it in the store.",
    )
    _add_pins_options(probe)
    probe.add_argument(
        "--lock",
        metavar="FILE",
        help="a lockfile (requirements.txt with == pins, or pylock.toml): exactly that environment",
    )
    probe.add_argument(
        "--repeat",
        type=_count,
        default=1,
        metavar="N",
        help="run the probes N times in the environment and say how many runs failed",
    )
    _add_env_options(probe)
    _add_probe_options(probe)
    pins = sub.add_parser(
        "pins",
        help="print what a pin source asks for, and what applies to the target",
        description="Read a pin source (a project folder, pyproject.toml, requirements file, "
        "pylock.toml, installed:PYTHON, or a released distribution such as "
        "llamafactory==0.9.5) and print its requirements.",
    )
    pins.add_argument("source", metavar="SOURCE")
    pins.add_argument("--extras", metavar="A,B", help="optional-dependency groups to select")
    _add_target_options(pins)
    versions = sub.add_parser(
        "versions",
        help="list a package's versions: upload date, installable on the target, in range",
        description="Every version of PACKAGE on the index, whether a file installs on the "
        "target, whether the pins allow it, and why each excluded one is excluded.",
    )
    versions.add_argument("package", metavar="PACKAGE")
    _add_pins_options(versions)
    versions.add_argument("--pre", action="store_true", help="do not exclude pre-releases")
    versions.add_argument(
        "--allow-sdist", action="store_true", help="count an sdist as installable"
    )
    _add_target_options(versions)
    diff = sub.add_parser(
        "diff",
        help="find the package (or packages) between a good and a bad environment",
        usage="envbisect diff GOOD BAD [options] (--repro FILE | --probe NAME | -- CMD...)",
        description="GOOD and BAD are lockfiles, pylock.toml files, installed:PYTHON or pin "
        "sources. Delta debugging over the changed packages finds the minimal set that brings "
        "the failure (an interaction when it takes several), then each culprit's first bad "
        "version.",
    )
    diff.add_argument("good", metavar="GOOD")
    diff.add_argument("bad", metavar="BAD")
    diff.add_argument("--any-failure", action="store_true",
                      help="count any failure as the failure, not only one like BAD's")  # fmt: skip
    diff.add_argument("--repeat", type=_count, default=1, metavar="N",
                      help="run the repro N times in each environment; a failure in any run "
                      "marks it")  # fmt: skip
    _add_index_options(diff)
    diff.add_argument("--python", metavar="VERSION", help="the interpreter of the environments")
    _add_probe_options(diff)
    matrix = sub.add_parser(
        "matrix",
        help="run a compatibility matrix (matrices/*.toml) and publish its tables",
        description="Every cell a fresh uv environment probed for real, through the same store "
        "as run (an interrupted matrix resumes). Unless --full, rows are taken to be monotone: "
        "their ends are probed, agreeing ends make the cells between inferred, disagreeing "
        "ends are bisected. Tables go to DIR/<matrix>/.",
    )
    matrix.add_argument("file", metavar="FILE", help="a matrices/*.toml file")
    matrix.add_argument("--jobs", type=int, default=1, metavar="N",
                        help="rows probed in parallel (default 1)")  # fmt: skip
    matrix.add_argument("--full", action="store_true",
                        help="probe every cell (no inference, no --max-cells limit)")  # fmt: skip
    matrix.add_argument("--max-cells", type=int, default=500, metavar="N",
                        help="refuse larger matrices without --full (default 500)")  # fmt: skip
    matrix.add_argument("--results", type=Path, default=Path("results"), metavar="DIR",
                        help="the store and the published tables (default ./results)")  # fmt: skip
    matrix.add_argument("--offline", action="store_true", help="metadata from the cache only")
    matrix.add_argument("--cache-dir", type=Path, metavar="DIR", help="the metadata cache")
    matrix.add_argument("--json", action="store_true", help="print one JSON object on stdout")
    publish = sub.add_parser(
        "publish",
        help="regenerate a matrix's tables, pictures and lockfiles from the store",
        description="Writes DIR/<matrix>/table.md, table.html, heatmap.svg, results.json, "
        "results.csv, a lockfile per passing cell and the recommended (newest passing) one.",
    )
    publish.add_argument("files", nargs="*", metavar="FILE",
                         help="matrices/*.toml files (default: all of matrices/)")  # fmt: skip
    publish.add_argument("--results", type=Path, default=Path("results"), metavar="DIR")
    publish.add_argument("--offline", action="store_true", help="metadata from the cache only")
    publish.add_argument("--cache-dir", type=Path, metavar="DIR", help="the metadata cache")
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
        where = (
            f" ({left} left in range, at most {steps_left} more step(s))"
            if left or steps_left
            else ""
        )
        self.console.print(f"[dim][{self.step}] probing {escape(version)}{where}[/dim]",
                           highlight=False)  # fmt: skip

    def probe_finished(
        self, version: str, outcome: Outcome, seconds: float, reused: bool, drawing: str
    ) -> None:
        style = STYLE[outcome.kind]
        how = "from the store" if reused else f"{seconds:.1f} s"
        self.console.print(
            f"    {version}: [{style}]{escape(outcome.describe())}[/{style}] ({how}) {drawing}",
            highlight=False,
        )


def _print_error(err: EnvbisectError) -> None:
    console = Console(stderr=True, highlight=False, soft_wrap=True)
    console.print(f"[bold red]error[/bold red]: {escape(mask_text(err.message))}")
    if err.hint:
        console.print(f"[cyan]hint[/cyan]: {escape(mask_text(err.hint))}")


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
    from envbisect.cli import commands

    console = Console(stderr=True, soft_wrap=True)
    try:
        if tail and args.command not in ("run", "probe", "diff"):
            raise UsageError(
                f"envbisect {args.command} takes no command after --",
                hint=f"see envbisect {args.command} --help",
            )
        if args.command == "diff":
            return commands.cmd_diff(args, tail, full, RichReporter(console))
        if args.command == "matrix":
            return commands.cmd_matrix(args, full, RichReporter(console), console)
        if args.command == "publish":
            return commands.cmd_publish(args)
        if args.command == "env":
            return commands.cmd_env(args)
        if args.command == "pins":
            return commands.cmd_pins(args)
        if args.command == "versions":
            return commands.cmd_versions(args)
        if args.command == "probe":
            return commands.cmd_probe(args, tail, RichReporter(console), console)
        return commands.cmd_run(args, tail, full, RichReporter(console), console)
    except EnvbisectError as e:
        _print_error(e)
        return e.exit_code
    except KeyboardInterrupt:
        _print_error(EnvbisectError("interrupted", hint="run the same command again to resume"))
        return 130
