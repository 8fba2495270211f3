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

import os
import sys

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (14 ms)

if TYPE_CHECKING:
    import argparse
    from collections.abc import Callable, Sequence

    from envbisect.cli.context import Context
    from envbisect.cli.display import AnyConsole, Color, RichProgress
    from envbisect.cli.optionset import Options
    from envbisect.errors import EnvbisectError

# ``envbisect --version`` and ``-V`` answer before anything else is imported: the rest of this
# module imports what it needs where it needs it (argparse and rich alone cost more than the
# interpreter's own start).
_VERSION_FLAGS = (["--version"], ["-V"])


class Command:
    """A subcommand: the function that runs it, named (module, attribute) and imported when
    the command runs, so that one command does not load every other's modules."""

    __slots__ = ("tail", "where")

    def __init__(self, where: tuple[str, str], *, tail: bool = False) -> None:
        self.where = where
        self.tail = tail  # takes a command after --

    def load(self) -> Callable[[Context], int]:
        import importlib

        module, name = self.where
        fn: Callable[[Context], int] = getattr(importlib.import_module(module), name)
        return fn


def _in(module: str, name: str, *, tail: bool = False) -> Command:
    """The command whose function ``name`` is in cli/commands/``module``.py."""
    return Command((f"envbisect.cli.commands.{module}", name), tail=tail)


COMMANDS: dict[str, Command] = {
    "run": _in("run", "cmd_run", tail=True),
    "probe": _in("probe", "cmd_probe", tail=True),
    "repro": _in("repro", "cmd_repro"),
    "commits": _in("commits", "cmd_commits", tail=True),
    "diff": _in("diff", "cmd_diff", tail=True),
    "lock": _in("lock", "cmd_lock", tail=True),
    "pins": _in("pins", "cmd_pins"),
    "versions": _in("versions", "cmd_versions"),
    "matrix": _in("matrix", "cmd_matrix"),  # the whole matrix, or --update
    "publish": _in("publish", "cmd_publish"),
    "ci-template": _in("ci_template", "cmd_ci_template"),
    "env": _in("env", "cmd_env"),
    "check": _in("check", "cmd_check"),
    "why": _in("why", "cmd_why"),
    "completion": _in("completion", "cmd_completion"),
}


class _Signalled(KeyboardInterrupt):
    """SIGTERM or SIGHUP, raised in the main thread where Ctrl-C would be."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


_received: list[int] = []


def forwarded() -> tuple[int, ...]:
    """The signals taken as Ctrl-C: SIGTERM and SIGHUP."""
    import signal

    return (signal.SIGTERM, signal.SIGHUP)


def _on_signal(signum: int, frame: object) -> None:
    if _received:
        return  # already winding down: let the cleanup finish
    _received.append(signum)
    raise _Signalled(signum)


def main(argv: Sequence[str] | None = None) -> int:
    try:
        if list(sys.argv[1:] if argv is None else argv) in _VERSION_FLAGS:
            from envbisect import __version__

            print(f"envbisect {__version__}")
            return 0
        return _guarded(argv)
    except BrokenPipeError:
        import signal

        # stdout closed early (``| head``): end quietly, as a shell pipeline's reader expects;
        # point stdout at /dev/null so the interpreter's last flush does not complain.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 128 + signal.SIGPIPE


def _guarded(argv: Sequence[str] | None) -> int:
    """SIGTERM and SIGHUP take Ctrl-C's path while a command runs (main thread only)."""
    import contextlib
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        return _main(argv)
    _received.clear()
    saved = {s: signal.signal(s, _on_signal) for s in forwarded()}
    try:
        return _main(argv)
    except _Signalled as e:
        # Came before _main's own handler was in place (the parser being built): nothing
        # started yet, so end as quietly as a signal during the run would.
        from envbisect.cli.display import print_error
        from envbisect.errors import Interrupted

        sig = signal.Signals(e.signum)
        print_error(
            Interrupted(f"{sig.name} received: interrupted", hint="run the same command again")
        )
        return 128 + sig.value
    finally:
        for s, handler in saved.items():
            with contextlib.suppress(TypeError, ValueError):
                signal.signal(s, handler)


