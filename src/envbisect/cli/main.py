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
    from envbisect.cli.display import RichProgress
    from envbisect.cli.optionset import Draft, Options, Source
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
    from envbisect.cli.parser import WholeParserNeeded, named_command, subparser, suggest
    from envbisect.errors import UsageError

    args_list = list(sys.argv[1:] if argv is None else argv)
    tail: list[str] = []
    if "--" in args_list:
        cut = args_list.index("--")
        args_list, tail = args_list[:cut], args_list[cut + 1 :]
    # --json anywhere before --: every error, a usage error too, is also the error object on
    # stdout (as the command's own failures are).
    as_json = "--json" in args_list
    parser = build_parser(named_command(args_list, tuple(COMMANDS)), json_errors=as_json)
    if args_list[:1] == ["help"]:  # as uv, pip and ruff: envbisect help [CMD]
        if len(args_list) == 1:
            parser.print_help()
            return 0
        if args_list[1] not in COMMANDS:
            from envbisect.cli.display import report_error

            report_error(
                UsageError(
                    f"envbisect help: there is no command {args_list[1]!r}",
                    hint=f"the commands: {', '.join(COMMANDS)} (envbisect help lists them)",
                ),
                as_json=as_json,
            )
            return 2
        args_list = [args_list[1], "--help"]
    try:
        args, unknown = parser.parse_known_args(args_list)
    except WholeParserNeeded:
        parser = build_parser(json_errors=as_json)
        args, unknown = parser.parse_known_args(args_list)
    # --help has printed and left by now: what follows is imported for a command that runs.
    import shlex

    from envbisect.cli.context import Context
    from envbisect.cli.display import Color, RichProgress, report_error, stderr_console
    from envbisect.errors import EnvbisectError, Interrupted, NoAnswer
    from envbisect.redact import mask_env_args

    color = Color.of(args)
    if unknown:
        sub = subparser(parser, args.command)
        message = f"unrecognized arguments: {' '.join(unknown)}"
        report_error(
            UsageError(message, hint=suggest(message, sub, unknown) or f"see {sub.prog} --help"),
            color,
            as_json=as_json,
        )
        return 2
    if args.command is None:
        if as_json:
            report_error(
                UsageError("no command given", hint="see envbisect --help"), as_json=as_json
            )
        else:
            parser.print_help(sys.stderr)
        return 2
    # For reports: a credential passed with --env is masked (URLs are, in the session).
    full = shlex.join(["envbisect", *mask_env_args(sys.argv[1:] if argv is None else argv)])
    command = COMMANDS[args.command]
    quiet, verbose = getattr(args, "quiet", False), getattr(args, "verbose", False)
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
            if tail and not command.tail:
                raise UsageError(
                    f"envbisect {args.command} takes no command after --",
                    hint=f"see envbisect {args.command} --help",
                )
            # The options, resolved once (each value with its origin); ``args`` is not read
            # again, and nothing writes either.
            opts = resolve_options(
                args, subparser(parser, args.command), args_list, progress.message, verbose=verbose
            )
            ctx = Context(
                args=opts, tail=tail, command=full, console=console, progress=progress,
                parser=parser,
            )  # fmt: skip
            args = opts
            from envbisect.cli import readflags as o  # the flags read back: after parsing

            offline_check = args.command == "check" and not getattr(args, "online", False)
            if hasattr(args, "index_url") and not offline_check:
                # one line: which indexes, and where each came from (check asks none offline)
                torch = getattr(args, "torch_backend", None)
                also = (
                    f"; torch from PyTorch's {torch} index (--torch-backend)"
                    if torch and torch != "none"
                    else ""
                )
                progress.message(o.index_settings(args).describe() + also)
            elif not offline_check and hasattr(args, "find_links") and o.index_settings(args).links:
                # matrix, publish: the file names the indexes; a folder of this machine's
                # overrides its folders (modes/living/matrix.py matrix_indexes).
                from envbisect.redact import mask_url

                links = o.index_settings(args).links
                folders = ", ".join(f"{mask_url(f.url)} ({f.origin})" for f in links)
                progress.message(
                    f"envbisect: find-links: {folders}; over the matrix file's "
                    "find_links and torch_backend"
                )
            if hasattr(args, "probe_env"):
                _say_held_back(progress, args)
            if getattr(args, "overrides", None):
                shown = ", ".join(o.read_overrides(args.overrides))
                progress.message(
                    f"envbisect: overrides: {shown} (every requirement on these projects takes "
                    "these versions, as uv's --overrides)"
                )
            return command.load()(ctx)
        finally:
            progress.close()  # the live display ends before the answer or an error
    except NoAnswer as e:
        from envbisect.cli.context import no_answer
        from envbisect.core.results.search import SearchResult

        if ctx is not None and isinstance(e.result, SearchResult):  # its report is written
            return no_answer(ctx, e.result, e)
        return _fail(args, e, as_json)
    except EnvbisectError as e:
        return _fail(args, e, as_json)
    except KeyboardInterrupt:
        stop = Interrupted("interrupted", hint="run the same command again to resume")
        return _fail(args, stop, as_json)


