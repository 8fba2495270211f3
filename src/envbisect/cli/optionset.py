"""The options of one invocation, resolved once before any mode runs, each with its origin.

Who does what: argparse reads the command line (cli/parser.py); main.py's ``resolve_options``
then reads that namespace once, never writes it, and builds (through a ``Draft``) the frozen
``Options`` every command reads. A
value comes from the first of these that gives one, in this order (``Source``):

    the command line    what was typed
    the environment     uv's own variables, as uv reads them (UV_PYTHON, UV_EXCLUDE_NEWER,
                        UV_TORCH_BACKEND: each stands for its flag, as in uv)
    the inputs          what the command's inputs imply (cli/implied.py): a bug report's Python
                        and torch build, a PEP 723 script's requires-python and [tool.uv]
    [tool.envbisect]    the repository's table (cli/projectconf.py)
    the default         the flag's default; for --python, uv's rules (.python-version, the
                        active virtualenv: env/pyrequest.py)

Each step offers values (``Draft.offer``); an offer is taken only over a value of a lower
source, and the step says on stderr what it took. ``-v`` prints every value that is not a
default, with where it came from. Two rewrites keep the origin: a cut-off written as a span
(``7 days``) becomes the moment it names, and a script's dependencies join ``--with``.
"""

from __future__ import annotations

import argparse
import enum
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from envbisect.optionspec import Option

T = TypeVar("T")
Say = Callable[[str], None]


class Source(enum.Enum):
    """Where a value came from, highest rank first."""

    FLAG = "the command line"
    ENVIRONMENT = "the environment"
    INPUTS = "the command's inputs"
    PROJECT = "[tool.envbisect]"
    DEFAULT = "default"


_RANK = {s: i for i, s in enumerate(Source)}


class Table(Protocol):
    """The repository's table (cli/projectconf.py ``ProjectConfig``)."""

    @property
    def origin(self) -> str: ...

    @property
    def values(self) -> dict[str, Any]: ...


@dataclass(frozen=True, slots=True)
class Origin:
    """A value's source, and where exactly (``UV_PYTHON``, a report's file name, a
    pyproject.toml's table, uv's rule) when the source alone does not say."""

    source: Source
    where: str = ""

    def describe(self) -> str:
        return self.where or self.source.value


FLAG, DEFAULT = Origin(Source.FLAG), Origin(Source.DEFAULT)


class Options(argparse.Namespace):
    """The resolved options (module doc), never written: ``opts[JOBS]`` is the value of the
    option that record declares (cli/flags.py), its default where the subcommand does not
    take it, and ``JOBS in opts`` whether it does; a subcommand's own arguments read as the
    parsed namespace's (``opts.report``). ``origin(dest)`` says where a value came from;
    ``derived`` keeps what is computed from the options once per invocation (the index
    settings: cli/readflags.py)."""

    def __init__(
        self,
        values: Mapping[str, Any],
        origins: Mapping[str, Origin],
        project: Table | None = None,
        flags: Mapping[str, str] | None = None,
    ) -> None:
        for dest, value in values.items():
            object.__setattr__(self, dest, value)
        object.__setattr__(self, "_values", dict(values))
        object.__setattr__(self, "_origins", dict(origins))
        object.__setattr__(self, "_flags", dict(flags or {}))
        object.__setattr__(self, "_project", project)
        object.__setattr__(self, "_derived", {})

    def __getitem__(self, option: Option[T]) -> T:
        values: dict[str, Any] = self._values
        return values.get(option.dest, option.default)  # type: ignore[no-any-return]

    def __contains__(self, option: object) -> bool:
        return isinstance(option, Option) and option.dest in self._values

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"options are resolved once (cli/optionset.py): not {name}")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"options are resolved once (cli/optionset.py): not {name}")

    @property
    def project(self) -> Table | None:
        """The repository's ``[tool.envbisect]`` table, None without one (or --no-config)."""
        return self._project  # type: ignore[no-any-return]

    def origin(self, dest: str) -> Origin:
        return self._origins.get(dest, DEFAULT)  # type: ignore[no-any-return]

    def derived(self, key: str, make: Callable[[], Any]) -> Any:
        """``make()``, once per invocation."""
        memo: dict[str, Any] = self._derived
        if key not in memo:
            memo[key] = make()
        return memo[key]

    def chosen(self) -> list[str]:
        """``--flag value (origin)`` for each value that is not a default, for -v."""
        out = []
        for dest, origin in sorted(self._origins.items()):
            value = getattr(self, dest, None)
            if origin.source is Source.DEFAULT or dest in _NOT_SAID or value in (None, False):
                continue
            flag = self._flags.get(dest) or "--" + dest.replace("_", "-")
            if value is True:
                out.append(flag)
                continue
            items = value if isinstance(value, list | tuple) else [value]
            shown = " ".join(_shown(str(v)) for v in items)
            out.append(f"{flag} {shown} ({origin.describe()})")
        return out


