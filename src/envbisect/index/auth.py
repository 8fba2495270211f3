"""Whether an index takes the credentials it was given: one request, for when uv hides it.

uv names a 401 when the first index it asks refuses it; under ``--index-strategy
unsafe-best-match`` (pip's rule) it passes over a refusing index in silence and reports the
package as not found. With envbisect's metadata cache warm, nothing else asks that index, and
a wrong password would make every environment "untestable". ``refused`` asks each index that
carries credentials for one project page (the status line only), once per process.

Who calls it: ``env/uvfailure.py`` (``uv_failure``), after uv could not resolve, never offline.
Credentials stay in memory: the answers are kept by URL in this process only.
"""

from __future__ import annotations

import threading
from urllib.parse import urlsplit

import httpx

from envbisect import __version__
from envbisect.index.pytorch import is_official
from envbisect.model import IndexConfig
from envbisect.redact import mask_url

_ACCEPT = "application/vnd.pypi.simple.v1+json, text/html;q=0.1"
_answers: dict[str, int | None] = {}  # index URL -> 401/403, or None: it took them
_lock = threading.Lock()


def refused(indexes: IndexConfig, project: str, *, timeout: float = 10.0) -> str | None:
    """Why the first credentialed index that refuses its credentials for ``project``'s page
    does (``URL answered HTTP 401``, the URL masked; 401 or 403), else None. An index that cannot be
    reached refuses nothing: uv's own error stands."""
    for base in credentialed(indexes):
        with _lock:  # one check per index, whichever thread fails first
            if base not in _answers:
                _answers[base] = _status(base, project, timeout)
            status = _answers[base]
        if status is not None:
            return f"{mask_url(base)} answered HTTP {status}"
    return None


def credentialed(indexes: IndexConfig) -> list[str]:
    """The HTTP(S) indexes uv reads that carry a user name, in uv's order."""
    urls = [*indexes.extra_index_urls, indexes.index_url]
    if indexes.torch_index and not is_official(indexes.torch_index):
        urls.append(indexes.torch_index)
    out = []
    for url in urls:
        parts = urlsplit(url)
        if parts.scheme in ("http", "https") and parts.username is not None and url not in out:
            out.append(url)
    return out


def _status(base: str, project: str, timeout: float) -> int | None:
    # httpx sends a URL's user:password as HTTP Basic, as uv does.
    url = f"{base.rstrip('/')}/{project}/"
    headers = {"User-Agent": f"envbisect/{__version__}", "Accept": _ACCEPT}
    try:
        with (
            httpx.Client(timeout=timeout, follow_redirects=True, headers=headers) as client,
            client.stream("GET", url) as resp,
        ):
            code = resp.status_code
    except httpx.HTTPError:
        return None
    return code if code in (401, 403) else None
