"""``envbisect why``: from a failure's text to the release that changed what it names, and
the fixes, read from the wheels on the index in seconds, nothing built.

Who does what: core/evidence/failure.py reads the evidence items and the frames;
core/checks/observed.py the versions the report states; this module decides, for each item,
which distribution should offer the named thing (the *callee*: importnames.py's candidates,
confirmed by the wheel's own files) and which made the import or the call (the *caller*: the
innermost installed frame), asks each its question over its releases (releasereads.py: static
probes driven by strategy/releases.py), and turns the histories into fixes
(core/evidence/boundaries.py). A failure that is not about a release (a file of the user's
shadowing a package, a package not installed) is said as such, with no version fix.
"""

from __future__ import annotations

import re
import sys
import time
from collections.abc import Sequence
from dataclasses import replace

from packaging.utils import canonicalize_name

from envbisect.core.evidence.boundaries import History, merged
from envbisect.core.evidence.failure import (
    BadCall,
    Evidence,
    MissingAttr,
    MissingLibrary,
    MissingModule,
    MissingName,
    MissingSymbolVersion,
    read_failure,
)
from envbisect.core.evidence.stated import stated_python
from envbisect.core.results.why import Explained, WhyResult
from envbisect.index.client import IndexClient
from envbisect.modes.releasereads import Reader, Releases
from envbisect.modes.staticprobes import (
    Accepts,
    CallerDoes,
    ImportsUnshipped,
    Offers,
    Ships,
)
from envbisect.modes.whichdist import (
    WhyContext,
    call_site,
    caller,
    definition,
    dist_of,
    finish,
    history,
    nobody,
    version,
)
from envbisect.modes.whynative import glibc, shared_library
from envbisect.progress import Progress

_SITE = re.compile(r"[\\/](?:site|dist)-packages[\\/]")


def explain(
    text: str,
    *,
    origin: str,
    client: IndexClient,
    python: str | None = None,
    threads: int = 4,
    progress: Progress | None = None,
) -> WhyResult:
    """Every evidence item of ``text`` explained (see the module's docstring)."""
    from envbisect.core.checks.observed import from_text

    started = time.perf_counter()
    requests_before = client.stats.requests
    # GitHub does not show HTML comments (issue templates' guidance): blanked, lines kept.
    failure = read_failure(
        re.sub(r"<!--.*?-->", lambda m: "\n" * m.group(0).count("\n"), text, flags=re.DOTALL)
    )
    observed = from_text(text, origin=origin)
    installed: dict[str, str] = {}
    for name, said in (observed.packages if observed is not None else {}).items():
        installed[canonicalize_name(name)] = said.value.split("+", 1)[0]
    minor = _minor(
        python
        or failure.python
        or (observed.python_minor() if observed else None)
        or stated_python(text)
    )
    ctx = WhyContext(
        client=client,
        reader=Reader(client),
        releases=Releases(client, minor),
        installed=installed,
        listed=tuple(installed),
        threads=threads,
        progress=progress or Progress(),
        text=text,
    )
    try:
        said_python = (observed.python_minor() if observed else None) or stated_python(text)
        explained = tuple(
            _elsewhere(_explain(ctx, item), failure.python, said_python)
            for item in _distinct(failure.items)
        )
    finally:
        ctx.reader.close()
    return WhyResult(
        origin=origin,
        python=f"{minor[0]}.{minor[1]}",
        explained=explained,
        unreadable=tuple(sorted(ctx.reader.unreadable.items())),
        stated=tuple(
            sorted(
                (h.package, v)
                for e in explained
                for h in e.histories
                if (v := version(ctx, h.package)) is not None
            )
        ),
        requests=client.stats.requests - requests_before,
        reads=ctx.reader.reads,
        seconds=time.perf_counter() - started,
    )


