"""Plans remembered: the same question, over the same pages, is answered without resolving.

A plan is a function of its inputs (the requirements, the target, the policy and its baseline
or cut-off, the constraints, the planner's own code) and of what the metadata source says of
each project it reads. ``plan`` here is ``core.resolve.plan`` with a memo in front: the key names
the inputs; the entry names every project the resolution read with the digest of what was
read (``PlanMemo.digest``: the page's), and is used only while each digest is still the same.
A rerun, a resumed search, ``matrix --update`` and a dry run followed by the run ask the same
questions again: each is answered in milliseconds, and exactly as a resolution would answer.

Pure: the memo and the digests are the source's to keep (the IO edge, index/source.py); a
source that is no ``PlanMemo`` (the tests' snapshots) is planned for as always.
"""

from __future__ import annotations

import functools
import hashlib
import inspect
import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any, ParamSpec, Protocol, runtime_checkable

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

from envbisect.core import resolve
from envbisect.core.plan import (
    MetadataSource,
    PackageVersion,
    Plan,
    PlanTarget,
    Prefetch,
    Unresolvable,
)

P = ParamSpec("P")

# Bumped when what a key or an entry holds changes meaning.
# 2: resolvelib's give-ups are no longer kept (an old memo may hold one as "unresolvable"),
# and the provider's preference order changed (constraints count as requirements).
# 3: two exact pins that clash are named before the search; what an exact pin needs moves
# forward past a cutoff; torchvision and torchaudio follow an exact torch past it.
# 4: everything a pinned release of after the cutoff needs (by a range too, and in turn) moves
# forward past it where nothing of the day fits (an older memo may hold such a cell as
# unresolvable).
FORMAT = 4


@runtime_checkable
class PlanMemo(Protocol):
    """What a metadata source offers to remember plans (index/source.py implements it)."""

    def recall(self, key: str) -> Mapping[str, Any] | None:
        """The entry kept under ``key``, if every digest it names is still the same."""
        ...

    def keep(self, key: str, entry: Mapping[str, Any], read: Sequence[str]) -> None:
        """Keep ``entry`` under ``key``, with the digest of each project in ``read``."""
        ...


class _Recording:
    """The source, noting each project the resolution reads."""

    def __init__(self, source: MetadataSource) -> None:
        self.source = source
        self.overrides = source.overrides
        self.read: dict[str, None] = {}

    # core.plan's Prefetch, passed on (what is fetched ahead is not "read" until asked for).
    def warm(self, names: Sequence[str]) -> None:
        if isinstance(self.source, Prefetch):
            self.source.warm(names)

    def prefetch_dependencies(self, pairs: Sequence[tuple[str, Version]]) -> None:
        if isinstance(self.source, Prefetch):
            self.source.prefetch_dependencies(pairs)

    def versions(self, name: str) -> Sequence[PackageVersion]:
        self.read[canonicalize_name(name)] = None
        return self.source.versions(name)

    def dependencies(self, name: str, version: Version) -> Sequence[Requirement]:
        self.read[canonicalize_name(name)] = None
        return self.source.dependencies(name, version)


def _with_signature_of(
    planner: Callable[P, Plan | Unresolvable],
) -> Callable[[Callable[..., Plan | Unresolvable]], Callable[P, Plan | Unresolvable]]:
    """``planner``'s signature for the function decorated: it is called with every argument
    ``planner`` takes, its defaults filled in, by name."""
    signature = inspect.signature(planner)

    def decorate(
        remembered: Callable[..., Plan | Unresolvable],
    ) -> Callable[P, Plan | Unresolvable]:
        @functools.wraps(remembered)
        def call(*args: P.args, **kwargs: P.kwargs) -> Plan | Unresolvable:
            bound = signature.bind(*args, **kwargs)
            bound.apply_defaults()
            return remembered(**bound.arguments)

        return call

    return decorate


@_with_signature_of(resolve.plan)
def plan(
    requirements: Sequence[Requirement],
    source: MetadataSource,
    target: PlanTarget,
    **kw: Any,
) -> Plan | Unresolvable:
    """``core.resolve.plan``, remembered by a source that is a ``PlanMemo`` (see above)."""
    if not isinstance(source, PlanMemo):
        return resolve.plan(requirements, source, target, **kw)
    key = memo_key(requirements, target, kw)
    hit = source.recall(key)
    if hit is not None:
        found = from_entry(hit)
        if found is not None:
            return found
    recording = _Recording(source)
    result = resolve.plan(requirements, recording, target, **kw)
    # uv's answer reads its own cache; a give-up is no answer (uv may resolve it).
    gave_up = isinstance(result, Unresolvable) and result.gave_up
    if not result.by_uv and not gave_up:
        source.keep(key, to_entry(result), list(recording.read))
    return result


def memo_key(requirements: Sequence[Requirement], target: PlanTarget, kw: Mapping[str, Any]) -> str:
    """A digest of every input of a plan but the source (and the match cache, which only
    saves time)."""

    def spec_map(m: Mapping[str, Any] | None) -> list[tuple[str, str]]:
        return sorted((str(canonicalize_name(k)), str(v)) for k, v in (m or {}).items())

    cutoff = kw["cutoff"]
    parts = {
        "format": FORMAT,
        "requirements": [str(r) for r in requirements],
        "markers": sorted(target.markers.items()),
        "python": str(target.python_version),
        "policy": kw["policy"].value,
        "baseline": spec_map(kw["baseline"]),
        "cutoff": cutoff.isoformat() if cutoff is not None else None,
        "pre": kw["pre"],
        "constraints": spec_map(kw["constraints"]),
        "max_rounds": kw["max_rounds"],
        "fallback": kw["fallback"] is not None,
        "forward": kw["forward"],
    }
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()


def to_entry(result: Plan | Unresolvable) -> dict[str, Any]:
    if isinstance(result, Unresolvable):
        return {"unresolvable": result.reason, "visited": [list(v) for v in result.visited]}
    return {
        "pins": {n: str(v) for n, v in result.pins.items()},
        "moved": [[n, _str(b), _str(v)] for n, b, v in result.moved],
        "visited": [list(v) for v in result.visited],
        "depths": dict(result.depths),
        "forward": list(result.forward),
        "exact": sorted(result.exact),
    }


def from_entry(entry: Mapping[str, Any]) -> Plan | Unresolvable | None:
    """The plan an entry holds (None: not one: it is planned again)."""
    try:
        visited = tuple((str(a), str(b)) for a, b in entry["visited"])
        if "unresolvable" in entry:
            return Unresolvable(reason=str(entry["unresolvable"]), visited=visited)
        return Plan(
            pins={canonicalize_name(n): Version(v) for n, v in entry["pins"].items()},
            moved=tuple(
                (canonicalize_name(n), _version(b), _version(v)) for n, b, v in entry["moved"]
            ),
            visited=visited,
            depths={canonicalize_name(n): int(d) for n, d in entry["depths"].items()},
            forward=tuple(canonicalize_name(n) for n in entry["forward"]),
            exact=frozenset(canonicalize_name(n) for n in entry["exact"]),
        )
    except (KeyError, TypeError, ValueError, AttributeError):
        return None


def _str(v: Version | None) -> str | None:
    return None if v is None else str(v)


def _version(text: str | None) -> Version | None:
    return None if text is None else Version(text)
