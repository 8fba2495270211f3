"""The planner's run: resolvelib over the provider, and a conflict said in words.

``plan`` resolves the requirements for a target (core/plan.py says what it answers);
``lookahead`` finds, without a search, the conflict one level down that resolvelib would
take a long backtrack to find; ``explain`` turns resolvelib's causes into a sentence. A run
past ``max_rounds`` is handed to the ``Fallback`` (uv).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import NormalizedName, canonicalize_name
from packaging.version import Version
from resolvelib import BaseReporter, Resolver
from resolvelib.resolvers import (
    RequirementInformation,
    ResolutionImpossible,
    ResolutionTooDeep,
)

from envbisect.core.markers import applies
from envbisect.core.names import TORCH_BUILT, TORCH_PACKAGES
from envbisect.core.overrides import apply
from envbisect.core.plan import (
    Fallback,
    MatchCache,
    MetadataSource,
    Plan,
    PlanTarget,
    Policy,
    Prefetch,
    Question,
    Unresolvable,
    moved,
)
from envbisect.core.planprovider import Cand, Provider, Req, ident, strip_marker

# resolvelib backtracks one pin at a time; a conflict deep in a large pin set can take it
# minutes. Past this many rounds the planner hands the question to uv (``fallback``).
MAX_ROUNDS = 3_000
# The lookahead reads the metadata of every version a bounded requirement allows, up to this.
LOOKAHEAD_MAX = 30


class _VisitRecorder(BaseReporter[Req, Cand, str]):
    """Records which candidates were pinned, in order: the path, for golden tests."""

    def __init__(self) -> None:
        self.visited: list[tuple[str, str]] = []

    def pinning(self, candidate: Cand) -> None:
        self.visited.append((ident(candidate.name, candidate.extras), str(candidate.version)))


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
    max_rounds: int | None = None,
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
    if max_rounds is None:  # read at call time: a test may make the give-up come early
        max_rounds = MAX_ROUNDS
    base = {canonicalize_name(k): v for k, v in (baseline or {}).items()}
    # --override (core/overrides.py): the source says which. Every requirement on such a
    # project takes the override's versions, except where a root pins it exactly (the
    # candidate under test, a cell's axis): there that pin is the override.
    overrides = dict(source.overrides)
    for r in requirements:
        if _is_exact(r) and canonicalize_name(r.name) in overrides:
            overrides[canonicalize_name(r.name)] = r.specifier
    roots = [
        Req(strip_marker(apply(r, overrides)), None)
        for r in requirements
        if applies(r.marker, {**target.markers, "extra": ""})
    ]
    if isinstance(source, Prefetch):  # every root's page read at once, not as reached
        source.warm([r.name for r in roots])
    provider = Provider(
        source,
        target,
        policy=policy,
        baseline=base,
        cutoff=cutoff,
        pre=pre,
        user_names=_user_names(roots),
        constraints={canonicalize_name(k): v for k, v in (constraints or {}).items()},
        cache=cache,
        forward=forward,
        overrides=overrides,
    )
    conflict = lookahead(roots, provider)
    if conflict is not None:
        return Unresolvable(reason=conflict)
    recorder = _VisitRecorder()
    resolver: Resolver[Req, Cand, str] = Resolver(provider, recorder)
    try:
        result = resolver.resolve(roots, max_rounds=max_rounds)
    except ResolutionImpossible as e:
        return Unresolvable(reason=explain(e.causes, provider), visited=tuple(recorder.visited))
    except ResolutionTooDeep:
        return _too_deep(roots, provider, fallback, max_rounds=max_rounds, visited=recorder)
    pins: dict[NormalizedName, Version] = {c.name: c.version for c in result.mapping.values()}
    return Plan(
        exact=local_twins(pins, source),
        pins=pins,
        moved=moved(base, pins, provider.user_names),
        visited=tuple(recorder.visited),
        depths=_depths(result.graph),
        forward=tuple(sorted(n for n in provider.forwarded if n in pins)),
    )


def _user_names(roots: Sequence[Req]) -> frozenset[NormalizedName]:
    """The projects pinned exactly, which no cutoff holds back; with torch, the packages built
    with it (torchvision, torchaudio: one build of one day, core/names.TORCH_BUILT), else a
    cell as of a day before its torch pin would find only torchvisions for older torches."""
    names = {r.name for r in roots if _is_exact(r.req)}
    if "torch" in names:
        names |= TORCH_BUILT
    return frozenset(names)


def local_twins(
    pins: Mapping[NormalizedName, Version], source: MetadataSource
) -> frozenset[NormalizedName]:
    """The pins without a local label that a version with one would also meet (the same
    public version, another build): each must be installed as ``===``."""
    out = set()
    for name, v in pins.items():
        if v.local or name not in TORCH_PACKAGES:
            continue
        if any(pv.version.local and pv.version.public == v.public for pv in source.versions(name)):
            out.add(name)
    return frozenset(out)


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
    roots: Sequence[Req],
    provider: Provider,
    fallback: Fallback | None,
    *,
    max_rounds: int,
    visited: _VisitRecorder,
) -> Plan | Unresolvable:
    """A resolution past ``max_rounds``: ``fallback``'s answer to the same question (the
    provider's inputs), else unresolvable."""
    if fallback is not None:
        return fallback(
            Question(
                requirements=[r.req for r in roots],
                policy=provider.policy,
                baseline=provider.baseline,
                cutoff=provider.cutoff,
                constraints=provider.constraints,
                pre=provider.pre,
                user_names=provider.user_names,
            )
        )
    return Unresolvable(
        reason=f"the resolver gave up after {max_rounds} rounds",
        visited=tuple(visited.visited),
        gave_up=True,
    )


