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
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from envbisect.errors import UsageError, did_you_mean

if TYPE_CHECKING:
    from envbisect.cli.optionset import Draft

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib


def _str(v: object) -> str | None:
    return v if isinstance(v, str) and v.strip() else None


def _strs(v: object) -> list[str] | None:
    if not isinstance(v, list) or not all(isinstance(x, str) and x.strip() for x in v):
        return None
    return [str(x) for x in v]


def _int(v: object) -> int | None:
    return v if isinstance(v, int) and not isinstance(v, bool) and v >= 1 else None


def _seconds(v: object) -> float | None:
    ok = isinstance(v, int | float) and not isinstance(v, bool) and v > 0
    return float(v) if ok else None  # type: ignore[arg-type]


@dataclass(frozen=True, slots=True)
class Key:
    dest: str  # the option it sets (a flag of that name on the command line wins)
    read: Callable[[object], Any]  # the value, or None when it is of the wrong type
    what: str  # for the error
    path: bool = False  # relative to the pyproject.toml's folder


KEYS: dict[str, Key] = {
    "index-url": Key("index_url", _str, "a URL"),
    "extra-index-url": Key("extra_index_url", _strs, "a list of URLs"),
    "find-links": Key("find_links", _strs, "a list of folders or URLs", True),
    "python": Key("python", _str, "a version or a path"),
    "probe": Key("probes", _strs, "a list of probes"),
    "results": Key("results", _str, "a folder", True),
    "torch-backend": Key("torch_backend", _str, "a variant"),
    "jobs": Key("jobs", _int, "a whole number >= 1"),
    "timeout": Key("timeout", _seconds, "seconds > 0"),
    "slurm-partition": Key("slurm_partition", _str, "a partition"),
    "slurm-account": Key("slurm_account", _str, "an account"),
    "slurm-time": Key("slurm_time", _str, "a time limit, as sbatch's"),
    "slurm-options": Key("slurm_options", _strs, "a list of sbatch options"),
}
# Read by index/settings.py, at their own place in the order: not set on the namespace.
INDEX_KEYS = ("index-url", "extra-index-url", "find-links")


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
        raise UsageError(f"{where} is not a table", hint="write it as [tool.envbisect]",
                         ref="bad-config")  # fmt: skip
    values: dict[str, Any] = {}
    for name, raw in table.items():
        key = KEYS.get(name)
        if key is None:
            raise UsageError(
                f"{where}: unknown key {name!r}",
                hint=did_you_mean(name, KEYS) or f"the keys it may set: {', '.join(KEYS)}",
                ref="bad-config",
            )
        value = key.read(raw)
        if value is None:
            raise UsageError(
                f"{where}: {name} must be {key.what}, not {raw!r}",
                hint="the keys and their values: envbisect's docs, how-to/config.md",
                ref="bad-config",
            )
        if key.path:
            value = _paths(value, path.parent)
        values[name] = value
    return ProjectConfig(path=path, values=values)


def _paths(value: str | list[str], base: Path) -> str | list[str]:
    def one(v: str) -> str:
        if "://" in v:
            return v
        p = Path(v).expanduser()
        return str(p if p.is_absolute() else base / p)

    return one(value) if isinstance(value, str) else [one(v) for v in value]


def apply(draft: Draft, conf: ProjectConfig) -> list[str]:
    """Offer each value of the table to the options (cli/optionset.py: the command line, the
    environment and the command's inputs rank above it; index keys are read by
    index_settings); the ``key = value`` lines taken, for -v."""
    from envbisect.cli.optionset import Origin, Source

    origin = Origin(Source.PROJECT, conf.origin)
    taken = []
    for name, value in conf.values.items():
        if name in INDEX_KEYS:
            continue
        dest = KEYS[name].dest
        if draft.offer(dest, Path(value) if name == "results" else value, origin):
            taken.append(f"{name} = {value!r}")
    return taken
