"""Reading a wheel's core metadata out of bytes or local files, with the hashes checked.

Who does what: ``IndexClient`` (client.py) fetches; this module reads what was fetched (a wheel
streamed to a temp file, a PEP 658 metadata file) or what lies on disk (a ``file://`` wheel and
its ``.metadata`` neighbour), and checks it against the hashes the index gave. It makes no
request. A file that does not match is an ``InfrastructureError`` (ref ``metadata-hash-mismatch``
or as the caller says), a wheel without a readable ``.dist-info/METADATA`` one with ref
``bad-wheel``.
"""

from __future__ import annotations

import hashlib
import io
import zlib
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import IO, Any
from urllib.parse import urlsplit

from packaging.utils import canonicalize_name

from envbisect.errors import InfrastructureError
from envbisect.model import DistFile
from envbisect.redact import mask_url


def stream_sha256(fh: IO[bytes]) -> str:
    """sha256 of what is left to read in ``fh``, read a megabyte at a time."""
    h = hashlib.sha256()
    for chunk in iter(lambda: fh.read(1 << 20), b""):
        h.update(chunk)
    return h.hexdigest()


def verified(data: bytes, hashes: Iterable[tuple[str, str]], url: str, ref: str) -> bytes:
    """``data`` if it matches every hash the index gives that hashlib knows, else an error."""
    for algo, want in hashes:
        if algo in hashlib.algorithms_guaranteed and hashlib.new(algo, data).hexdigest() != (
            want.lower()
        ):
            raise InfrastructureError(
                f"{mask_url(url)} does not match the {algo} the index gives for it",
                hint="the index, or a proxy on the way, served a damaged file; "
                "retry, and report it to the index if it persists",
                ref=ref,
            )
    return data


def read_wheel_metadata(fh: IO[bytes], filename: str) -> bytes:
    """The ``<name>-<version>.dist-info/METADATA`` member of a wheel."""
    import zipfile  # only for a wheel read whole: a warm plan reads none

    try:
        with zipfile.ZipFile(fh) as zf:
            names = [
                n for n in zf.namelist() if n.count("/") == 1 and n.endswith(".dist-info/METADATA")
            ]
            if not names:
                raise InfrastructureError(
                    f"{filename} has no .dist-info/METADATA",
                    hint="the wheel is broken; report it to the package's maintainers",
                    ref="bad-wheel",
                )
            # Several dist-info folders would be a broken wheel; prefer the one named like it.
            stem = canonicalize_name(filename.split("-", 1)[0])
            names.sort(key=lambda n: (canonicalize_name(n.split("-", 1)[0]) != stem, n))
            return zf.read(names[0])
    except (
        zipfile.BadZipFile,
        zipfile.LargeZipFile,
        zlib.error,
        EOFError,
        NotImplementedError,
    ) as e:
        raise InfrastructureError(
            f"{filename} is not a readable wheel ({e})",
            hint="the wheel is broken; report it to the package's maintainers",
            ref="bad-wheel",
        ) from e


def local_metadata(f: DistFile) -> bytes:
    """METADATA of a ``file://`` wheel: its ``.metadata`` neighbour, else the wheel itself."""
    path = file_path(f.url)
    side = path.with_name(path.name + ".metadata")
    try:
        if f.core_metadata is not None and side.is_file():
            return verified(
                side.read_bytes(), f.core_metadata, side.as_uri(), "metadata-hash-mismatch"
            )
        with path.open("rb") as fh:
            return read_wheel_metadata(fh, f.filename)
    except OSError as e:
        raise InfrastructureError(
            f"cannot read {path}: {e.strerror or e}",
            hint="the find-links folder or file index changed while envbisect ran?",
            ref="bad-wheel",
        ) from e


class RangeFile(io.RawIOBase):
    """A read-only, seekable view of a remote file, read through HTTP range requests.

    ``zipfile`` reads a wheel's central directory from the end, then one member: through
    this view that is two or three small requests instead of the whole wheel (a torch wheel
    is gigabytes). ``fetch(start, end)`` returns bytes ``start..end`` inclusive.
    """

    CHUNK = 64 * 1024

    def __init__(self, fetch: Callable[[int, int], bytes], size: int) -> None:
        super().__init__()
        self._fetch = fetch
        self._size = size
        self._pos = 0
        self._chunks: dict[int, bytes] = {}

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self._pos

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self._pos, io.SEEK_END: self._size}[whence]
        self._pos = max(0, base + offset)
        return self._pos

    def readinto(self, buffer: Any) -> int:
        view = memoryview(buffer).cast("B")
        want = min(len(view), self._size - self._pos)
        if want <= 0:
            return 0
        self._ensure(self._pos, self._pos + want - 1)
        out = 0
        while out < want:
            chunk_no, inner = divmod(self._pos, self.CHUNK)
            data = self._chunks[chunk_no][inner : inner + want - out]
            view[out : out + len(data)] = data
            out += len(data)
            self._pos += len(data)
        return out

    def _ensure(self, start: int, end: int) -> None:
        first, last = start // self.CHUNK, end // self.CHUNK
        missing = [c for c in range(first, last + 1) if c not in self._chunks]
        if not missing:
            return
        lo, hi = missing[0] * self.CHUNK, min(self._size, (missing[-1] + 1) * self.CHUNK) - 1
        data = self._fetch(lo, hi)
        if len(data) != hi - lo + 1:
            raise OSError(f"asked for {hi - lo + 1} bytes, got {len(data)}")
        for c in range(missing[0], missing[-1] + 1):
            self._chunks[c] = data[
                (c - missing[0]) * self.CHUNK : (c - missing[0] + 1) * self.CHUNK
            ]


def file_path(url: str) -> Path:
    """The local path of a ``file:`` URL (urllib.request, imported only when one is read)."""
    from urllib.request import url2pathname

    return Path(url2pathname(urlsplit(url).path))