def _elsewhere(e: Explained, ran: str | None, said: str | None) -> Explained:
    """A release the text states that has what the failure names was not the one that failed.
    Where the traceback's paths show another Python than the text's, another environment ran
    it: the fixes stand, for that one. Otherwise an install another package overwrote, or a
    stale process: no version fix of that package (the caller's still holds), said."""
    contradicted = [
        h for h in e.histories if h.role == "callee" and h.installed and h.installed_answer == 1
    ]
    if not contradicted or e.kind != "version" or (ran and said and ran != said):
        return e
    h = contradicted[0]
    # the caller's fix holds whatever the callee's release (it stops asking for the name)
    kept = tuple(f for f in e.fixes if f.package != h.package)
    return replace(
        e,
        kind="version" if kept else "unexplained",
        fixes=kept,
        notes=(
            *e.notes,
            f"no version fix of {h.package}: {h.installed}, as the text says, has it; the "
            "failure ran with an install another package overwrote, or a process started "
            "before the install (reinstall it in a fresh environment, restart)",
        ),
    )


def _minor(text: str | None) -> tuple[int, int]:
    m = re.match(r"(\d+)\.(\d+)", text or "")
    if m and m.group(1) == "3":
        return (3, int(m.group(2)))
    return (sys.version_info[0], sys.version_info[1])


def _distinct(items: Sequence[Evidence]) -> list[Evidence]:
    """Items in order, at most eight (a log that repeats one failure a hundred times says it
    once)."""
    return list(items)[:8]


def _explain(ctx: WhyContext, item: Evidence) -> Explained:
    if isinstance(item, MissingName):
        return _missing_name(ctx, item)
    if isinstance(item, MissingAttr):
        if item.of_module:
            return _module_attr(ctx, item)
        return Explained(
            item=item,
            kind="unexplained",
            notes=(
                f"a class's attribute ({item.owner}.{item.name}): "
                "its class is not located from the text",
            ),
        )
    if isinstance(item, MissingModule):
        return _missing_module(ctx, item)
    if isinstance(item, BadCall):
        return _bad_call(ctx, item)
    if isinstance(item, MissingLibrary):
        return shared_library(ctx, item)
    assert isinstance(item, MissingSymbolVersion)
    if item.library == "GLIBC" and item.module:
        return glibc(ctx, item)
    return Explained(
        item=item,
        kind="unexplained",
        notes=(
            f"{item.library}_{item.version} is a C library's symbol version: "
            "see envbisect check for the binaries' requirements",
        ),
    )


# -- the kinds of evidence --------------------------------------------------------------------


def _local(item: MissingName | MissingModule, path: str, module: str) -> Explained | None:
    """A module loaded from outside site-packages: the user's own file or folder (or a
    checkout), whose version no release history tells."""
    if not path or _SITE.search(path):
        return None
    top = module.split(".")[0]
    if path.strip() == "unknown location":
        note = (
            f"{module} is a folder without __init__.py (a namespace package): a folder "
            f"named {top} in the working directory or on sys.path hides the installed "
            f"package; rename or leave that folder"
        )
        return Explained(item=item, kind="local", notes=(note,))
    leaf = re.split(r"[\\/]", path.strip())[-1]
    if leaf == f"{top}.py":
        note = f"{path} is a file of yours named {top}.py: it hides the installed {top}; rename it"
    else:
        note = (
            f"{module} is loaded from {path}, outside site-packages (a checkout or a "
            "folder of yours): no release of it is involved"
        )
    return Explained(item=item, kind="local", notes=(note,))


def _missing_name(ctx: WhyContext, item: MissingName) -> Explained:
    local = _local(item, item.path or "", item.module)
    if local is not None:
        return local
    return _named(
        ctx,
        item,
        item.module,
        item.name,
        how="import",
        asked=f"{item.module} offers {item.name}",
        does=f"imports {item.name} from {item.module}",
    )


def _module_attr(ctx: WhyContext, item: MissingAttr) -> Explained:
    return _named(
        ctx,
        item,
        item.owner,
        item.name,
        how="attribute",
        asked=f"{item.owner} has {item.name}",
        does=f"reads {item.owner}.{item.name}",
    )


def _named(
    ctx: WhyContext, item: Evidence, module: str, name: str, *, how: str, asked: str, does: str
) -> Explained:
    """A name ``module`` should offer: asked of the distribution that ships it (the callee)
    and of the innermost installed frame's (the caller: does its module still ``does``)."""
    top = module.split(".")[0]
    dist = dist_of(ctx, top)
    if dist is None:
        return nobody(item, top)
    callee = history(ctx, Offers(dist=dist, role="callee", text=asked, module=module, name=name))
    by_caller = _by_caller(ctx, item, top, how=how, target=module, name=name, does=does)
    return finish(item, [by_caller, callee])