def _shown(value: str) -> str:
    """A value as -v may print it: credentials masked (a URL's user info; ``NAME=VALUE`` of
    ``--env`` when the name or the value says secret)."""
    from envbisect.redact import mask_env, mask_text

    name, eq, rest = value.partition("=")
    if eq and name.isidentifier():
        return f"{name}={mask_env(name, rest)}"
    return mask_text(value)


_NOT_SAID = frozenset({"command"})


class Draft:
    """The options while they are resolved: every value of the parsed namespace with its
    origin (typed or default), and the offers of each step (module doc); ``options``: the
    records the subcommand's options were made from, by dest."""

    def __init__(
        self,
        parsed: argparse.Namespace,
        typed: Iterable[str],
        flags: Mapping[str, str] | None = None,
        options: Mapping[str, Option[Any]] | None = None,
    ) -> None:
        self._flags = dict(flags or {})  # dest -> its long flag, as -v names it
        self.options = dict(options or {})
        self._values: dict[str, Any] = dict(vars(parsed))
        given = set(typed)
        self._origins = {d: FLAG if d in given else DEFAULT for d in self._values}

    def has(self, dest: str) -> bool:
        """Whether the subcommand has the option at all."""
        return dest in self._values

    def get(self, dest: str, default: Any = None) -> Any:
        return self._values.get(dest, default)

    def origin(self, dest: str) -> Origin:
        return self._origins.get(dest, DEFAULT)

    def offer(self, dest: str, value: Any, origin: Origin) -> bool:
        """Take ``value`` for ``dest`` if the subcommand has it and its present value comes
        from a lower source (a default may replace a default: uv's rules for --python);
        whether it was taken."""
        now = self.origin(dest).source
        lower = _RANK[origin.source] < _RANK[now] or now is origin.source is Source.DEFAULT
        if dest not in self._values or not lower:
            return False
        self._values[dest], self._origins[dest] = value, origin
        return True

    def rewrite(self, dest: str, value: Any) -> None:
        """The same value in another form (a span as its moment), its origin kept."""
        self._values[dest] = value

    def freeze(self, project: Table | None) -> Options:
        return Options(self._values, self._origins, project, self._flags)


def given(argv: Iterable[str], flags: tuple[str, ...]) -> bool:
    """Whether the command line names one of the long ``flags``: whole, or with ``=VALUE``
    (the parser takes no abbreviation)."""
    words = {a.split("=", 1)[0] for a in argv if a.startswith("--") and len(a) > 2}
    return any(f in words for f in flags)


def flag_names(parser: argparse.ArgumentParser) -> dict[str, str]:
    """Each option's long flag (``probe_env`` -> ``--env``)."""
    out: dict[str, str] = {}
    for action in parser._actions:
        longs = [f for f in action.option_strings if f.startswith("--")]
        if longs:
            out.setdefault(action.dest, longs[0])
    return out


def typed_dests(parser: argparse.ArgumentParser, argv: Iterable[str]) -> set[str]:
    """The options the command line gives (whole or with ``=VALUE``; a short flag with its
    value joined, ``-p3.12``) and every positional argument."""
    words = list(argv)
    out = set()
    for action in parser._actions:
        longs = tuple(f for f in action.option_strings if f.startswith("--"))
        shorts = [f for f in action.option_strings if not f.startswith("--")]
        if (
            not action.option_strings
            or given(words, longs)
            or any(w.startswith(s) and not w.startswith("--") for w in words for s in shorts)
        ):
            out.add(action.dest)
    return out


def parsed(argv: Sequence[str], parser: argparse.ArgumentParser | None = None) -> Options:
    """The options of ``argv`` as typed alone: no environment, inputs or table consulted (what
    a test or a tool reads a command line with; ``parser``: the whole one by default)."""
    from envbisect.cli.parser import build_parser, options_of, subparser

    whole = parser or build_parser()
    args = whole.parse_args(list(argv))
    sub = subparser(whole, args.command)
    draft = Draft(args, typed_dests(sub, argv), flag_names(sub), options_of(sub))
    return draft.freeze(None)
