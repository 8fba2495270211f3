"""The planner: which environment to build for a candidate, decided in-process before building.

Who does what (pip's resolvelib adapter is the model):
    MetadataSource   a narrow protocol: the versions of a project (with requires-python, upload
                     time, whether a file installs on the target) and one version's
                     dependencies. The IO edge implements it over the index client; tests feed
                     a frozen snapshot.
    _Provider        resolvelib's provider: domain knowledge only (identifiers, candidate order,
                     markers evaluated for the *target*, requires-python, cut-off dates).
    plan()           runs resolvelib, returns a ``Plan`` (every pin, what moved from the
                     baseline, the candidates visited) or an ``Unresolvable`` with the conflict
                     explained in words. Nothing is built for an unresolvable candidate.

Policies for the rest of the environment (``Policy``):
    baseline       every package stays at its baseline version where it can; when it must
                   move, the nearest version wins (newer ones first, then older ones)
    contemporary   the newest version uploaded before the cut-off (the candidate's own
                   upload time), so an old release is tested with the libraries of its day
    latest         the newest version, as uv would pick by default
"""

from __future__ import annotations

import enum
import functools
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol

from packaging.markers import Marker
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import NormalizedName, canonicalize_name
from packaging.version import Version
from resolvelib import AbstractProvider, BaseReporter, Resolver
from resolvelib.resolvers import (
    RequirementInformation,
    ResolutionImpossible,
    ResolutionTooDeep,
)

# resolvelib backtracks one pin at a time; a conflict deep in a large pin set can take it
# minutes. Past this many rounds the planner hands the question to uv (``fallback``).
MAX_ROUNDS = 3_000
# The lookahead reads the metadata of every version a bounded requirement allows, up to this.
LOOKAHEAD_MAX = 30


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
    def versions(self, name: str) -> Sequence[PackageVersion]:
        """Every version of ``name`` (any order). Unknown project: an empty sequence."""
        ...

    def dependencies(self, name: str, version: Version) -> Sequence[Requirement]:
        """``Requires-Dist`` of that version, markers and extras as written."""
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
    # How far each package is from the requirements (1: asked for; 2: what those need...):
    # lock's descent suspects the packages closest to the pins first. Empty: not known.
    depths: Mapping[NormalizedName, int] = field(default_factory=dict)
    # Packages with no file for the target as of the cutoff, moved forward to their first
    # installable release (``plan(forward=True)``), in name order.
    forward: tuple[NormalizedName, ...] = ()

    def requirements(self) -> list[str]:
        return [f"{n}=={v}" for n, v in sorted(self.pins.items())]


@dataclass(frozen=True, slots=True, kw_only=True)
class Unresolvable:
    reason: str
    visited: tuple[tuple[str, str], ...] = ()


# -- resolvelib's three types: requirement, candidate, identifier ------------------------------


@dataclass(frozen=True, slots=True)
class _Req:
    req: Requirement
    parent: _Cand | None  # None: asked for by the user (pins, --with, the candidate itself)

    @property
    def name(self) -> NormalizedName:
        return canonicalize_name(self.req.name)


@dataclass(frozen=True, slots=True)
class _Cand:
    name: NormalizedName
    version: Version
    extras: frozenset[str] = frozenset()
    info: PackageVersion | None = field(default=None, compare=False, hash=False)


def _ident(name: NormalizedName, extras: Iterable[str]) -> str:
    ex = sorted(canonicalize_name(e) for e in extras)
    return f"{name}[{','.join(ex)}]" if ex else name


