"""Which distribution: ships an import name, stated which version, defines a class a
message names, made the failing call; and each question asked of its releases.

Who does what: ``WhyContext`` holds one run's reader, releases and the versions the text
states (core/checks/observed.py's environment block, else core/evidence/stated.py's prose);
``dist_of`` confirms an import name's candidates (core/evidence/importnames.py) by the wheel's
own files; ``caller`` and ``call_site`` are the installed frames that made the import or the
call; ``definition`` finds where a class or function a message names is defined;
``history`` runs a static probe's search (modes/staticprobes.py). modes/why.py decides what
to ask of each evidence item.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from packaging.utils import canonicalize_name

from envbisect.core.evidence import signatures as sig
from envbisect.core.evidence.apisource import parse
from envbisect.core.evidence.boundaries import History, merged
from envbisect.core.evidence.failure import BadCall, Evidence, Frame
from envbisect.core.evidence.importnames import candidates, member_of, top_levels
from envbisect.core.evidence.stated import stated_version
from envbisect.core.results.why import Explained
from envbisect.index.client import IndexClient
from envbisect.modes.releasereads import Reader, Releases
from envbisect.modes.staticprobes import Question, search
from envbisect.progress import Progress

_LISTED_TRIED = 40  # listed distributions read for a top-level name no candidate ships
_EXPORTERS_TRIED = 12  # distributions asked for a class no frame locates
# The training stack: where a class named in a message without a frame is looked for first.
_STACK = (
    "transformers",
    "trl",
    "peft",
    "accelerate",
    "datasets",
    "diffusers",
    "huggingface-hub",
    "deepspeed",
    "vllm",
    "torch",
    "llamafactory",
)


@dataclass
class WhyContext:
    client: IndexClient
    reader: Reader
    releases: Releases
    installed: dict[str, str]
    listed: tuple[str, ...]
    threads: int
    progress: Progress
    dists: dict[str, str | None] = field(default_factory=dict)
    text: str = ""
    stated: dict[str, str | None] = field(default_factory=dict)


def version(ctx: WhyContext, dist: str) -> str | None:
    """The version of ``dist`` the text states: its environment block's, else its prose's."""
    dist = canonicalize_name(dist)
    if dist in ctx.installed:
        return ctx.installed[dist]
    if dist not in ctx.stated:
        tops = tuple(t for t, d in ctx.dists.items() if d == dist)
        said = stated_version(ctx.text, dist, tops)
        ctx.stated[dist] = said.split("+", 1)[0] if said else None
    return ctx.stated[dist]


def dist_of(ctx: WhyContext, top: str) -> str | None:
    """The distribution that ships the top-level import name ``top`` (module docstring)."""
    if top in ctx.dists:
        return ctx.dists[top]
    found = None
    for dist in candidates(top, ctx.listed):
        if ships_top(ctx, dist, top):
            found = dist
            break
    if found is None:
        for dist in [d for d in ctx.listed if d not in candidates(top)][:_LISTED_TRIED]:
            if ships_top(ctx, dist, top):
                found = dist
                break
    ctx.dists[top] = found
    return found


def ships_top(ctx: WhyContext, dist: str, top: str) -> bool:
    rels = ctx.releases.of(dist, version(ctx, dist))
    if not rels:
        return False
    want = version(ctx, dist)
    picks = [r for r in rels if str(r.version) == want][:1]
    picks += [rels[-1]] if rels[-1] not in picks else []  # a broken release may lack it
    return any(top in top_levels(ctx.reader.names(p.file)) for p in picks)


def history(ctx: WhyContext, q: Question) -> History | None:
    dist = canonicalize_name(q.dist)
    rels = ctx.releases.of(dist, version(ctx, dist))
    if not rels:
        return None
    ctx.progress.message(f"envbisect: why: {q.text}: reading {dist}'s releases")
    return search(ctx.reader, rels, q, installed=version(ctx, dist), threads=ctx.threads)


def caller(ctx: WhyContext, item: Evidence, callee_top: str | None) -> tuple[Frame, str] | None:
    """The innermost frame, where it is installed code of another distribution."""
    frame = item.caller
    if frame is None or frame.module is None or frame.top is None:
        return None
    if callee_top is not None and frame.top == callee_top:
        return None  # inside the callee's own distribution: its release is the one question
    dist = dist_of(ctx, frame.top)
    return (frame, dist) if dist is not None else None


def call_site(ctx: WhyContext, item: BadCall) -> tuple[Frame, str, str] | None:
    """The installed frame that makes the call, its distribution, and the name called there
    ("" for any call). A call that forwards ``**kwargs`` (a wrapper's ``super().__init__``)
    passes on what it was given: the frame above it made the call with the keyword."""
    frames = [f for f in item.frames if not f.path.startswith("<")]
    if not frames or frames[-1].module is None:
        return None
    frame, callee = frames[-1], item.func
    if "**" in frame.source and item.keyword and len(frames) > 1 and frames[-2].module:
        frame = frames[-2]
        called = re.findall(r"([A-Za-z_]\w*)\s*\(", frame.source)
        callee = called[-1] if called else ""
    assert frame.top is not None
    dist = dist_of(ctx, frame.top)
    return (frame, dist, callee) if dist is not None else None


def definition(ctx: WhyContext, item: BadCall) -> tuple[str, str] | None:
    """Where the called class or function is defined: ``(distribution, module)``, looked for
    in the modules of the installed frames (innermost first) and what they import."""
    name = item.owner or item.func
    frames = [f for f in reversed(item.frames) if f.module is not None][:4]
    for frame in frames:
        assert frame.module is not None and frame.top is not None
        found = locate(ctx, frame.module, name, depth=0)
        if found is not None:
            return found
    if item.owner is None:
        return None
    # No frame defines or imports the class: the packages the text lists (the training
    # stack's first), each asked whether its top-level module exports it.
    listed = sorted(ctx.listed, key=lambda d: (d not in _STACK, ctx.listed.index(d)))
    for dist in [*listed, *(d for d in _STACK if d not in listed)][:_EXPORTERS_TRIED]:
        rels = ctx.releases.of(dist, version(ctx, dist))
        if not rels:
            continue
        want = version(ctx, dist)
        rel = next((r for r in rels if str(r.version) == want), rels[-1])
        for top in sorted(top_levels(ctx.reader.names(rel.file))):
            if dist_of(ctx, top) != dist:
                continue
            found = locate(ctx, top, name, depth=0)
            if found is not None:
                return found
    return None


def locate(ctx: WhyContext, module: str, name: str, depth: int) -> tuple[str, str] | None:
    top = module.split(".")[0]
    dist = dist_of(ctx, top)
    if dist is None or depth > 3:
        return None
    rels = ctx.releases.of(dist, version(ctx, dist))
    if not rels:
        return None
    want = version(ctx, dist)
    rel = next((r for r in rels if str(r.version) == want), rels[-1])
    names = ctx.reader.names(rel.file)
    member = member_of(names, module)
    if member is None:
        return None
    text = ctx.reader.source(rel.file, member) or ""
    tree = parse(text)
    if tree is None:
        return None
    if sig.defines(tree, name):
        return dist, module
    package = member.endswith("/__init__.py")
    at = sig.imported_at(tree, module, package, name)
    if at is None:
        for key in sig.lazy_keys(tree, name):
            at = f"{module}.{key}"
            break
    return locate(ctx, at, name, depth + 1) if at else None


def finish(
    item: Evidence,
    histories: Sequence[History | None],
    *,
    kind: str = "version",
    notes: Sequence[str] = (),
) -> Explained:
    hs = tuple(h for h in histories if h is not None)
    fixes = tuple(merged(hs))
    more = list(notes)
    for h in hs:
        if h.role == "callee" and h.installed is not None and h.installed_answer == 1:
            more.append(
                f"{h.package} {h.installed} (as the text says) passes this: {h.question}; "
                "the failure ran with another release than the one stated, or not this one"
            )
    if not fixes and kind == "version":
        kind = "unexplained"
    return Explained(item=item, kind=kind, histories=hs, fixes=fixes, notes=tuple(more))


def nobody(item: Evidence, top: str) -> Explained:
    return Explained(
        item=item,
        kind="unexplained",
        notes=(f"no distribution on the index was found to ship {top}",),
    )
