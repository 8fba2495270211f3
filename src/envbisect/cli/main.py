"""Command line: parse, run the command from the table, show progress on stderr, data on stdout.

Errors become one ``error:`` line (ending in the error's stable reference) and one ``hint:``
line on stderr, and the exit code of their class (errors.py); with ``--json`` the error is
also an ``error`` object on stdout. Exit codes: 0 done, 1 no answer, 2 bad usage,
3 infrastructure, 4 ``envbisect probe``: the environment does not pass (``envbisect repro``:
the report's failure does not happen here: it passes, or fails another way), 130 Ctrl-C, 143
SIGTERM, 129 SIGHUP, 141 stdout closed by its reader (``| head``: nothing more is printed, no
traceback). SIGTERM and SIGHUP (``timeout``, ``docker stop``, CI cancellation, a closed
terminal) take Ctrl-C's path: every live probe group is killed, finished probes are kept; the
exit code is the shell's 128 + signal number, so the caller sees which signal ended it.
Heavy modules are imported inside the commands so that ``envbisect --help`` starts fast.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shlex
import signal
import sys
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import NoReturn, cast

from rich.console import Console

from envbisect import __version__
from envbisect.cli import commands, commitcmd, implied
from envbisect.cli import options as o
from envbisect.cli.display import RichReporter, error_json, print_error
from envbisect.errors import EnvbisectError, Interrupted, NoAnswer, UsageError
from envbisect.redact import mask_env_args


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        print_error(UsageError(message, hint=suggest(message, self) or f"see {self.prog} --help"))
        raise SystemExit(2)


def suggest(message: str, parser: argparse.ArgumentParser, unknown: Sequence[str] = ()) -> str:
    """``did you mean ...?`` for a misspelled subcommand, choice or flag (difflib), or ""."""
    import difflib
    import re

    choice = re.search(r"invalid choice: '([^']*)' \(choose from (.*)\)", message)
    if choice:
        word = choice.group(1)
        options = [c.strip(" '\"") for c in choice.group(2).split(",")]
    else:
        flags = [f for f in unknown if f.startswith("--")] or [
            w for w in message.split() if w.startswith("--")
        ]
        if not flags:
            return ""
        word = flags[0].split("=", 1)[0]
        options = [s for a in parser._actions for s in a.option_strings if s.startswith("--")]
    close = difflib.get_close_matches(word, options, n=1, cutoff=0.6)
    if not close:
        return ""
    return f"did you mean {close[0]}? (see {parser.prog} --help)"


@dataclass(frozen=True, slots=True)
class Command:
    run: Callable[[commands.Context], int]
    tail: bool = False  # takes a command after --


COMMANDS: dict[str, Command] = {
    "run": Command(commands.cmd_run, tail=True),
    "probe": Command(commands.cmd_probe, tail=True),
    "repro": Command(commands.cmd_repro),
    "commits": Command(commitcmd.cmd_commits, tail=True),
    "diff": Command(commands.cmd_diff, tail=True),
    "lock": Command(commands.cmd_lock, tail=True),
    "pins": Command(commands.cmd_pins),
    "versions": Command(commands.cmd_versions),
    "matrix": Command(commands.cmd_matrix),
    "publish": Command(commands.cmd_publish),
    "env": Command(commands.cmd_env),
    "completion": Command(commands.cmd_completion),
}


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="envbisect",
        description="Find which package version broke a "
        "Python environment, prove it, and hand back one that works.",
        epilog="docs: docs/ in the source (build and serve locally: nox -s docs, or mkdocs serve)",
    )
    parser.add_argument("--version", action="version", version=f"envbisect {__version__}")
    o.attach(parser, o.QUIET, o.VERBOSE)
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
    o.attach(run, o.ANY_FAILURE, o.PINS, o.EXTRAS)
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
    o.attach(run, o.SEARCH, o.ENVIRONMENT, o.PROBING, o.DRY_RUN)
    o.attach(run, o.COMMITS, o.REPO, o.GOOD_REF, o.BAD_REF, o.BUILD_TIMEOUT)

    commits = sub.add_parser(
        "commits",
        help="bisect a package's commits between two refs, each built from source",
        usage="envbisect commits --package NAME --good REF --bad REF [--repo URL] [options] "
        "[--repro FILE | --probe NAME | -- CMD ARGS...]",
        description="Find the first bad commit of one package between two refs (tags, "
        "branches, commit ids, or release versions mapped to their tags): the first-parent "
        "commits, oldest first, each built from source with uv into a fresh environment whose "
        "rest is held fixed (as in the good release's environment, or as uv resolves it for "
        "the good commit). A commit that does not build is untestable: skipped, never bad.",
    )
    commits.add_argument("--package", metavar="NAME", required=True,
                         help="the package built from its commits")  # fmt: skip
    commits.add_argument("--good", metavar="REF", required=True,
                         help="a ref (or release version) that works")  # fmt: skip
    commits.add_argument("--bad", metavar="REF", required=True,
                         help="a ref (or release version) that fails")  # fmt: skip
    o.attach(commits, o.REPO, o.BUILD_TIMEOUT, o.ANY_FAILURE, o.SEARCH, o.WITH, o.INDEX,
             o.PYTHON, o.ALLOW_SDIST, o.PROBING)  # fmt: skip

    probe = sub.add_parser(
        "probe",
        help="build one environment and run probes in it",
        usage="envbisect probe (--with REQ... | --pins SOURCE | --lock FILE) [options] "
        "(--probe NAME | --repro FILE | -- CMD...)",
        description="The quickest way to try one environment: build it, run the probes, print "
        "each outcome, record it in the store. Exit 0 when it passes, 4 when it does not.",
    )
    o.attach(probe, o.PINS, o.EXTRAS)
    probe.add_argument(
        "--lock",
        metavar="FILE",
        help="a lockfile (requirements.txt with == pins, or pylock.toml): exactly that environment",
    )
    o.REPEAT.add(
        probe, help="run the probes N times in the environment and say how many runs failed"
    )
    o.attach(probe, o.ENVIRONMENT, o.PROBING, o.DRY_RUN)

    repro = sub.add_parser(
        "repro",
        help="reproduce a bug report: build its environment here, run its repro, compare",
        usage="envbisect repro REPORT [options]",
        description="REPORT is a bug report in Markdown (a GitHub issue's text saved to a "
        "file, or - for stdin): its environment block (llamafactory-cli env, transformers "
        "env, pip freeze, conda list, collect_env...) is built for this machine, its first "
        "Python code block (or its llamafactory-cli train CONFIG.yaml command with the YAML "
        "block) is run there, and the failure seen is compared with the one the report shows. "
        "Exit 0: reproduced (the same failure); 4: not reproduced (it passes, or fails "
        "another way); 1: it cannot be tried here (another OS, no GPU for a CUDA repro, a "
        "download it needs, an environment that cannot be built). The next commands to run "
        "(lock, run) follow the answer.",
    )
    repro.add_argument("report", metavar="REPORT", help="a Markdown file, or - for stdin")
    o.attach(repro, o.ENVIRONMENT, o.REPEAT, o.EXECUTION, o.ENV, o.TIMEOUT, o.NATIVE_BACKTRACE,
             o.RESULTS, o.KEEP_ENVS, o.JSON, o.ALLOW_DOWNLOAD, o.DRY_RUN)  # fmt: skip

    pins = sub.add_parser(
        "pins",
        help="print what a pin source asks for, and what applies to the target",
        description="Read a pin source (a project folder, pyproject.toml, requirements file, "
        "pylock.toml, installed:PYTHON, a released distribution such as llamafactory==0.9.5, "
        "an environment report or a Markdown file holding one, - for stdin, or a PEP 723 "
        "script) and print its requirements.",
    )
    pins.add_argument("source", metavar="SOURCE")
    o.EXTRAS.add(pins, help="optional-dependency groups to select")
    o.PYTHON.add(pins, help="the target interpreter (a version uv can find, or a path)")
    o.attach(pins, o.PLATFORM, o.INDEX, o.JSON)

    versions = sub.add_parser(
        "versions",
        help="list a package's versions: upload date, installable on the target, in range",
        description="Every version of PACKAGE on the index, whether a file installs on the "
        "target, whether the pins allow it, and why each excluded one is excluded.",
    )
    versions.add_argument("package", metavar="PACKAGE")
    o.attach(versions, o.PINS, o.EXTRAS)
    o.PRE.add(versions, help="do not exclude pre-releases")
    o.ALLOW_SDIST.add(versions, help="count an sdist as installable")
    o.PYTHON.add(versions, help="the target interpreter (a version uv can find, or a path)")
    o.attach(versions, o.PLATFORM, o.INDEX, o.JSON)

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
    o.ANY_FAILURE.add(diff, help="count any failure as the failure, not only one like BAD's")
    o.attach(diff, o.JOBS, o.REPEAT, o.EXECUTION, o.INDEX, o.PYTHON, o.PROBING)

    lock = sub.add_parser(
        "lock",
        help="the newest environment your pins allow in which the repro passes, proven",
        usage="envbisect lock (--pins SOURCE... | --with REQ...) [--from LOCK] [options] "
        "(--repro FILE | --probe NAME | -- CMD...)",
        description="Resolve the newest environment the requirements allow and probe it. When "
        "it fails, find the release that broke it (against --from LOCK, --good-date, or the "
        "environment as of the newest exact pin's upload), hold that package below it, and "
        "resolve again, until an environment passes. Each constraint is proven (the version "
        "below passes and the first bad one fails, the rest held) and kept only while it is "
        "needed. Writes requirements.txt (hash-pinned), pylock.toml, constraints.txt and "
        "report.md. Exit 0 with a lock, 1 when there is none.",
    )
    o.attach(lock, o.PINS, o.EXTRAS)
    lock.add_argument(
        "--from",
        dest="from_lock",
        metavar="LOCK",
        help="upgrade mode: your working environment (a lockfile, pylock.toml or "
        "installed:PYTHON); take every upgrade that keeps the repro passing",
    )
    lock.add_argument(
        "--good-date",
        metavar="DATE",
        help="a date whose environment passed (default: the upload of the newest exact pin)",
    )
    o.ANY_FAILURE.add(lock, help="count any failure as the failure, not only one like the newest's")
    o.attach(lock, o.WITH, o.INDEX, o.PYTHON, o.PRE, o.JOBS, o.REPEAT, o.EXECUTION, o.PROBING,
             o.DRY_RUN)  # fmt: skip

    matrix = sub.add_parser(
        "matrix",
        help="run a compatibility matrix (matrices/*.toml) and publish its tables",
        description="Every cell a fresh uv environment probed for real, through the same store "
        "as run (an interrupted matrix resumes). Unless --full, rows are taken to be monotone: "
        "their ends are probed, agreeing ends make the cells between inferred, disagreeing "
        "ends are bisected. Tables go to DIR/<matrix>/.",
    )
    matrix.add_argument("file", metavar="FILE", help="a matrices/*.toml file")
    o.JOBS.add(matrix, help="cells probed at once, one per row (default 1)")
    o.attach(matrix, o.EXECUTION)
    o.ENV.add(matrix, help="set NAME=VALUE for every cell's probes (repeatable; interpreter "
              "variables from your shell never reach them): part of what was probed, and "
              "recorded in DIR/<matrix>/run.json")  # fmt: skip
    matrix.add_argument("--full", action="store_true",
                        help="probe every cell (no inference, no --max-cells limit)")  # fmt: skip
    matrix.add_argument("--max-cells", type=o.count, default=500, metavar="N",
                        help="refuse larger matrices without --full (default 500)")  # fmt: skip
    o.FIND_LINKS.add(matrix, help="a folder of wheels of this machine (repeatable): replaces "
                     "the file's find_links and stands in for its torch_backend index; default: "
                     "your settings' find-links (pip.conf, uv.toml, UV_FIND_LINKS)")  # fmt: skip
    o.NO_CONFIG.add(matrix, help="ignore the find-links folders of your settings")
    o.RESULTS.add(matrix, help="the store and the published tables (default ./results)")
    o.OFFLINE.add(matrix, help="no network: metadata and packages from the caches")
    o.CACHE_DIR.add(matrix, help="the metadata cache")
    o.JSON.add(matrix)
    o.DRY_RUN.add(matrix)

    publish = sub.add_parser(
        "publish",
        help="regenerate a matrix's tables, pictures and lockfiles from the store",
        description="Writes DIR/<matrix>/table.md, table.html, heatmap.svg, results.json, "
        "results.csv, a lockfile per passing cell and the recommended (newest passing) one.",
    )
    publish.add_argument("files", nargs="*", metavar="FILE",
                         help="matrices/*.toml files (default: all of matrices/)")  # fmt: skip
    o.attach(publish, o.RESULTS)
    o.FIND_LINKS.add(publish, help="a folder of wheels of this machine (repeatable), as for "
                     "matrix: the lockfiles name the file's public indexes, each file from the "
                     "folder checked there by hash")  # fmt: skip
    o.NO_CONFIG.add(publish, help="ignore the find-links folders of your settings")
    o.JSON.add(publish, help="print the files written as one JSON object on stdout")
    o.OFFLINE.add(publish, help="metadata from the cache only")
    o.CACHE_DIR.add(publish, help="the metadata cache")

    env = sub.add_parser(
        "env",
        help="report on an environment (versions, torch/CUDA build, driver, GPUs) and check it",
        description="The environment report maintainers ask for, with checks that each come "
        "with a fix.",
    )
    o.PYTHON.add(
        env,
        metavar="PATH",
        default=sys.executable,
        help="the interpreter to report on (default: the one running envbisect)",
    )
    env.add_argument(
        "--quick",
        action="store_true",
        help="do not import torch or test compiled packages against numpy",
    )
    o.JSON.add(env)

    completion = sub.add_parser(
        "completion",
        help="print a shell completion script (bash, zsh or tcsh)",
        description="Prints a completion script made from envbisect's own parser (shtab): "
        "e.g. envbisect completion bash > ~/.local/share/bash-completion/completions/envbisect",
    )
    completion.add_argument("shell", choices=("bash", "zsh", "tcsh"))
    # -q and -v after the subcommand too (envbisect run ... -q), as before it.
    for one in sub.choices.values():
        o.attach(one, o.QUIET, o.VERBOSE)
    return parser


class _Signalled(KeyboardInterrupt):
    """SIGTERM or SIGHUP, raised in the main thread where Ctrl-C would be."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


