"""Reading package indexes: the Simple API (PEP 691 JSON, PEP 503 HTML), core metadata
(PEP 658/714) and find-links folders.

Index precedence follows uv's default ``first-index`` strategy, so that the versions envbisect
plans over are the ones uv will install: the extra indexes in the order given, then the main
index; the first index that knows the project supplies all of its files. Files found in
``--find-links`` folders are added to those (uv merges flat indexes the same way).

Network errors are retried with exponential backoff, then raised as ``IndexUnreachable`` naming
the URL with any credentials masked. Tests swap the httpx *transport*, never the client.

Two caches: in memory, per client, each project page and each metadata file is read once per
run, also under threads (a lock per key: two threads never fetch the same page at once); on
disk (``cache_dir``, see index_cache.py), pages while fresh and METADATA texts forever, shared
between runs. ``offline=True`` answers from the disk cache only, whatever the age of the entries.

Who does what: ``IndexClient`` decides which index answers and when to use each cache;
index/fetch.py sends the requests (retries, credentials), index/pages.py checks and reads the
pages that come back, index/cache.py keeps the disk entries, index/metadata.py decides how a
wheel's METADATA is fetched (wheelmeta.py reads it out of what came back and checks hashes),
index/localfiles.py reads ``file://`` indexes and find-links folders, redact.py masks
credentials (re-exported here with the cache's public names).
"""

from __future__ import annotations

import contextlib
import hashlib
import threading
import time
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from envbisect.core.names import TORCH_PACKAGES, is_project_name
from envbisect.diskcache import DiskCache, default_cache_dir
from envbisect.errors import (
    IndexUnreachable,
    InfrastructureError,
    UnknownPackage,
    UsageError,
)
from envbisect.index import metadata
from envbisect.index.cache import (
    BODIES,
    DERIVED,
    LEGACY_PAGES,
    METADATA,
    PAGES,
    IndexStats,
    Page,
    body_digest,
    freshness,
    metadata_entry,
    metadata_from_entry,
    page_from_entry,
)
from envbisect.index.fetch import Fetcher, offline_miss
from envbisect.index.limits import DEADLINE, MAX_PAGE_BYTES
from envbisect.index.localfiles import file_index_project, find_links_files, local_sha256
from envbisect.index.pages import fresh_page, parse_page
from envbisect.index.pytorch import fill_upload_times
from envbisect.index.simple import (
    ProjectFiles,
    parse_simple_html,
    parse_simple_json,
)
from envbisect.index.wheelfiles import SdistFiles, WheelFiles
from envbisect.index.wheelmeta import local_metadata
from envbisect.model import DistFile, IndexConfig, IndexStrategy
from envbisect.redact import mask_text, mask_url, strip_credentials

if TYPE_CHECKING:  # httpx is imported when the first request is made: a warm plan makes none
    import httpx

# Public names, including those defined elsewhere and kept importable from here.
__all__ = [
    "IndexClient",
    "IndexStats",
    "ProjectFiles",
    "default_cache_dir",
    "local_sha256",
    "mask_text",
    "mask_url",
    "parse_simple_html",
    "parse_simple_json",
    "strip_credentials",
]

_T = TypeVar("_T")
_R = TypeVar("_R")


class _KeyedLocks:
    """One lock per key, so that one thing is fetched once while other things go ahead."""

    def __init__(self) -> None:
        self._guard = threading.Lock()
        self._locks: dict[str, threading.Lock] = {}

    def __call__(self, key: str) -> threading.Lock:
        with self._guard:
            return self._locks.setdefault(key, threading.Lock())


