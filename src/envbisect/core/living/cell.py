"""One published cell of a matrix: a row of ``results/<matrix>/results.json``'s ``cells``.

Pure and typed: ``PublishedCell.from_dict`` reads a cell as ``results.json`` holds it and
checks it as it reads (a malformed one is a ``UsageError`` that names the field, ref
``results-malformed``); ``to_dict`` writes it back exactly as the publisher always has, key
order included, so a table read and published again is the same file byte for byte. Every
living module (tables, pages, findings, history, update) reads cells through these fields,
never by string key.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from envbisect.errors import ResultsMalformed, UsageError
from envbisect.model import InstalledDist, OutcomeKind

Versions = tuple[tuple[str, str], ...]  # (package, version), in axis order
Key = tuple[str, Versions]  # (python, versions): one cell of a table


class CellState(enum.Enum):
    """What a cell of the row walk (strategy/rows.py) is: pending until it ends as one of the
    others, which a table publishes."""

    PENDING = "pending"
    MEASURED = "measured"
    INFERRED = "inferred"  # from the measured cells at both sides, which agree
    UNRESOLVABLE = "unresolvable"  # its requirements have no consistent environment
    UNTESTABLE = "untestable"
    UNKNOWN = "unknown"  # outside the measured cells, or between cells that disagree


STATES = tuple(s.value for s in CellState if s is not CellState.PENDING)  # published
KINDS = tuple(k.value for k in OutcomeKind)
MALFORMED = ResultsMalformed.ref
HINT = (
    "results.json is written by envbisect publish: restore the committed one "
    "(git checkout -- results/), or run the matrix again"
)


# A probe's environment in a message (``.../.envs/<env id>-<suffix>/``): never published.
_ENV_PATH = re.compile(r"/\S*?/\.envs/[0-9a-f]{16}-[^/\s]+/")


def without_env_path(text: str) -> str:
    """A signature as published: the environment's folder (this machine's) as ``<env>/``."""
    return _ENV_PATH.sub("<env>/", text)


def combo(versions: Versions) -> str:
    """``peft 0.17.1 + transformers 5.0.0``: a combination in words, in axis order."""
    return " + ".join(f"{p} {v}" for p, v in versions)


@dataclass(frozen=True, slots=True, kw_only=True)
class DeepRun:
    """A deeper probe (the matrix's ``deep_probes``: a real training run) on a cell at the
    edge of its row's passing range, in the cell's own environment, and what it gave."""

    probe: str  # as the matrix file names it: llamafactory-train:ppo
    kind: OutcomeKind
    signature: str = ""
    seconds: float | None = None  # build and probe
    measured_at: str | None = None

    @property
    def passes(self) -> bool:
        return self.kind is OutcomeKind.PASS

    def to_dict(self) -> dict[str, Any]:
        return {
            "probe": self.probe,
            "kind": self.kind.value,
            "signature": self.signature,
            "seconds": self.seconds,
            "measured_at": self.measured_at,
        }

    @classmethod
    def from_dict(cls, d: object, where: str) -> DeepRun:
        if not isinstance(d, Mapping):
            raise _malformed(f"{where}: 'deep' holds {d!r}, not an object")
        kind = _field(d, "kind", str, where, required=True)
        if kind not in KINDS:
            raise _malformed(f"{where}: a deep run's 'kind' is {kind!r}, not one of {KINDS}")
        return cls(
            probe=_field(d, "probe", str, where, required=True),
            kind=OutcomeKind(kind),
            signature=_field(d, "signature", str, where) or "",
            seconds=_seconds(d, f"{where}: a deep run's"),
            measured_at=_field(d, "measured_at", str, where),
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class PublishedCell:
    """One combination of axis values on one Python, and what became of it."""

    python: str
    versions: Versions
    state: CellState
    kind: OutcomeKind | None = None  # measured, or inferred from the measured ones
    signal: str | None = None  # a crash's signal (SIGSEGV)
    signature: str = ""  # the outcome's signature (a message without the env's path)
    library: str | None = None  # a crash's faulting library
    seconds: float | None = None  # build and probe, when this cell was measured
    measured_at: str | None = None  # when it was measured (RFC 3339)
    # What its environment had installed; None: not recorded (an older results.json), so
    # its lockfiles cannot be written again.
    installed: tuple[InstalledDist, ...] | None = ()
    inferred_from: str | None = None  # the cell (versions as JSON) an inferred one follows
    env_id: str | None = None
    lock: str | None = None  # its requirements lockfile, relative to the matrix's folder
    pylock: str | None = None  # its PEP 751 lockfile beside it (None: the key is left out)
    # outside_pins: why the cell lies outside its packages' pins, in words (None: it does
    # not, or the table does not build such cells; the key is left out then).
    outside: str | None = None
    # deep_probes: the deeper probes run on it, a cell at an edge of its row's passing range
    # (empty: none; the key is left out then).
    deep: tuple[DeepRun, ...] = ()

    @property
    def key(self) -> Key:
        return (self.python, self.versions)

    def version(self, axis: str) -> str:
        """The cell's value on ``axis`` (a KeyError for an axis it does not have)."""
        for package, version in self.versions:
            if package == axis:
                return version
        raise KeyError(axis)

    def versions_dict(self) -> dict[str, str]:
        return dict(self.versions)

    def combo(self) -> str:
        return combo(self.versions)

    @property
    def passes(self) -> bool:
        """Measured and passing: a cell with lockfiles, one that can be recommended."""
        return self.state is CellState.MEASURED and self.kind is OutcomeKind.PASS

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "python": self.python,
            "versions": self.versions_dict(),
            "state": self.state.value,
            "kind": self.kind.value if self.kind is not None else None,
            "signal": self.signal,
            "signature": self.signature,
            "library": self.library,
            "seconds": self.seconds,
            "measured_at": self.measured_at,
        }
        if self.installed is not None:
            out["installed"] = [d.to_dict() for d in self.installed]
        out |= {
            "inferred_from": self.inferred_from,
            "env_id": self.env_id,
            "lock": self.lock,
        }
        if self.pylock is not None:
            out["pylock"] = self.pylock
        if self.outside is not None:
            out["outside"] = self.outside
        if self.deep:
            out["deep"] = [r.to_dict() for r in self.deep]
        return out

    @classmethod
    def from_dict(cls, d: object) -> PublishedCell:
        """A cell as ``results.json`` holds it; a ``UsageError`` (``results-malformed``)
        naming the first field that is missing or of the wrong type. Keys an older publisher
        did not write take their defaults."""
        if not isinstance(d, Mapping):
            raise _malformed(f"a cell is {type(d).__name__}, not an object")
        versions = d.get("versions")
        if (
            not isinstance(versions, Mapping)
            or not versions
            or not all(isinstance(k, str) and isinstance(v, str) for k, v in versions.items())
        ):
            raise _malformed(f"'versions' is {versions!r}, not an object of axis: version")
        where = combo(tuple(versions.items()))
        state = _field(d, "state", str, where, required=True)
        if state not in STATES:
            raise _malformed(f"{where}: 'state' is {state!r}, not one of {', '.join(STATES)}")
        kind = _field(d, "kind", str, where)
        if kind is not None and kind not in KINDS:
            raise _malformed(f"{where}: 'kind' is {kind!r}, not one of {', '.join(KINDS)}")
        seconds = _seconds(d, f"{where}:")
        return cls(
            python=_field(d, "python", str, where, required=True),
            versions=tuple(versions.items()),
            state=CellState(state),
            kind=OutcomeKind(kind) if kind is not None else None,
            signal=_field(d, "signal", str, where),
            signature=_field(d, "signature", str, where) or "",
            library=_field(d, "library", str, where),
            seconds=seconds,
            measured_at=_field(d, "measured_at", str, where),
            installed=_installed(d["installed"], where) if "installed" in d else None,
            inferred_from=_field(d, "inferred_from", str, where),
            env_id=_field(d, "env_id", str, where),
            lock=_field(d, "lock", str, where),
            pylock=_field(d, "pylock", str, where),
            outside=_field(d, "outside", str, where),
            deep=_deep(d.get("deep"), where),
        )


