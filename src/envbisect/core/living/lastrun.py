"""``results/<matrix>/run.json``: how the last run of a matrix was made, typed.

``envbisect matrix`` writes it (``LastRun.to_dict``: the keys in the order they have always
had, a field that does not apply left out); publishing reads it (``LastRun.from_dict``: a
field an older envbisect did not write takes its default, one that is there but of the wrong
kind is a ``ResultsMalformed`` naming it). Its keys travel into ``results.json``'s ``matrix``
block as they were written (``core.living.meta.MatrixMeta.run``), so nothing here decides what
a published table says of a run: only what publishing acts on (when the run measured, why a
value left, which cells were rechecked) is read back.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from envbisect.core.living.cell import Key, Versions
from envbisect.core.living.update import Gone
from envbisect.errors import ResultsMalformed

HINT = "run.json is written by envbisect matrix: restore the committed one, or run it again"
# What a run's cells came to, in the order run.json has always listed them.
COUNTED = ("cells", "built", "reused", "inferred", "unresolvable", "untestable")


@dataclass(frozen=True, slots=True, kw_only=True)
class Counts:
    """How many cells a run had, and what became of each (``built``: probed by this run;
    ``reused``: its record was in the store)."""

    cells: int = 0
    built: int = 0
    reused: int = 0
    inferred: int = 0
    unresolvable: int = 0
    untestable: int = 0

    def to_dict(self) -> dict[str, int]:
        return {name: getattr(self, name) for name in COUNTED}

    @classmethod
    def from_dict(cls, d: object) -> Counts:
        if not isinstance(d, Mapping):
            raise malformed(f"'counts' is {d!r}, not an object")
        return cls(**{name: _whole(d.get(name, 0), f"'counts' has {name}") for name in COUNTED})


@dataclass(frozen=True, slots=True, kw_only=True)
class Recheck:
    """A published cell probed again by ``matrix --update --recheck``: its outcome as
    published (``before``) and now (``after``); ``why``: why it could not be probed again (an
    untestable build: the cell keeps its published outcome)."""

    python: str
    versions: Versions
    before: str | None = None
    after: str | None = None
    why: str | None = None

    @property
    def key(self) -> Key:
        return (self.python, self.versions)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "python": self.python,
            "versions": dict(self.versions),
            "before": self.before,
            "after": self.after,
        }
        if self.why is not None:
            out["why"] = self.why
        return out

    def cell_dict(self) -> dict[str, Any]:
        """The cell alone, as run.json's ``update.rechecked`` names it."""
        return {"python": self.python, "versions": dict(self.versions)}

    @classmethod
    def from_dict(cls, d: object) -> Recheck:
        if not isinstance(d, Mapping):
            raise malformed(f"a recheck is {d!r}, not an object")
        python, versions = d.get("python"), d.get("versions")
        if not isinstance(python, str) or not isinstance(versions, Mapping):
            raise malformed(f"a recheck names no Python and versions: {dict(d)!r}")
        return cls(
            python=python,
            versions=tuple((str(p), str(v)) for p, v in versions.items()),
            before=_text(d.get("before")),
            after=_text(d.get("after")),
            why=_text(d.get("why")),
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class UpdateNote:
    """``run.json``'s ``update``: what ``matrix --update`` did that publishing says."""

    new: int = 0  # new cells probed
    gone: tuple[Gone, ...] = ()  # axis values that left the table, and why
    rechecked: tuple[Recheck, ...] = ()
    not_rechecked: tuple[Recheck, ...] = ()  # could not be built again

    @property
    def probed(self) -> bool:
        """Whether the update measured anything (a new cell or a recheck)."""
        return bool(self.new or self.rechecked)

    def why_removed(self) -> dict[tuple[str, str, str], str]:
        """(python, package, version) -> why that value left the table."""
        return {(g.python, g.package, g.version): g.why for g in self.gone}

    def to_dict(self) -> dict[str, Any]:
        return {
            "new": self.new,
            "gone": [g.to_dict() for g in self.gone],
            "rechecked": [r.cell_dict() for r in self.rechecked],
            "not_rechecked": [r.to_dict() for r in self.not_rechecked],
        }

    @classmethod
    def from_dict(cls, d: object) -> UpdateNote:
        if not isinstance(d, Mapping):
            raise malformed(f"'update' is {d!r}, not an object")
        return cls(
            new=_whole(d.get("new", 0), "'update' has new"),
            gone=tuple(_gone(g) for g in _list(d, "gone")),
            rechecked=tuple(Recheck.from_dict(r) for r in _list(d, "rechecked")),
            not_rechecked=tuple(Recheck.from_dict(r) for r in _list(d, "not_rechecked")),
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class LastRun:
    """The whole ``run.json``."""

    command: str = ""
    measured: str = ""  # when the cells were measured (an update that probed none: the last)
    checked: str | None = None  # matrix --update: when it read the index
    machine: str = ""  # this machine in a few words, never a path or a host name
    targets: Mapping[str, Any] = field(default_factory=dict)  # python -> Target.described()
    axis_versions: Mapping[str, Sequence[Sequence[str]]] | None = None  # python -> per axis
    counts: Counts = field(default_factory=Counts)
    full: bool = False
    jobs: int = 1
    update: UpdateNote | None = None
    env: Mapping[str, str] = field(default_factory=dict)  # --env, masked

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"command": self.command, "measured": self.measured}
        if self.checked is not None:
            out["checked"] = self.checked
        out |= {"machine": self.machine, "targets": dict(self.targets)}
        if self.axis_versions is not None:
            out["axis_versions"] = {
                py: [list(a) for a in axes] for py, axes in self.axis_versions.items()
            }
        out |= {
            "counts": self.counts.to_dict(),
            "full": self.full,
            "jobs": self.jobs,
        }
        if self.update is not None:
            out["update"] = self.update.to_dict()
        if self.env:
            out["env"] = dict(self.env)
        return out

    @classmethod
    def from_dict(cls, d: object) -> LastRun:
        """A run.json as any envbisect wrote it (``{}``: none was written)."""
        if not isinstance(d, Mapping):
            raise malformed(f"it holds {type(d).__name__}, not an object")
        axes = d.get("axis_versions")
        if axes is not None and not (
            isinstance(axes, Mapping)
            and all(
                isinstance(v, list) and all(isinstance(a, list) for a in v) for v in axes.values()
            )
        ):
            raise malformed(f"'axis_versions' is {axes!r}, not python -> each axis's versions")
        targets, env = d.get("targets", {}), d.get("env", {})
        for name, value in (("targets", targets), ("env", env)):
            if not isinstance(value, Mapping):
                raise malformed(f"'{name}' is {value!r}, not an object")
        update = d.get("update")
        return cls(
            command=str(d.get("command") or ""),
            measured=str(d.get("measured") or ""),
            checked=_text(d.get("checked")),
            machine=str(d.get("machine") or ""),
            targets=dict(targets),
            axis_versions=(
                None
                if axes is None
                else {str(py): [[str(v) for v in a] for a in v] for py, v in axes.items()}
            ),
            counts=Counts.from_dict(d.get("counts", {})),
            full=bool(d.get("full", False)),
            jobs=_whole(d.get("jobs", 1), "'jobs' is"),
            update=UpdateNote.from_dict(update) if update else None,
            env={str(k): str(v) for k, v in env.items()},
        )


def _gone(d: object) -> Gone:
    if not isinstance(d, Mapping):
        raise malformed(f"a value that left is {d!r}, not an object")
    names = ("python", "package", "version", "why")
    if not all(isinstance(d.get(n), str) for n in names):
        raise malformed(f"a value that left names no python, package, version and why: {d!r}")
    cells = d.get("cells", 0)
    return Gone(
        python=d["python"],
        package=d["package"],
        version=d["version"],
        why=d["why"],
        cells=cells if isinstance(cells, int) else 0,
    )


def _list(d: Mapping[str, Any], name: str) -> list[Any]:
    value = d.get(name, [])
    if not isinstance(value, list):
        raise malformed(f"'update' has {name} {value!r}, not a list")
    return value


def _whole(value: object, what: str) -> int:
    """``value`` if it is a whole number (not a bool), else the error ``what`` begins."""
    if not isinstance(value, int) or isinstance(value, bool):
        raise malformed(f"{what} {value!r}, not a number")
    return value


def _text(value: object) -> str | None:
    return None if value is None else str(value)


def malformed(message: str) -> ResultsMalformed:
    return ResultsMalformed(f"malformed run.json: {message}", hint=HINT)
