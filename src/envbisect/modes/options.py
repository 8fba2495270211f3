"""The options every mode shares, as one frozen object (each flag declared once, in
cli/options.py). Light on purpose: the CLI imports it before it knows the command."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name

from envbisect.errors import UsageError
from envbisect.model import IndexConfig

if TYPE_CHECKING:
    from envbisect.env.repro import Repro
    from envbisect.strategy.bisect import Bisector


@dataclass(frozen=True, slots=True, kw_only=True)
class CommonOptions:
    """What every mode takes from the same flags (each declared once, in cli/options.py)."""

    repro: Repro | None = None
    indexes: IndexConfig = field(default_factory=IndexConfig)
    python: str | None = None
    offline: bool = False
    cache_dir: Path | None = None
    results: Path = Path("results")
    timeout: float = 600.0
    keep_envs: bool = False
    native_backtrace: str = "auto"
    any_failure: bool = False
    repeat: int = 1  # runs of the repro per environment; a failure in any run marks it
    jobs: int = 1  # environments built and probed at once
    executor: str = "local"  # local | process | ray
    ray_address: str | None = None  # --executor ray: join this cluster (None: start one)
    gpus_per_probe: int = 0  # GPUs each probe is given, pinned by CUDA_VISIBLE_DEVICES
    dry_run: bool = False  # plan every environment it would build first, build nothing
    env: tuple[tuple[str, str], ...] = ()  # --env NAME=VALUE: set for every probe, last
    build_timeout: float | None = None  # --build-timeout: the cap on a build from source
    command: str = ""  # the command line, for reports (credentials masked there)


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
    """A date (midnight UTC) or an RFC 3339 timestamp, as uv accepts them."""
    if value is None:
        return None
    try:
        dt = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError as e:
        raise UsageError(
            f"--exclude-newer {value!r} is not a date",
            hint="use YYYY-MM-DD or an RFC 3339 timestamp such as 2024-03-01T00:00:00Z",
            ref="bad-date",
        ) from e
    return dt if dt.tzinfo else dt.replace(tzinfo=timezone.utc)


def check_requirements(package: str, reqs: tuple[str, ...]) -> None:
    for text in reqs:
        try:
            req = Requirement(text)
        except InvalidRequirement as e:
            raise UsageError(
                f"--with {text!r} is not a valid requirement ({e})",
                hint="use PEP 508 syntax, e.g. --with 'pyarrow<15' --with numpy==1.26.4",
                ref="bad-requirement",
            ) from e
        if package and canonicalize_name(req.name) == canonicalize_name(package):
            raise UsageError(
                f"--with {text!r} names the package under test",
                hint="set the range with --good/--bad instead",
                ref="bad-requirement",
            )