def read_cells(raw: object, *, source: str) -> tuple[PublishedCell, ...]:
    """A ``results.json``'s ``cells`` (``source``: the file, for the message)."""
    if not isinstance(raw, list):
        raise _malformed(f"{source}: 'cells' is {type(raw).__name__}, not a list")
    out = []
    for n, d in enumerate(raw):
        try:
            out.append(PublishedCell.from_dict(d))
        except UsageError as e:
            raise ResultsMalformed(f"{source}, cell {n}: {e.message}", hint=e.hint) from e
    return tuple(out)


def _malformed(message: str) -> ResultsMalformed:
    return ResultsMalformed(f"malformed published cell: {message}", hint=HINT)


def _field(
    d: Mapping[str, Any], name: str, kind: type, where: str, *, required: bool = False
) -> Any:
    """``d[name]`` when it is a ``kind`` (or null and not ``required``), else the error."""
    value = d.get(name)
    if value is None and not required:
        return None
    if not isinstance(value, kind):
        what = "missing" if name not in d else f"{value!r}"
        raise _malformed(f"{where}: '{name}' is {what}, not a {kind.__name__}")
    return value


def _seconds(d: Mapping[str, Any], where: str) -> float | None:
    """``d["seconds"]``: a number or null (a bool is neither), else the error."""
    seconds = d.get("seconds")
    if seconds is not None and (isinstance(seconds, bool) or not isinstance(seconds, (int, float))):
        raise _malformed(f"{where} 'seconds' is {seconds!r}, not a number")
    return seconds


def _installed(raw: object, where: str) -> tuple[InstalledDist, ...]:
    if not isinstance(raw, list):
        raise _malformed(f"{where}: 'installed' is {raw!r}, not a list")
    out = []
    for d in raw:
        if not (
            isinstance(d, Mapping)
            and set(d) == {"name", "version"}
            and all(isinstance(v, str) for v in d.values())
        ):
            raise _malformed(f"{where}: 'installed' holds {d!r}, not a name and a version")
        out.append(InstalledDist(name=d["name"], version=d["version"]))
    return tuple(out)


def _deep(raw: object, where: str) -> tuple[DeepRun, ...]:
    if raw is None:
        return ()
    if not isinstance(raw, list):
        raise _malformed(f"{where}: 'deep' is {raw!r}, not a list")
    return tuple(DeepRun.from_dict(d, where) for d in raw)
