"""resolvelib's provider for the planner: the domain knowledge, and nothing of the search.

Its three types (a requirement, a candidate, an identifier), the candidate order each
``Policy`` asks for, markers evaluated for the *target* (not this machine), requires-python,
cut-off dates and the versions moved forward past one. ``core/resolve.py`` runs resolvelib
over it; the types it answers in are core/plan.py's.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from packaging.markers import Marker
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import NormalizedName, canonicalize_name
from packaging.version import Version
from resolvelib import AbstractProvider
from resolvelib.resolvers import (
    RequirementInformation,
)

from envbisect.core.markers import applies
from envbisect.core.names import TORCH_BUILT
from envbisect.core.overrides import apply_all
from envbisect.core.plan import MatchCache, MetadataSource, PackageVersion, PlanTarget, Policy

# -- resolvelib's three types: requirement, candidate, identifier ------------------------------


@dataclass(frozen=True, slots=True)
class Req:
    req: Requirement
    parent: Cand | None  # None: asked for by the user (pins, --with, the candidate itself)

    @property
    def name(self) -> NormalizedName:
        return canonicalize_name(self.req.name)


@dataclass(frozen=True, slots=True)
class Cand:
    name: NormalizedName
    version: Version
    extras: frozenset[str] = frozenset()
    info: PackageVersion | None = field(default=None, compare=False, hash=False)


def ident(name: NormalizedName, extras: Iterable[str]) -> str:
    ex = sorted(canonicalize_name(e) for e in extras)
    return f"{name}[{','.join(ex)}]" if ex else name


class Provider(AbstractProvider[Req, Cand, str]):
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
        overrides: Mapping[NormalizedName, SpecifierSet] | None = None,
    ) -> None:
        self.forward = forward
        self.overrides = overrides or {}
        self.forwarded: set[NormalizedName] = set()
        # What an exact pin needs exactly, and what that needs exactly in turn; and all that a
        # pinned release of after the cutoff needs: torch 2.13.0, pinned, needs
        # cuda-toolkit==13.0.3 and cuda-bindings>=13.0.3,<14, which did not exist on an older
        # cell's day; forward takes them all the same where nothing of the day fits (the pin
        # is not of that day, so neither is what it needs). A looser requirement of anything
        # else keeps the rule: nothing of it then, nothing of it now.
        self.pinned_needs: set[NormalizedName] = set()
        self._found: dict[tuple[str, frozenset[int]], tuple[tuple[Any, ...], list[Cand]]] = {}
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

    def identify(self, requirement_or_candidate: Req | Cand) -> str:
        if isinstance(requirement_or_candidate, Req):
            return ident(requirement_or_candidate.name, requirement_or_candidate.req.extras)
        return ident(requirement_or_candidate.name, requirement_or_candidate.extras)

    def get_preference(
        self,
        identifier: str,
        resolutions: Mapping[str, Cand],
        candidates: Mapping[str, Iterator[Cand]],
        information: Mapping[str, Iterator[RequirementInformation[Req, Cand]]],
        backtrack_causes: Sequence[RequirementInformation[Req, Cand]],
    ) -> tuple[bool, bool, bool, bool, str]:
        infos = list(information[identifier])
        # Why this order (smallest first): exact pins settle at once; then what a conflict
        # is about (backtrack causes); then what the user asked for; then what is capped
        # from above; then by name, so the resolution path is deterministic and the golden
        # tests can check it. A constraint counts as a requirement here: ``transformers==X``
        # passed as a constraint (lock's descent tries versions that way) is as pinned as a
        # ``--with transformers==X``, and settling it first is what keeps resolvelib from
        # wandering through an uncapped project's hundreds of releases before it (measured:
        # llamafactory 0.9.0's pins went from a give-up after 3000 rounds to 97 rounds).
        specs = [s for i in infos for s in i.requirement.req.specifier]
        name = canonicalize_name(identifier.split("[", 1)[0])
        specs += list(self.constraints.get(name, SpecifierSet()))
        pinned = any(s.operator in ("==", "===") and "*" not in s.version for s in specs)
        capped = any(s.operator in ("<", "<=", "~=", "==", "===") for s in specs)
        causes = {self.identify(c.requirement) for c in backtrack_causes}
        direct = any(i.parent is None for i in infos)
        return (not pinned, identifier not in causes, not direct, not capped, identifier)

    def find_matches(
        self,
        identifier: str,
        requirements: Mapping[str, Iterator[Req]],
        incompatibilities: Mapping[str, Iterator[Cand]],
    ) -> list[Cand]:
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

    def _find(self, identifier: str, reqs: list[Req]) -> list[Cand]:
        name = canonicalize_name(identifier.split("[", 1)[0])
        extras = frozenset(e for r in reqs for e in r.req.extras)
        spec = SpecifierSet()
        for r in reqs:
            spec &= r.req.specifier
        explicit_pre = any(s.prereleases for r in reqs for s in r.req.specifier)
        out = [
            Cand(name, pv.version, extras, pv)
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
        installable here or allowed by what requires it (no wheel for this Python or
        platform; torch 2.13.0, pinned, needs a setuptools newer than the day), is taken at
        its first installable release after the cutoff that is allowed (oldest first,
        ``_order``), and said in the plan's ``forward``. A project that did not exist yet is
        taken so only when an exact pin needs it (``pinned_needs``)."""
        assert self.cutoff is not None
        cutoff = self.cutoff
        versions = [
            pv
            for pv in self.source.versions(name)
            if spec.contains(pv.version, prereleases=True)
            and (self.pre or explicit_pre or not pv.version.is_prerelease)
        ]
        existed = any(
            pv.upload_time is not None and pv.upload_time <= cutoff
            for pv in self.source.versions(name)
        )
        if not existed and name not in self.pinned_needs:
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

    def _order(self, name: NormalizedName, cands: list[Cand]) -> list[Cand]:
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

    def is_satisfied_by(self, requirement: Req, candidate: Cand) -> bool:
        # PEP 440: a local version (2.1.0+cu121) satisfies ==2.1.0. resolvelib asks this
        # of every pin on every round: answers are kept per specifier object (held).
        spec = requirement.req.specifier
        key = (id(spec), candidate.version)
        found = self._satisfied.get(key)
        if found is None:
            self._held[id(spec)] = spec
            found = self._satisfied[key] = spec.contains(candidate.version, prereleases=True)
        return found

    def get_dependencies(self, candidate: Cand) -> list[Req]:
        deps: list[Req] = []
        if candidate.extras:
            # name[extra] depends on name==version itself, plus what the extras bring.
            base = Requirement(f"{candidate.name}=={candidate.version}")
            deps.append(Req(base, candidate))
        pinned = candidate.name in self.user_names or candidate.name in self.pinned_needs
        # A pinned release of after the cutoff is not of that day, so neither is anything it
        # needs: torch 2.13.0 needs cuda-bindings>=13.0.3,<14, cuda-toolkit 13.0.3 needs
        # nvidia-cublas==13.1.1.3.* and nvidia-nvjitlink>=13.0.88,<14. A pin of that day
        # passes on only what it pins exactly (its looser needs are of the day).
        late = pinned and self._after_cutoff(candidate)
        for req in self.requires(candidate.name, candidate.version):
            if req.marker is not None and not self.marker_ok(req.marker, candidate.extras):
                continue
            if candidate.name in TORCH_BUILT:
                req = same_build(req, candidate.version)
            if late or (pinned and _exact(req)):
                self.pinned_needs.add(canonicalize_name(req.name))
            deps.append(Req(strip_marker(req), candidate))
        return deps

    def _after_cutoff(self, candidate: Cand) -> bool:
        """Whether ``candidate`` was uploaded after the cutoff (no cutoff: it was not)."""
        when = candidate.info.upload_time if candidate.info is not None else None
        return self.cutoff is not None and when is not None and when > self.cutoff

    def requires(self, name: NormalizedName, version: Version) -> Sequence[Requirement]:
        """What a version requires, as --override has it (core/overrides.py)."""
        deps = self.source.dependencies(name, version)
        return apply_all(deps, self.overrides) if self.overrides else deps

    def marker_ok(self, marker: Marker, extras: frozenset[str]) -> bool:
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
            return applies(marker, env)
        for extra in extras:
            env["extra"] = extra
            if applies(marker, env):
                return True
        return False


