"""The planner's ``MetadataSource`` over the index client (the IO edge of planning).

Versions come from the Simple API pages (with upload times and whether a file installs on the
*target*); dependencies from each version's core metadata (PEP 658 file, else the wheel's
METADATA). Both are fetched lazily, only for what the resolver asks about, and memoised.
"""

from __future__ import annotations

import contextlib
import email.parser
import functools
import re
import threading
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

from envbisect.core.candidates import judge
from envbisect.core.plan import PackageVersion
from envbisect.core.target import Target
from envbisect.errors import EnvbisectError, UnknownPackage
from envbisect.index.client import IndexClient


class IndexMetadataSource:
    def __init__(
        self,
        client: IndexClient,
        target: Target,
        *,
        allow_sdist: bool = False,
        preferred: Mapping[str, Version] | None = None,
    ) -> None:
        self.client = client
        self.target = target
        self.allow_sdist = allow_sdist
        self._supported = frozenset(target.supported_tags())
        # The versions fetched ahead: the baseline's where there is one, else the newest.
        self.preferred = {canonicalize_name(k): v for k, v in (preferred or {}).items()}
        self._versions: dict[str, list[PackageVersion]] = {}
        self._deps: dict[tuple[str, Version], list[Requirement]] = {}
        self._lock = threading.Lock()
        # Project pages of dependencies are fetched ahead, while the resolver works on
        # something else: a cold plan waits on the network far less.
        self._ahead = ThreadPoolExecutor(max_workers=8, thread_name_prefix="envbisect-ahead")

    def versions(self, name: str) -> Sequence[PackageVersion]:
        key = canonicalize_name(name)
        with self._lock:
            if key in self._versions:
                return self._versions[key]
        try:
            pf = self.client.project_files(key)
        except UnknownPackage:
            found: list[PackageVersion] = []
        else:
            # The same versions as build_candidates(..., pre=True) keeps (all but the wholly
            # yanked), judged from the page rows without parsing them into DistFile rows.
            found = []
            for version in sorted(pf.versions()):
                j = judge(
                    pf.facts(version), self.target, self._supported, allow_sdist=self.allow_sdist
                )
                if not j.yanked:
                    # requires-python and wheel tags are already in ``installable``.
                    found.append(
                        PackageVersion(
                            name=key,
                            version=version,
                            upload_time=j.upload_time,
                            installable=j.installable,
                        )
                    )
        with self._lock:
            self._versions[key] = found
        return found

    def dependencies(self, name: str, version: Version) -> Sequence[Requirement]:
        key = (canonicalize_name(name), version)
        with self._lock:
            if key in self._deps:
                return self._deps[key]
        text = self.client.metadata_for(key[0], str(version))
        deps = parse_requires_dist(text)
        with self._lock:
            self._deps[key] = deps
            ahead = {canonicalize_name(d.name) for d in deps if self._applies(d)}
            ahead -= self._versions.keys()
        for name in ahead:
            self._ahead.submit(self._warm, name)
        return deps

    def _applies(self, req: Requirement) -> bool:
        """Whether a dependency applies on the target without extras (worth fetching ahead)."""
        if req.marker is None:
            return True
        env = {**self.target.marker_environment(), "extra": ""}
        try:
            return req.marker.evaluate(env)
        except Exception:  # an odd marker in someone's metadata: do not fetch ahead
            return False

    def _warm(self, name: str) -> None:
        with contextlib.suppress(EnvbisectError):
            versions = self.versions(name)
            usable = [v.version for v in versions if v.installable and not v.version.is_prerelease]
            likely = self.preferred.get(canonicalize_name(name))
            if likely not in usable:
                likely = max(usable, default=None)
            if likely is not None:
                self.dependencies(name, likely)

    def close(self) -> None:
        self._ahead.shutdown(wait=False, cancel_futures=True)

    def prefetch_dependencies(self, pairs: Sequence[tuple[str, Version]]) -> None:
        """Fetch the metadata of several versions at once (the client bounds concurrency)."""
        todo = [(canonicalize_name(n), v) for n, v in pairs]
        with self._lock:
            todo = [p for p in todo if p not in self._deps]
        if not todo:
            return
        try:
            texts = self.client.metadata_many([(n, str(v)) for n, v in todo])
        except EnvbisectError:
            return  # each one is fetched again, and fails clearly, when it is asked for
        with self._lock:
            for (n, v), text in zip(todo, texts.values(), strict=True):
                self._deps[(n, v)] = parse_requires_dist(text)


def parse_requires_dist(text: str) -> list[Requirement]:
    """The ``Requires-Dist`` lines of a METADATA text, parsed; malformed lines are skipped.

    Only the header block is read (the long description after the first blank line can be
    most of the text), and each distinct line is parsed once per process: the versions of a
    project repeat most of their lines. The objects are shared: never change one.
    """
    head = _BODY.split(text, 1)[0]
    headers = email.parser.HeaderParser().parsestr(head)
    out = []
    for line in headers.get_all("Requires-Dist") or []:
        req = _requirement(line)
        if req is not None:
            out.append(req)
    return out


_BODY = re.compile(r"\r?\n\r?\n")


@functools.lru_cache(maxsize=1 << 15)
def _requirement(line: str) -> Requirement | None:
    try:
        return Requirement(line)
    except InvalidRequirement:
        return None  # a malformed line in someone's metadata: pip and uv skip it too