class _Provider(AbstractProvider[_Req, _Cand, str]):
    def __init__(
        self,
        source: MetadataSource,
        target: PlanTarget,
        *,
        policy: Policy,
        baseline: Mapping[NormalizedName, Version],
        cutoff: datetime | None,
        pre: bool,
        user_names: frozenset[NormalizedName],
        constraints: Mapping[NormalizedName, SpecifierSet],
        cache: MatchCache | None = None,
        forward: bool = False,
    ) -> None:
        self.forward = forward
        self.forwarded: set[NormalizedName] = set()
        self._found: dict[tuple[str, frozenset[int]], tuple[tuple[Any, ...], list[_Cand]]] = {}
        self._satisfied: dict[tuple[int, Version], bool] = {}
        self._held: dict[int, Any] = {}
        self._markers: dict[tuple[str, frozenset[str]], bool] = {}
        self.constraints = constraints
        self.cache: MatchCache = cache if cache is not None else {}
        self.source = source
        self.target = target
        self.policy = policy
        self.baseline = baseline
        self.cutoff = cutoff
        self.pre = pre
        self.user_names = user_names

    def identify(self, requirement_or_candidate: _Req | _Cand) -> str:
        if isinstance(requirement_or_candidate, _Req):
            return _ident(requirement_or_candidate.name, requirement_or_candidate.req.extras)
        return _ident(requirement_or_candidate.name, requirement_or_candidate.extras)

    def get_preference(
        self,
        identifier: str,
        resolutions: Mapping[str, _Cand],
        candidates: Mapping[str, Iterator[_Cand]],
        information: Mapping[str, Iterator[RequirementInformation[_Req, _Cand]]],
        backtrack_causes: Sequence[RequirementInformation[_Req, _Cand]],
    ) -> tuple[bool, bool, bool, str]:
        infos = list(information[identifier])
        # Why this order (smallest first): exact pins settle at once; then what a conflict
        # is about (backtrack causes); then what the user asked for; then by name, so the
        # resolution path is deterministic and the golden tests can check it.
        pinned = any(
            any(
                s.operator in ("==", "===") and "*" not in s.version
                for s in i.requirement.req.specifier
            )
            for i in infos
        )
        causes = {self.identify(c.requirement) for c in backtrack_causes}
        direct = any(i.parent is None for i in infos)
        return (not pinned, identifier not in causes, not direct, identifier)

    def find_matches(
        self,
        identifier: str,
        requirements: Mapping[str, Iterator[_Req]],
        incompatibilities: Mapping[str, Iterator[_Cand]],
    ) -> list[_Cand]:
        reqs = list(requirements[identifier])
        bad = {c.version for c in incompatibilities[identifier]}
        # resolvelib asks again each time a requirement on the project is added, mostly with
        # the same specifiers: the ordered list is kept per set of specifier objects (held,
        # so that their ids stay theirs) and only the incompatibilities are taken out.
        specs = tuple(r.req.specifier for r in reqs)
        memo_key = (identifier, frozenset(map(id, specs)))
        held = self._found.get(memo_key)
        if held is None:
            held = self._found[memo_key] = (specs, self._find(identifier, reqs))
        out = held[1]
        return [c for c in out if c.version not in bad] if bad else list(out)

    def _find(self, identifier: str, reqs: list[_Req]) -> list[_Cand]:
        name = canonicalize_name(identifier.split("[", 1)[0])
        extras = frozenset(e for r in reqs for e in r.req.extras)
        spec = SpecifierSet()
        for r in reqs:
            spec &= r.req.specifier
        explicit_pre = any(s.prereleases for r in reqs for s in r.req.specifier)
        out = [
            _Cand(name, pv.version, extras, pv)
            for pv in self.matching(name, spec, explicit_pre=explicit_pre)
        ]
        return self._order(name, out)

    def matching(
        self, name: NormalizedName, spec: SpecifierSet, *, explicit_pre: bool = False
    ) -> list[PackageVersion]:
        """Versions of ``name`` the target can use that ``spec`` (and the constraints) allow.

        Memoised in ``cache``: a run plans many environments over the same projects, and
        filtering hundreds of versions through specifiers is most of a warm plan's time.
        """
        spec = spec & self.constraints.get(name, SpecifierSet())
        exempt = name in self.user_names
        key = (name, str(spec), explicit_pre, self.pre, None if exempt else self.cutoff)
        hit = self.cache.get(key)
        if hit is None:
            hit = self.cache[key] = self._matching(name, spec, explicit_pre, exempt)
        if not hit and self.forward and self.cutoff is not None and not exempt:
            return self._forward(name, spec, explicit_pre)
        return hit

    def _forward(
        self, name: NormalizedName, spec: SpecifierSet, explicit_pre: bool
    ) -> list[PackageVersion]:
        """With ``forward``: a project that had releases by the cutoff, none of them
        installable here (no wheel for this Python or platform), is taken at its first
        installable release after the cutoff (oldest first, ``_order``), and said in the
        plan's ``forward``."""
        assert self.cutoff is not None
        cutoff = self.cutoff
        versions = [
            pv
            for pv in self.source.versions(name)
            if spec.contains(pv.version, prereleases=True)
            and (self.pre or explicit_pre or not pv.version.is_prerelease)
        ]
        if not any(pv.upload_time is not None and pv.upload_time <= cutoff for pv in versions):
            return []  # nothing of it existed then: no environment of that day had it
        later = [
            pv
            for pv in versions
            if pv.installable
            and self._python_ok(pv)
            and pv.upload_time is not None
            and pv.upload_time > cutoff
        ]
        if later:
            self.forwarded.add(name)
        return later

    def _matching(
        self, name: NormalizedName, spec: SpecifierSet, explicit_pre: bool, exempt: bool
    ) -> list[PackageVersion]:
        out = []
        for pv in self.source.versions(name):
            if not pv.installable or not self._python_ok(pv):
                continue
            if not spec.contains(pv.version, prereleases=True):
                continue
            if pv.version.is_prerelease and not (self.pre or explicit_pre):
                continue
            if (
                self.cutoff is not None
                and not exempt
                and pv.upload_time is not None
                and pv.upload_time > self.cutoff
            ):
                continue
            out.append(pv)
        return out

    def why_none(self, name: NormalizedName) -> str | None:
        """Why versions of ``name`` drop out before any requirement is applied, if they do."""
        versions = list(self.source.versions(name))
        if not versions:
            return f"{name} is not on the index"
        usable = [v for v in versions if v.installable and self._python_ok(v)]
        if not usable:
            return f"no version of {name} installs on Python {self.target.python_version} here"
        if self.cutoff is not None and name not in self.user_names:
            dated = [v for v in usable if v.upload_time is None or v.upload_time <= self.cutoff]
            if not dated:
                return f"no version of {name} was uploaded before {self.cutoff:%Y-%m-%d}"
        return None

    def _python_ok(self, pv: PackageVersion) -> bool:
        if not pv.requires_python:
            return True
        try:
            return SpecifierSet(pv.requires_python).contains(
                self.target.python_version, prereleases=True
            )
        except Exception:  # an unparsable requires-python is ignored, as pip and uv do
            return True

    def _order(self, name: NormalizedName, cands: list[_Cand]) -> list[_Cand]:
        newest_first = sorted(cands, key=lambda c: c.version, reverse=True)
        if name in self.forwarded:  # moved past the cutoff: as little as the target forces
            return newest_first[::-1]
        base = self.baseline.get(name)
        if self.policy is not Policy.BASELINE or base is None:
            return newest_first
        # Minimal change: the baseline itself, then the nearest newer ones, then older ones.
        same = [c for c in cands if c.version == base]
        newer = sorted((c for c in cands if c.version > base), key=lambda c: c.version)
        older = sorted(
            (c for c in cands if c.version < base), key=lambda c: c.version, reverse=True
        )
        return same + newer + older

    def is_satisfied_by(self, requirement: _Req, candidate: _Cand) -> bool:
        # PEP 440: a local version (2.1.0+cu121) satisfies ==2.1.0. resolvelib asks this
        # of every pin on every round: answers are kept per specifier object (held).
        spec = requirement.req.specifier
        key = (id(spec), candidate.version)
        found = self._satisfied.get(key)
        if found is None:
            self._held[id(spec)] = spec
            found = self._satisfied[key] = spec.contains(candidate.version, prereleases=True)
        return found

    def get_dependencies(self, candidate: _Cand) -> list[_Req]:
        deps: list[_Req] = []
        if candidate.extras:
            # name[extra] depends on name==version itself, plus what the extras bring.
            base = Requirement(f"{candidate.name}=={candidate.version}")
            deps.append(_Req(base, candidate))
        for req in self.source.dependencies(candidate.name, candidate.version):
            if req.marker is not None and not self._marker_ok(req.marker, candidate.extras):
                continue
            deps.append(_Req(_strip_marker(req), candidate))
        return deps

    def _marker_ok(self, marker: Marker, extras: frozenset[str]) -> bool:
        # The same markers recur on every version of a project: each is evaluated once per
        # set of extras (kept by the marker's text, which names it exactly).
        key = (str(marker), extras)
        found = self._markers.get(key)
        if found is None:
            found = self._markers[key] = self._evaluate(marker, extras)
        return found

    def _evaluate(self, marker: Marker, extras: frozenset[str]) -> bool:
        env = dict(self.target.markers)
        if not extras:
            env["extra"] = ""
            return marker.evaluate(env)
        for extra in extras:
            env["extra"] = extra
            if marker.evaluate(env):
                return True
        return False


