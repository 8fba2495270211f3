"""The planner's ``MetadataSource`` over the index client (the IO edge of planning).

Versions come from the Simple API pages (with upload times and whether a file installs on the
*target*); dependencies from each version's core metadata (PEP 658 file, else the wheel's
METADATA). Both are fetched lazily, only for what the resolver asks about, and memoised.
"""

from __future__ import annotations

import contextlib
import copy
import functools
import hashlib
import os
import re
import sys
import threading
from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from packaging.markers import InvalidMarker, Marker
from packaging.requirements import InvalidRequirement, Requirement
from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.utils import canonicalize_name
from packaging.version import Version

from envbisect import __version__
from envbisect.core.candidates import judge, parse_version
from envbisect.core.markers import applies
from envbisect.core.overrides import as_specifiers
from envbisect.core.plan import PackageVersion
from envbisect.core.target import Target
from envbisect.errors import EnvbisectError, UnknownPackage
from envbisect.index.client import IndexClient
from envbisect.index.simple import ProjectFiles


class IndexMetadataSource:
    def __init__(
        self,
        client: IndexClient,
        target: Target,
        *,
        allow_sdist: bool = False,
        preferred: Mapping[str, Version] | None = None,
        overrides: Iterable[str] = (),  # an OverrideSet as read, or name<spec> texts
        provided: Mapping[str, str] | None = None,
    ) -> None:
        self.client = client
        self.target = target
        self.allow_sdist = allow_sdist
        # --override: every requirement on these projects takes their versions (the planner
        # applies them, core/resolve.py; plans remembered are kept apart by them).
        self.overrides = as_specifiers(overrides)
        # --inherit: packages of the interpreter, planned as they are installed there (their
        # one version, nothing they require: the interpreter has it), never from an index.
        self.provided = {canonicalize_name(n): Version(v) for n, v in (provided or {}).items()}
        self._supported = frozenset(target.supported_tags())
        # What judging a page depends on: the tags, the Python version and sdists allowed.
        self._target_key = hashlib.sha256(
            repr((target.identity, sorted(map(str, self._supported)), allow_sdist)).encode()
        ).hexdigest()[:24]
        # What a plan remembered depends on besides: the overrides.
        kept = (sorted(overrides), sorted((provided or {}).items()))
        self._memo_key = self._target_key + (
            "|" + hashlib.sha256(repr(kept).encode()).hexdigest()[:16]
            if overrides or provided
            else ""
        )
        self._tokens: dict[str, str | None] = {}
        # The versions fetched ahead: the baseline's where there is one, else the newest.
        self.preferred = {canonicalize_name(k): v for k, v in (preferred or {}).items()}
        self._versions: dict[str, list[PackageVersion]] = {}
        self._deps: dict[tuple[str, Version], list[Requirement]] = {}
        self._lock = threading.Lock()
        self._warmed: set[tuple[str, str]] = set()  # (project, specifier) fetched ahead
        # The extras requirements read so far ask of each project: what those extras bring
        # is fetched ahead too (a cold plan of torch 2.11 otherwise waited on 11 CUDA
        # packages one after the other, 0.85 s).
        self._extras: dict[str, set[str]] = {}
        # Project pages of dependencies are fetched ahead, while the resolver works on
        # something else: a cold plan waits on the network far less.
        self._ahead = ThreadPoolExecutor(max_workers=8, thread_name_prefix="envbisect-ahead")
        self._closed = threading.Event()

    def versions(self, name: str) -> Sequence[PackageVersion]:
        key = canonicalize_name(name)
        if key in self.provided:
            return [PackageVersion(name=key, version=self.provided[key])]
        with self._lock:
            if key in self._versions:
                return self._versions[key]
        try:
            pf = self.client.project_files(key)
        except UnknownPackage:
            found: list[PackageVersion] = []
        else:
            if pf.token is None:
                rows = self._judge(pf)
            else:  # judged once per page and target, for every later run too
                rows = self.client.derived(
                    f"versions|{_CODE}|{pf.token}|{self._target_key}", lambda: self._judge(pf)
                )
            found = [
                PackageVersion(name=key, version=version, upload_time=_when(t), installable=ok)
                for v, t, ok in rows
                if (version := parse_version(v)) is not None
            ]
        with self._lock:
            self._versions[key] = found
        return found

    def _judge(self, pf: ProjectFiles) -> list[tuple[str, float | None, bool]]:
        """(version, first upload as a POSIX time, installable) of each version, oldest first:
        the same versions as build_candidates(..., pre=True) keeps (all but the wholly
        yanked), judged from the page rows without parsing them into DistFile rows."""
        out = []
        for version in sorted(pf.versions()):
            j = judge(pf.facts(version), self.target, self._supported, allow_sdist=self.allow_sdist)
            if not j.yanked:  # requires-python and wheel tags are already in ``installable``
                when = j.upload_time.timestamp() if j.upload_time is not None else None
                out.append((str(version), when, j.installable))
        return out

    def dependencies(self, name: str, version: Version) -> Sequence[Requirement]:
        key = (canonicalize_name(name), version)
        if self.provided.get(key[0]) == version:
            return []
        with self._lock:
            if key in self._deps:
                return self._deps[key]
        pf = self.client.project_files(key[0])

        def read() -> list[str]:
            return requires_dist(self.client.metadata_for(key[0], str(version)))

        if pf.token is None:
            lines = read()
        else:  # a version's requirements, remembered with the page that names its files
            lines = self.client.derived(f"requires|{_CODE}|{pf.token}|{version}", read)
        deps = [r for r in map(_requirement, lines) if r is not None]
        with self._lock:
            self._deps[key] = deps
            # What each dependency allows: its likely version is the newest of those (an
            # exact pin, as torch pins its CUDA wheels, is fetched ahead, not the newest).
            extras = sorted(self._extras.get(key[0], ()))
            wanted = [d for d in deps if self._applies(d, extras)]
            for d in wanted:  # torch asks for cuda-toolkit[cublas,cudart,...]: what those bring
                if d.extras:
                    self._extras.setdefault(canonicalize_name(d.name), set()).update(d.extras)
            ahead = {(canonicalize_name(d.name), str(d.specifier)) for d in wanted}
            ahead -= self._warmed
            self._warmed.update(ahead)
        if not self.client.offline:  # offline nothing is waited for: nothing to fetch ahead
            for name, spec in ahead:
                self._ahead.submit(self._warm, name, spec)
        return deps

    # -- core.planmemo's PlanMemo: plans remembered while the pages they read are the same ---

    def recall(self, key: str) -> Mapping[str, Any] | None:
        if os.environ.get("ENVBISECT_NO_PLAN_MEMO"):
            return None
        entry = self.client.recall(f"plan|{_CODE}|{self._memo_key}|{key}")
        if not isinstance(entry, dict) or not isinstance(entry.get("read"), dict):
            return None
        read: dict[str, Any] = entry["read"]
        try:
            # Every page the plan read, revalidated at once (one after the other, a cold
            # cache waited a round trip per project).
            if not self.client.offline and len(read) > 1:
                with ThreadPoolExecutor(8, thread_name_prefix="envbisect-recall") as pool:
                    list(pool.map(self._token, read))
            if any(self._token(n) != t for n, t in read.items()):
                return None
        except EnvbisectError:
            return None  # planned again, where the error is said as it should be
        plan = entry.get("plan")
        return plan if isinstance(plan, dict) else None

    def keep(self, key: str, entry: Mapping[str, Any], read: Sequence[str]) -> None:
        if os.environ.get("ENVBISECT_NO_PLAN_MEMO"):
            return
        try:
            tokens = {n: self._token(n) for n in read}
        except EnvbisectError:
            return
        if any(t is None for t in tokens.values()):
            return  # a folder or a merged index: no one digest names what was read
        value = {"read": tokens, "plan": dict(entry)}
        self.client.remember(f"plan|{_CODE}|{self._memo_key}|{key}", value)

    def _token(self, name: str) -> str | None:
        """The digest of what the index says of ``name`` now ("unknown": it has none)."""
        key = canonicalize_name(name)
        if key not in self._tokens:
            try:
                self._tokens[key] = self.client.project_files(key).token
            except UnknownPackage:
                self._tokens[key] = "unknown"
        return self._tokens[key]

    def _applies(self, req: Requirement, extras: Sequence[str] = ()) -> bool:
        """Whether a dependency applies on the target, without extras or with one of the
        ``extras`` some requirement asked of its project (worth fetching ahead)."""
        if req.marker is None:
            return True
        env = self.target.marker_environment()
        try:
            return any(applies(req.marker, {**env, "extra": e}) for e in ("", *extras))
        except Exception:  # an odd marker in someone's metadata: do not fetch ahead
            return False

    def warm(self, names: Sequence[str]) -> None:
        """core.plan's Prefetch: these pages (and each one's likely version's requirements)
        fetched by the pool ahead, while the resolver starts on the first."""
        if self.client.offline:
            return
        with self._lock:
            todo = [n for n in map(canonicalize_name, names) if n not in self._versions]
        for name in dict.fromkeys(todo):
            self._ahead.submit(self._warm, name, "")

    def _warm(self, name: str, spec: str) -> None:
        """``name``'s page, and the requirements of its likely version within ``spec``: the
        baseline's where it is allowed, else the newest release allowed."""
        if self._closed.is_set():
            return  # queued before close(): nobody will ask
        with contextlib.suppress(EnvbisectError, InvalidSpecifier):
            allowed = SpecifierSet(spec)
            versions = self.versions(name)
            usable = [
                v.version
                for v in versions
                if v.installable and not v.version.is_prerelease and v.version in allowed
            ]
            likely = self.preferred.get(canonicalize_name(name))
            if likely not in usable:
                likely = max(usable, default=None)
            if likely is not None:
                self.dependencies(name, likely)

    def close(self) -> None:
        """Stop reading ahead: what is queued is dropped, and what is running (a request or
        two each, under the client's deadline) ends before this returns, so that nothing
        writes to the cache or uses the client after its owner closes them."""
        self._closed.set()
        self._ahead.shutdown(wait=True, cancel_futures=True)

    def prefetch_dependencies(self, pairs: Sequence[tuple[str, Version]]) -> None:
        """Read the requirements of several versions at once (the client bounds concurrency);
        an error is raised again, clearly, when that version is asked for."""
        todo = [(canonicalize_name(n), v) for n, v in pairs]
        with self._lock:
            todo = [p for p in todo if p not in self._deps]
        if len(todo) <= 1:
            return

        def one(pair: tuple[str, Version]) -> None:
            with contextlib.suppress(EnvbisectError):
                self.dependencies(*pair)

        with ThreadPoolExecutor(min(8, len(todo)), thread_name_prefix="envbisect-deps") as pool:
            list(pool.map(one, todo))


