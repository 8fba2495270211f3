"""From an index's file list to the ordered versions a bisection walks.

Pure: files in, candidates out. A version with no file installable on the *target* is kept in
the list but marked not installable, with the reason: it is untestable (never bad) and no
environment is built for it.
"""

from __future__ import annotations

import functools
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

from packaging.tags import Tag
from packaging.utils import (
    InvalidSdistFilename,
    parse_sdist_filename,
)
from packaging.version import InvalidVersion, Version

from envbisect.core.target import Target
from envbisect.model import Candidate, DistFile


class FileLike(Protocol):
    """What deciding about a version reads of each of its files: a ``DistFile``, or a lighter
    row of the same facts (the index client's ``FileFacts``)."""

    @property
    def filename(self) -> str: ...
    @property
    def requires_python(self) -> str | None: ...
    @property
    def yanked(self) -> bool: ...
    @property
    def upload_time(self) -> datetime | None: ...
    @property
    def is_wheel(self) -> bool: ...


@dataclass(frozen=True, slots=True, kw_only=True)
class Judged:
    """One version's files judged for the target: ``yanked`` when every file is."""

    upload_time: datetime | None
    yanked: bool
    installable: bool
    reason: str | None


def judge(
    files: Sequence[FileLike], target: Target, supported: frozenset[Tag], *, allow_sdist: bool
) -> Judged:
    """Whether a version with these files (at least one) can be tested on ``target``."""
    live = [f for f in files if not f.yanked]
    times = [f.upload_time for f in files if f.upload_time is not None]
    installable, reason = _installability(live or files, target, supported, allow_sdist)
    return Judged(
        upload_time=min(times) if times else None,
        yanked=not live,
        installable=installable,
        reason=reason,
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class CandidateList:
    """The versions kept, oldest first, and why the others were dropped."""

    candidates: tuple[Candidate, ...]
    dropped: dict[Version, str]

    def find(self, version: Version) -> int | None:
        """The index of ``version``; a public version (2.1.0) also finds its one local
        variant (2.1.0+cu121), as PEP 440 lets ``==2.1.0`` match it."""
        for i, cand in enumerate(self.candidates):
            if cand.version == version:
                return i
        if not version.local:
            local = [i for i, c in enumerate(self.candidates) if c.version.public == str(version)]
            if len(local) == 1:
                return local[0]
        return None


@functools.lru_cache(maxsize=1 << 16)
def file_version(filename: str) -> Version | None:
    """The version a wheel or sdist filename carries, or None for anything else (each
    filename parsed once: a plan reads the same project pages again and again)."""
    if filename.endswith(".whl"):
        # name-version(-build)?-python-abi-platform.whl, the name's own dashes escaped as "_"
        # (PEP 427): the version is the second field, and its tags are not needed here.
        parts = filename[:-4].split("-")
        return parse_version(parts[1]) if len(parts) in (5, 6) and parts[0] else None
    try:
        return parse_sdist_filename(filename)[1]
    except (InvalidSdistFilename, InvalidVersion):
        return None


@functools.lru_cache(maxsize=1 << 14)
def parse_version(text: str) -> Version | None:
    """``Version(text)``, or None for text that is no version; each text parsed once."""
    try:
        return Version(text)
    except InvalidVersion:
        return None


def build_candidates(
    files: Iterable[DistFile],
    target: Target,
    *,
    allow_sdist: bool = False,
    pre: bool = False,
    exclude_newer: datetime | None = None,
    keep: Iterable[Version] = (),
) -> CandidateList:
    """Group files by version and decide for each version whether it can be tested.

    Yanked versions, pre-releases (unless ``pre``) and versions uploaded after
    ``exclude_newer`` are dropped, except those in ``keep`` (the ends the user named).
    """
    keep_set = set(keep)
    by_version: dict[Version, list[DistFile]] = defaultdict(list)
    for f in files:
        v = file_version(f.filename)
        if v is not None:
            by_version[v].append(f)

    supported = frozenset(target.supported_tags())
    kept: list[Candidate] = []
    dropped: dict[Version, str] = {}
    for version in sorted(by_version):
        vfiles = by_version[version]
        j = judge(vfiles, target, supported, allow_sdist=allow_sdist)
        uploaded = j.upload_time
        if version not in keep_set:
            if j.yanked:
                dropped[version] = "yanked"
                continue
            if version.is_prerelease and not pre:
                dropped[version] = "pre-release (pass --pre to include)"
                continue
            if exclude_newer is not None and uploaded is not None and uploaded > exclude_newer:
                dropped[version] = f"uploaded {uploaded:%Y-%m-%d}, after --exclude-newer"
                continue
        kept.append(
            Candidate(
                version=version,
                files=tuple(vfiles),
                upload_time=uploaded,
                yanked=j.yanked,
                installable=j.installable,
                reason=j.reason,
            )
        )
    return CandidateList(candidates=tuple(kept), dropped=dropped)


def _installability(
    files: Sequence[FileLike], target: Target, supported: frozenset[Tag], allow_sdist: bool
) -> tuple[bool, str | None]:
    py_ok = [f for f in files if target.accepts_requires_python(f.requires_python)]
    if not py_ok:
        spec = files[0].requires_python
        return False, f"requires-python {spec} excludes Python {target.python_version}"
    wheels = [f for f in py_ok if f.is_wheel]
    if any(target.wheel_compatible(f.filename, supported) for f in wheels):
        return True, None
    sdists = [f for f in py_ok if not f.is_wheel]
    if sdists and allow_sdist:
        return True, None
    if not wheels:
        return False, "only an sdist (wheels only by default; --allow-sdist builds it)"
    return False, f"no wheel for {target.short} ({len(wheels)} wheel(s) for other targets)"