def _strip_marker(req: Requirement) -> Requirement:
    if req.marker is None:
        return req
    return _unmarked(req)


@functools.lru_cache(maxsize=1 << 14)
def _unmarked(req: Requirement) -> Requirement:
    """``req`` without its marker (a new object, cached: the same lines recur)."""
    clone = Requirement(str(req))
    clone.marker = None
    return clone


class _VisitRecorder(BaseReporter[_Req, _Cand, str]):
    """Records which candidates were pinned, in order: the path, for golden tests."""

    def __init__(self) -> None:
        self.visited: list[tuple[str, str]] = []

    def pinning(self, candidate: _Cand) -> None:
        self.visited.append((_ident(candidate.name, candidate.extras), str(candidate.version)))


def plan(
    requirements: Sequence[Requirement],
    source: MetadataSource,
    target: PlanTarget,
    *,
    policy: Policy = Policy.LATEST,
    baseline: Mapping[str, Version] | None = None,
    cutoff: datetime | None = None,
    pre: bool = False,
    constraints: Mapping[str, SpecifierSet] | None = None,
    fallback: Fallback | None = None,
    max_rounds: int = MAX_ROUNDS,
    cache: MatchCache | None = None,
    forward: bool = False,
) -> Plan | Unresolvable:
    """Resolve ``requirements`` (markers already applied or evaluated here for the target).

    ``cutoff`` hides versions uploaded later, except of the projects pinned exactly in
    ``requirements`` (the candidate under test is pinned, whatever its date).
    ``constraints`` narrow the versions of a project if something requires it (pip's ``-c``);
    they never add a project. ``forward`` (with ``cutoff``): a project whose releases by the
    cutoff have no file for the target moves forward to its first installable release.
    A resolution that runs past ``max_rounds`` is handed to
    ``fallback`` (uv, in practice) with the same inputs, when one is given.
    """
    base = {canonicalize_name(k): v for k, v in (baseline or {}).items()}
    roots = [
        _Req(_strip_marker(r), None)
        for r in requirements
        if r.marker is None or r.marker.evaluate({**target.markers, "extra": ""})
    ]
    provider = _Provider(
        source,
        target,
        policy=policy,
        baseline=base,
        cutoff=cutoff,
        pre=pre,
        user_names=frozenset(r.name for r in roots if _is_exact(r.req)),
        constraints={canonicalize_name(k): v for k, v in (constraints or {}).items()},
        cache=cache,
        forward=forward,
    )
    conflict = lookahead(roots, provider)
    if conflict is not None:
        return Unresolvable(reason=conflict)
    recorder = _VisitRecorder()
    resolver: Resolver[_Req, _Cand, str] = Resolver(provider, recorder)
    try:
        result = resolver.resolve(roots, max_rounds=max_rounds)
    except ResolutionImpossible as e:
        return Unresolvable(reason=explain(e.causes, provider), visited=tuple(recorder.visited))
    except ResolutionTooDeep:
        return _too_deep(roots, provider, fallback, max_rounds=max_rounds, visited=recorder)
    pins: dict[NormalizedName, Version] = {c.name: c.version for c in result.mapping.values()}
    return Plan(
        pins=pins,
        moved=moved(base, pins, provider.user_names),
        visited=tuple(recorder.visited),
        depths=_depths(result.graph),
        forward=tuple(sorted(n for n in provider.forwarded if n in pins)),
    )


