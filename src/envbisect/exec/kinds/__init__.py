"""The executors, each declared by one module of this folder: its name, its words in
``--executor``'s help, the options it takes, the settings it reads from them, and where its
implementation is. The command line reads this table (``kinds()``) for ``--executor``'s
choices and for the options it attaches; a new executor is a new module here (and its
implementation), nothing else.

Each module defines ``KIND = ExecutorKind(...)``; ``kinds()`` finds them by listing the folder
(they are small: the implementation is imported only when its executor is chosen, by name, as
cli/main.py's table imports a command). ``make_executor`` builds the chosen one.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING, Any

from envbisect.errors import UsageError
from envbisect.optionspec import Group, Option, Values, count0

if TYPE_CHECKING:
    from envbisect.env.worker import Watcher
    from envbisect.exec.executor import Executor, Launch
    from envbisect.options import Execution


@dataclass(frozen=True, slots=True, kw_only=True)
class ExecutorKind:
    """One executor (module doc)."""

    name: str
    rank: int  # its place in --executor's help
    says: str  # its words there: "local (threads, the default)"
    implementation: tuple[str, str]  # (module, function): ``function(Launch) -> Executor``
    options: tuple[Option[Any], ...] = ()
    settings: Callable[[Values], object] | None = None  # its record, from the options
    gpus: bool = True  # gives each probe its own GPUs (--gpus-per-probe)


@cache
def kinds() -> dict[str, ExecutorKind]:
    """Every executor declared in this folder, by name, in their order."""
    found = []
    names = sorted(n[:-3] for n in os.listdir(__path__[0]) if n.endswith(".py") and n[0] != "_")
    for name in names:  # the folder's modules (pkgutil would cost --help half a millisecond)
        module = importlib.import_module(f"{__name__}.{name}")
        kind = getattr(module, "KIND", None)
        if isinstance(kind, ExecutorKind):
            found.append(kind)
    return {k.name: k for k in sorted(found, key=lambda k: k.rank)}


def executor_option() -> Option[str]:
    """``--executor``: its choices and its help from the table."""
    table = list(kinds().values())
    said = ", ".join(k.says for k in table[:-1]) + f" or {table[-1].says}"
    return Option(
        dest="executor",
        flags=("--executor",),
        group=Group.SEARCH,
        choices=tuple(k.name for k in table),
        help=f"where probes run: {said}",
    )


GPUS_PER_PROBE: Option[int | None] = Option(
    dest="gpus_per_probe",
    flags=("--gpus-per-probe",),
    group=Group.SEARCH,
    type=count0,
    metavar="N",
    help="give each probe N GPUs and only those (CUDA_VISIBLE_DEVICES): Ray's num_gpus, "
    "Slurm's --gres=gpu:N, or this machine's GPUs shared out by the local executor "
    "(default 0)",
)


def options() -> tuple[Option[Any], ...]:
    """What every command that runs probes takes: --executor, --gpus-per-probe, and each
    executor's own options."""
    own = tuple(o for k in kinds().values() for o in k.options)
    return (executor_option(), GPUS_PER_PROBE, *own)


def settings(name: str, values: Values) -> object:
    """The executor ``name``'s settings record, read from the resolved options."""
    kind = kinds()[name]
    return kind.settings(values) if kind.settings is not None else None


def make_executor(
    execution: Execution, workers: int, *, results: Any, watcher: Watcher | None = None
) -> Executor:
    """The executor ``execution`` names, with ``workers`` probes at once; ``watcher`` hears the
    phases of probes run in this process (the local executor's: a worker process or a node
    tells no one)."""
    from envbisect.exec.executor import Launch

    kind = kinds()[execution.kind]
    if execution.gpus_per_probe and not kind.gpus:
        takers = [k.name for k in kinds().values() if k.gpus]
        raise UsageError(
            f"--gpus-per-probe needs --executor {', '.join(takers[:-1])} or {takers[-1]}",
            hint="the local executor pins each probe to its own GPUs; so do Ray and Slurm",
            ref="bad-executor",
        )
    module, name = kind.implementation
    launch: Callable[[Launch], Executor] = getattr(importlib.import_module(module), name)
    return launch(
        Launch(
            workers=workers,
            gpus_per_probe=execution.gpus_per_probe,
            settings=execution.settings,
            results=results,
            watcher=watcher,
        )
    )
