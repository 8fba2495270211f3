"""The options every mode shares, as one frozen object (each flag declared once, in
cli/flags.py). Light on purpose: the CLI imports it before it knows the command, and the
executors (exec/) read their part of it, so it lives above both.

Who does what: cli/readflags.py reads the flags into a ``CommonOptions``; the session
(modes/session.py, its edges in modes/edges.py) is the one that acts on it, including the one
choice left to the machine (``TorchChoice``: nvidia-smi is asked when the indexes are first
needed, not here).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from envbisect.model import IndexConfig

if TYPE_CHECKING:
    from envbisect.env.repro import Repro


class ExecutorKind(enum.Enum):
    """Where probes run (``--executor``; exec/executor.py makes each)."""

    LOCAL = "local"  # threads of this process
    PROCESS = "process"  # a pool of worker processes
    RAY = "ray"  # a Ray cluster
    SLURM = "slurm"  # one batch job per probe


class NativeBacktrace(enum.Enum):
    """When a crash is re-run under gdb for its native frames (``--native-backtrace``)."""

    AUTO = "auto"  # when gdb is installed
    ALWAYS = "always"  # gdb or a usage error
    NEVER = "never"


@dataclass(frozen=True, slots=True, kw_only=True)
class TorchChoice:
    """``--torch-backend auto``: PyTorch's index variant this machine's driver runs (the newest
    CUDA build it supports, else the CPU build), decided where the indexes are first needed
    (``Session.opts``), so that reading the options runs no nvidia-smi."""

    mirror: str  # the variant folders' base (--torch-index-url, else PyTorch's own)


@dataclass(frozen=True, slots=True, kw_only=True)
class SlurmSettings:
    """What every job of ``--executor slurm`` asks sbatch for, besides what envbisect sets
    (exec/slurm.py): each None or empty leaves it to the cluster's defaults."""

    partition: str | None = None
    account: str | None = None
    time: str | None = None  # as sbatch --time takes it
    options: tuple[str, ...] = ()  # other sbatch options, each "--name=value" or "--flag"


@dataclass(frozen=True, slots=True, kw_only=True)
class CommonOptions:
    """What every mode takes from the same flags (each declared once, in cli/flags.py)."""

    repro: Repro | None = None
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
    results: Path = Path("results")
    timeout: float = 600.0
    keep_envs: bool = False
    native_backtrace: NativeBacktrace = NativeBacktrace.AUTO
    any_failure: bool = False
    repeat: int = 1  # runs of the repro per environment; a failure in any run marks it
    jobs: int = 1  # environments built and probed at once
    executor: ExecutorKind = ExecutorKind.LOCAL
    ray_address: str | None = None  # --executor ray: join this cluster (None: start one)
    gpus_per_probe: int = 0  # GPUs each probe is given, pinned by CUDA_VISIBLE_DEVICES
    slurm: SlurmSettings = field(default_factory=SlurmSettings)  # --executor slurm's jobs
    dry_run: bool = False  # plan every environment it would build first, build nothing
    env: tuple[tuple[str, str], ...] = ()  # --env NAME=VALUE: set for every probe, last
    build_timeout: float | None = None  # --build-timeout: the cap on a build from source
    # --override REQ|FILE, as uv's: "name<spec>" each, sorted; every requirement on the
    # project (the pins', any package's) takes these versions (core/overrides.py).
    overrides: tuple[str, ...] = ()
    # --inherit: candidate environments see the --python interpreter's own packages (a
    # machine's CUDA torch): planned at their versions there, never downloaded or installed.
    inherit: bool = False
    command: str = ""  # the command line, for reports (credentials masked there)