def requires_dist(text: str) -> list[str]:
    """The ``Requires-Dist`` values of a METADATA text, as written.

    Only the header block is read (the long description after the first blank line can be
    most of the text); folded lines (RFC 822 continuation) are unfolded as the email parser
    does, and the field name is matched without regard to case.
    """
    head = _BODY.split(text, 1)[0]
    out: list[str] = []
    current: list[str] | None = None
    for line in head.splitlines():
        if line[:1] in (" ", "\t"):
            if current is not None:
                current.append(line)
            continue
        if current is not None:
            out.append("".join(current).strip())
            current = None
        name, sep, value = line.partition(":")
        if sep and name.strip().lower() == "requires-dist":
            current = [value]
    if current is not None:
        out.append("".join(current).strip())
    return [v for v in out if v]


_BODY = re.compile(r"\r?\n\r?\n")


def _code_digest() -> str:
    """A digest of the code whose answers are remembered (judging, requirements, plans): a
    new envbisect, or a changed planner, never reads an answer an older one derived."""
    from envbisect.core import candidates, plan, planmemo

    digest = hashlib.sha256(__version__.encode())
    for module in (candidates, plan, planmemo, sys.modules[__name__]):
        try:
            digest.update(Path(module.__file__ or "").read_bytes())
        except OSError:
            digest.update(module.__name__.encode())
    return digest.hexdigest()[:16]