_received: list[int] = []
_FORWARDED = (signal.SIGTERM, signal.SIGHUP)


def _on_signal(signum: int, frame: object) -> None:
    if _received:
        return  # already winding down: let the cleanup finish
    _received.append(signum)
    raise _Signalled(signum)


def main(argv: Sequence[str] | None = None) -> int:
    try:
        return _guarded(argv)
    except BrokenPipeError:
        # stdout closed early (``| head``): end quietly, as a shell pipeline's reader expects;
        # point stdout at /dev/null so the interpreter's last flush does not complain.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 128 + signal.SIGPIPE


def _guarded(argv: Sequence[str] | None) -> int:
    """SIGTERM and SIGHUP take Ctrl-C's path while a command runs (main thread only)."""
    if threading.current_thread() is not threading.main_thread():
        return _main(argv)
    _received.clear()
    saved = {s: signal.signal(s, _on_signal) for s in _FORWARDED}
    try:
        return _main(argv)
    finally:
        for s, handler in saved.items():
            with contextlib.suppress(TypeError, ValueError):
                signal.signal(s, handler)


def _main(argv: Sequence[str] | None) -> int:
    args_list = list(sys.argv[1:] if argv is None else argv)
    tail: list[str] = []
    if "--" in args_list:
        cut = args_list.index("--")
        args_list, tail = args_list[:cut], args_list[cut + 1 :]
    parser = build_parser()
    args, unknown = parser.parse_known_args(args_list)
    if unknown:
        sub = _subparser(parser, args.command)
        message = f"unrecognized arguments: {' '.join(unknown)}"
        print_error(UsageError(message, hint=suggest(message, sub, unknown)
                               or f"see {sub.prog} --help"))  # fmt: skip
        return 2
    if args.command is None:
        parser.print_help(sys.stderr)
        return 2
    # For reports: a credential passed with --env is masked (URLs are, in the session).
    full = shlex.join(["envbisect", *mask_env_args(sys.argv[1:] if argv is None else argv)])
    command = COMMANDS[args.command]
    quiet, verbose = getattr(args, "quiet", False), getattr(args, "verbose", False)
    if quiet and verbose:
        print_error(UsageError("-q and -v cannot be used together",
                               hint="-q prints the answer only, -v everything"))  # fmt: skip
        return 2
    # emoji=False: rich would turn ``:six:`` in ``import:six`` into an emoji. quiet: nothing
    # on stderr but errors (print_error has its own console), the answer on stdout.
    console = Console(stderr=True, soft_wrap=True, emoji=False, quiet=quiet)
    reporter = RichReporter(console, quiet=quiet, verbose=verbose)
    ctx = commands.Context(args=args, tail=tail, command=full, console=console, reporter=reporter)
    try:
        try:
            if tail and not command.tail:
                raise UsageError(
                    f"envbisect {args.command} takes no command after --",
                    hint=f"see envbisect {args.command} --help",
                )
            implied.apply(args, reporter.message)  # a report's Python and torch, a script's
            if hasattr(args, "index_url"):  # one line: which indexes, and where each came from
                torch = getattr(args, "torch_backend", None)
                also = (f"; torch from PyTorch's {torch} index (--torch-backend)"
                        if torch and torch != "none" else "")  # fmt: skip
                reporter.message(o.index_settings(args).describe() + also)
            elif hasattr(args, "find_links") and o.index_settings(args).links:
                # matrix, publish: the file names the indexes; a folder of this machine's
                # overrides its folders (modes/matrix.py matrix_indexes).
                from envbisect.redact import mask_url

                links = o.index_settings(args).links
                folders = ", ".join(f"{mask_url(f.url)} ({f.origin})" for f in links)
                reporter.message(f"envbisect: find-links: {folders}; over the matrix file's "
                                 "find_links and torch_backend")  # fmt: skip
            if hasattr(args, "probe_env"):
                _say_held_back(reporter, args)
            return command.run(ctx)
        finally:
            reporter.close()  # the live display ends before the answer or an error
    except NoAnswer as e:
        if e.result is not None:  # the search ran and its report is written: show them
            return commands.no_answer(ctx, e.result, e)
        return _fail(args, e)
    except EnvbisectError as e:
        return _fail(args, e)
    except KeyboardInterrupt:
        return _fail(args, Interrupted("interrupted", hint="run the same command again to resume"))


def _say_held_back(reporter: RichReporter, args: argparse.Namespace) -> None:
    """One line naming the interpreter variables of this shell that probes go without."""
    from envbisect.env.scrub import held_back

    names = held_back(os.environ, o.probe_env(args))
    if names:
        reporter.message(
            f"envbisect: {', '.join(names)} from your shell {'does' if len(names) == 1 else 'do'}"
            " not reach the probes (they change what runs or what it imports); pass one "
            "with --env NAME=VALUE to test with it"
        )


def _subparser(parser: argparse.ArgumentParser, command: str | None) -> argparse.ArgumentParser:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction) and command in action.choices:
            return cast(argparse.ArgumentParser, action.choices[command])
    return parser


def _fail(args: argparse.Namespace, err: EnvbisectError) -> int:
    if isinstance(err, Interrupted) and _received:
        sig = signal.Signals(_received[0])
        err.exit_code = 128 + sig.value
        err.message = f"{sig.name} received: {err.message}"
    if getattr(args, "json", False):
        print(json.dumps({"status": "error", "error": error_json(err)}, indent=2))
    print_error(err)
    return err.exit_code
