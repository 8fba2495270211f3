"""Compatibility matrices: the ``matrices/*.toml`` schema, validated, and axis selection.

Pure: TOML text in, a ``MatrixSpec`` out (or a ``UsageError`` naming the file, the key and
what was expected); version lists in, the versions an axis selects out.

    [matrix]
    name = "datasets-x-pyarrow"        # results/<name>/ (default: the file's stem)
    description = "..."
    python = ["3.11"]                  # target interpreters: one grid each
    range_from = ["llamafactory==0.9.5"]  # pin sources that bound the axes (not installed)
    pins = []                          # pin sources installed in every cell
    with = ["numpy<2"]                 # more requirements of every cell
    probes = ["datasets-json"]         # built-in probes (and/or repro = "file.py")
    deep_probes = ["llamafactory-train"]  # run besides on each row's edge cells: the first
                                       # and the last passing cell, and the newest passing
                                       # inside the pins; each probe in its own run
    rest = "latest"                    # baseline | contemporary | latest
    outside_pins = false               # true: a cell's axis versions override every
                                       # requirement on their packages (uv's --override), so
                                       # cells beyond what the pins' packages allow are built
    timeout = 600                      # seconds per cell
    repeats = 1                        # run the probes N times; a failure in any run counts
    executor = "local"                 # local | process | ray | slurm (the command line's wins)
    gpus_per_probe = 0                 # GPUs each cell's probe is given (Ray's num_gpus)
    torch_backend = "cpu"              # torch from PyTorch's index for this variant (as uv's
                                       # --torch-backend); torch_index_url: a mirror of it
    index_url / extra_index_urls / find_links / extras
                                       # find_links: URLs or folders relative to this file,
                                       # never an absolute folder of one machine: that goes on
                                       # the command line (--find-links) and overrides these

    [[axis]]                           # rows: the first axis; columns: the second;
    package = "datasets"               # any further axes split the table into sections
    select = "minor-latest"            # all | minor-latest | major-latest, or:
    versions = ["2.16.1", "3.0.2"]     # an explicit list instead of select
    range = ">=2.16"                   # narrows the candidates (with range_from's pins)
    use_pins = true                    # false: the pins do not bound this axis (a range of
                                       # your own beyond what the project allows)
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypedDict

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion, Version

from envbisect.core.names import SLUG, is_project_name
from envbisect.errors import UsageError, did_you_mean

SELECT_RULES = ("all", "minor-latest", "major-latest")
# PyTorch's index variants (index/pytorch.py has the same rule; core imports no IO edge).
_VARIANT = re.compile(r"cpu|cu\d{3}|rocm\d+(\.\d+)*|xpu")
POLICIES = ("baseline", "contemporary", "latest")
_MATRIX_KEYS = {
    "name",
    "description",
    "python",
    "range_from",
    "outside_pins",
    "pins",
    "extras",
    "with",
    "probes",
    "deep_probes",
    "repro",
    "rest",
    "timeout",
    "repeats",
    "index_url",
    "extra_index_urls",
    "find_links",
    "torch_backend",
    "torch_index_url",
    "executor",
    "gpus_per_probe",
}
_AXIS_KEYS = {"package", "select", "versions", "range", "use_pins"}


@dataclass(frozen=True, slots=True, kw_only=True)
class Axis:
    package: str
    select: str = "all"
    versions: tuple[str, ...] = ()
    range: str | None = None
    use_pins: bool = True


@dataclass(frozen=True, slots=True, kw_only=True)
class MatrixSpec:
    name: str
    path: Path
    description: str = ""
    python: tuple[str, ...] = ()
    range_from: tuple[str, ...] = ()
    pins: tuple[str, ...] = ()
    extras: tuple[str, ...] = ()
    with_reqs: tuple[str, ...] = ()
    probes: tuple[str, ...] = ()
    deep_probes: tuple[str, ...] = ()
    repro: str | None = None
    rest: str = "latest"
    timeout: float = 600.0
    repeats: int = 1
    executor: str | None = None  # None: the command line's (default local)
    gpus_per_probe: int = 0
    index_url: str = "https://pypi.org/simple"
    extra_index_urls: tuple[str, ...] = ()
    find_links: tuple[str, ...] = ()
    torch_backend: str | None = None
    torch_index_url: str | None = None
    axes: tuple[Axis, ...] = field(default=())
    outside_pins: bool = False


SCHEMA_HINT = (
    "see the schema at the top of src/envbisect/core/living/spec.py,"
    " or matrices/*.toml for examples"
)


class _Table:
    """One table of a matrix file, read key by key: every error names the file, the table and
    the key, and says what was expected."""

    def __init__(self, shown: str, where: str, table: Mapping[str, Any]) -> None:
        self.shown, self.where, self.table = shown, where, table

    def bad(
        self, key: str, expected: str, got: object = None, hint: str = SCHEMA_HINT
    ) -> UsageError:
        """``key`` within this table ("" for the table itself)."""
        # A key is the file's text: one that is not plain (a newline, a control) is quoted.
        if key and not (key.isprintable() and key.strip() == key):
            key = repr(key)
        label = " ".join(x for x in (self.where, key) if x)
        tail = f", got {got!r}" if got is not None else ""
        return UsageError(
            f"{self.shown}: {label}: expected {expected}{tail}",
            hint=hint,
            ref="matrix-schema",
        )

    def only(self, keys: set[str]) -> None:
        extra = set(self.table) - keys
        if extra:
            key = sorted(extra)[0]
            close = did_you_mean(key, sorted(keys))
            hint = f"{close} ({SCHEMA_HINT})" if close else SCHEMA_HINT
            raise self.bad(key, f"one of {', '.join(sorted(keys))}", hint=hint)

    def strings(self, key: str) -> tuple[str, ...]:
        value = self.table.get(key, [])
        if isinstance(value, str):
            value = [value]
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise self.bad(key, "a list of strings", value)
        return tuple(value)

    def string(self, key: str, default: str | None) -> str | None:
        value = self.table.get(key, default)
        if value is not None and not isinstance(value, str):
            raise self.bad(key, "a string", value)
        return value

    def whole(self, key: str, default: int, lo: int, hi: int) -> int:
        value = self.table.get(key, default)
        if not isinstance(value, int) or isinstance(value, bool) or not lo <= value <= hi:
            raise self.bad(key, f"an integer from {lo} to {hi}", value)
        return value


def parse_matrix(
    data: Mapping[str, Any], *, path: Path, executors: Collection[str] | None = None
) -> MatrixSpec:
    """The matrix a TOML file's ``data`` describes (the schema above), or a ``UsageError``
    naming the first key that is wrong (``executors``: the names ``executor`` may take, as
    exec/kinds/ declares them; None: any name, left to the caller)."""
    top = _Table(str(path), "", data)
    unknown = set(data) - {"matrix", "axis"}
    if unknown:
        raise top.bad(sorted(unknown)[0], "only a [matrix] table and [[axis]] tables")
    m = data.get("matrix", {})
    if not isinstance(m, dict):
        raise top.bad("[matrix]", "a table")
    t = _Table(str(path), "[matrix]", m)
    t.only(_MATRIX_KEYS)
    runs = _runs(t, executors)
    _check_find_links(t)
    backend = t.string("torch_backend", None)
    if backend is not None and (backend == "auto" or not _VARIANT.fullmatch(backend)):
        raise t.bad(
            "torch_backend",
            "a PyTorch index variant: cpu, cu121, cu128, rocm6.2, "
            "xpu (auto depends on the machine: not in a file)",
            backend,
        )
    probes, repro = t.strings("probes"), t.string("repro", None)
    if not probes and not repro:
        raise t.bad("probes", "at least one probe (or a repro file)")
    axes = _axes(top, data.get("axis", []))
    name = t.string("name", None) or path.stem
    if not SLUG.fullmatch(name):
        raise t.bad("name", "a plain name (letters, digits, . _ -): a folder of --results", name)
    return MatrixSpec(
        name=name,
        path=path,
        description=t.string("description", "") or "",
        python=t.strings("python"),
        range_from=t.strings("range_from"),
        pins=t.strings("pins"),
        extras=t.strings("extras"),
        with_reqs=t.strings("with"),
        probes=probes,
        deep_probes=t.strings("deep_probes"),
        repro=repro,
        **runs,
        index_url=t.string("index_url", "https://pypi.org/simple") or "https://pypi.org/simple",
        extra_index_urls=t.strings("extra_index_urls"),
        find_links=t.strings("find_links"),
        torch_backend=backend,
        torch_index_url=t.string("torch_index_url", None),
        axes=axes,
        outside_pins=_flag(t, "outside_pins"),
    )


def _flag(t: _Table, key: str) -> bool:
    value = t.table.get(key, False)
    if not isinstance(value, bool):
        raise t.bad(key, "true or false", value)
    return value


class _Runs(TypedDict):
    rest: str
    timeout: float
    repeats: int
    executor: str | None
    gpus_per_probe: int


def _runs(t: _Table, executors: Collection[str] | None) -> _Runs:
    """How each cell is probed: the rest of its environment, the timeout, runs, executor."""
    rest = t.string("rest", "latest") or "latest"
    if rest not in POLICIES:
        raise t.bad("rest", " | ".join(POLICIES), rest)
    timeout = t.table.get("timeout", 600)
    if not isinstance(timeout, int | float) or isinstance(timeout, bool) or timeout <= 0:
        raise t.bad("timeout", "a number of seconds above 0", timeout)
    repeats = t.whole("repeats", 1, 1, 100)
    executor = t.table.get("executor")
    if executor is not None and not isinstance(executor, str):
        raise t.bad("executor", "an executor's name", executor)
    if executor is not None and executors is not None and executor not in executors:
        raise t.bad("executor", " | ".join(executors), executor)
    gpus = t.whole("gpus_per_probe", 0, 0, 64)
    return _Runs(
        rest=rest, timeout=float(timeout), repeats=repeats, executor=executor, gpus_per_probe=gpus
    )


def _check_find_links(t: _Table) -> None:
    for folder in t.strings("find_links"):
        # A matrix file is committed and run elsewhere: a folder of this machine's breaks
        # there (and its path would reach every published lockfile).
        if "://" not in folder and (folder.startswith(("/", "~", "\\")) or folder[1:3] == ":\\"):
            raise UsageError(
                f"{t.shown}: [matrix] find_links: {folder!r} is a folder of one machine",
                hint='name a public index (index_url, torch_backend = "cpu") in the file and '
                "pass your folder on the command line: --find-links DIR (or find-links in "
                "pip.conf / uv.toml); a folder relative to the matrix file is fine",
                ref="matrix-local-folder",
            )


def _axes(top: _Table, raw: object) -> tuple[Axis, ...]:
    if not isinstance(raw, list) or not raw:
        raise top.bad("[[axis]]", "one or more [[axis]] tables")
    axes = tuple(_axis(_Table(top.shown, f"[[axis]] {i}", a), a) for i, a in enumerate(raw, 1))
    names = [a.package.lower() for a in axes]
    if len(set(names)) != len(names):
        raise top.bad("[[axis]] package", "each package on one axis only")
    return axes


def _axis(t: _Table, a: object) -> Axis:
    if not isinstance(a, dict):
        raise t.bad("", "a table")
    t.only(_AXIS_KEYS)
    package = a.get("package")
    if not isinstance(package, str) or not is_project_name(package):
        raise t.bad("package", "a package name", package)
    versions = a.get("versions", [])
    if not isinstance(versions, list) or not all(isinstance(v, str) for v in versions):
        raise t.bad("versions", "a list of version strings", versions)
    for v in versions:
        try:
            Version(v)
        except InvalidVersion:
            raise t.bad("versions", "versions such as 2.14.6", v) from None
    select = a.get("select", "all" if not versions else "list")
    if versions and "select" in a:
        raise t.bad("", "either select or versions, not both")
    if not versions and select not in SELECT_RULES:
        raise t.bad("select", " | ".join(SELECT_RULES), select)
    rng = a.get("range")
    if rng is not None:
        try:
            SpecifierSet(str(rng))
        except InvalidSpecifier:
            raise t.bad("range", "a specifier such as >=2.16,<5", rng) from None
    use_pins = a.get("use_pins", True)
    if not isinstance(use_pins, bool):
        raise t.bad("use_pins", "true or false", use_pins)
    return Axis(
        package=package,
        select=select,
        versions=tuple(versions),
        range=str(rng) if rng is not None else None,
        use_pins=use_pins,
    )


def select_versions(rule: str, versions: Sequence[Version]) -> list[Version]:
    """The versions a rule keeps, oldest first: every one, the newest of each minor
    (``2.19.2`` for 2.19), or the newest of each major."""
    ordered = sorted(set(versions))
    if rule == "all":
        return ordered
    group: dict[tuple[int, ...], Version] = {}
    for v in ordered:
        key = v.release[:2] if rule == "minor-latest" else v.release[:1]
        group[key] = v  # ascending order: the last one seen is the newest
    return sorted(group.values())