def lookahead(roots: Sequence[Req], provider: Provider) -> str | None:
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
        if isinstance(provider.source, Prefetch):
            provider.source.prefetch_dependencies([(r.name, pv.version) for pv in versions])
        for name, pinned in exact.items():
            if name == r.name:
                continue
            needs: set[str] = set()
            for pv in versions:
                specs = [
                    d.specifier
                    for d in provider.requires(r.name, pv.version)
                    if canonicalize_name(d.name) == name
                    and (d.marker is None or provider.marker_ok(d.marker, frozenset()))
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
    return clash(roots, exact, provider)


def clash(
    roots: Sequence[Req], exact: Mapping[NormalizedName, Version], provider: Provider
) -> str | None:
    """Two exact pins (or one and a requirement of yours) whose own requirements on a third
    project leave no version of it: "llamafactory 0.9.2 needs tokenizers<=0.21.0,>=0.19.0;
    transformers 4.36.2 needs tokenizers<0.19,>=0.14". Found before any search: resolvelib,
    backtracking, would name whatever it tried last (a torch build, say) instead."""
    asks: dict[NormalizedName, list[tuple[str, SpecifierSet]]] = {}
    for r in roots:
        if r.name not in exact:
            if r.req.specifier:
                asks.setdefault(r.name, []).append(("you ask for", r.req.specifier))
            continue
        found = provider.matching(r.name, r.req.specifier)
        if len(found) != 1:
            continue  # builds of one version (torch and torch+cpu) need different things
        extras = frozenset(r.req.extras)
        for d in provider.requires(r.name, found[0].version):
            dep = canonicalize_name(d.name)
            if dep in exact or not d.specifier:
                continue  # an exact pin's conflicts are lookahead's (and the resolver's)
            if d.marker is not None and not provider.marker_ok(d.marker, extras):
                continue
            asks.setdefault(dep, []).append((f"{r.name} {found[0].version} needs", d.specifier))
    for name in sorted(asks):
        by = asks[name]
        if len(by) < 2 or not any(w != "you ask for" for w, _ in by):
            continue
        combined = SpecifierSet()
        for _, spec in by:
            combined &= spec
        if provider.matching(name, combined) or not all(
            provider.matching(name, spec) for _, spec in by
        ):
            continue  # something fits, or one side alone fits nothing (the resolver says so)
        by.sort(key=lambda a: a[0] != "you ask for")  # as explain() says it
        said = "; ".join(f"{who} {name}{spec}" for who, spec in by)
        return f"no version of {name} fits: {said}"
    return None


def _upper_bounded(spec: SpecifierSet) -> bool:
    return any(s.operator in ("<", "<=", "==", "~=", "===") for s in spec)


def _is_exact(req: Requirement) -> bool:
    specs = list(req.specifier)
    return len(specs) == 1 and specs[0].operator in ("==", "===") and "*" not in specs[0].version


def explain(causes: Iterable[RequirementInformation[Req, Cand]], provider: Provider) -> str:
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
