"""GETs to package indexes: one HTTP client, retries with backoff, credentials per origin.

Who does what: ``Fetcher`` sends every request an ``IndexClient`` makes (pages, metadata files,
wheels), retrying transport errors and 429/5xx as index/retry.py says and raising
``IndexUnreachable`` with the URL masked; ``offline_miss`` is the error for what offline runs
cannot answer from the cache. index/limits.py bounds the bodies and the time they take.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping
from typing import IO, TYPE_CHECKING
from urllib.parse import unquote, urlsplit

from envbisect import __version__
from envbisect.errors import IndexUnreachable, InfrastructureError
from envbisect.index import retry
from envbisect.index.cache import IndexStats
from envbisect.index.limits import read_body, settled
from envbisect.redact import mask_url

if TYPE_CHECKING:  # httpx is imported when the first request is made: a warm plan makes none
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
        self._http: httpx.Client | None = None
        self._http_lock = threading.Lock()

    @property
    def _client(self) -> httpx.Client:
        """The HTTP client, made at the first request (importing httpx and reading the
        system's certificates take longer than a warm plan)."""
        with self._http_lock:
            if self._http is None:
                import httpx

                self._http = httpx.Client(
                    transport=self._transport,
                    timeout=self._timeout,
                    follow_redirects=True,
                    headers={"User-Agent": f"envbisect/{__version__}", "Accept": ACCEPT},
                )
            return self._http

    def close(self) -> None:
        with self._http_lock:
            if self._http is not None:
                self._http.close()

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
                with self._client.stream("GET", url, headers=headers, auth=auth) as resp:
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