def _depths(graph: Any) -> dict[NormalizedName, int]:
    """Each identifier's distance from the root of resolvelib's graph (None), by name."""
    out: dict[NormalizedName, int] = {}
    frontier: list[Any] = [None]
    depth = 0
    seen: set[Any] = {None}
    while frontier:
        depth += 1
        nxt = []
        for node in frontier:
            for child in graph.iter_children(node):
                if child in seen:
                    continue
                seen.add(child)
                nxt.append(child)
                out.setdefault(canonicalize_name(str(child).split("[", 1)[0]), depth)
        frontier = nxt
    return out


def _too_deep(
    roots: Sequence[_Req],
    provider: _Provider,
    fallback: Fallback | None,
    *,
    max_rounds: int,
    visited: _VisitRecorder,
) -> Plan | Unresolvable:
    """A resolution past ``max_rounds``: ``fallback``'s answer to the same question (the
    provider's inputs), else unresolvable."""
    if fallback is not None:
        return fallback(
            [r.req for r in roots],
            policy=provider.policy,
            baseline=provider.baseline,
            cutoff=provider.cutoff,
            constraints=provider.constraints,
            pre=provider.pre,
            user_names=provider.user_names,
        )
    return Unresolvable(
        reason=f"the resolver gave up after {max_rounds} rounds",
        visited=tuple(visited.visited),
    )


