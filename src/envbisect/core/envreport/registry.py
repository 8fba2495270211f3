"""The formats of environment report, each declared once: its name, its reader, whether it
lists every package, and the commands that print it.

Who does what: each reader (core/envreport/formats.py; conda's environment,
core/envreport/condaenv.py) recognises lines only its format prints and labels what it read
with its format's name; ``FORMATS`` is what everything else reads. core/envreport/read.py
tries ``READERS`` on each piece of a text (``in_yaml``: in a YAML block too);
modes/reproduce.py asks ``lists_every_package`` (a report that names a few packages has the
rest planned as of its day); env/pinsource.py and core/pins/sources.py name the commands
in their hints. A new format is its reader, its record here and its tests.

The formats, each recognised by lines only it prints:
    llamafactory-cli env, transformers env      ``- Key: value`` lines; a key ending in
    (transformers-cli env), accelerate env      ``version`` names a package
    python -m torch.utils.collect_env           ``PyTorch version:`` and ``Is debug build:``...
                                                plus its ``[pip3] name==V`` and ``[conda] ...``
                                                rows
    pip freeze, uv pip freeze                   only ``name==V``, ``name @ URL``, ``-e URL``
                                                lines (and pip's own comments)
    pip list                                    the columns layout (``Package Version`` and a
                                                rule of dashes), the legacy ``name (V)``
                                                layout, and ``--format json``
    conda list                                  its ``# Name Version Build Channel`` header;
                                                rows of the ``pypi`` channel are pip's, the
                                                rest conda's
    conda env export, environment.yml           ``dependencies:`` beside ``channels:`` or
                                                ``name:``, also in a YAML block
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from envbisect.core.envreport.condaenv import conda_env
from envbisect.core.envreport.formats import (
    collect_env,
    conda_list,
    fields,
    freeze,
    pip_columns,
    pip_json,
    pip_legacy,
)
from envbisect.core.envreport.report import EnvReport, Segment

__all__ = [
    "FORMATS",
    "FREEZE",
    "READERS",
    "YAML_READERS",
    "ReportFormat",
    "commands_in_words",
    "lists_every_package",
    "some_in_words",
]

Reader = Callable[[Segment], "EnvReport | None"]


@dataclass(frozen=True, slots=True, kw_only=True)
class ReportFormat:
    """One format of environment report.

    ``name``: what a report read in it says it is (``EnvReport.formats``; its reader writes
    the same). ``read``: the reader (one reader may read several formats: the ``- Key:
    value`` family tells them by their subject). ``complete``: it lists every package of the
    environment (else it names a few, and the rest must be chosen). ``commands``: what a user
    runs to print it, as hints name them. ``in_yaml``: also read in a YAML block (others
    never are: a YAML block is a training config)."""

    name: str
    read: Reader
    complete: bool
    commands: tuple[str, ...] = ()
    in_yaml: bool = False


FREEZE = ReportFormat(
    name="pip freeze", read=freeze, complete=True, commands=("pip freeze", "uv pip freeze")
)

# In the order hints name them: the lists people paste most, then the reports of one tool.
FORMATS: tuple[ReportFormat, ...] = (
    FREEZE,
    ReportFormat(name="pip list", read=pip_columns, complete=True, commands=("pip list",)),
    ReportFormat(name="pip list (legacy layout)", read=pip_legacy, complete=True),
    ReportFormat(name="pip list (json)", read=pip_json, complete=True),
    ReportFormat(name="conda list", read=conda_list, complete=True, commands=("conda list",)),
    ReportFormat(
        name="llamafactory-cli env",
        read=fields,
        complete=False,
        commands=("llamafactory-cli env",),
    ),
    ReportFormat(
        name="transformers env", read=fields, complete=False, commands=("transformers env",)
    ),
    ReportFormat(name="accelerate env", read=fields, complete=False, commands=("accelerate env",)),
    ReportFormat(name="an environment list (- X version: V)", read=fields, complete=False),
    ReportFormat(
        name="torch collect_env",
        read=collect_env,
        complete=False,
        commands=("python -m torch.utils.collect_env",),
    ),
    # An environment.yml is often written by hand with a few packages: not taken as complete.
    ReportFormat(name="conda env export", read=conda_env, complete=False, in_yaml=True),
)

# The order a piece of text is tried in: the formats with the plainest marks first (a JSON
# list, collect_env's keys, conda's header, pip list's rule of dashes), bare rows last. The
# first row of a name wins where two readers read the same line, and a report's formats are
# listed in this order.
READERS: tuple[Reader, ...] = (
    pip_json,
    collect_env,
    conda_list,
    pip_columns,
    fields,
    pip_legacy,
    freeze,
    conda_env,
)
YAML_READERS: tuple[Reader, ...] = tuple(dict.fromkeys(f.read for f in FORMATS if f.in_yaml))

_BY_NAME = {f.name: f for f in FORMATS}


def lists_every_package(names: Iterable[str]) -> bool:
    """Whether a report read in these formats lists every package of its environment."""
    return any(f.complete for n in names if (f := _BY_NAME.get(n)) is not None)


def commands_in_words() -> str:
    """The commands that print a report, as a hint names them: ``a, b or c``."""
    said = [c for f in FORMATS for c in f.commands]
    return ", ".join(said[:-1]) + " or " + said[-1]


def some_in_words(count: int) -> str:
    """The first ``count`` formats a command prints, as a short hint names them."""
    return ", ".join([f.name for f in FORMATS if f.commands][:count]) + "..."
