"""A repository's defaults for envbisect: the ``[tool.envbisect]`` table of its pyproject.toml.

The nearest pyproject.toml at or above the current folder is the project's (as uv finds its
project); its table may set what a command line would, for every command that has the flag:

    [tool.envbisect]
    index-url = "https://mirror.example/simple"
    extra-index-url = ["https://download.pytorch.org/whl/cpu"]
    find-links = ["wheels"]          # relative to the pyproject.toml's folder
    python = "3.10"
    probe = ["import:mypkg"]
    results = "envbisect-results"    # relative to the pyproject.toml's folder
    torch-backend = "cpu"
    jobs = 2
    timeout = 900
    slurm-partition = "gpu"          # --executor slurm's jobs: also slurm-account,
    slurm-time = "1:00:00"           # slurm-options = ["--qos=high"]

A flag on the command line wins over the table; the table's index settings sit after the
command line and uv's variables and before uv's and pip's files (index/settings.py); its
``python`` after ``UV_PYTHON`` and before ``.python-version``. ``--no-config`` sets the table
aside with the other settings. ``-v`` says each value taken and from where. An unknown key
or a value of the wrong type is a usage error naming the file.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from envbisect.errors import UsageError, did_you_mean
from envbisect.optionspec import BadValue, Option

if TYPE_CHECKING:
    from envbisect.cli.optionset import Draft

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib


def keys() -> dict[str, Option[Any]]:
    """Every option that has a key in the table, by its key (declared on the option: cli/flags.py,
    and each executor's, exec/kinds/), the index keys first."""
    from envbisect.cli import flags
    from envbisect.exec import kinds

    declared = [v for v in vars(flags).values() if isinstance(v, Option)]
    every = sorted((*declared, *kinds.options()), key=lambda o: not o.key_for_indexes)
    out: dict[str, Option[Any]] = {}
    for option in every:
        if option.key is not None:
            out.setdefault(option.key, option)
    return out


@dataclass(frozen=True)
class ProjectConfig:
    path: Path
    values: dict[str, Any] = field(default_factory=dict)  # key -> value, paths made absolute

    @property
    def origin(self) -> str:
        return f"[tool.envbisect] in {self.path}"


def find(cwd: Path) -> ProjectConfig | None:
    """The nearest pyproject.toml's ``[tool.envbisect]`` table, checked; None without one."""
    for folder in (cwd, *cwd.parents):
        path = folder / "pyproject.toml"
        if path.is_file():
            return _read(path)
    return None


def _read(path: Path) -> ProjectConfig | None:
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return None  # not ours to judge: the project's tools say what is wrong with it
    table = data.get("tool", {}).get("envbisect") if isinstance(data.get("tool"), dict) else None
    if table is None:
        return None
    where = f"[tool.envbisect] in {path}"
    if not isinstance(table, dict):
        raise UsageError(
            f"{where} is not a table", hint="write it as [tool.envbisect]", ref="bad-config"
        )
    known = keys()
    values: dict[str, Any] = {}
    for name, raw in table.items():
        option = known.get(name)
        if option is None:
            raise UsageError(
                f"{where}: unknown key {name!r}",
                hint=did_you_mean(name, known) or f"the keys it may set: {', '.join(known)}",
                ref="bad-config",
            )
        try:
            value = option.read_key(_paths(raw, path.parent) if option.key_relative else raw)
        except BadValue:
            raise UsageError(
                f"{where}: {name} must be {option.key_what}, not {raw!r}",
                hint="the keys and their values: envbisect's docs, how-to/config.md",
                ref="bad-config",
            ) from None
        values[name] = value
    return ProjectConfig(path=path, values=values)


def _paths(value: object, base: Path) -> object:
    """A path's key, relative to the pyproject.toml's folder (a URL as it is); a value that is
    no text is left for the option to refuse."""

    def one(v: object) -> object:
        if not isinstance(v, str) or not v.strip() or "://" in v:
            return v
        p = Path(v).expanduser()
        return str(p if p.is_absolute() else base / p)

    return [one(v) for v in value] if isinstance(value, list) else one(value)


def apply(draft: Draft, conf: ProjectConfig) -> list[str]:
    """Offer each value of the table to the options (cli/optionset.py: the command line, the
    environment and the command's inputs rank above it; index keys are read by
    index_settings); the ``key = value`` lines taken, for -v."""
    from envbisect.cli.optionset import Origin, Source

    origin = Origin(Source.PROJECT, conf.origin)
    taken = []
    known = keys()
    for name, value in conf.values.items():
        option = known[name]
        if option.key_for_indexes or draft.options.get(option.dest, option).key != name:
            continue  # the indexes' own rank; a command whose option of that name has no key
        if draft.offer(option.dest, value, origin):
            taken.append(f"{name} = {_shown(value)!r}")
    return taken


def _shown(value: Any) -> Any:
    """The value as the table wrote it (a folder as text)."""
    return str(value) if isinstance(value, Path) else value
