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
import struct
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
    try:
        data = plain_member(fh, filename)
    except (ValueError, IndexError, struct.error, zlib.error):
        data = None
    return data if data is not None else by_zipfile(fh, filename)


def by_zipfile(fh: IO[bytes], filename: str) -> bytes:
    """The METADATA member as ``zipfile`` reads it, or ``InfrastructureError`` (bad-wheel)."""
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
        UnicodeDecodeError,  # a name marked UTF-8 that is not (the fuzz found it)
        RuntimeError,  # an encrypted member: zipfile asks for a password
        ValueError,  # an offset before the archive: "negative seek value" (the fuzz too)
    ) as e:
        raise InfrastructureError(
            f"{filename} is not a readable wheel ({e})",
            hint="the wheel is broken; report it to the package's maintainers",
            ref="bad-wheel",
        ) from e


_EOCD, _CENTRAL, _LOCAL = b"PK\x05\x06", b"PK\x01\x02", b"PK\x03\x04"
_SUFFIX = b".dist-info/METADATA"


def plain_member(fh: IO[bytes], filename: str) -> bytes | None:
    """What ``zipfile`` would read as the wheel's METADATA, read from the central directory's
    bytes without a ``ZipInfo`` for each member; None where the archive is anything but the
    plain kind (zip64, bytes before the archive, a record zipfile would reject or read
    otherwise, a name that is not ASCII, encryption, a method other than stored or deflated,
    a CRC that does not match), and zipfile reads it as before.

    zipfile makes an object of each member: a torch wheel's central directory (thousands of
    members) took about 50 ms of the GIL each time it was read, 0.64 s of a cold plan's 4.2 s;
    walking the records' lengths takes a tenth of that. tests/index/test_wheelmeta.py
    compares both readers on fuzzed archives."""
    size = fh.seek(0, 2)
    tail_at = max(0, size - (1 << 16))
    fh.seek(tail_at)
    tail = fh.read(size - tail_at)
    at = tail.rfind(_EOCD)
    if at < 20 or at + 22 > len(tail) or tail[at - 20 : at - 16] == b"PK\x06\x07":
        return None  # no end record, or a zip64 locator before it
    disk, cd_disk, _, _, cd_size, cd_at, comment = struct.unpack_from("<4H2LH", tail, at + 4)
    if disk or cd_disk or at + 22 + comment != len(tail) or tail_at + at != cd_at + cd_size:
        return None
    fh.seek(cd_at)
    cd = fh.read(cd_size)
    if len(cd) != cd_size:
        return None
    found: dict[bytes, int] = {}  # a name twice: the last one, as zipfile reads it
    pos, unpack = 0, struct.unpack_from
    while pos < cd_size:  # zipfile's walk, each record's lengths only
        if pos + 46 > cd_size or cd[pos : pos + 4] != _CENTRAL:
            return None
        need, nlen, elen, clen = unpack("<B21x3H", cd, pos + 6)
        end = pos + 46 + nlen
        if need > 63 or (elen and not _plain_extra(cd[end : end + elen])):
            return None  # zipfile: "zip file version", "Corrupt extra field", zip64
        if not cd[pos + 46 : end].isascii() or cd.find(b"\0", pos + 46, end) >= 0:
            return None  # zipfile decodes the name, and cuts it at a NUL
        if cd.endswith(_SUFFIX, pos + 46, end) and cd.count(b"/", pos + 46, end) == 1:
            found[cd[pos + 46 : end]] = pos
        pos = end + elen + clen
    if pos != cd_size or not found:
        return None  # zipfile says what is wrong
    stem = canonicalize_name(filename.split("-", 1)[0])
    best = min(found, key=lambda n: (canonicalize_name(n.decode().split("-", 1)[0]) != stem, n))
    flags, method, crc, csize, usize, offset = unpack("<4x2H4x3L14xL", cd, found[best] + 4)
    if flags & 0x61 or method not in (0, 8) or 0xFFFFFFFF in (csize, usize, offset):
        return None
    fh.seek(offset)
    local = fh.read(30)
    if len(local) != 30 or local[:4] != _LOCAL:
        return None
    nlen, elen = unpack("<2H", local, 26)
    if fh.read(nlen) != best:
        return None
    fh.seek(offset + 30 + nlen + elen)
    raw = fh.read(csize)
    data = raw if method == 0 else zlib.decompress(raw, -15)
    if len(raw) != csize or len(data) != usize or zlib.crc32(data) != crc:
        return None
    return data


def _plain_extra(extra: bytes) -> bool:
    """Whether zipfile reads a record's extra field without an error or a zip64 size in it
    (``ZipInfo._decodeExtra``'s walk)."""
    i = 0
    while len(extra) - i >= 4:
        kind, length = struct.unpack_from("<2H", extra, i)
        if length + 4 > len(extra) - i or kind == 0x0001:
            return False
        i += 4 + length
    return True


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

    @property
    def size(self) -> int:
        return self._size

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

    def prefetch(self, start: int, end: int) -> None:
        """Bytes ``start..end`` (inclusive, clipped to the file) fetched in one request now,
        for reads that will walk through them in small steps (a member decompressed)."""
        self._ensure(max(0, start), min(self._size, end + 1) - 1)

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
