"""The options every mode shares, as frozen records by concern: what the environments are
planned from (``Planning``), how each is probed (``Probing``), how many at once
(``Parallelism``) and where probes run (``Execution``: the executor's name and its own
settings record, exec/kinds/). ``CommonOptions`` holds one of each.

Light on purpose: the CLI builds these (cli/readflags.py reads the resolved options, each
declared once in cli/flags.py or by its executor) before it knows the command, and the
executors read their part, so it lives above both. The session (modes/session.py) is the one
that acts on them, including the one choice left to the machine (``TorchChoice``: nvidia-smi is
asked when the indexes are first needed, not here).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from envbisect.core.overrides import OverrideSet
from envbisect.env.forensics import NativeBacktrace
from envbisect.model import IndexConfig

if TYPE_CHECKING:
    from envbisect.env.repro import Repro


@dataclass(frozen=True, slots=True, kw_only=True)
class TorchChoice:
    """``--torch-backend auto``: PyTorch's index variant this machine's driver runs (the newest
    CUDA build it supports, else the CPU build), decided where the indexes are first needed
    (``Session.opts``), so that reading the options runs no nvidia-smi."""

    mirror: str  # the variant folders' base (--torch-index-url, else PyTorch's own)


@dataclass(frozen=True, slots=True, kw_only=True)
class Planning:
    """What every environment is planned and built from, besides what it asks for."""

    indexes: IndexConfig = field(default_factory=IndexConfig)
    torch_auto: TorchChoice | None = None  # set: ``indexes.torch_index`` is still to choose
    python: str | None = None
    # A --python version this machine lacks is installed by uv (False: --no-python-downloads).
    python_downloads: bool = True
    offline: bool = False
    # --refresh: every index page revalidated once this run, whatever its age (uv's too);
    # --refresh-package NAME: those projects' pages only (canonical names).
    refresh: bool = False
    refresh_packages: tuple[str, ...] = ()
    cache_dir: Path | None = None
    # --override REQ|FILE, as uv's, read once: every requirement on the project (the pins',
    # any package's) takes these versions (core/overrides.py).
    overrides: OverrideSet = field(default_factory=OverrideSet)
    # --inherit: candidate environments see the --python interpreter's own packages (a
    # machine's CUDA torch): planned at their versions there, never downloaded or installed.
    inherit: bool = False
    build_timeout: float | None = None  # --build-timeout: the cap on a build from source


@dataclass(frozen=True, slots=True, kw_only=True)
class Probing:
    """How each environment is probed, and what is kept of it."""

    repro: Repro | None = None
    timeout: float = 600.0
    repeat: int = 1  # runs of the repro per environment; a failure in any run marks it
    any_failure: bool = False
    native_backtrace: NativeBacktrace = NativeBacktrace.AUTO
    env: tuple[tuple[str, str], ...] = ()  # --env NAME=VALUE: set for every probe, last
    keep_envs: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class Parallelism:
    """``--jobs K``, its three meanings named: the environments a search asks for per round
    (``per_round``), the executor's workers (``workers``), and whether environments are built
    ahead in the background while this thread probes (``one_at_a_time`` is its opposite)."""

    jobs: int = 1

    def __post_init__(self) -> None:
        if self.jobs < 1:  # --jobs's type refuses it first: this is a caller's mistake
            raise ValueError(f"jobs must be 1 or more, not {self.jobs}")

    @property
    def per_round(self) -> int:
        return self.jobs

    @property
    def workers(self) -> int:
        return self.jobs

    @property
    def one_at_a_time(self) -> bool:
        return self.jobs == 1


@dataclass(frozen=True, slots=True, kw_only=True)
class Execution:
    """Where probes run: an executor's name (exec/kinds/ declares each), the GPUs each probe
    is given, and the executor's own settings record (None: it has none)."""

    kind: str = "local"
    gpus_per_probe: int = 0
    settings: object = None

    @property
    def here(self) -> bool:
        """Threads of this process, no GPUs shared out: probes may run in this thread."""
        return self.kind == "local" and not self.gpus_per_probe


@dataclass(frozen=True, slots=True, kw_only=True)
class CommonOptions:
    """What every mode takes from the same options, by concern."""

    planning: Planning = field(default_factory=Planning)
    probing: Probing = field(default_factory=Probing)
    parallel: Parallelism = field(default_factory=Parallelism)
    execution: Execution = field(default_factory=Execution)
    results: Path = Path("results")
    dry_run: bool = False  # plan every environment it would build first, build nothing
    command: str = ""  # the command line, for reports (credentials masked there)
