"""GETs to package indexes: an HTTP client per request in flight (reused), retries with backoff,
credentials per origin.

Who does what: ``Fetcher`` sends every request an ``IndexClient`` makes (pages, metadata files,
wheels), retrying transport errors and 429/5xx as index/retry.py says and raising
``IndexUnreachable`` with the URL masked; ``offline_miss`` is the error for what offline runs
cannot answer from the cache. index/limits.py bounds the bodies and the time they take.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from typing import IO, TYPE_CHECKING
from urllib.parse import unquote, urlsplit

from envbisect import __version__
from envbisect.errors import IndexUnreachable, InfrastructureError
from envbisect.index import retry
from envbisect.index.cache import IndexStats
from envbisect.index.limits import read_body, settled
from envbisect.redact import mask_url

if TYPE_CHECKING:  # httpx is imported when the first request is made: a warm plan makes none
    import ssl

    import httpx

ACCEPT = (
    "application/vnd.pypi.simple.v1+json, "
    "application/vnd.pypi.simple.v1+html;q=0.2, "
    "text/html;q=0.01"
)
_RETRY_STATUS = {429, 500, 502, 503, 504}


def offline_miss(url: str) -> InfrastructureError:
    return InfrastructureError(
        f"offline, and {mask_url(url)} is not in the cache",
        hint="run once online with the same cache directory to fill it",
        ref="offline-miss",
    )


class Fetcher:
    """The requests of one ``IndexClient``; safe to share between threads.

    ``index_urls`` gives the configured indexes, whose credentials go with requests to their
    origin; ``stats`` counts the requests and the bytes they fetched.
    """

    def __init__(
        self,
        *,
        index_urls: Callable[[], list[str]],
        stats: IndexStats,
        transport: httpx.BaseTransport | None,
        timeout: float,
        retries: int,
        backoff: float,
        offline: bool,
        deadline: float,
        max_page_bytes: int,
    ) -> None:
        self._index_urls = index_urls
        self.stats = stats
        self.retries = max(1, retries)
        self.backoff = backoff
        self.offline = offline
        self.deadline = deadline
        self.max_page_bytes = max_page_bytes
        self._transport, self._timeout = transport, timeout
        self._lock = threading.Lock()
        self._idle: list[httpx.Client] = []  # clients no request is using, the last used last
        self._made: list[httpx.Client] = []
        self._ssl: ssl.SSLContext | None = None
        self._closed = False

    @contextlib.contextmanager
    def _client(self) -> Iterator[httpx.Client]:
        """A client that no other request is using now, made at the first request that finds
        none idle (importing httpx and reading the system's certificates take longer than a
        warm plan).

        One client per request in flight, not one shared by every thread: httpcore's pool
        holds one lock over all its connections and, at every request's start and end, asks
        each idle connection's socket whether it is readable under it, releasing the GIL at
        each; with the planner's 17 threads on a cold plan the threads spent 38% of their
        time waiting on that lock (a sampling profile), more than on the network. A client
        keeps its own connections (one per host, reused by the next request that takes it)."""
        if self._transport is not None:  # a transport of the caller's: one client over it
            yield self._shared()
            return
        with self._lock:
            client = self._idle.pop() if self._idle else None
        if client is None:
            client = self._new()
        try:
            yield client
        finally:
            with self._lock:
                closed = self._closed
                if not closed:
                    self._idle.append(client)
            if closed:
                client.close()

    def _shared(self) -> httpx.Client:
        with self._lock:
            if not self._made:
                self._made.append(self._make(None))
            return self._made[0]

    def _new(self) -> httpx.Client:
        import httpx

        with self._lock:
            if self._ssl is None:
                # httpx's own default (SSL_CERT_FILE, SSL_CERT_DIR, else certifi), read once
                self._ssl = httpx.create_ssl_context()
            client = self._make(self._ssl)
            self._made.append(client)
            return client

    def _make(self, verify: ssl.SSLContext | None) -> httpx.Client:
        import httpx

        return httpx.Client(
            transport=self._transport,
            timeout=self._timeout,
            follow_redirects=True,
            headers={"User-Agent": f"envbisect/{__version__}", "Accept": ACCEPT},
            verify=True if verify is None else verify,
        )

    def close(self) -> None:
        with self._lock:
            self._closed = True
            made, self._made, self._idle = self._made, [], []
        for client in made:
            client.close()

    def get(
        self, url: str, *, headers: Mapping[str, str], sink: IO[bytes] | None = None
    ) -> httpx.Response:
        """``request`` with the credentials of ``url``'s index (index/metadata.py's ``Get``)."""
        return self.request(url, headers=headers, auth=self._auth_for(url), sink=sink)

    def _auth_for(self, url: str) -> httpx.Auth | None:
        """Credentials of a configured index on the same origin, as uv does: file URLs are
        kept without them, yet a private index's files need them too."""
        target = urlsplit(url)
        for base in self._index_urls():
            parts = urlsplit(base)
            same = (parts.scheme, parts.hostname, parts.port) == (
                target.scheme,
                target.hostname,
                target.port,
            )
            if same and parts.username is not None:
                import httpx

                return httpx.BasicAuth(unquote(parts.username), unquote(parts.password or ""))
        return None

    def request(
        self,
        url: str,
        *,
        headers: Mapping[str, str] | None = None,
        auth: httpx.Auth | None = None,
        sink: IO[bytes] | None = None,
    ) -> httpx.Response:
        """GET, retried on transport errors and 429/5xx (index/retry.py: Retry-After, jitter).
        The body is read into the response (at most ``max_page_bytes``), or streamed into
        ``sink`` when the answer is 200, within ``deadline`` seconds (ten times that into a
        sink). Offline, nothing is sent: every request of the client goes through here."""
        if self.offline:
            raise offline_miss(url)
        import httpx

        last, wait_for = None, None  # the last error; the last answer's Retry-After
        for attempt in range(self.retries):
            if attempt:
                time.sleep(retry.delay(attempt, self.backoff, wait_for, time.time()))
            try:
                with (
                    self._client() as client,
                    client.stream("GET", url, headers=headers, auth=auth) as resp,
                ):
                    into = sink if sink is not None and resp.status_code == 200 else None
                    body = read_body(resp, url, into, self.deadline, self.max_page_bytes)
            except httpx.RequestError as e:
                last, wait_for = e, None
                continue
            self.stats.add(requests=1, bytes_fetched=resp.num_bytes_downloaded)
            resp = settled(resp, body)
            if resp.status_code in _RETRY_STATUS:
                last, wait_for = None, resp.headers.get("retry-after")
                continue
            return resp
        reason = f"{type(last).__name__}" if last is not None else "server errors"
        raise IndexUnreachable(
            f"cannot reach {mask_url(url)} ({reason}, {self.retries} attempts)",
            hint="check the network and the index URL (--index-url); "
            "a rerun reuses every probe already finished",
        ) from last
