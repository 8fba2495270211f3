"""The options every mode shares, as one frozen object (each flag declared once, in
cli/options.py). Light on purpose: the CLI imports it before it knows the command."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from envbisect.model import IndexConfig
from envbisect.strategy.bisect import Bisector

if TYPE_CHECKING:
    from envbisect.env.repro import Repro


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
    command: str = ""  # the command line, for reports (credentials masked there)


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
