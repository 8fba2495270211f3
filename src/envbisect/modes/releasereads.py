"""A distribution's releases and their wheels, read once per run (the static probes of
modes/staticprobes.py ask their questions through ``Reader``).

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
from dataclasses import dataclass

from packaging.utils import canonicalize_name, parse_wheel_filename
from packaging.version import InvalidVersion, Version

from envbisect.core.evidence.boundaries import NO, YES
from envbisect.core.evidence.elfneeds import libraries_named_in, libraries_needed_by
from envbisect.errors import InfrastructureError, UnknownPackage, UsageError
from envbisect.index.client import IndexClient
from envbisect.index.wheelfiles import SdistFiles, WheelFiles
from envbisect.model import DistFile

CACHE_VERSION = "why1"  # part of every cached answer's key: bump when a judgement changes
SCAN_LIMIT = 30 * 1024 * 1024  # bytes of a wheel read whole to look in every module
HEAD_BYTES = 8 * 1024 * 1024  # bytes of a shared object read for the libraries it links
BINARY_LIMIT = 512 * 1024 * 1024  # bytes of one shared object read for its glibc needs
MANY_MEMBERS = 12  # members of one wheel read by ranges before the rest come from it whole


@dataclass(frozen=True, slots=True, kw_only=True)
class Release:
    version: Version
    file: DistFile
    yanked: bool = False


def fits(filename: str, minor: tuple[int, int]) -> int | None:
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
        self.minor = minor
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
                (r, f.filename, f) for f in files if (r := fits(f.filename, self.minor)) is not None
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
        self._members_read: dict[str, int] = {}

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

    def many(self, f: DistFile) -> None:
        """Many members of ``f`` are about to be read (a module that re-exports dozens with
        ``*``): the wheel downloaded once, where it is small enough, not a request each."""
        if f.size is None or f.size > SCAN_LIMIT or not f.is_wheel:
            return
        with self._lock:
            opened = self._open.get(f.url)
            if isinstance(opened, WheelFiles) and not opened.requests_ranged:
                return
            self._open[f.url] = self.client.wheel(f, whole=True)
        if opened is not None:
            opened.close()

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
            with self._lock:
                self.reads += 1
                self._members_read[f.url] = read = self._members_read.get(f.url, 0) + 1
            if read == MANY_MEMBERS:  # a request a member no longer pays: the whole wheel
                self.many(f)
            data = self._wheel(f).read(member)
            self._sources[key] = data.decode("utf-8", errors="replace") if data else None
        return self._sources[key]

    def binary(self, f: DistFile, member: str) -> bytes | None:
        """A shared object of the wheel, whole (up to ``BINARY_LIMIT`` bytes), not kept."""
        with self._lock:
            self.reads += 1
        w = self._wheel(f)
        return w.read(member, limit=BINARY_LIMIT) if isinstance(w, WheelFiles) else None

    def libraries(self, f: DistFile, member: str) -> tuple[str, ...] | None:
        """The libraries a shared object of the wheel links against: its ``DT_NEEDED`` where
        it is small enough to read whole, else the names in its first ``HEAD_BYTES`` (its
        dynamic string table); None where it cannot be read as ELF."""
        with self._lock:
            self.reads += 1
        w = self._wheel(f)
        if not isinstance(w, WheelFiles):
            return None
        size = w.size(member)
        if size is None:
            return None
        if size <= HEAD_BYTES:
            data = w.read(member, limit=HEAD_BYTES)
            return libraries_needed_by(data) if data is not None else None
        head = w.head(member, HEAD_BYTES)
        return libraries_named_in(head) if head is not None else None

    def answered(self, key: str, ask: Callable[[], int | None], filename: str) -> int | None:
        """The answer cached under ``key``, else ``ask()``'s (then cached). A wheel that
        cannot be read is stepped around: None, and ``unreadable`` says which and why."""
        key = f"{CACHE_VERSION}:answer:{key}"
        found = self.client.recall(key)
        if isinstance(found, str) and found in ("yes", "no", "unknown"):
            return {"yes": YES, "no": NO, "unknown": None}[found]
        try:
            value = ask()
        except InfrastructureError as e:
            if e.ref not in ("bad-wheel", "no-ranges"):
                raise
            with self._lock:
                self.unreadable[filename] = e.message
            return None
        self.client.remember(key, {YES: "yes", NO: "no", None: "unknown"}[value])
        return value
