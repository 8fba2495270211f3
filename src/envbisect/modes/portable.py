"""Lockfiles that install anywhere: every locked file named by a public index, never a folder.

Who does what: ``outputs.lock_entries`` finds each installed version's files where the
session read them (its indexes and this machine's wheel folders); ``portable_entries`` replaces
each file that came from a folder or a ``file://`` index with the same file on the public
index the matrix file names for its package (the PyTorch variant index for the torch
packages, when the file names one; else its main and extra indexes), the same file meaning
the same name *and* the same sha256. What cannot be matched is said, never hidden:

- the index has no such file, or a different one: *not portable* (the lock says so and how
  to make it again; the file stays hash-pinned, so an install fails rather than takes another);
- the index cannot be read (the PyTorch host from a machine that only reaches PyPI): the
  index is named, *unchecked* (the folder stands in for it, as the matrix file says; the lock
  says the hash was not checked there, and ``--require-hashes`` refuses any other file). A
  PEP 751 lock needs each file's URL, which is then unknown: that lock is not portable.

``core.report`` writes the notes into both lockfiles.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from envbisect.core.lockfile import LockEntry
from envbisect.core.names import TORCH_PACKAGES
from envbisect.errors import InfrastructureError, UsageError
from envbisect.model import DistFile, IndexConfig
from envbisect.modes.session import Session
from envbisect.redact import mask_url


@dataclass(frozen=True, slots=True, kw_only=True)
class Portable:
    """A lock's entries as any machine reads them, and what could not be made so."""

    entries: tuple[LockEntry, ...]
    unchecked: tuple[str, ...] = ()  # one line per file named by an index not read
    not_portable: tuple[str, ...] = ()  # one line per file no public index serves

    @property
    def pylock_portable(self) -> bool:
        """Whether every file has a public URL (PEP 751 names each file by URL or path)."""
        return not self.unchecked and not self.not_portable


def is_local(url: str) -> bool:
    return not url.startswith(("http://", "https://"))


def public_config(public: IndexConfig) -> IndexConfig:
    """``public`` without its folders: what a lock may name (URLs of indexes and pages)."""
    return replace(public, find_links=tuple(u for u in public.find_links if not is_local(u)))


class PublicSources:
    """The public indexes a table's locks name (``config``: the matrix file's), read through
    the session (its transport, cache and --offline), each project page once per publish:
    an index that cannot be read is asked once, not once per lock."""

    def __init__(self, config: IndexConfig, session: Session) -> None:
        self.config = config
        self._session = session
        self._pages: dict[tuple[str, str], list[DistFile] | str] = {}

    def files(self, base: str, name: str, version: str) -> list[DistFile] | str:
        """The files of ``name`` ``version`` on ``base``; or why not: "unreachable", or
        that the index has no such project."""
        key = (base, canonicalize_name(name))
        if key not in self._pages:
            client = self._session.index_client(IndexConfig(index_url=base))
            try:
                client.project_files(name)
                self._pages[key] = []  # read: the versions come from the client's memo
            except UsageError:  # the index has no such project
                self._pages[key] = f"{mask_url(base)} has no {name}"
            except InfrastructureError:
                self._pages[key] = "unreachable"
        page = self._pages[key]
        if isinstance(page, str):
            return page
        client = self._session.index_client(IndexConfig(index_url=base))
        try:
            return client.project_files(name).files_of(Version(version))
        except InvalidVersion:
            return f"{version} is not a version {mask_url(base)} can serve"


def portable_entries(entries: list[LockEntry], public: PublicSources) -> Portable:
    """``entries`` with each local file replaced by its public twin (see the module doc)."""
    out: list[LockEntry] = []
    unchecked: list[str] = []
    broken: list[str] = []
    for e in entries:
        if not any(is_local(f.url) for f in e.files) and (e.index is None or not is_local(e.index)):
            out.append(e)
            continue
        sources = _sources(e.name, public.config)
        files: list[DistFile] = []
        named: str | None = None
        for f in e.files:
            if not is_local(f.url):
                files.append(f)
                continue
            twin, index, why = _twin(f, e, sources, public)
            if twin is not None:
                files.append(twin)
                named = named or index
            elif why == "unreachable":
                # The index is named, the file keeps its hash; its URL there is not known.
                files.append(replace(f, url="", index=index))
                named = named or index
                unchecked.append(
                    f"{e.name} {e.version}: {f.filename} from a local folder, named by "
                    f"{mask_url(index)}, which could not be read when this lock was written: "
                    "its hash was not checked there (--require-hashes refuses any other file)"
                )
            else:
                files.append(replace(f, url="", index=""))
                broken.append(f"{e.name} {e.version}: {f.filename} from a local folder: {why}")
        kept = e.index if e.index and not is_local(e.index) else None
        # A file both on the index and in the folder is now there twice: once is enough.
        unique = {(f.filename, f.hash("sha256")): f for f in reversed(files)}
        ordered = [f for f in files if unique.get((f.filename, f.hash("sha256"))) is f]
        out.append(replace(e, files=tuple(ordered), index=named or kept))
    return Portable(entries=tuple(out), unchecked=tuple(unchecked), not_portable=tuple(broken))


def _sources(name: str, public: IndexConfig) -> list[str]:
    """The public indexes that should serve ``name``, in the order uv consults them."""
    if public.torch_index and canonicalize_name(name) in TORCH_PACKAGES:
        return [public.torch_index]  # uv's --torch-backend: from the variant index only
    return [u for u in (*public.extra_index_urls, public.index_url) if not is_local(u)]


def _twin(
    f: DistFile, e: LockEntry, sources: list[str], public: PublicSources
) -> tuple[DistFile | None, str, str]:
    """The same file on the first of ``sources`` that serves it: (twin, index, "") or
    (None, index, why): why is "unreachable" or what the index serves instead."""
    digest = f.hash("sha256")
    why, first, unreachable = "no public index is named for it", "", ""
    for base in sources:
        first = first or base
        found = public.files(base, e.name, e.version)
        if found == "unreachable":
            unreachable = unreachable or base
            continue
        if isinstance(found, str):
            why = found
            continue
        same = [g for g in found if g.filename == f.filename]
        if not same:
            why = f"{mask_url(base)} has no {f.filename}"
            continue
        if digest and same[0].hash("sha256") == digest:
            return replace(same[0], index=mask_url(base)), mask_url(base), ""
        theirs = same[0].hash("sha256") or "no hash"
        here = (digest or "?")[:12]
        why = f"{mask_url(base)} serves another file (sha256 {theirs[:12]}..., here {here}...)"
    if unreachable:
        return None, mask_url(unreachable), "unreachable"
    return None, mask_url(first), why
