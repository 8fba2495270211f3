"""One remote wheel opened for reading: its file list and single members, by range requests.

``envbisect why`` asks of a release "is this module there, what does its source say": the
central directory (one or two range requests from the end of the file) and the one member
(one more) answer it, whatever the wheel's size. An index that does not serve ranges gets the
whole wheel, streamed to a temporary file and read there, up to ``WHOLE_LIMIT`` bytes (a
torch wheel is gigabytes: past the limit the read is refused, said in one line). A ``file:``
wheel (a find-links folder) is read in place. zipfile reads the archive; what it rejects is a
``bad-wheel`` error. A member read this way cannot be checked against the wheel's hash (only
the whole file has one); nothing read here is installed or run, only parsed. The ranged view
of the remote file is index/metadata.py's ``range_view``, the one the metadata read uses.
"""

from __future__ import annotations

import contextlib
import tarfile
import tempfile
import zipfile
import zlib
from typing import IO

from envbisect.errors import IndexUnreachable, InfrastructureError
from envbisect.index.metadata import FILE_HEADERS, Get, NoRanges, range_view
from envbisect.index.wheelmeta import RangeFile, file_path
from envbisect.model import DistFile
from envbisect.redact import mask_url

WHOLE_LIMIT = 200 * 1024 * 1024  # bytes of a wheel read whole where ranges are not served
MEMBER_LIMIT = 16 * 1024 * 1024  # bytes of one member (a module's source) read at most


def _bad(f: DistFile, e: BaseException) -> InfrastructureError:
    return InfrastructureError(
        f"{f.filename} is not a readable wheel ({e})",
        hint="the wheel is broken; report it to the package's maintainers",
        ref="bad-wheel",
    )


_ZIP_ERRORS = (
    zipfile.BadZipFile,
    zipfile.LargeZipFile,
    zlib.error,
    EOFError,
    NotImplementedError,
    UnicodeDecodeError,
    RuntimeError,
    ValueError,
    KeyError,
)


class WheelFiles:
    """The members of one wheel: ``names()`` and ``read(member)``. Use as a context manager
    (a whole wheel read into a temporary file is removed on exit)."""

    def __init__(self, f: DistFile, get: Get, *, whole: bool = False) -> None:
        self.file = f
        self._get = get
        self._stack = contextlib.ExitStack()
        self._zip: zipfile.ZipFile | None = None
        self._whole_wanted = whole  # every member will be read: one download, not many ranges
        self.requests_ranged = not whole
        self._range_file: RangeFile | None = None

    def __enter__(self) -> WheelFiles:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._stack.close()

    def _open(self) -> zipfile.ZipFile:
        if self._zip is not None:
            return self._zip
        fh = self._handle()
        try:
            self._zip = self._stack.enter_context(zipfile.ZipFile(fh))
        except (*_ZIP_ERRORS, NoRanges, OSError) as e:
            raise _bad(self.file, e) from e
        return self._zip

    def _handle(self) -> IO[bytes]:
        f = self.file
        if f.url.startswith("file:"):
            try:
                return self._stack.enter_context(file_path(f.url).open("rb"))
            except OSError as e:
                raise InfrastructureError(
                    f"cannot read {file_path(f.url)}: {e.strerror or e}",
                    hint="the find-links folder changed while envbisect ran?",
                    ref="bad-wheel",
                ) from e
        ranged = None if self._whole_wanted else self._ranged()
        if ranged is not None:
            return ranged
        self.requests_ranged = False
        return self._whole()

    def _ranged(self) -> IO[bytes] | None:
        rf = range_view(self.file, self._get)
        if rf is None:
            return None
        self._range_file = rf
        try:
            rf.seek(max(0, rf.size - 22))
            rf.read(22)  # the end record: the first request tells whether ranges work
        except NoRanges:
            return None
        return rf  # type: ignore[return-value]

    def _whole(self) -> IO[bytes]:
        f = self.file
        if f.size is not None and f.size > WHOLE_LIMIT:
            raise InfrastructureError(
                f"{mask_url(f.url)} is {f.size // (1024 * 1024)} MiB and its index does not "
                "serve range requests",
                hint="use an index that serves ranges (PyPI does), or a find-links folder "
                "that holds the wheel",
                ref="no-ranges",
            )
        tmp = self._stack.enter_context(tempfile.TemporaryFile())  # noqa: SIM115
        resp = self._get(f.url, headers=FILE_HEADERS, sink=tmp)
        if resp.status_code != 200:
            raise IndexUnreachable(
                f"{mask_url(f.url)} answered HTTP {resp.status_code}",
                hint="check the index URL and any credentials it needs",
            )
        tmp.seek(0)
        return tmp

    def names(self) -> list[str]:
        """Every member's name, in the archive's order."""
        return self._open().namelist()

    def crc(self, member: str) -> tuple[int, int] | None:
        """The member's CRC-32 and size as the central directory gives them (what identifies
        its content without reading it), or None where there is no such member."""
        try:
            info = self._open().getinfo(member)
        except KeyError:
            return None
        return info.CRC, info.file_size

    def read(self, member: str, limit: int = MEMBER_LIMIT) -> bytes | None:
        """The member's bytes, or None where the wheel has no such member (or it is larger
        than ``limit`` bytes)."""
        zf = self._open()
        try:
            info = zf.getinfo(member)
        except KeyError:
            return None
        if info.file_size > limit:
            return None
        try:
            return zf.read(info)
        except (*_ZIP_ERRORS, NoRanges, OSError) as e:
            raise _bad(self.file, e) from e

    def head(self, member: str, n: int) -> bytes | None:
        """The first ``n`` bytes of the member, uncompressed (what lies at the start of a
        shared object too large to read whole), or None where there is no such member. Over
        ranges its first compressed bytes come in one request, not one per 64 KiB."""
        zf = self._open()
        try:
            info = zf.getinfo(member)
        except KeyError:
            return None
        if self._range_file is not None:  # the local header, its name and extra, the data
            start = info.header_offset
            self._range_file.prefetch(start, start + 30 + 2 * 65535 + min(info.compress_size, n))
        try:
            with zf.open(info) as stream:
                return stream.read(n)
        except (*_ZIP_ERRORS, NoRanges, OSError) as e:
            raise _bad(self.file, e) from e

    def size(self, member: str) -> int | None:
        """The member's uncompressed size, None where there is no such member."""
        try:
            return self._open().getinfo(member).file_size
        except KeyError:
            return None


