"""The command line's grammar: one ``Sub`` per subcommand (its texts and the options it takes,
each declared once in cli/flags.py), and ``build_parser`` that puts them together.

Who does what: this module says what may be typed; main.py runs the command it names and
turns errors into exit codes. Nothing here is imported by a command, so ``--help`` stays fast;
the reference docs are made from ``build_parser()`` (docs/hooks.py).
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, NoReturn, cast

from envbisect import __version__
from envbisect.cli import flags as o
from envbisect.cli import helpfmt
from envbisect.cli.subcommands import BUILDS, SUBCOMMANDS, Sub
from envbisect.errors import UsageError
from envbisect.optionspec import BadValue, Kind, Option

if TYPE_CHECKING:
    Subcommands = argparse._SubParsersAction[argparse.ArgumentParser]


class WholeParserNeeded(Exception):
    """An error at the top of a parser made for one subcommand: its usage line would name that
    one alone, so the whole parser reads the command line again (and says it as ever)."""


class _Parser(argparse.ArgumentParser):
    made_for: str | None = None  # the one subcommand this top-level parser was made for
    json_errors = False  # --json is on the command line: the error object on stdout too
    options: dict[str, Option[Any]]  # dest -> the option it was made from (``add``)

    def __init__(self, *args: Any, **kw: Any) -> None:
        # No abbreviations (as uv): ``--index`` is not taken for ``--index-url``.
        super().__init__(*args, **{**kw, "allow_abbrev": False})
        self.options = {}

    def error(self, message: str) -> NoReturn:
        if self.made_for is not None:
            raise WholeParserNeeded(message)
        from envbisect.cli.display import report_error  # rich: only when there is an error

        hint = suggest(message, self) or f"see {self.prog} --help"
        report_error(UsageError(message, hint=hint), as_json=self.json_errors)
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
        word = flags[0].split("=", 1)[0].rstrip(":,.")
        options = [s for a in parser._actions for s in a.option_strings if s.startswith("--")]
    close = difflib.get_close_matches(word, options, n=1, cutoff=0.6)
    if not close or close[0] == word:  # a flag that exists is not misspelt: its value is wrong
        return ""
    return f"did you mean {close[0]}? (see {parser.prog} --help)"


_ACTIONS = {Kind.SWITCH: "store_true", Kind.OFF: "store_false", Kind.MANY: "append"}


def add(parser: argparse.ArgumentParser, option: Option[Any]) -> None:
    """``option`` as an argument of ``parser``; the parser keeps the record by its ``dest``
    (cli/optionset.py reads the values by record), and a path's action is marked for
    completion (cli/completions.py)."""
    kw: dict[str, Any] = {"help": option.help}
    if option.kind is not Kind.POSITIONAL:
        kw["dest"] = option.dest
    if option.kind in _ACTIONS:
        kw["action"] = _ACTIONS[option.kind]
    if option.suppress:
        kw["default"] = argparse.SUPPRESS
    elif option.kind is not Kind.MANY or option.default != []:
        kw["default"] = option.default
    else:
        kw["default"] = []
    for name in ("metavar", "nargs", "choices"):
        if getattr(option, name) is not None:
            kw[name] = getattr(option, name)
    if option.required:
        kw["required"] = True
    if option.type is not None:
        kw["type"] = _argparse_type(option)
    action = parser.add_argument(*(option.flags or (option.dest,)), **kw)
    if option.path is not None:  # what a shell completes (cli/completions.py)
        action.path_kind = option.path  # type: ignore[attr-defined]
    if isinstance(parser, _Parser):
        parser.options[action.dest] = option


def _argparse_type(option: Option[Any]) -> Any:
    """The option's type as argparse calls it: a ``BadValue`` becomes its message."""
    parse = option.type
    assert parse is not None

    def typed(text: str) -> Any:
        try:
            return parse(text)
        except BadValue as e:
            raise argparse.ArgumentTypeError(str(e)) from None

    typed.__name__ = getattr(parse, "__name__", "value")
    return typed


def _add_sub(sub: Subcommands, command: Sub) -> argparse.ArgumentParser:
    one = sub.add_parser(
        command.name, help=command.help, usage=command.usage, description=command.description
    )
    attach(one, *command.takes)
    return one


def attach(parser: argparse.ArgumentParser, *opts: Option[Any] | tuple[Option[Any], ...]) -> None:
    for one in opts:
        for option in (one,) if isinstance(one, Option) else one:
            add(parser, option)


def build_parser(only: str | None = None, *, json_errors: bool = False) -> argparse.ArgumentParser:
    """The whole command line: every subcommand and its options (``only``: that subcommand
    alone, for a command line that names it: its options, not all 370, are made).
    ``json_errors``: a usage error also prints the ``--json`` error object on stdout."""
    parser = _Parser(
        prog="envbisect",
        formatter_class=helpfmt.Formatter,
        description="Find which package version broke a "
        "Python environment, prove it, and hand back one that works.",
        epilog=f"docs: {helpfmt.DOCS} (or docs/ in the source: nox -s docs, mkdocs serve)",
    )
    parser.add_argument("-V", "--version", action="version", version=f"envbisect {__version__}")
    attach(parser, o.QUIET, o.VERBOSE, o.COLOR)
    # _Parser is an ArgumentParser: Sub.add takes the common type.
    sub = cast("Subcommands", parser.add_subparsers(dest="command", parser_class=_Parser))
    parser.made_for = only
    parser.json_errors = json_errors
    for command in SUBCOMMANDS:
        if only is not None and command.name != only:
            continue
        one = _add_sub(sub, command)
        cast(_Parser, one).json_errors = json_errors
        # -q and -v after the subcommand too (envbisect run ... -q), as before it; -v's help
        # as this command means it.
        verbose = o.VERBOSE if command.name in BUILDS else o.VERBOSE_READS
        attach(one, o.QUIET, verbose, o.COLOR)
        helpfmt.arrange(one, command.name, cast(_Parser, one).options)
    return parser


_TOP_FLAGS = frozenset({"-q", "--quiet", "-v", "--verbose"})


def named_command(args: Sequence[str], commands: Sequence[str]) -> str | None:
    """The subcommand a command line runs, read as argparse reads it, where its parser alone
    will do: None where the line prints a completion from the whole parser, or has before its
    command anything but -q, -v and --color (``-h``, an abbreviation, a typo)."""
    i = 0
    while i < len(args):
        word = args[i]
        if word == "--color":
            i += 2
        elif word in _TOP_FLAGS or word.startswith("--color="):
            i += 1
        elif word in commands and word != "completion":
            return word  # its --help is its own parser's, the same either way
        else:
            return None
    return None


def subparser(parser: argparse.ArgumentParser, command: str | None) -> argparse.ArgumentParser:
    """The subcommand's parser (for its ``--help`` and its flags), else ``parser``."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction) and command in action.choices:
            return cast(argparse.ArgumentParser, action.choices[command])
    return parser


def options_of(parser: argparse.ArgumentParser) -> dict[str, Option[Any]]:
    """The records ``parser``'s options were made from, by dest."""
    return dict(parser.options) if isinstance(parser, _Parser) else {}