def resolve_options(
    parsed: argparse.Namespace,
    parser: argparse.ArgumentParser,
    argv: Sequence[str],
    say: Callable[[str], None],
    *,
    verbose: bool,
) -> Options:
    """The options of the command line ``argv`` that ``parser`` (the subcommand's) parsed
    into ``parsed``, resolved once, each value with its origin (cli/optionset.py has the
    order); each value taken is said on stderr."""
    from pathlib import Path

    from envbisect.cli import implied
    from envbisect.cli.optionset import Draft, Source, flag_names, typed_dests

    draft = Draft(parsed, typed_dests(parser, argv), flag_names(parser))
    python_here = draft.has("python") and parsed.command != "env"
    uv_python = os.environ.get("UV_PYTHON", "").strip()
    if python_here and uv_python:
        _offer_python(draft, uv_python, "UV_PYTHON", Source.ENVIRONMENT, say)
    implied.apply(draft, say)  # uv's variables; a report's Python and torch, a script's
    conf = None
    if not draft.get("no_config"):  # the table's reader (and tomllib) only where it is read
        from envbisect.cli import projectconf

        conf = projectconf.find(Path.cwd())
    if conf is not None:
        taken = projectconf.apply(draft, conf)
        if verbose and taken:
            say(f"envbisect: from {conf.origin}: {', '.join(taken)}")
    if python_here and draft.get("python") is None:
        from envbisect.env.pyrequest import default_python

        found = default_python()
        if found is not None:
            _offer_python(draft, found.request, found.origin, Source.DEFAULT, say)
    opts = draft.freeze(conf)
    chosen = opts.chosen()
    if verbose and chosen:
        say(f"envbisect: options: {', '.join(chosen)}")
    return opts


def _offer_python(
    draft: Draft, request: str, where: str, source: Source, say: Callable[[str], None]
) -> None:
    """uv's Python request when --python is not typed: UV_PYTHON, or uv's rules."""
    from envbisect.cli.optionset import Origin

    if draft.offer("python", request, Origin(source, where)):
        say(f"envbisect: Python {request} (from {where}; --python to choose another)")


def _say_held_back(progress: RichProgress, args: argparse.Namespace) -> None:
    """One line naming the interpreter variables of this shell that probes go without."""
    from envbisect.cli.readflags import probe_env
    from envbisect.env.scrub import held_back

    names = held_back(os.environ, probe_env(args))
    if names:
        progress.message(
            f"envbisect: {', '.join(names)} from your shell {'does' if len(names) == 1 else 'do'}"
            " not reach the probes (they change what runs or what it imports); pass one "
            "with --env NAME=VALUE to test with it"
        )


def _fail(args: argparse.Namespace, err: EnvbisectError, as_json: bool) -> int:
    import signal

    from envbisect.cli.display import Color, report_error
    from envbisect.errors import Interrupted

    if isinstance(err, Interrupted) and _received:
        sig = signal.Signals(_received[0])
        err.exit_code = 128 + sig.value
        err.message = f"{sig.name} received: {err.message}"
    report_error(err, Color.of(args), as_json=as_json or bool(getattr(args, "json", False)))
    return err.exit_code
