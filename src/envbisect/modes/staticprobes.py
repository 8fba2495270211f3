"""Static probes: a question answered by reading one release's wheel, never by building it,
and the search that asks it of a distribution's releases.

Who does what: each ``Question`` judges what ``Reader`` (modes/releasereads.py) read with
core/evidence/ (apisource.py: is a name there; signatures.py: what a function accepts;
callers.py: does the caller still do it) and answers YES, NO or None (cannot say);
``search`` drives strategy/releases.py's state machine over the releases, a round's reads on
a few threads, and returns the history core/evidence/boundaries.py turns into fixes.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from envbisect.core.evidence import apisource as src
from envbisect.core.evidence import callers as calls
from envbisect.core.evidence import signatures as sig
from envbisect.core.evidence.apisource import Verdict
from envbisect.core.evidence.boundaries import NO, YES, Change, History
from envbisect.core.evidence.importnames import has_module, member_of
from envbisect.core.evidence.signatures import Params
from envbisect.model import DistFile
from envbisect.modes.releasereads import Reader, Release
from envbisect.strategy.releases import ReleaseSearch

# Releases read before a question whose answer never changed is left unexplained: a name that
# came and went between the points of the first round is seen once the spread is this dense.
WIDEN_UP_TO = 32


@dataclass(frozen=True, slots=True, kw_only=True)
class Question:
    """One yes/no question of a release; ``text`` says it in words, ``key`` identifies it."""

    dist: str
    role: str
    text: str

    @property
    def key(self) -> str:
        raise NotImplementedError

    def ask(self, r: Reader, f: DistFile) -> int | None:
        raise NotImplementedError

    def code(self) -> str:
        """Python code that fails in an environment where the answer is the failing one
        ("" where no import shows it: ``why --prove`` says so)."""
        return ""


def _is_package(member: str) -> bool:
    return member.endswith("/__init__.py")


_SHARED = re.compile(r"\.so(?:\.\d+)*$")
_STAR = re.compile(r"^[ \t]*from[ \t]+(\.*[\w.]*)[ \t]+import[ \t]+\*", re.MULTILINE)


def offers(
    r: Reader,
    f: DistFile,
    module: str,
    name: str,
    depth: int = 0,
    *,
    star: bool = False,
    seen: set[str] | None = None,
) -> int | None:
    """Whether the release offers ``from module import name`` (a submodule counts); with
    ``star``, whether ``from module import *`` brings it (its public names, ``__all__``).
    A re-exported module whose text does not hold the name is not parsed: only its own
    ``*`` imports are followed (transformers 5 re-exports hundreds of modules that way)."""
    seen = set() if seen is None else seen
    if module in seen:
        return NO
    seen.add(module)
    names = r.names(f)
    if not star and has_module(names, f"{module}.{name}"):
        return YES
    member = member_of(names, module)
    if member is None:
        return None if has_module(names, module) else NO  # an extension module cannot say
    text = r.source(f, member)
    if text is None:
        return None
    if star and name not in text:  # neither defined nor listed here: its own stars may
        follow = tuple(
            resolve_star(module, _is_package(member), m.group(1)) for m in _STAR.finditer(text)
        )
        return _through(r, f, names, follow, name, depth, seen)
    if star:
        public = src.public_names(text)
        if public is None:
            return None
        if name in public:
            return YES
        tree = src.parse(text)
        if tree is None or src.all_names(tree) is not None:
            return NO  # __all__ decides what * brings
    judged = src.has_name(text, module, name, is_package=_is_package(member))
    if not star and judged.verdict is Verdict.PRESENT:
        return YES
    if judged.verdict is Verdict.UNKNOWN:
        return None
    return _through(r, f, names, judged.follow, name, depth, seen)


def resolve_star(module: str, is_package: bool, written: str) -> str:
    """``from .x import *`` in ``module``, as an absolute import path."""
    level = len(written) - len(written.lstrip("."))
    return src.resolve(module, is_package, level, written[level:] or None)


def _through(
    r: Reader,
    f: DistFile,
    names: list[str],
    follow: Sequence[str],
    name: str,
    depth: int,
    seen: set[str],
) -> int | None:
    """Whether one of the modules ``follow`` brings ``name`` by ``*``."""
    for other in follow if depth < 3 else ():
        inner = member_of(names, other)
        if inner is None:
            # an extension module: its stub says what it exports; without one it is taken
            # to export nothing the Python modules beside it do not name
            stub = other.replace(".", "/") + ".pyi"
            if stub in names and name in (src.public_names(r.source(f, stub) or "") or ()):
                return YES
            continue
        deeper = offers(r, f, other, name, depth + 1, star=True, seen=seen)
        if deeper != NO:
            return deeper
    return NO


@dataclass(frozen=True, slots=True, kw_only=True)
class Offers(Question):
    module: str
    name: str

    @property
    def key(self) -> str:
        return f"offers:{self.module}:{self.name}"

    def ask(self, r: Reader, f: DistFile) -> int | None:
        return offers(r, f, self.module, self.name)

    def code(self) -> str:
        return f"from {self.module} import {self.name}"


@dataclass(frozen=True, slots=True, kw_only=True)
class Ships(Question):
    """Whether the release holds ``module`` at all."""

    module: str

    @property
    def key(self) -> str:
        return f"ships:{self.module}"

    def ask(self, r: Reader, f: DistFile) -> int | None:
        return YES if has_module(r.names(f), self.module) else NO

    def code(self) -> str:
        return f"import {self.module}"


def _params(r: Reader, f: DistFile, module: str, qualname: str, depth: int = 0) -> Params | None:
    """What ``qualname`` in ``module`` accepts in this release, following the class's bases
    inside the distribution (a dataclass's ``__init__``: its fields and its bases')."""
    names = r.names(f)
    member = member_of(names, module)
    if member is None or depth > 4:
        return None
    text = r.source(f, member) or ""
    found = sig.signature(text, module, qualname, is_package=_is_package(member))
    if isinstance(found, Params) or found is None:
        return found
    if found.fields is not None:
        inherited: list[tuple[str, bool]] = []
        for base_module, base in found.bases:
            inherited = sig.merge_fields(inherited, _fields(r, f, base_module, base, depth + 1))
        return sig.dataclass_params(sig.merge_fields(inherited, found.fields))
    parts = qualname.split(".")
    method = parts[-1] if len(parts) > 1 else "__init__"
    top = module.split(".")[0]
    for base_module, base in found.bases:
        if base_module.split(".")[0] != top:
            continue  # a base in another distribution: not followed
        inherited_params = _params(r, f, base_module, f"{base}.{method}", depth + 1)
        if inherited_params is not None:
            return inherited_params
    return None


def _fields(r: Reader, f: DistFile, module: str, cls: str, depth: int) -> list[tuple[str, bool]]:
    """The fields a dataclass base brings (none from a class that is not a dataclass, or
    lies in another distribution)."""
    member = member_of(r.names(f), module)
    if member is None or depth > 6:
        return []
    found = sig.dataclass_fields(
        r.source(f, member) or "", module, cls, is_package=_is_package(member)
    )
    if found is None:
        return []
    own, bases = found
    inherited: list[tuple[str, bool]] = []
    for base_module, base in bases:
        inherited = sig.merge_fields(inherited, _fields(r, f, base_module, base, depth + 1))
    return sig.merge_fields(inherited, own)


@dataclass(frozen=True, slots=True, kw_only=True)
class Accepts(Question):
    """Whether ``qualname`` in ``module`` accepts the call the traceback shows."""

    module: str
    qualname: str
    keyword: str | None = None
    given: int | None = None
    missing: tuple[str, ...] = ()

    @property
    def key(self) -> str:
        return f"accepts:{self.module}:{self.qualname}:{self.keyword}:{self.given}:{self.missing}"

    def code(self) -> str:
        parts = self.qualname.split(".")
        if not all(p.isidentifier() for p in [*parts, *self.module.split(".")]):
            return ""  # a nested function (``<locals>``): no import reaches it
        method = len(parts) > 1  # bound: self passed as the message counts it
        if self.keyword is not None:
            args = ("None, " if method else "") + f"**{{{self.keyword!r}: None}}"
        elif self.given is not None:
            args = ", ".join(["None"] * self.given)
        else:
            return ""
        return (
            f"import inspect, {self.module}; "
            f"inspect.signature({self.module}.{self.qualname}).bind_partial({args})"
        )

    def ask(self, r: Reader, f: DistFile) -> int | None:
        p = _params(r, f, self.module, self.qualname)
        if p is None:
            return None
        if self.keyword is not None:
            return YES if p.accepts_keyword(self.keyword) else NO
        if self.given is not None:
            return YES if p.accepts_positional(self.given) else NO
        return NO if p.requires(self.missing) else YES


@dataclass(frozen=True, slots=True, kw_only=True)
class ImportsUnshipped(Question):
    """Whether a module of the release imports ``module`` of its own distribution while the
    release does not ship it: a broken release (a typo, a file left out of the wheel)."""

    module: str

    @property
    def key(self) -> str:
        return f"unshipped:{self.module}"

    def ask(self, r: Reader, f: DistFile) -> int | None:
        if has_module(r.names(f), self.module):
            return NO
        every = r.every_source(f)
        if every is None:
            return None
        leaf = self.module.rsplit(".", 1)[-1]
        for member, text in every.items():
            if leaf not in text:
                continue  # cannot import it: no need to parse it
            mod = member.removesuffix(".py").removesuffix("/__init__").replace("/", ".")
            if (
                calls.imports_module(text, mod, self.module, is_package=_is_package(member))
                is Verdict.PRESENT
            ):
                return YES
        return NO


@dataclass(frozen=True, slots=True, kw_only=True)
class CallerDoes(Question):
    """Whether the caller's module still makes the import, reads the attribute, or makes the
    call the traceback shows (``how``: import, attribute, module, call)."""

    module: str
    how: str
    target: str = ""
    name: str = ""
    func: str = ""
    keyword: str | None = None
    given: int | None = None

    @property
    def key(self) -> str:
        return (
            f"caller:{self.module}:{self.how}:{self.target}:{self.name}:{self.func}:"
            f"{self.keyword}:{self.given}"
        )

    def ask(self, r: Reader, f: DistFile) -> int | None:
        names = r.names(f)
        member = member_of(names, self.module)
        if member is None:
            return NO
        text = r.source(f, member)
        if text is None:
            return None
        pkg = _is_package(member)
        if self.how == "import":
            v = calls.imports_name(text, self.module, self.target, self.name, is_package=pkg)
        elif self.how == "module":
            v = calls.imports_module(text, self.module, self.target, is_package=pkg)
        elif self.how == "attribute":
            v = calls.uses_attribute(text, self.target, self.name)
        else:
            callee = self.name or None  # none: any call in the function
            v = calls.passes(text, self.func, callee, keyword=self.keyword, given=self.given)
        return {Verdict.PRESENT: YES, Verdict.ABSENT: NO}.get(v)

    def code(self) -> str:
        return "" if self.how == "call" else f"import {self.module}"


# -- the search -------------------------------------------------------------------------------


def answer(r: Reader, f: DistFile, q: Question) -> int | None:
    """``q`` of the release ``f``: from the cache, else read and judged (and cached)."""
    return r.answered(f"{q.key}:{f.hash('sha256') or f.url}", lambda: q.ask(r, f), f.filename)


def search(
    r: Reader,
    releases: list[Release],
    q: Question,
    *,
    installed: str | None,
    threads: int = 4,
) -> History:
    """Every change of ``q``'s answer over ``releases`` (strategy/releases.py), the release
    the report runs read first among the others."""
    at = _index_of(releases, installed)
    near = [at] if at is not None else _around(releases, installed)
    machine = ReleaseSearch(len(releases), must=near)
    answers: dict[int, int | None] = {}
    never = YES if q.role == "caller" else NO  # the answer that, everywhere, explains nothing
    with ThreadPoolExecutor(max(1, threads), thread_name_prefix="envbisect-why") as pool:
        while True:
            while not machine.done:
                batch = machine.next_batch(threads)
                if not batch:
                    break
                got = list(pool.map(lambda i: answer(r, releases[i].file, q), batch))
                for i, value in zip(batch, got, strict=True):
                    answers[i] = value
                    machine.record(i, value)
            same = {a for a in answers.values() if a is not None} <= {never}
            if not same or len(answers) >= WIDEN_UP_TO or not machine.widen():
                break
    versions = tuple(str(x.version) for x in releases)
    changes = tuple(
        Change(
            last_old=versions[b.last_old],
            first_new=versions[b.first_new],
            old=b.old,
            new=b.new,
            hidden=tuple(versions[i] for i in b.hidden),
        )
        for b in machine.boundaries()
    )
    return History(
        package=canonicalize_name(q.dist),
        role=q.role,
        question=q.text,
        versions=versions,
        changes=changes,
        answers=tuple((versions[i], answers[i]) for i in sorted(answers)),
        installed=versions[at] if at is not None else _public(installed),
        installed_answer=answers.get(at) if at is not None else None,
        reads=len(answers),
        repro=q.code(),
    )


def _index_of(releases: list[Release], installed: str | None) -> int | None:
    if not installed:
        return None
    try:
        want = Version(installed).public
    except InvalidVersion:
        return None
    for i, rel in enumerate(releases):
        if rel.version.public == want or str(rel.version) == want:
            return i
    return None


def _public(installed: str | None) -> str | None:
    try:
        return str(Version(installed).public) if installed else None
    except InvalidVersion:
        return None


def _around(releases: list[Release], installed: str | None) -> list[int]:
    """The releases on either side of a version the report runs that has no wheel here (a
    development build, a release without a wheel for this Python)."""
    try:
        want = Version(installed) if installed else None
    except InvalidVersion:
        want = None
    if want is None:
        return []
    below = [i for i, rel in enumerate(releases) if rel.version <= want]
    after = below[-1] + 1 if below else 0
    return [i for i in (after - 1, after) if 0 <= i < len(releases)]
