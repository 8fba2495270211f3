"""The roots of ddmin's failing set: the changes that are causes, not forced.

Who does what: ddmin (strategy/ddmin.py) ends with a 1-minimal set of changes that failed
together, in effective terms. A new major version often drags in packages that exist in BAD
only because it requires them: ddmin cannot remove them (without them nothing with the new
version can be probed), yet they are forced, not causes. Here the set is reduced to its
*roots*: a member whose change the other members' BAD versions require (``Requires-Dist``
read through the planner's metadata source, markers evaluated for the target, extras asked
of it honoured), directly or through each other, is forced by them; a member no other member
forces is a root. Members that force each other round a cycle with nothing outside forcing
them are all roots (neither can move without the other).

A requirement forces a change only when GOOD's version (or GOOD's absence) does not satisfy
it: app 2.0 requiring ``lib`` does not make lib 1.0 -> 1.1 forced (GOOD's lib would do); app
2.0 requiring ``dep>=2`` or a package GOOD lacks does.

The reduction is a claim, so it is verified with real probes (``verify`` in engine.py runs
them), planned like every diff environment (GOOD, the roots applied, the planner moving what
they force inside the span of the two ends): GOOD plus the roots must fail (like BAD, or any
failure with ``--any-failure``), and GOOD plus all the roots but one must pass or have no
consistent environment, for each root. Where that does not hold, the culprits are ddmin's set,
with a note saying why: roots that did not verify are never claimed.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

from envbisect.core.markers import applies
from envbisect.core.results.diff import Change

Deps = Callable[[str, Version], Sequence[Requirement]]


def forcing(
    members: Sequence[Change], good: Mapping[str, Version], deps: Deps, markers: Mapping[str, str]
) -> dict[str, set[str]]:
    """Edges ``m -> n`` between members: m's BAD version (with the extras other members ask
    of it) requires n, and GOOD's n (or its absence) does not satisfy that requirement."""
    bad = {c[0]: Version(c[2]) for c in members if c[2] is not None}
    edges: dict[str, set[str]] = {c[0]: set() for c in members}
    extras: dict[str, set[str]] = {n: set() for n in bad}
    todo = sorted(bad)
    while todo:
        m = todo.pop()
        for req in deps(m, bad[m]):
            n = canonicalize_name(req.name)
            if n == m or n not in bad or not _applies(req, markers, extras[m]):
                continue
            g = good.get(n)
            if g is None or not req.specifier.contains(g, prereleases=True):
                edges[m].add(n)
            asked = {canonicalize_name(e) for e in req.extras} - extras[n]
            if asked:  # n's deps under these extras are required too: read n again
                extras[n] |= asked
                todo.append(n)
    return edges


def reach(edges: Mapping[str, set[str]]) -> dict[str, set[str]]:
    """Every member each member forces, directly or through others (itself excluded)."""
    out: dict[str, set[str]] = {}
    for start in edges:
        seen: set[str] = set()
        stack = list(edges[start])
        while stack:
            n = stack.pop()
            if n not in seen:
                seen.add(n)
                stack.extend(edges.get(n, ()))
        seen.discard(start)
        out[start] = seen
    return out


def root_names(edges: Mapping[str, set[str]]) -> set[str]:
    """The members nothing outside their own cycle forces (every member, when none forces)."""
    reached = reach(edges)
    return {m for m in edges if all(x in reached[m] for x in edges if x != m and m in reached[x])}


def reduce(
    minimal: Sequence[Change], good: Mapping[str, Version], deps: Deps, markers: Mapping[str, str]
) -> tuple[tuple[Change, ...], dict[str, tuple[str, ...]]]:
    """The roots of ``minimal`` (in its order) and, for each, the other members it forces."""
    edges = forcing(minimal, good, deps, markers)
    names = root_names(edges)
    reached = reach(edges)
    roots = tuple(c for c in minimal if c[0] in names)
    forced = {
        r[0]: tuple(c[0] for c in minimal if c[0] in reached[r[0]] and c[0] not in names)
        for r in roots
    }
    return roots, {r: f for r, f in forced.items() if f}


def _applies(req: Requirement, markers: Mapping[str, str], extras: set[str]) -> bool:
    """Whether ``req`` applies on the target, without extras or with one asked of it."""
    if req.marker is None:
        return True
    marker = req.marker
    return any(applies(marker, {**markers, "extra": e}) for e in ("", *sorted(extras)))
