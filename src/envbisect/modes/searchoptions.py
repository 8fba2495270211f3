"""The options of the search modes beyond the shared ones (``envbisect.options``): how a
bisection decides, a run's commits, and the checks of flags several modes take. Light on
purpose: the CLI imports it before it knows the command.
``CommonOptions``, the options every mode shares, lives in ``envbisect.options``."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import TYPE_CHECKING

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name

from envbisect.core.cutoff import parse_cutoff
from envbisect.errors import UsageError

if TYPE_CHECKING:
    from envbisect.strategy.bisect import Bisector


@dataclass(frozen=True, slots=True, kw_only=True)
class CommitRefs:
    """``run --commits``: after the first bad release, its commits (``--repo``, else the
    repository the package's metadata names; ``--good-ref``/``--bad-ref`` for the two
    releases' commits, else their tags)."""

    repo: str | None = None
    good_ref: str | None = None
    bad_ref: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class SearchOptions:
    """How a bisection decides (--confidence, --probabilistic, --max-probes); how many runs
    and jobs it gets is the session's (--repeat, --jobs)."""

    confidence: float = 0.95
    probabilistic: bool = False
    max_probes: int | None = None

    def bisector(
        self,
        *,
        n: int,
        good: int | None = None,
        bad: int | None = None,
        untestable: Iterable[int] = (),
        any_failure: bool = False,
        repeat: int = 1,
        stand_in: bool = False,
    ) -> Bisector:
        from envbisect.strategy.bisect import Bisector

        return Bisector(
            n=n,
            good=good,
            bad=bad,
            untestable=untestable,
            any_failure=any_failure,
            repeat=repeat,
            confidence=self.confidence,
            probabilistic=self.probabilistic,
            max_probes=self.max_probes,
            stand_in=stand_in,
        )


def parse_exclude_newer(value: str | None) -> datetime | None:
    """A date (midnight UTC), an RFC 3339 timestamp or a span back from now, as uv accepts
    them (core/cutoff.py; the command line has turned a span into its moment already)."""
    if value is None:
        return None
    return parse_cutoff(value, datetime.now(timezone.utc))


def parse_date_flag(flag: str, value: str) -> datetime:
    """The date a flag such as ``--good`` names, its error naming that flag."""
    try:
        when = parse_exclude_newer(value)
    except UsageError as e:
        raise UsageError(
            f"{flag} {value!r} is not a date", hint=e.hint or "", ref="bad-date"
        ) from e
    assert when is not None
    return when


def check_requirements(package: str, reqs: tuple[str, ...]) -> None:
    for text in reqs:
        try:
            req = Requirement(text)
        except InvalidRequirement as e:
            raise UsageError(
                # packaging's message ends in the text and a caret under it: its first line
                f"--with {text!r} is not a valid requirement ({str(e).splitlines()[0]})",
                hint="use PEP 508 syntax, e.g. --with 'pyarrow<15' --with numpy==1.26.4",
                ref="bad-requirement",
            ) from e
        if package and canonicalize_name(req.name) == canonicalize_name(package):
            raise UsageError(
                f"--with {text!r} names the package under test",
                hint="set the range with --good/--bad instead",
                ref="bad-requirement",
            )