def same_build(req: Requirement, version: Version) -> Requirement:
    """A torch-family package's exact requirement on torch, narrowed to its own build.

    torchvision 0.28.0+cpu requires ``torch==2.13.0``, which PEP 440 lets any 2.13.0 meet:
    PyPI's CUDA build, the CPU one, a ROCm one. It was built against the torch of its own
    label (PyTorch's index pairs them so), and with another it fails at import ("operator
    torchvision::nms does not exist"). So the requirement becomes ``===2.13.0+cpu`` for a
    ``+cpu`` torchvision and ``===2.13.0`` for one without a label (PyPI's)."""
    if canonicalize_name(req.name) != "torch":
        return req
    specs = list(req.specifier)
    if len(specs) != 1 or specs[0].operator != "==" or "*" in specs[0].version:
        return req
    wanted = Version(specs[0].version)
    if wanted.local:
        return req
    build = f"{wanted.public}+{version.local}" if version.local else wanted.public
    return _narrowed(str(req), build)


@functools.lru_cache(maxsize=1 << 10)
def _narrowed(text: str, build: str) -> Requirement:
    clone = Requirement(text)
    clone.specifier = SpecifierSet(f"==={build}")
    return clone


def strip_marker(req: Requirement) -> Requirement:
    if req.marker is None:
        return req
    return _unmarked(req)


@functools.lru_cache(maxsize=1 << 14)
def _unmarked(req: Requirement) -> Requirement:
    """``req`` without its marker (a new object, cached: the same lines recur)."""
    clone = Requirement(str(req))
    clone.marker = None
    return clone


def _exact(req: Requirement) -> bool:
    specs = list(req.specifier)
    return len(specs) == 1 and specs[0].operator in ("==", "===") and "*" not in specs[0].version