class Fallback(Protocol):
    """Another resolver for the same question (uv): used when resolvelib runs too long."""

    def __call__(
        self,
        requirements: Sequence[Requirement],
        *,
        policy: Policy,
        baseline: Mapping[NormalizedName, Version],
        cutoff: datetime | None,
        constraints: Mapping[NormalizedName, SpecifierSet],
        pre: bool,
        user_names: frozenset[NormalizedName],
    ) -> Plan | Unresolvable: ...


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


def lookahead(roots: Sequence[_Req], provider: _Provider) -> str | None:
    """A conflict one level down, found without search: every version a bounded requirement
    allows needs something that excludes a version the user pinned exactly.

    "every trl in >=0.18.0,<=0.24.0 needs datasets>=3.0.0, and you ask for datasets==2.21.0"
    is what uv's PubGrub says at once and resolvelib finds only after a long backtrack.
    """
    exact: dict[NormalizedName, Version] = {}
    for r in roots:
        if _is_exact(r.req):
            exact[r.name] = Version(next(iter(r.req.specifier)).version)
    if not exact:
        return None
    for r in roots:
        if r.name in exact or r.req.extras or not _upper_bounded(r.req.specifier):
            continue
        versions = provider.matching(r.name, r.req.specifier)
        if not versions or len(versions) > LOOKAHEAD_MAX:
            continue
        prefetch = getattr(provider.source, "prefetch_dependencies", None)
        if prefetch is not None:
            prefetch([(r.name, pv.version) for pv in versions])
        for name, pinned in exact.items():
            if name == r.name:
                continue
            needs: set[str] = set()
            for pv in versions:
                specs = [
                    d.specifier
                    for d in provider.source.dependencies(r.name, pv.version)
                    if canonicalize_name(d.name) == name
                    and (d.marker is None or provider._marker_ok(d.marker, frozenset()))
                ]
                combined = SpecifierSet()
                for s in specs:
                    combined &= s
                if not specs or combined.contains(pinned, prereleases=True):
                    break
                needs.add(str(combined))
            else:
                return (
                    f"every {r.name} in {r.req.specifier} needs {name}{' or '.join(sorted(needs))}"
                    f", and you ask for {name}=={pinned}"
                )
    return None


def _upper_bounded(spec: SpecifierSet) -> bool:
    return any(s.operator in ("<", "<=", "==", "~=", "===") for s in spec)


def _is_exact(req: Requirement) -> bool:
    specs = list(req.specifier)
    return len(specs) == 1 and specs[0].operator in ("==", "===") and "*" not in specs[0].version


def explain(causes: Iterable[RequirementInformation[_Req, _Cand]], provider: _Provider) -> str:
    """The conflict in words: who asks for what, deduplicated, and why nothing fits."""
    parts: list[str] = []
    for info in causes:
        req = info.requirement.req
        who = (
            "you ask for"
            if info.parent is None
            else f"{info.parent.name} {info.parent.version} needs"
        )
        text = f"{who} {canonicalize_name(req.name)}{req.specifier or ' (any version)'}"
        if text not in parts:
            parts.append(text)
    if not parts:
        return "no version satisfies the requirements"
    names = sorted({canonicalize_name(i.requirement.req.name) for i in causes})
    why = [w for n in names if (w := provider.why_none(n))]
    tail = f" ({'; '.join(why)})" if why else ""
    return f"no version of {', '.join(names)} fits: " + "; ".join(parts) + tail