def build_parser(only: str | None = None, *, json_errors: bool = False) -> argparse.ArgumentParser:
    """The whole parser (cli/parser.py), imported when a command line is to be read
    (``only``: a parser of that subcommand alone; ``json_errors``: its usage errors print the
    ``--json`` error object too)."""
    from envbisect.cli import parser

    return parser.build_parser(only, json_errors=json_errors)


def _main(argv: Sequence[str] | None) -> int:
    words = list(sys.argv[1:] if argv is None else argv)
    read = _parse(words)
    if isinstance(read, int):
        return read
    parser, args, tail = read
    as_json = "--json" in words[: words.index("--")] if "--" in words else "--json" in words
    from envbisect.cli.display import Color, RichProgress, report_error, stderr_console
    from envbisect.errors import EnvbisectError, Interrupted, NoAnswer, UsageError

    color = Color.of(args)
    # -q and -v, before or after the command (no default is set: given or absent)
    quiet, verbose = bool(vars(args).get("quiet")), bool(vars(args).get("verbose"))
    if quiet and verbose:
        report_error(
            UsageError(
                "-q and -v cannot be used together", hint="-q prints the answer only, -v everything"
            ),
            color,
            as_json=as_json,
        )
        return 2
    # quiet: nothing on stderr but errors (print_error has its own console), the answer on
    # stdout.
    console = stderr_console(color=color, quiet=quiet)
    progress = RichProgress(console, quiet=quiet, verbose=verbose)
    ctx: Context | None = None
    try:
        try:
            ctx = _context(parser, args, tail, words, argv, console, progress, verbose=verbose)
            return COMMANDS[args.command].load()(ctx)
        finally:
            progress.close()  # the live display ends before the answer or an error
    except NoAnswer as e:
        from envbisect.cli.context import no_answer
        from envbisect.core.results.search import SearchResult

        if ctx is not None and isinstance(e.result, SearchResult):  # its report is written
            return no_answer(ctx, e.result, e)
        return _fail(color, e, as_json)
    except EnvbisectError as e:
        return _fail(color, e, as_json)
    except KeyboardInterrupt:
        stop = Interrupted("interrupted", hint="run the same command again to resume")
        return _fail(color, stop, as_json)


def _parse(words: list[str]) -> tuple[argparse.ArgumentParser, argparse.Namespace, list[str]] | int:
    """The parser, what it read and the command after ``--``; or the exit code where the line
    ends here (``help``, no command, an unknown argument: said as usage errors)."""
    from envbisect.cli.parser import WholeParserNeeded, named_command, subparser, suggest

    tail: list[str] = []
    if "--" in words:
        cut = words.index("--")
        words, tail = words[:cut], words[cut + 1 :]
    # --json anywhere before --: every error, a usage error too, is also the error object on
    # stdout (as the command's own failures are).
    as_json = "--json" in words
    parser = build_parser(named_command(words, tuple(COMMANDS)), json_errors=as_json)
    if words[:1] == ["help"]:  # as uv, pip and ruff: envbisect help [CMD]
        if len(words) == 1:
            parser.print_help()
            return 0
        if words[1] not in COMMANDS:
            return _usage(
                f"envbisect help: there is no command {words[1]!r}",
                f"the commands: {', '.join(COMMANDS)} (envbisect help lists them)",
                as_json,
            )
        words = [words[1], "--help"]
    try:
        args, unknown = parser.parse_known_args(words)
    except WholeParserNeeded:
        parser = build_parser(json_errors=as_json)
        args, unknown = parser.parse_known_args(words)
    # --help has printed and left by now: what follows is imported for a command that runs.
    if unknown:
        sub = subparser(parser, args.command)
        message = f"unrecognized arguments: {' '.join(unknown)}"
        return _usage(
            message, suggest(message, sub, unknown) or f"see {sub.prog} --help", as_json, args
        )
    if args.command is None:
        if as_json:
            return _usage("no command given", "see envbisect --help", as_json)
        parser.print_help(sys.stderr)
        return 2
    if tail and not COMMANDS[args.command].tail:
        return _usage(
            f"envbisect {args.command} takes no command after --",
            f"see envbisect {args.command} --help",
            as_json,
            args,
        )
    return parser, args, tail


