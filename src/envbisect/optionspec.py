"""One option, declared once: the record the parser, the ``[tool.envbisect]`` reader, ``-v``'s
origin line, completion and the docs' reference are all made from.

An ``Option`` names its flags (none: a positional argument), where its value lands (``dest``),
its kind (a value, a switch, a repeatable value), its type and choices, its default, its help
and the ``--help`` group it is listed under; and, where they exist, the environment variable
that stands for it (uv's, as uv reads it) and its key in a repository's ``[tool.envbisect]``
table (with what the key's value must be). The value types are here too, so that an option's
value is checked by one function wherever it is given: typed, in the table, or in the
environment.

Who declares what: cli/flags.py the options of every command, each executor its own
(exec/kinds/). Light on purpose (no argparse here, nothing of the modes): the CLI imports it
before it knows the command.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any, Generic, Protocol, TypeVar

T = TypeVar("T")
T_co = TypeVar("T_co", covariant=True)


class BadValue(ValueError):
    """A value an option's type refuses; its message follows the flag's name (argparse
    prints it so: the parser's ``type`` functions raise it as its ``ArgumentTypeError``)."""


class Kind(enum.Enum):
    """How the command line gives the value."""

    VALUE = "value"  # --flag VALUE
    SWITCH = "switch"  # --flag: True
    OFF = "off"  # --no-flag: False (the default True)
    MANY = "many"  # --flag VALUE, repeatable: a list (none given: [])
    POSITIONAL = "positional"  # VALUE: no flag


class Group(enum.Enum):
    """The ``--help`` groups, in the order they print (cli/helpfmt.py); ``OWN``: the command's
    own options ("lock options")."""

    WHAT = "what to test"
    INDEXES = "indexes"
    ENVIRONMENTS = "environments"
    SEARCH = "search"
    OUTPUT = "output"
    OWN = ""


class Completes(enum.Enum):
    """What a shell completes for the value (cli/completions.py): files, or folders."""

    FILE = "file"
    DIR = "dir"


@dataclass(frozen=True, slots=True, kw_only=True)
class Option(Generic[T_co]):
    """One option (module doc). ``but`` attaches the same option with other words."""

    dest: str
    flags: tuple[str, ...] = ()
    help: str | None = None
    group: Group = Group.OWN
    kind: Kind = Kind.VALUE
    type: Callable[[str], Any] | None = None
    choices: tuple[str, ...] | None = None
    default: Any = None
    metavar: str | None = None
    nargs: str | None = None
    required: bool = False
    suppress: bool = False  # no default set: -q, -v, --color before or after the command
    path: Completes | None = None  # the value is a path: a shell completes files (or folders)
    env: str | None = None  # the environment variable that stands for it, as in uv
    said: str = "envbisect: {flag} {value} from {where}"  # a value taken from ``env``
    key: str | None = None  # its [tool.envbisect] key
    key_what: str = ""  # what the key's value must be, for the error
    key_relative: bool = False  # the key's paths are relative to the pyproject.toml's folder
    key_for_indexes: bool = False  # read by index/settings.py at the indexes' own rank
    uv_rules: bool = False  # not given: uv's rules find it (--python: env/pyrequest.py)

    @property
    def long(self) -> str:
        """The long flag (``--jobs``), or the positional argument's name."""
        return next((f for f in self.flags if f.startswith("--")), self.dest)

    def but(self, **changes: Any) -> Option[T_co]:
        """The same option with another help text, default, metavar or requirement."""
        return replace(self, **changes)

    def read_key(self, raw: object) -> Any:
        """The ``[tool.envbisect]`` value ``raw`` as the option takes it, checked by the same
        type as the command line's; ``BadValue`` when it is not one."""
        if self.kind is Kind.MANY:
            if not isinstance(raw, list) or not all(_text(x) for x in raw):
                raise BadValue(self.key_what)
            return [self._typed(str(x)) for x in raw]
        if self.kind in (Kind.SWITCH, Kind.OFF):
            if not isinstance(raw, bool):
                raise BadValue(self.key_what)
            return raw
        if isinstance(raw, bool) or not (_text(raw) or isinstance(raw, int | float)):
            raise BadValue(self.key_what)
        if self.type is None and not isinstance(raw, str):
            raise BadValue(self.key_what)
        return self._typed(str(raw))

    def parse(self, text: str) -> Any:
        """The value ``text`` gives (an environment variable's), by the option's type."""
        return self._typed(text)

    def _typed(self, text: str) -> Any:
        if self.choices is not None and text not in self.choices:
            raise BadValue(self.key_what)
        if self.type is None:
            return text
        try:
            return self.type(text)
        except ValueError:  # BadValue too
            raise BadValue(self.key_what) from None


def _text(value: object) -> bool:
    return isinstance(value, str) and bool(value.strip())


class Values(Protocol):
    """What reads resolved options: ``values[OPTION]`` is its value, typed as the option's
    (its default where the command does not take it); ``OPTION in values``: the command
    takes it."""

    def __getitem__(self, option: Option[T]) -> T: ...

    def __contains__(self, option: object) -> bool: ...


# -- the value types: text in, the value out, or BadValue ------------------------------------

MIN_TIMEOUT = 1.0  # below this a probe cannot even start Python
MAX_JOBS = 256


def seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise BadValue(f"{text!r} is not a number of seconds") from None
    if not math.isfinite(value):
        raise BadValue(f"{text!r} is not a finite number of seconds")
    if value <= 0:
        raise BadValue("must be more than 0 seconds")
    if value < MIN_TIMEOUT:
        raise BadValue(f"must be at least {MIN_TIMEOUT:g} second")
    return value


def _whole(minimum: int, maximum: int | None = None) -> Callable[[str], int]:
    """A whole number from ``minimum`` (to ``maximum``)."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise BadValue(f"{text!r} is not a whole number") from None
        if value < minimum:
            raise BadValue(f"must be {minimum} or more")
        if maximum is not None and value > maximum:
            raise BadValue(f"must be at most {maximum}")
        return value

    return parse


count = _whole(1)  # runs, probes, cells
count0 = _whole(0)  # GPUs per probe, days
jobs = _whole(1, MAX_JOBS)


def probability(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise BadValue(f"{text!r} is not a probability") from None
    if not 0.5 <= value < 1.0:
        raise BadValue("must be at least 0.5 and below 1 (e.g. 0.95)")
    return value
