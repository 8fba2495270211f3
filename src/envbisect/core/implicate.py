"""Which packages a failure implicates: the suspects lock's descent holds back, in order.

Pure: an outcome, what the environment held and which distribution installs which top-level
module (the environment report's ``modules``, read from each distribution's RECORD) in; the
distributions to suspect out, most likely first:

1. the module the exception names as the owner of what is missing (``cannot import name 'x'
   from 'pkg'``, ``module 'pkg' has no attribute 'x'``, ``No module named 'pkg.sub'``): the
   distribution that installs ``pkg``;
2. the distribution that owns each frame of the traceback (or of a crash's faulthandler
   stack), innermost first: the code that failed, then the code that called it;
3. every other installed distribution, closest to the pins first (the planner's depths),
   then by name.

Untrusted text (a message, a path in a frame) only ever selects among the installed
distributions: a name that is not installed is never returned.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping, Sequence

from packaging.utils import NormalizedName, canonicalize_name

from envbisect.core.evidence.failure import module_of
from envbisect.model import InstalledDist, Outcome

_MISSING = re.compile(r"No module named '(?P<m>[\w.]+)'")
_OWNER = (
    re.compile(
        r"cannot import name '[^']+' from (?:partially initialized module )?'(?P<m>[\w.]+)'"
    ),
    re.compile(r"module '(?P<m>[\w.]+)' has no attribute"),
    _MISSING,
)
# A traceback's frame, or a faulthandler one (``line N in f``, no comma, which why's frame
# reader does not take): the file's path.
_FRAME = re.compile(r'^\s*File "(?P<file>[^"]+)", line \d+')


def implicated(
    outcome: Outcome,
    installed: Sequence[InstalledDist],
    modules: Mapping[str, str],
    depths: Mapping[NormalizedName, int],
) -> list[str]:
    """The installed distributions (canonical names) to suspect for ``outcome``, in order."""
    have = {str(canonicalize_name(d.name)) for d in installed}

    def closeness(name: str) -> tuple[int, str]:
        return (depths.get(canonicalize_name(name), 1 << 20), name)

    named = [n for n in evidence(outcome, installed, modules) if n in have]
    return list(dict.fromkeys([*named, *sorted(have, key=closeness)]))


def evidence(
    outcome: Outcome, installed: Sequence[InstalledDist], modules: Mapping[str, str]
) -> list[str]:
    """The suspects the failure itself gives (kinds 1 and 2 above: the owner the message
    names, then the owners of the frames), without the rest of the environment."""
    have = {str(canonicalize_name(d.name)) for d in installed}
    out = named_owners(outcome, installed, modules)
    for top in reversed(frame_modules(outcome.detail)):
        name = owner(top, modules, have)
        if name and name not in out:
            out.append(name)
    return out


def named_owners(
    outcome: Outcome, installed: Sequence[InstalledDist], modules: Mapping[str, str]
) -> list[str]:
    """The installed distributions the message itself names as the owner of what is missing
    (the first kind of suspect above; none for a failure that names no module), in order."""
    have = {str(canonicalize_name(d.name)) for d in installed}
    text = f"{outcome.signature}\n{outcome.detail}"
    out: list[str] = []
    for pattern in _OWNER:
        for m in pattern.finditer(text):
            name = owner(m["m"], modules, have)
            if name and name not in out:
                out.append(name)
    return out


def missing_module(outcome: Outcome) -> str | None:
    """The module a ``ModuleNotFoundError`` says is missing (None for any other failure)."""
    if (outcome.exception or "").rsplit(".", 1)[-1] != "ModuleNotFoundError":
        return None
    m = _MISSING.search(outcome.signature)
    return m["m"] if m else None


def frame_modules(detail: str) -> list[str]:
    """The top-level module of each frame that lies in a site-packages folder, outermost
    first (a traceback's order; a faulthandler stack, innermost first, is turned round). The
    module a path holds is core/evidence/failure.py's ``module_of``, as why reads it."""
    lines = detail.splitlines()
    innermost_first = any(ln.startswith(("Current thread", "Thread 0x")) for ln in lines)
    tops: list[str] = []
    for line in lines:
        frame = _FRAME.match(line)
        module = module_of(frame["file"]) if frame else None
        if module is not None:
            tops.append(module.split(".", 1)[0])
    return tops[::-1] if innermost_first else tops


def owner(module: str, modules: Mapping[str, str], have: Collection[str]) -> str | None:
    """The installed distribution that installs ``module`` (its top-level part): from the
    environment's RECORDs when known, else the distribution of the same name."""
    top = module.split(".", 1)[0]
    if top in modules:
        return str(canonicalize_name(modules[top]))
    for guess in (top, top.replace("_", "-"), f"python-{top}", f"py{top}"):
        name = str(canonicalize_name(guess))
        if name in have:
            return name
    return None
