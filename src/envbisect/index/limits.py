"""Limits on what one index request may cost: an overall deadline and a size cap.

httpx's timeouts are per read, so a server that sends one byte every few seconds never trips
them; the deadline here runs over the whole body. Pages and metadata files are read into
memory up to a cap (stopped as soon as it is passed, or at once when Content-Length says so);
wheels read for their metadata stream to disk, uncapped, with ten times the deadline. The
deadline does not cover the wait for the response headers (httpx's read timeout does).
"""

from __future__ import annotations

import os
import time
from typing import IO, TYPE_CHECKING

from envbisect.errors import IndexUnreachable, InfrastructureError
from envbisect.redact import mask_url

if TYPE_CHECKING:
    import httpx

DEADLINE = float(os.environ.get("ENVBISECT_INDEX_DEADLINE", "120"))
MAX_PAGE_BYTES = int(os.environ.get("ENVBISECT_INDEX_MAX_BYTES", str(64 << 20)))


def read_body(
    resp: httpx.Response, url: str, sink: IO[bytes] | None, deadline: float, cap: int
) -> bytes:
    """The body of a streamed response (b"" when it went into ``sink``)."""
    limit = deadline * (10 if sink is not None else 1)
    until = time.monotonic() + limit
    limit_bytes = cap if sink is None else None
    declared = resp.headers.get("content-length", "")
    if limit_bytes is not None and declared.isdigit() and int(declared) > limit_bytes:
        raise _too_big(url, int(declared), limit_bytes)
    if sink is not None:
        sink.seek(0)
        sink.truncate()
    buf = bytearray()
    for chunk in resp.iter_bytes():
        if sink is not None:
            sink.write(chunk)
        else:
            buf += chunk
            if limit_bytes is not None and len(buf) > limit_bytes:
                raise _too_big(url, len(buf), limit_bytes)
        if time.monotonic() > until:
            raise IndexUnreachable(
                f"{mask_url(url)} sent its answer too slowly: not done after {limit:g} s",
                hint="the index or a proxy is stalling; retry later, or raise the deadline "
                "with ENVBISECT_INDEX_DEADLINE (seconds)",
                ref="index-too-slow",
            )
    return bytes(buf)


def settled(resp: httpx.Response, body: bytes) -> httpx.Response:
    """A plain response with ``body`` (already decoded: no content-encoding, no length)."""
    headers = [
        (k, v)
        for k, v in resp.headers.multi_items()
        if k.lower() not in ("content-encoding", "content-length")
    ]
    import httpx

    return httpx.Response(resp.status_code, headers=headers, content=body, request=resp.request)


def _too_big(url: str, size: int, cap: int) -> InfrastructureError:
    return InfrastructureError(
        f"{mask_url(url)} sent more than the {cap}-byte cap ({size} bytes or more); "
        "stopped reading",
        hint="a Simple API page is far smaller: check the index URL, or raise the cap with "
        "ENVBISECT_INDEX_MAX_BYTES",
        ref="index-page-too-big",
    )
