"""The planner's ``MetadataSource`` over the index client (the IO edge of planning).

Versions come from the Simple API pages (with upload times and whether a file installs on the
*target*); dependencies from each version's core metadata (PEP 658 file, else the wheel's
METADATA). Both are fetched lazily, only for what the resolver asks about, and memoised.
"""

from __future__ import annotations

import email.parser
import threading
from collections.abc import Sequence

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

from .candidates import build_candidates
from .errors import UnknownPackage
from .index import IndexClient
from .plan import PackageVersion
from .target import Target


class IndexMetadataSource:
    def __init__(self, client: IndexClient, target: Target, *, allow_sdist: bool = False) -> None:
        self.client = client
        self.target = target
        self.allow_sdist = allow_sdist
        self._versions: dict[str, list[PackageVersion]] = {}
        self._deps: dict[tuple[str, Version], list[Requirement]] = {}
        self._lock = threading.Lock()

    def versions(self, name: str) -> Sequence[PackageVersion]:
        key = canonicalize_name(name)
        with self._lock:
            if key in self._versions:
                return self._versions[key]
        try:
            files = self.client.project_files(key).files
        except UnknownPackage:
            found: list[PackageVersion] = []
        else:
            cl = build_candidates(files, self.target, allow_sdist=self.allow_sdist, pre=True)
            found = [
                PackageVersion(
                    name=key,
                    version=c.version,
                    upload_time=c.upload_time,
                    # requires-python and wheel tags are already in ``installable``.
                    installable=c.installable and not c.yanked,
                )
                for c in cl.candidates
            ]
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
        return deps


def parse_requires_dist(text: str) -> list[Requirement]:
    headers = email.parser.HeaderParser().parsestr(text)
    out = []
    for line in headers.get_all("Requires-Dist") or []:
        try:
            out.append(Requirement(line))
        except InvalidRequirement:
            continue  # a malformed line in someone's metadata: pip and uv skip it too
    return out