class IndexClient:
    """Reads project file lists and core metadata from the configured indexes.

    One instance per run; safe to share between threads. ``cache_dir`` turns on the disk
    cache, ``offline`` answers from it alone, ``clock`` is the time the cache ages by.
    """

    def __init__(
        self,
        config: IndexConfig,
        *,
        transport: httpx.BaseTransport | None = None,
        retries: int = 3,
        backoff: float = 0.5,
        timeout: float = 30.0,
        cache_dir: Path | None = None,
        offline: bool = False,
        clock: Callable[[], float] = time.time,
        deadline: float | None = None,
        max_page_bytes: int | None = None,
        refresh: bool | Collection[str] = False,
    ) -> None:
        self.config = config
        self.offline = offline
        # Pages revalidated whatever their age, once each this run (uv's --refresh): all of
        # them (True) or those projects' (canonical names).
        self._refresh: bool | frozenset[str] = (
            refresh if isinstance(refresh, bool) else frozenset(refresh)
        )
        self._revalidated: set[str] = set()
        self.stats = IndexStats()
        self._clock = clock
        self._cache = DiskCache(Path(cache_dir)) if cache_dir is not None else None
        self._fetcher = Fetcher(
            index_urls=self.index_urls,
            stats=self.stats,
            transport=transport,
            timeout=timeout,
            retries=retries,
            backoff=backoff,
            offline=offline,
            deadline=DEADLINE if deadline is None else deadline,
            max_page_bytes=MAX_PAGE_BYTES if max_page_bytes is None else max_page_bytes,
        )
        self._memo: dict[str, ProjectFiles] = {}
        self._metadata: dict[str, str] = {}
        self._derived: dict[str, Any] = {}
        self._locks = _KeyedLocks()

    def close(self) -> None:
        self._fetcher.close()

    def __enter__(self) -> IndexClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def index_urls(self) -> list[str]:
        """Indexes in the order uv consults them (extra indexes take priority)."""
        return [*self.config.extra_index_urls, self.config.index_url]

    def project_files(self, name: str) -> ProjectFiles:
        """All files of ``name``: the first index that has it, plus find-links folders.

        Raises ``UnknownPackage`` when no index and no folder has the project.
        """
        if not is_project_name(name):  # it becomes part of a URL and of folder names
            raise UsageError(
                f"{name!r} is not a project name",
                hint="a project name is letters, digits and . _ - (PEP 508)",
                ref="bad-name",
            )
        key = canonicalize_name(name)
        with self._locks(f"project:{key}"):
            if key not in self._memo:
                self._memo[key] = self._project_files(name, key)
            return self._memo[key]

    def version_files(self, name: str, version: str) -> list[DistFile]:
        """The files of ``name`` at exactly ``version`` (none for a version it does not have),
        parsing only those rows of the project's page: what the lockfile step asks of every
        installed distribution, after the run read the same pages."""
        pf = self.project_files(name)
        try:
            return pf.files_of(Version(version))
        except InvalidVersion:
            return []

    def project_files_many(
        self, names: Iterable[str], *, max_workers: int = 8
    ) -> dict[str, ProjectFiles]:
        """``project_files`` of each name (keys as given) on at most ``max_workers`` threads.

        Each page is still fetched once; the first error, in the order given, is raised.
        """
        todo = list(dict.fromkeys(names))
        return dict(zip(todo, self._pool(self.project_files, todo, max_workers), strict=True))

    def core_metadata(self, f: DistFile) -> str:
        """The METADATA text of a wheel: the index's metadata file (PEP 658/714) when it
        advertises one, else read out of the wheel itself (downloaded, never kept).

        Raises ``UsageError`` for an sdist (its metadata needs a build), ``InfrastructureError``
        with ref ``metadata-hash-mismatch`` when the metadata file does not match its hash.
        """
        metadata.wheel_only(f)
        with self._locks(f"metadata:{f.url}"):
            if f.url not in self._metadata:
                self._metadata[f.url] = self._load_metadata(f)
            return self._metadata[f.url]

    def wheel(self, f: DistFile, *, whole: bool = False) -> WheelFiles | SdistFiles:
        """``f`` opened for reading its file list and single members (index/wheelfiles.py):
        a wheel by range requests (the whole file only where the index serves none), an
        sdist whole. Offline, only a ``file:`` one can be read."""
        if self.offline and not f.url.startswith("file:"):
            raise offline_miss(f.url)
        if not f.is_wheel:
            return SdistFiles(f, self._fetcher.get)
        return WheelFiles(f, self._fetcher.get, whole=whole)

    def metadata_for(self, name: str, version: str) -> str:
        """The METADATA text of ``name`` at exactly ``version``.

        Raises ``UnknownVersion`` (with the newest versions in its hint) when the indexes have
        no file of that version, ``UsageError`` when it has only sdists.
        """
        pf = self.project_files(name)
        try:
            want: Version | None = Version(version)
        except InvalidVersion:
            want = None
        matches = pf.files_of(want) if want is not None else []
        return self.core_metadata(metadata.best_file(pf, version, matches))

    def _pool(self, fn: Callable[[_T], _R], items: list[_T], max_workers: int) -> list[_R]:
        if len(items) <= 1 or max_workers <= 1:
            return [fn(x) for x in items]
        pool = ThreadPoolExecutor(min(max_workers, len(items)), thread_name_prefix="envbisect")
        try:
            return list(pool.map(fn, items))
        finally:
            pool.shutdown(wait=True, cancel_futures=True)

    def _project_files(self, name: str, key: str) -> ProjectFiles:
        if self.config.torch_index and key in TORCH_PACKAGES:
            return self._torch_project(key)
        page: ProjectFiles | None = None
        files: list[DistFile] = []
        order = self.index_urls()
        if self.config.index_strategy is not IndexStrategy.FIRST_INDEX:
            # pip's rule: every index's files; of the same file on several, the main index's
            # copy (a lock then names PyPI, not a local mirror that happens to hold it too).
            order = [self.config.index_url, *self.config.extra_index_urls]
        for base in order:
            found = self._fetch_project(base, key)
            if found is None:
                continue
            if page is None:
                page = found
                if self.config.index_strategy is IndexStrategy.FIRST_INDEX:
                    break
            else:  # pip's rule: every index's files; the first index's copy of a file wins
                known = {f.filename for f in (*page.files, *files)}
                files += [f for f in found.files if f.filename not in known]
        source = page.source if page is not None else ""
        for link in self.config.find_links:
            local = list(find_links_files(link, key))
            files.extend(local)
            if local and not source:
                source = link
        if page is not None:
            return page.plus(files, source=source) if files else page
        if not files and not source:
            where = ", ".join(mask_url(u) for u in self.index_urls())
            if self.config.find_links:
                where += ", " + ", ".join(self.config.find_links)
            raise UnknownPackage(
                f"no package named {name!r} on {where}",
                hint="check the spelling, or point --index-url / --find-links "
                "at the index that has it",
            )
        return ProjectFiles(name=key, files=tuple(files), source=source)

    def _torch_project(self, key: str) -> ProjectFiles:
        """A torch package: from the PyTorch variant folder only (uv's --torch-backend rule),
        with PyPI's upload time for the same public version (the PyTorch index has none)."""
        base = self.config.torch_index or ""
        try:
            found = self._fetch_project(base, key)
        except IndexUnreachable as e:
            raise IndexUnreachable(
                f"cannot reach the PyTorch index {mask_url(base)} for {key}",
                hint="--torch-backend reads download.pytorch.org; without it, point "
                "--torch-index-url at a mirror, or use --find-links with local torch wheels",
            ) from e
        if found is None:
            raise UnknownPackage(
                f"the PyTorch index {mask_url(base)} has no {key}",
                hint="check --torch-backend (cpu, cu118, cu121, ...) and --torch-index-url",
            )
        try:
            public = [
                f for b in self.index_urls() if (p := self._fetch_project(b, key)) for f in p.files
            ]
        except InfrastructureError:
            public = []
        return ProjectFiles(
            name=key, files=fill_upload_times(list(found.files), public), source=mask_url(base)
        )

    def _fetch_project(self, base: str, key: str) -> ProjectFiles | None:
        url = f"{base.rstrip('/')}/{key}/"
        if url.startswith("file:"):
            local = file_index_project(url)
            if local is None:
                return None
            where = mask_url(base)  # the index, as for an HTTP page's files
            return ProjectFiles(
                name=key, files=[replace(f, index=where) for f in local], source=where
            )
        index, shown = mask_url(base), mask_url(url)
        cached = self._cached_page(url)
        stale = self._must_revalidate(url, key)
        if cached is not None and (
            self.offline or (not stale and self._clock() - cached.fetched < cached.max_age)
        ):
            self.stats.add(cache_hits=1)
            return self._cached_files(cached, url, key, index, shown)
        if self.offline:
            raise offline_miss(url)
        headers = {}
        if cached is not None and cached.etag:
            headers["If-None-Match"] = cached.etag
        if cached is not None and cached.last_modified:
            headers["If-Modified-Since"] = cached.last_modified
        resp = self._fetcher.request(url, headers=headers)
        fetched, max_age, store = freshness(resp.headers, self._clock())
        if resp.status_code == 304 and cached is not None:
            self.stats.add(revalidated=1)
            page = replace(
                cached,
                fetched=fetched,
                max_age=max_age if "cache-control" in resp.headers else cached.max_age,
                etag=resp.headers.get("etag", cached.etag),
                last_modified=resp.headers.get("last-modified", cached.last_modified),
            )
            files = self._cached_files(page, url, key, index, shown)
            if store and self._cache is not None:
                self._cache.write(PAGES, url, page.header())
            return files
        page = fresh_page(resp, shown, fetched=fetched, max_age=max_age)
        page = replace(page, body_sha256=body_digest(page.body))
        files = parse_page(page, key, index, shown)  # garbage raises here, before caching
        if store and self._cache is not None:
            self._cache.write_bytes(BODIES, page.body_sha256, page.body.encode("utf-8"))
            self._cache.write(PAGES, url, page.header())
        if files is not None:
            files.token = f"{page.url}#{page.body_sha256}"
        return files

    def _must_revalidate(self, url: str, key: str) -> bool:
        """--refresh (or --refresh-package KEY): the first read of ``url`` this run asks the
        index (a 304 keeps the cached body), later ones go by the page's age again."""
        wanted = self._refresh is True or (
            isinstance(self._refresh, frozenset) and key in self._refresh
        )
        if not wanted or url in self._revalidated:
            return False
        self._revalidated.add(url)
        return True

    def _cached_page(self, url: str) -> Page | None:
        """The page's cached validators (its body is read only when needed), or None; an
        entry of the older one-file layout is moved to the new one on the way."""
        if self._cache is None:
            return None
        page = page_from_entry(self._cache.read(PAGES, url))
        if page is None:
            old = page_from_entry(self._cache.read(LEGACY_PAGES, url))
            if old is None:
                return None
            page = replace(old, body="", body_sha256=body_digest(old.body))
            self._cache.write_bytes(BODIES, page.body_sha256, old.body.encode("utf-8"))
            self._cache.write(PAGES, url, page.header())
        return page if page.body_sha256 else None

    def _cached_files(
        self, page: Page, url: str, key: str, index: str, shown: str
    ) -> ProjectFiles | None:
        """The files of a cached page, its body read and decoded only when something asks for
        them. A body gone from the cache or damaged is fetched again (offline: a miss)."""
        if page.status == 404:
            return None

        def load() -> tuple[Sequence[Mapping[str, Any]], Sequence[DistFile]]:
            body = self._cached_body(page)
            parsed = None
            if body is not None:
                with contextlib.suppress(InfrastructureError):
                    parsed = parse_page(replace(page, body=body), key, index, shown)
            if parsed is None:  # damaged: as a miss, fetched afresh
                if self.offline:
                    raise offline_miss(url)
                with self._locks(f"refetch:{url}"):
                    self._cache_forget(url)
                    parsed = self._fetch_project(url.rstrip("/").rsplit("/", 1)[0], key)
                if parsed is None:
                    return (), ()
            return parsed._rows, parsed._ready

        return ProjectFiles(
            name=key,
            source=index,
            page_url=page.url,
            index=index,
            load=load,
            token=f"{page.url}#{page.body_sha256}",
        )

    def _cached_body(self, page: Page) -> str | None:
        assert self._cache is not None
        data = self._cache.read_bytes(BODIES, page.body_sha256)
        if data is None or hashlib.sha256(data).hexdigest() != page.body_sha256:
            return None
        return data.decode("utf-8", errors="replace")

    def _cache_forget(self, url: str) -> None:
        if self._cache is not None:
            with contextlib.suppress(OSError):
                self._cache.path(PAGES, url).unlink()

    def derived(self, key: str, compute: Callable[[], _T]) -> _T:
        """What ``compute`` derives from cached pages and METADATA, remembered under ``key``
        (which names the digests it was derived from): in memory for this run, on disk for
        the next. ``compute`` must return JSON-able data; its errors are not remembered."""
        with self._locks(f"derived:{key}"):
            found = self.recall(key)
            if found is None:
                found = compute()
                self.remember(key, found)
            return found  # type: ignore[no-any-return]

    def recall(self, key: str) -> Any:
        """What was remembered under ``key`` (``derived``, ``remember``), or None."""
        if key in self._derived:
            return self._derived[key]
        if self._cache is not None:
            entry = self._cache.read(DERIVED, key)
            if isinstance(entry, dict) and entry.get("key") == key and "value" in entry:
                self._derived[key] = entry["value"]
                return entry["value"]
        return None

    def remember(self, key: str, value: Any) -> None:
        """Keep JSON-able ``value`` under ``key``, for this run and the next."""
        self._derived[key] = value
        if self._cache is not None:
            self._cache.write(DERIVED, key, {"key": key, "value": value})

    def _load_metadata(self, f: DistFile) -> str:
        if f.url.startswith("file:"):
            return local_metadata(f).decode("utf-8", errors="replace")
        if self._cache is not None:
            cached = metadata_from_entry(self._cache.read(METADATA, f.url), f.url)
            if cached is not None:
                self.stats.add(cache_hits=1)
                return cached
        if self.offline:
            raise offline_miss(f.url)
        text = metadata.fetch(f, self._fetcher.get).decode("utf-8", errors="replace")
        if self._cache is not None:
            self._cache.write(METADATA, f.url, metadata_entry(f.url, text))
        return text