def _usage(message: str, hint: str, as_json: bool, args: argparse.Namespace | None = None) -> int:
    from envbisect.cli.display import Color, report_error
    from envbisect.errors import UsageError

    report_error(UsageError(message, hint=hint), Color.of(args), as_json=as_json)
    return 2


def _context(
    parser: argparse.ArgumentParser,
    args: argparse.Namespace,
    tail: list[str],
    words: list[str],
    argv: Sequence[str] | None,
    console: AnyConsole,
    progress: RichProgress,
    *,
    verbose: bool,
) -> Context:
    """The options resolved once (each value with its origin; ``args`` is not read again, and
    nothing writes either), what they are said to mean on stderr, and the command's
    context."""
    import shlex

    from envbisect.cli.context import Context
    from envbisect.cli.origins import resolve
    from envbisect.cli.parser import options_of, subparser
    from envbisect.redact import mask_env_args

    cut = words.index("--") if "--" in words else len(words)
    sub = subparser(parser, args.command)
    opts = resolve(
        args, sub, words[:cut], progress.message, verbose=verbose, options=options_of(sub)
    )
    # For reports: a credential passed with --env is masked (URLs are, in the session).
    full = shlex.join(["envbisect", *mask_env_args(sys.argv[1:] if argv is None else argv)])
    _say_inputs(opts, progress)
    return Context(
        args=opts, tail=tail, command=full, console=console, progress=progress, parser=parser
    )


def _say_inputs(opts: Options, progress: RichProgress) -> None:
    """One line each: which indexes (and where each came from; check asks none offline), the
    wheel folders over a matrix file's, the shell's variables the probes go without, and the
    overrides."""
    from envbisect.cli import flags as o
    from envbisect.cli import ownflags as w
    from envbisect.cli import readflags

    offline_check = opts.command == "check" and not opts[w.ONLINE]
    if o.INDEX_URL in opts and not offline_check:
        torch = opts[o.TORCH_BACKEND]
        also = (
            f"; torch from PyTorch's {torch} index (--torch-backend)"
            if torch and torch != "none"
            else ""
        )
        progress.message(readflags.index_settings(opts).describe() + also)
    elif not offline_check and o.FIND_LINKS in opts and readflags.index_settings(opts).links:
        # matrix, publish: the file names the indexes; a folder of this machine's
        # overrides its folders (modes/living/matrix.py matrix_indexes).
        from envbisect.redact import mask_url

        links = readflags.index_settings(opts).links
        folders = ", ".join(f"{mask_url(f.url)} ({f.origin})" for f in links)
        progress.message(
            f"envbisect: find-links: {folders}; over the matrix file's find_links and torch_backend"
        )
    if o.ENV in opts:
        _say_held_back(progress, opts)
    overrides = readflags.overrides(opts)
    if overrides:
        progress.message(
            f"envbisect: overrides: {', '.join(overrides)} (every requirement on these projects "
            "takes these versions, as uv's --overrides)"
        )


def _say_held_back(progress: RichProgress, opts: Options) -> None:
    """One line naming the interpreter variables of this shell that probes go without."""
    from envbisect.cli.readflags import probe_env
    from envbisect.env.scrub import held_back

    names = held_back(os.environ, probe_env(opts))
    if names:
        progress.message(
            f"envbisect: {', '.join(names)} from your shell {'does' if len(names) == 1 else 'do'}"
            " not reach the probes (they change what runs or what it imports); pass one "
            "with --env NAME=VALUE to test with it"
        )


def _fail(color: Color, err: EnvbisectError, as_json: bool) -> int:
    import signal

    from envbisect.cli.display import report_error
    from envbisect.errors import Interrupted

    if isinstance(err, Interrupted) and _received:
        sig = signal.Signals(_received[0])
        err.exit_code = 128 + sig.value
        err.message = f"{sig.name} received: {err.message}"
    report_error(err, color, as_json=as_json)
    return err.exit_code
