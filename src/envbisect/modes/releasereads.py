"""Static probes: a question answered by reading one release's wheel, never by building it.

Who does what: ``Releases`` lists a distribution's releases that have a wheel for the target's
Python (one wheel each, the same source on every platform for the modules a traceback names);
``Reader`` opens each wheel once per run (index/wheelfiles.py: its file list, one member) and
keeps the file lists and the answers in the index client's cache, so a second run asks the
index nothing it asked before; the questions (``Question`` and its kinds) judge what was read
with core/evidence/apisource.py and answer YES, NO or None (cannot say); ``search`` drives
strategy/releases.py's state machine, reading each round's releases on a few threads.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from packaging.utils import canonicalize_name, parse_wheel_filename
from packaging.version import InvalidVersion, Version

from envbisect.core.evidence import apisource as src
from envbisect.core.evidence.apisource import Params, Verdict
from envbisect.core.evidence.boundaries import NO, YES, Change, History
from envbisect.core.evidence.importnames import has_module, member_of
from envbisect.errors import InfrastructureError, UnknownPackage, UsageError
from envbisect.index.client import IndexClient
from envbisect.index.wheelfiles import SdistFiles, WheelFiles
from envbisect.model import DistFile
from envbisect.strategy.releases import ReleaseSearch

CACHE_VERSION = "why1"  # part of every cached answer's key: bump when a judgement changes
# Releases read before a question whose answer never changed is left unexplained: a name that
# came and went between the points of the first round is seen once the spread is this dense.
WIDEN_UP_TO = 32
SCAN_LIMIT = 30 * 1024 * 1024  # bytes of a wheel read whole to look in every module


@dataclass(frozen=True, slots=True, kw_only=True)
class Release:
    version: Version
    file: DistFile
    yanked: bool = False


def _fits(filename: str, minor: tuple[int, int]) -> int | None:
    """How well a wheel suits CPython ``minor`` on Linux (lower is better), None: not at all."""
    try:
        _, _, _, tags = parse_wheel_filename(filename)
    except ValueError:
        return None
    best = None
    cp = f"cp{minor[0]}{minor[1]}"
    for t in tags:
        if t.interpreter in (cp, f"py{minor[0]}{minor[1]}", f"py{minor[0]}", "py2.py3"):
            rank = 0 if t.platform == "any" else 1
        elif t.abi == "abi3" and t.interpreter.startswith("cp3"):
            try:
                rank = 1 if int(t.interpreter[3:]) <= minor[1] else 9
            except ValueError:
                rank = 9
        else:
            continue
        linux = "x86_64" in t.platform and t.platform.startswith(("manylinux", "linux"))
        if rank < 9 and t.platform != "any" and not linux:
            rank = 2  # another platform: the same Python source, still readable
        if best is None or rank < best:
            best = rank
    return best


class Releases:
    """A distribution's releases with a wheel for the target's Python, oldest first (yanked
    ones and pre-releases only where the report runs that very release)."""

    def __init__(self, client: IndexClient, minor: tuple[int, int]) -> None:
        self._client = client
        self._minor = minor
        self._memo: dict[str, list[Release] | None] = {}
        self._lock = threading.Lock()

    def of(self, dist: str, keep: str | None = None) -> list[Release] | None:
        """None where no index has the project."""
        key = f"{canonicalize_name(dist)}|{keep}"
        with self._lock:
            if key in self._memo:
                return self._memo[key]
        try:
            pf = self._client.project_files(dist)
        except (UnknownPackage, UsageError):
            found = None
        else:
            found = self._pick(list(pf.versions()), pf.files_of, keep)
        with self._lock:
            self._memo[key] = found
        return found

    def _pick(
        self,
        versions: Sequence[Version],
        files_of: Callable[[Version], list[DistFile]],
        keep: str | None,
    ) -> list[Release]:
        try:
            kept = Version(keep) if keep else None
        except InvalidVersion:
            kept = None
        out = []
        # a project whose wheels are all pure Python: its sdist-only releases are read too
        pure = all(
            f.filename.endswith("-none-any.whl")
            for v in versions
            for f in files_of(v)
            if f.is_wheel
        )
        for v in sorted(versions):
            own = kept is not None and v.public == kept.public
            if v.is_prerelease and not own:
                continue
            files = [f for f in files_of(v) if f.is_wheel]
            if any(f.yanked for f in files) and all(f.yanked for f in files) and not own:
                continue
            ranked = [
                (r, f.filename, f)
                for f in files
                if (r := _fits(f.filename, self._minor)) is not None
            ]
            if not ranked:
                # No wheel at all: a pure-Python project's sdist holds the same modules.
                sdists = [
                    f
                    for f in files_of(v)
                    if not f.is_wheel and not f.yanked and f.filename.endswith((".tar.gz", ".zip"))
                ]
                if sdists and pure and not any(f.is_wheel for f in files_of(v)):
                    out.append(Release(version=v, file=sdists[0]))
                continue
            ranked.sort(key=lambda x: (x[0], x[1]))
            out.append(Release(version=v, file=ranked[0][2], yanked=ranked[0][2].yanked))
        return out


class Reader:
    """Each wheel opened once per run; file lists and answers cached by the index client."""

    def __init__(self, client: IndexClient) -> None:
        self.client = client
        self._open: dict[str, WheelFiles | SdistFiles] = {}
        self._names: dict[str, list[str]] = {}
        self._sources: dict[tuple[str, str], str | None] = {}
        self._lock = threading.Lock()
        self.reads = 0
        self.unreadable: dict[str, str] = {}  # file name -> why it could not be read

    def close(self) -> None:
        with self._lock:
            opened, self._open = list(self._open.values()), {}
        for w in opened:
            w.close()

    def _wheel(self, f: DistFile) -> WheelFiles | SdistFiles:
        with self._lock:
            if f.url not in self._open:
                self._open[f.url] = self.client.wheel(f)
            return self._open[f.url]

    def names(self, f: DistFile) -> list[str]:
        if f.url in self._names:
            return self._names[f.url]
        key = f"{CACHE_VERSION}:names:{f.hash('sha256') or f.url}"
        recalled = self.client.recall(key)
        found: list[str] = (
            [str(n) for n in recalled] if isinstance(recalled, list) else self._wheel(f).names()
        )
        if not isinstance(recalled, list):
            self.client.remember(key, found)
        self._names[f.url] = found
        return found

    def every_source(self, f: DistFile) -> dict[str, str] | None:
        """Every Python module of a release (the wheel read whole, once), None where it is
        larger than ``SCAN_LIMIT``."""
        if f.size is not None and f.size > SCAN_LIMIT:
            return None
        with self.client.wheel(f, whole=True) as w:
            out = {}
            for name in w.names():
                if name.endswith(".py"):
                    data = w.read(name)
                    out[name] = data.decode("utf-8", errors="replace") if data else ""
        with self._lock:
            self.reads += 1
        return out

    def source(self, f: DistFile, member: str) -> str | None:
        key = (f.url, member)
        if key not in self._sources:
            data = self._wheel(f).read(member)
            with self._lock:
                self.reads += 1
            self._sources[key] = data.decode("utf-8", errors="replace") if data else None
        return self._sources[key]

    def answer(self, f: DistFile, q: Question) -> int | None:
        """``q`` of the release ``f``: from the cache, else read and judged (and cached)."""
        key = f"{CACHE_VERSION}:answer:{q.key}:{f.hash('sha256') or f.url}"
        found = self.client.recall(key)
        if isinstance(found, str) and found in ("yes", "no", "unknown"):
            return {"yes": YES, "no": NO, "unknown": None}[found]
        try:
            value = q.ask(self, f)
        except InfrastructureError as e:
            if e.ref not in ("bad-wheel", "no-ranges"):
                raise
            with self._lock:  # a wheel that cannot be read: that release is stepped around
                self.unreadable[f.filename] = e.message
            return None
        self.client.remember(key, {YES: "yes", NO: "no", None: "unknown"}[value])
        return value


# -- the questions ----------------------------------------------------------------------------


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


def _is_package(member: str) -> bool:
    return member.endswith("/__init__.py")


def offers(
    r: Reader, f: DistFile, module: str, name: str, depth: int = 0, *, star: bool = False
) -> int | None:
    """Whether the release offers ``from module import name`` (a submodule counts); with
    ``star``, whether ``from module import *`` brings it (its public names, ``__all__``)."""
    names = r.names(f)
    if not star and has_module(names, f"{module}.{name}"):
        return YES
    member = member_of(names, module)
    if member is None:
        return None if has_module(names, module) else NO  # an extension module cannot say
    text = r.source(f, member)
    if text is None:
        return None
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
    for other in judged.follow if depth < 3 else ():
        inner = member_of(names, other)
        if inner is None:
            # an extension module: its stub says what it exports; without one it is taken
            # to export nothing the Python modules beside it do not name
            stub = other.replace(".", "/") + ".pyi"
            if stub in names and name in (src.public_names(r.source(f, stub) or "") or ()):
                return YES
            continue
        deeper = offers(r, f, other, name, depth + 1, star=True)
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


@dataclass(frozen=True, slots=True, kw_only=True)
class Ships(Question):
    """Whether the release holds ``module`` at all."""

    module: str

    @property
    def key(self) -> str:
        return f"ships:{self.module}"

    def ask(self, r: Reader, f: DistFile) -> int | None:
        return YES if has_module(r.names(f), self.module) else NO


def _params(r: Reader, f: DistFile, module: str, qualname: str, depth: int = 0) -> Params | None:
    """What ``qualname`` in ``module`` accepts in this release, following the class's bases
    inside the distribution (a dataclass's ``__init__``: its fields and its bases')."""
    names = r.names(f)
    member = member_of(names, module)
    if member is None or depth > 4:
        return None
    text = r.source(f, member) or ""
    found = src.signature(text, module, qualname, is_package=_is_package(member))
    if isinstance(found, Params) or found is None:
        return found
    if found.fields is not None:
        inherited: list[tuple[str, bool]] = []
        for base_module, base in found.bases:
            inherited = src.merge_fields(inherited, _fields(r, f, base_module, base, depth + 1))
        return src.dataclass_params(src.merge_fields(inherited, found.fields))
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
    found = src.dataclass_fields(
        r.source(f, member) or "", module, cls, is_package=_is_package(member)
    )
    if found is None:
        return []
    own, bases = found
    inherited: list[tuple[str, bool]] = []
    for base_module, base in bases:
        inherited = src.merge_fields(inherited, _fields(r, f, base_module, base, depth + 1))
    return src.merge_fields(inherited, own)


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
                src.imports_module(text, mod, self.module, is_package=_is_package(member))
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
            v = src.imports_name(text, self.module, self.target, self.name, is_package=pkg)
        elif self.how == "module":
            v = src.imports_module(text, self.module, self.target, is_package=pkg)
        elif self.how == "attribute":
            v = src.uses_attribute(text, self.target, self.name)
        else:
            callee = self.name or None  # none: any call in the function
            v = src.passes(text, self.func, callee, keyword=self.keyword, given=self.given)
        return {Verdict.PRESENT: YES, Verdict.ABSENT: NO}.get(v)


# -- the search -------------------------------------------------------------------------------


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
                got = list(pool.map(lambda i: r.answer(releases[i].file, q), batch))
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