SDIST_LIMIT = 40 * 1024 * 1024  # bytes of an sdist read whole (a release with no wheel)


class SdistFiles:
    """An sdist read as a wheel would lay its modules out: the archive downloaded whole (a
    tar cannot be read by ranges), its ``name-version/`` folder and a ``src/`` layout's
    folder taken off every path. Only members are read; nothing is built or extracted. For
    releases of pure-Python projects that published no wheel."""

    def __init__(self, f: DistFile, get: Get) -> None:
        self.file = f
        self._get = get
        self._stack = contextlib.ExitStack()
        self._members: dict[str, object] | None = None
        self._tar: tarfile.TarFile | None = None
        self._zip: zipfile.ZipFile | None = None

    def __enter__(self) -> SdistFiles:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._stack.close()

    def _open(self) -> dict[str, object]:
        if self._members is not None:
            return self._members
        f = self.file
        if f.size is not None and f.size > SDIST_LIMIT:
            raise InfrastructureError(
                f"{f.filename} is {f.size // (1024 * 1024)} MiB: too large to read whole",
                hint="this release has no wheel; read the releases around it instead",
                ref="bad-wheel",
            )
        if f.url.startswith("file:"):
            fh: IO[bytes] = self._stack.enter_context(file_path(f.url).open("rb"))
        else:
            fh = self._stack.enter_context(tempfile.TemporaryFile())  # noqa: SIM115
            resp = self._get(f.url, headers=FILE_HEADERS, sink=fh)
            if resp.status_code != 200:
                raise IndexUnreachable(
                    f"{mask_url(f.url)} answered HTTP {resp.status_code}",
                    hint="check the index URL and any credentials it needs",
                )
            fh.seek(0)
        raw: dict[str, object] = {}
        try:
            if f.filename.endswith(".zip"):
                self._zip = self._stack.enter_context(zipfile.ZipFile(fh))
                raw = {i.filename: i for i in self._zip.infolist() if not i.is_dir()}
            else:
                self._tar = self._stack.enter_context(tarfile.open(fileobj=fh, mode="r:*"))  # noqa: SIM115
                raw = {m.name: m for m in self._tar.getmembers() if m.isfile()}
        except (*_ZIP_ERRORS, tarfile.TarError, OSError) as e:
            raise _bad(self.file, e) from e
        self._members = {}
        for name, info in raw.items():
            path = name.split("/", 1)[1] if "/" in name else name
            path = path.removeprefix("src/")
            self._members.setdefault(path, info)
        return self._members

    def names(self) -> list[str]:
        return list(self._open())

    def read(self, member: str) -> bytes | None:
        info = self._open().get(member)
        if info is None:
            return None
        try:
            if isinstance(info, zipfile.ZipInfo) and self._zip is not None:
                return self._zip.read(info) if info.file_size <= MEMBER_LIMIT else None
            if isinstance(info, tarfile.TarInfo) and self._tar is not None:
                if info.size > MEMBER_LIMIT:
                    return None
                fh = self._tar.extractfile(info)
                return fh.read() if fh is not None else None
        except (*_ZIP_ERRORS, tarfile.TarError, OSError) as e:
            raise _bad(self.file, e) from e
        return None
