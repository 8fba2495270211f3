"""What the planner answers: which environment to build for a candidate, in words of data.

Who does what (pip's resolvelib adapter is the model):
    MetadataSource   a narrow protocol: the versions of a project (with requires-python, upload
                     time, whether a file installs on the target) and one version's
                     dependencies. The IO edge implements it over the index client; tests feed
                     a frozen snapshot. ``Prefetch``: a source told what a plan will read.
    Provider         resolvelib's provider (core/planprovider.py): domain knowledge only
                     (identifiers, candidate order, markers evaluated for the *target*,
                     requires-python, cut-off dates).
    plan()           runs resolvelib (core/resolve.py; core/planmemo.py remembers its answers),
                     returns a ``Plan`` (every pin, what moved from the baseline, the
                     candidates visited) or an ``Unresolvable`` with the conflict explained in
                     words. Nothing is built for an unresolvable candidate.
    Fallback         another resolver for the same question (uv, env/uvplan.py), asked when
                     resolvelib runs too long.

Policies for the rest of the environment (``Policy``):
    baseline       every package stays at its baseline version where it can; when it must
                   move, the nearest version wins (newer ones first, then older ones)
    contemporary   the newest version uploaded before the cut-off (the candidate's own
                   upload time), so an old release is tested with the libraries of its day
    latest         the newest version, as uv would pick by default
"""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Protocol, runtime_checkable

from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import NormalizedName
from packaging.version import Version

# (name, specifier, explicit pre, pre, cut-off) -> the versions that pass; shared by the plans
# of one run (same source, target and constraints).
MatchCache = dict[tuple[str, str, bool, bool, datetime | None], list["PackageVersion"]]


class Policy(enum.Enum):
    BASELINE = "baseline"
    CONTEMPORARY = "contemporary"
    LATEST = "latest"


@dataclass(frozen=True, slots=True, kw_only=True)
class PackageVersion:
    """One version of a project as the planner sees it."""

    name: NormalizedName
    version: Version
    requires_python: str | None = None
    upload_time: datetime | None = None
    installable: bool = True  # a file of it installs on the target (wheel tags, not yanked)


class MetadataSource(Protocol):
    @property
    def overrides(self) -> Mapping[NormalizedName, SpecifierSet]:
        """``--override``: every requirement on these projects takes these versions (the
        planner applies them, core/resolve.py). Empty: none."""
        ...

    def versions(self, name: str) -> Sequence[PackageVersion]:
        """Every version of ``name`` (any order). Unknown project: an empty sequence."""
        ...

    def dependencies(self, name: str, version: Version) -> Sequence[Requirement]:
        """``Requires-Dist`` of that version, markers and extras as written."""
        ...


@runtime_checkable
class Prefetch(Protocol):
    """A source that can be told what a plan will read, so that it fetches it at once rather
    than as the resolver reaches each project (index/source.py, over the network)."""

    def warm(self, names: Sequence[str]) -> None:
        """Start reading these projects (and the requirements of each one's likely version)
        in the background; return at once."""
        ...

    def prefetch_dependencies(self, pairs: Sequence[tuple[str, Version]]) -> None:
        """Read the requirements of all these versions now, concurrently."""
        ...


@dataclass(frozen=True, slots=True, kw_only=True)
class PlanTarget:
    """What the planner needs of the target: markers and the Python version."""

    markers: Mapping[str, str]
    python_version: Version


@dataclass(frozen=True, slots=True, kw_only=True)
class Plan:
    pins: dict[NormalizedName, Version]
    # What differs from the baseline: (name, baseline version or None if added, planned
    # version or None if dropped). Empty without a baseline.
    moved: tuple[tuple[NormalizedName, Version | None, Version | None], ...]
    visited: tuple[tuple[str, str], ...]  # (identifier, version) pinned, in order
    # Answered by uv (env/uvplan.py's fallback), which reads its own cache: never remembered.
    by_uv: bool = False
    # How far each package is from the requirements (1: asked for; 2: what those need...):
    # lock's descent suspects the packages closest to the pins first. Empty: not known.
    depths: Mapping[NormalizedName, int] = field(default_factory=dict)
    # Packages with no file for the target as of the cutoff, moved forward to their first
    # installable release (``plan(forward=True)``), in name order.
    forward: tuple[NormalizedName, ...] = ()
    # Pins without a local label that a build with one would also meet (torch 2.13.0, with
    # 2.13.0+cpu in a --find-links folder: ``==2.13.0`` lets the installer take either):
    # written ``===`` so the environment holds the build planned.
    exact: frozenset[NormalizedName] = frozenset()

    def requirements(self) -> list[str]:
        return [f"{n}{'===' if n in self.exact else '=='}{v}" for n, v in sorted(self.pins.items())]


@dataclass(frozen=True, slots=True, kw_only=True)
class Unresolvable:
    reason: str
    visited: tuple[tuple[str, str], ...] = ()
    by_uv: bool = False  # as Plan's
    # resolvelib ran past its rounds with no fallback to ask: not an answer about the
    # requirements (uv may well resolve them), so never remembered as one.
    gave_up: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class Question:
    """What a ``Fallback`` is asked: the planner's inputs (its provider's) for one plan."""

    requirements: Sequence[Requirement]
    policy: Policy = Policy.LATEST
    baseline: Mapping[NormalizedName, Version] = field(default_factory=dict)
    cutoff: datetime | None = None
    constraints: Mapping[NormalizedName, SpecifierSet] = field(default_factory=dict)
    pre: bool = False
    user_names: frozenset[NormalizedName] = frozenset()


class Fallback(Protocol):
    """Another resolver for the same question (uv): used when resolvelib runs too long."""

    def __call__(self, question: Question, /) -> Plan | Unresolvable: ...


def moved(
    base: Mapping[NormalizedName, Version],
    pins: Mapping[NormalizedName, Version],
    user_names: frozenset[NormalizedName],
) -> tuple[tuple[NormalizedName, Version | None, Version | None], ...]:
    """What had to move with the candidate (packages the user did not pin themselves):
    changed, added and dropped against the baseline. Empty without a baseline."""
    if not base:
        return ()
    return tuple(
        (name, base.get(name), pins.get(name))
        for name in sorted(base.keys() | pins.keys())
        if base.get(name) != pins.get(name) and name not in user_names
    )