def _by_caller(
    ctx: WhyContext,
    item: Evidence,
    top: str,
    *,
    how: str,
    target: str,
    does: str,
    name: str = "",
) -> History | None:
    """The caller's side: does the innermost installed frame's module (of a distribution
    other than the callee's ``top``) still ``does``, release by release; None where no such
    frame is."""
    found = caller(ctx, item, top)
    if found is None:
        return None
    frame, cdist = found
    assert frame.module is not None
    q = CallerDoes(
        dist=cdist,
        role="caller",
        module=frame.module,
        how=how,
        target=target,
        name=name,
        text=f"{frame.module} {does}",
    )
    return history(ctx, q)


def _missing_module(ctx: WhyContext, item: MissingModule) -> Explained:
    top = item.module.split(".")[0]
    if item.not_package:
        note = (
            f"{item.not_package} was imported as a plain module, not the installed package: "
            f"a file {item.not_package.replace('.', '/')}.py of yours (in the working "
            "directory or on sys.path) hides it; rename it"
        )
        return Explained(item=item, kind="local", notes=(note,))
    dist = dist_of(ctx, top)
    if dist is None:
        return nobody(item, top)
    if item.module == top:
        if version(ctx, dist) is None:
            return Explained(
                item=item,
                kind="not-installed",
                package=dist,
                notes=(
                    f"{top} is not installed where this ran (the text lists no "
                    f"{dist}): install it (pip install {dist}) into the "
                    "environment that runs the code",
                ),
            )
        q = Ships(
            dist=dist, role="callee", module=top, text=f"{dist}'s wheel ships its module {top}"
        )
        h = history(ctx, q)
        broken = h is not None and h.installed_answer == 0
        return finish(item, [h], kind="broken-release" if broken else "version")
    callee = history(
        ctx, Ships(dist=dist, role="callee", module=item.module, text=f"{dist} ships {item.module}")
    )
    by_caller = _by_caller(
        ctx, item, top, how="module", target=item.module, does=f"imports {item.module}"
    )
    nobody_else = caller(ctx, item, top) is None
    if nobody_else and callee is not None and not merged([callee]):
        # nobody else imports it: the distribution's own code does, in a release that
        # does not ship it (a broken release)
        q2 = ImportsUnshipped(
            dist=dist,
            role="caller",
            module=item.module,
            text=f"{dist} imports its own {item.module} without shipping it",
        )
        own = history(ctx, q2)
        if own is not None and merged([own]):
            broken = own.installed_answer == 1 or own.installed is None
            return finish(item, [own], kind="broken-release" if broken else "version")
    return finish(item, [by_caller, callee])


def _bad_call(ctx: WhyContext, item: BadCall) -> Explained:
    histories: list[History | None] = []
    site = call_site(ctx, item)
    if site is not None and not item.missing:
        frame, cdist, callee = site
        assert frame.module is not None
        passed = f"passes {item.keyword}" if item.keyword else f"passes {item.given} arguments"
        to = f" to {callee}()" if callee else " in a call"
        q = CallerDoes(
            dist=cdist,
            role="caller",
            module=frame.module,
            how="call",
            func=frame.func,
            name=callee,
            keyword=item.keyword,
            given=item.given,
            text=f"{frame.module}.{frame.func} {passed}{to}",
        )
        histories.append(history(ctx, q))
    where = definition(ctx, item)
    if where is not None:
        dist, module = where
        qual = item.callee if item.owner else item.func
        if item.keyword:
            says = f"accepts {item.keyword}"
        elif item.given is not None:
            says = f"accepts {item.given} positional arguments"
        else:
            says = f"does without {', '.join(item.missing)}"
        q2 = Accepts(
            dist=dist,
            role="callee",
            module=module,
            qualname=qual,
            keyword=item.keyword,
            given=item.given,
            missing=item.missing,
            text=f"{module}.{qual}() {says}",
        )
        histories.append(history(ctx, q2))
    return finish(item, histories)