_CODE = _code_digest()


def _when(stamp: float | None) -> datetime | None:
    return None if stamp is None else datetime.fromtimestamp(stamp, tz=timezone.utc)


@functools.lru_cache(maxsize=1 << 15)
def _requirement(line: str) -> Requirement | None:
    """A ``Requires-Dist`` line parsed (None: malformed, skipped as pip and uv skip it).

    Most lines are a few hundred distinct requirements under a few dozen distinct markers
    (``extra == "dev"``): each half is parsed once and the two joined, which gives the same
    object as parsing the whole line (a line with a URL, where ``;`` may be part of it, is
    parsed whole)."""
    head, sep, tail = line.partition(";")
    if not sep or "@" in head:
        return _parsed(line)
    base, marker = _parsed(head), _marker(tail.strip())
    if base is None or marker is None or base.marker is not None:
        return _parsed(line)
    joined = copy.copy(base)
    joined.marker = marker
    return joined


@functools.lru_cache(maxsize=1 << 15)
def _parsed(text: str) -> Requirement | None:
    try:
        return Requirement(text)
    except InvalidRequirement:
        return None  # a malformed line in someone's metadata: pip and uv skip it too


@functools.lru_cache(maxsize=1 << 12)
def _marker(text: str) -> Marker | None:
    try:
        return Marker(text)
    except InvalidMarker:
        return None
