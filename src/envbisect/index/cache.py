"""The index client's on-disk cache entries: what they hold, and how long a page stays fresh.

Who does what: ``IndexClient`` (client.py) decides when to read, revalidate and write;
diskcache.py (shared with the interpreter facts) keeps the files and writes them atomically;
this module says what the index's entries hold and how long a page stays fresh. It never makes
a request.

The cache is shared between runs and processes. Project pages are kept with their validators,
served without a request while fresh (Cache-Control max-age, less the Age the answer already
had), revalidated when stale (a 304 reuses the body). METADATA texts are kept by file URL,
forever (an index's files never change). Whole wheels are never kept, only the METADATA read out
of them. File names hash the URL without its credentials, so no password reaches the disk.
"""

from __future__ import annotations

import contextlib
import hashlib
import threading
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the session reads this module's cache folder without loading httpx
    import httpx

# Folder names carry a format version: a new layout never misreads an old one.
PAGES = "pages-v2"  # a page's validators and the digest of its body (small: read per run)
BODIES = "page-bodies-v1"  # page bodies as they came, named by their SHA-256
LEGACY_PAGES = "pages-v1"  # validators and body in one JSON entry: read once, then moved
METADATA = "metadata-v1"
# What the planner derives from pages and METADATA texts (a version list judged for a target,
# a version's requirements), keyed by the digests of what it was derived from: an entry can
# never outlive its page, and a warm plan reads neither the page nor the METADATA again.
DERIVED = "derived-v1"


@dataclass(slots=True)
class IndexStats:
    """What a client cost, for benchmarks. Mutable; ``add`` is safe under threads.

    ``requests``: HTTP responses received (each retry counts); ``bytes_fetched``: body bytes
    off the network, as sent (before decompression); ``cache_hits``: answers served from the
    disk cache without a request; ``revalidated``: stale pages the index confirmed with a 304.
    """

    requests: int = 0
    bytes_fetched: int = 0
    cache_hits: int = 0
    revalidated: int = 0
    _lock: threading.Lock = field(
        default_factory=threading.Lock, init=False, repr=False, compare=False
    )

    def add(
        self,
        *,
        requests: int = 0,
        bytes_fetched: int = 0,
        cache_hits: int = 0,
        revalidated: int = 0,
    ) -> None:
        with self._lock:
            self.requests += requests
            self.bytes_fetched += bytes_fetched
            self.cache_hits += cache_hits
            self.revalidated += revalidated


@dataclass(frozen=True, slots=True, kw_only=True)
class Page:
    """A project page as fetched or cached: enough to parse it and to revalidate it."""

    url: str  # after redirects, without credentials: relative links resolve against it
    status: int  # 200, or 404: this index does not have the project
    content_type: str = ""
    body: str = ""
    etag: str | None = None
    last_modified: str | None = None
    fetched: float = 0.0  # clock time the answer was fresh from the origin (Age subtracted)
    max_age: float = 0.0
    body_sha256: str = ""  # of the body as UTF-8; the body itself is read only when needed

    def header(self) -> dict[str, Any]:
        """The ``PAGES`` entry of this page: everything but the body."""
        return {
            "url": self.url,
            "status": self.status,
            "content_type": self.content_type,
            "etag": self.etag,
            "last_modified": self.last_modified,
            "fetched": self.fetched,
            "max_age": self.max_age,
            "body_sha256": self.body_sha256 or body_digest(self.body),
        }


def body_digest(body: str) -> str:
    return _sha256(body.encode("utf-8"))


def page_from_entry(entry: object) -> Page | None:
    """The page a ``PAGES`` entry holds, or None for anything that is not one."""
    if not isinstance(entry, dict):
        return None
    try:
        page = Page(**entry)
    except TypeError:
        return None
    ok = (
        isinstance(page.url, str)
        and isinstance(page.status, int)
        and isinstance(page.content_type, str)
        and isinstance(page.body, str)
        and isinstance(page.fetched, int | float)
        and isinstance(page.max_age, int | float)
        and isinstance(page.body_sha256, str)
    )
    return page if ok else None


def metadata_entry(url: str, text: str) -> dict[str, Any]:
    """The ``METADATA`` entry for the METADATA ``text`` of the file at ``url``."""
    return {"url": url, "sha256": _sha256(text.encode()), "metadata": text}


def metadata_from_entry(entry: object, url: str) -> str | None:
    """The METADATA text a ``METADATA`` entry holds for ``url``, or None (a miss)."""
    if isinstance(entry, dict) and entry.get("url") == url:
        text = entry.get("metadata")
        if isinstance(text, str) and entry.get("sha256") == _sha256(text.encode()):
            return text
    return None


# Freshness for a page that says nothing about it (no Cache-Control, no validators: some
# proxies strip them). RFC 9111 4.2.2 lets a cache pick a heuristic; this is PyPI's own max-age.
HEURISTIC_MAX_AGE = 600.0


def freshness(headers: httpx.Headers, now: float) -> tuple[float, float, bool]:
    """(fetched, max_age, storable) from Cache-Control and Age (RFC 9111, the parts we use)."""
    silent = "cache-control" not in headers and not (
        headers.get("etag") or headers.get("last-modified")
    )
    max_age, no_cache, store = (HEURISTIC_MAX_AGE if silent else 0.0), False, True
    for part in headers.get("cache-control", "").lower().split(","):
        name, _, value = part.strip().partition("=")
        if name == "max-age":
            with contextlib.suppress(ValueError):
                max_age = max(0.0, float(value.strip('"')))
        elif name == "no-cache":
            no_cache = True
        elif name == "no-store":
            store = False
    age = 0.0
    with contextlib.suppress(ValueError):
        age = max(0.0, float(headers.get("age", "0")))
    return now - age, 0.0 if no_cache else max_age, store


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()
