"""Fetching a wheel's core metadata: its metadata file, a range read, or the whole wheel.

Who does what: ``IndexClient`` (client.py) keeps the caches (in memory and on disk) and answers
offline; its ``Fetcher`` (fetch.py) makes every request (``Get``: a GET with the index's
credentials for that URL);
``fetch`` here decides what to ask for, cheapest first: the PEP 658 metadata file, even
unadvertised (PyPI serves one for every wheel, and some proxies drop the attribute that says
so); then a lazy read of the wheel's central directory through range requests; the whole
wheel only as a last resort (streamed to a temporary file, never kept). wheelmeta.py reads
what came back and checks its hashes. ``best_file`` picks which of a version's files to read.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterable, Mapping
from typing import IO, TYPE_CHECKING, Protocol

from envbisect.errors import IndexUnreachable, InfrastructureError, UnknownVersion, UsageError
from envbisect.index.simple import ProjectFiles
from envbisect.index.wheelmeta import RangeFile, read_wheel_metadata, stream_sha256, verified
from envbisect.model import DistFile
from envbisect.redact import mask_url

if TYPE_CHECKING:
    import httpx

FILE_HEADERS = {"Accept": "*/*"}


class Get(Protocol):
    """A GET of ``url`` (with the credentials its index needs), the body read, or streamed
    into ``sink`` when the answer is 200."""

    def __call__(
        self, url: str, *, headers: Mapping[str, str], sink: IO[bytes] | None = None
    ) -> httpx.Response: ...


def fetch(f: DistFile, get: Get) -> bytes:
    """The METADATA bytes of the remote wheel ``f``: its metadata file, else a range read,
    else the whole wheel (see the module's docstring)."""
    data = _metadata_file(f, get)
    if data is None:
        data = _by_ranges(f, get)
    if data is None:
        data = _from_wheel(f, get)
    return data


def wheel_only(f: DistFile) -> None:
    """Raise ``UsageError`` (ref ``sdist-metadata``) for an sdist: its metadata needs a build."""
    if not f.is_wheel:
        raise UsageError(
            f"{f.filename} is an sdist: reading its metadata requires building it, "
            "which envbisect does not do",
            hint="pick a version that has a wheel",
            ref="sdist-metadata",
        )


def best_file(pf: ProjectFiles, version: str, matches: Iterable[DistFile]) -> DistFile:
    """The cheapest of a version's files to read the metadata of: a local wheel or one with
    a metadata file (one small read), then any wheel (a download), then an sdist (an error
    later: that would need a build). ``UnknownVersion`` (with the newest versions in its hint)
    when there is none."""
    found = list(matches)
    if not found:
        known = sorted(pf.versions(), reverse=True)
        newest = ", ".join(str(v) for v in known[:5]) or "none"
        raise UnknownVersion(
            f"{pf.name} has no version {version!r} on {pf.source}",
            hint=f"newest versions: {newest}",
        )
    return min(
        found,
        key=lambda f: (
            not f.is_wheel,
            f.core_metadata is None and not f.url.startswith("file:"),
            f.filename,
        ),
    )


def _metadata_file(f: DistFile, get: Get) -> bytes | None:
    url = f.url + ".metadata"
    resp = get(url, headers=FILE_HEADERS)
    if resp.status_code == 404 or (f.core_metadata is None and not resp.is_success):
        return None  # not there (or never advertised): the wheel itself still has it
    if not resp.is_success:
        raise IndexUnreachable(
            f"{mask_url(url)} answered HTTP {resp.status_code}",
            hint="check the index URL and any credentials it needs",
        )
    return verified(resp.content, f.core_metadata or (), url, "metadata-hash-mismatch")


class NoRanges(Exception):
    """The server answered a range request with the whole file: read it the long way."""


def range_view(f: DistFile, get: Get) -> RangeFile | None:
    """The remote file ``f`` as a seekable file whose reads are HTTP range requests (each
    raises ``NoRanges`` where the server answers one with the whole file), or None when its
    size cannot be learnt from a one-byte range (the server does not do ranges)."""
    size = f.size
    if size is None:
        head = get(f.url, headers={**FILE_HEADERS, "Range": "bytes=0-0"})
        total = head.headers.get("content-range", "").rpartition("/")[2]
        if head.status_code != 206 or not total.isdigit():
            return None
        size = int(total)

    def read(start: int, end: int) -> bytes:
        resp = get(f.url, headers={**FILE_HEADERS, "Range": f"bytes={start}-{end}"})
        if resp.status_code != 206:
            raise NoRanges
        return resp.content

    return RangeFile(read, size)


def _by_ranges(f: DistFile, get: Get) -> bytes | None:
    """METADATA read out of the remote wheel with HTTP range requests, or None when the
    server does not do ranges. (The wheel's own hash cannot be checked on a partial read; uv
    checks it when it installs.)"""
    view = range_view(f, get)
    if view is None:
        return None
    try:
        with view as fh:
            return read_wheel_metadata(fh, f.filename)  # type: ignore[arg-type]
    except (NoRanges, OSError):
        return None


def _from_wheel(f: DistFile, get: Get) -> bytes:
    with tempfile.TemporaryFile() as tmp:  # wheels can be gigabytes: never in memory
        resp = get(f.url, headers=FILE_HEADERS, sink=tmp)
        if resp.status_code != 200:
            raise IndexUnreachable(
                f"{mask_url(f.url)} answered HTTP {resp.status_code}",
                hint="check the index URL and any credentials it needs",
            )
        want = f.hash("sha256")
        if want:
            tmp.seek(0)
            if stream_sha256(tmp) != want.lower():
                raise InfrastructureError(
                    f"{mask_url(f.url)} does not match the sha256 the index gives for it",
                    hint="the index, or a proxy on the way, served a damaged file; "
                    "retry, and report it to the index if it persists",
                    ref="wheel-hash-mismatch",
                )
        tmp.seek(0)
        return read_wheel_metadata(tmp, f.filename)
