"""The Simple API's two forms, parsed: PEP 691 JSON and PEP 503 HTML pages in, ``DistFile``
rows out (upload times from PEP 700, metadata hashes from PEP 658/714, yanked from PEP 592).
Pure: text in, data out; the client fetches and caches the pages.

A JSON page's rows are kept as they came (``ProjectFiles``): grouped by version with one split
per filename, turned into ``DistFile`` rows only for the versions something asks about. A plan
reads a handful of versions of each project; PyPI's pages list thousands of files."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime
from html.parser import HTMLParser
from typing import Any, NamedTuple
from urllib.parse import unquote, urldefrag, urljoin, urlsplit

from packaging.version import Version

from envbisect.core.candidates import file_version
from envbisect.errors import InfrastructureError
from envbisect.model import DistFile
from envbisect.redact import strip_credentials


def _parse_time(value: object) -> datetime | None:
    if not isinstance(value, str) or not value:
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None


def _metadata_hashes(value: object) -> tuple[tuple[str, str], ...] | None:
    """PEP 658/714 metadata flag, from JSON (bool or hash dict) or HTML ("true", "algo=hex")."""
    if value is None or value is False or value == "false":
        return None
    if isinstance(value, dict):
        return tuple(sorted((str(k), str(v)) for k, v in value.items()))
    if isinstance(value, str) and "=" in value:
        algo, digest = value.split("=", 1)
        return ((algo.strip(), digest.strip()),)
    return ()


def parse_simple_json(data: dict[str, Any], page_url: str, *, index: str = "") -> list[DistFile]:
    """Files of a PEP 691 project page (with PEP 700 upload times, PEP 658/714 metadata).

    Raises ValueError, KeyError, TypeError or AttributeError for a body that is no such page.
    """
    return [_dist_file(row, page_url, index) for row in simple_json_rows(data)]


def simple_json_rows(data: dict[str, Any]) -> list[dict[str, Any]]:
    """The file rows of a PEP 691 page, checked only as far as grouping them needs (a row
    with a filename and a URL); ``parse_simple_json`` reads the rest of each one.

    Raises ValueError, KeyError, TypeError or AttributeError for a body that is no such page.
    """
    api = str((data.get("meta") or {}).get("api-version", "1.0"))
    if api.split(".")[0] != "1":
        raise ValueError(f"Simple API version {api} is not supported")
    rows = data["files"]
    for row in rows:
        if not isinstance(row.get("filename"), str) or not isinstance(row.get("url"), str):
            raise TypeError("a file row without a filename or URL")
    return list(rows)


def _dist_file(row: dict[str, Any], page_url: str, index: str) -> DistFile:
    yanked = row.get("yanked", False)
    # PEP 714 renamed the key; older indexes still send only the PEP 658 one.
    meta = row.get("core-metadata", row.get("dist-info-metadata"))
    return DistFile(
        filename=row["filename"],
        url=_file_url(page_url, row["url"]),
        hashes=tuple(sorted((str(k), str(v)) for k, v in row.get("hashes", {}).items())),
        requires_python=row.get("requires-python") or None,
        upload_time=_parse_time(row.get("upload-time")),
        yanked=bool(yanked),
        yanked_reason=yanked if isinstance(yanked, str) and yanked else None,
        size=row.get("size"),
        index=index,
        core_metadata=_metadata_hashes(meta),
    )


class FileFacts(NamedTuple):
    """What deciding whether a version installs needs of one file (no URL, no hashes)."""

    filename: str
    requires_python: str | None
    yanked: bool
    upload_time: datetime | None

    @property
    def is_wheel(self) -> bool:
        return self.filename.endswith(".whl")


class ProjectFiles:
    """The files of one project from one source: the rows of a JSON page (kept raw) followed
    by ready ``DistFile`` rows (an HTML page, find-links folders, the PyTorch index).

    ``files`` parses every row (once); ``versions``, ``facts`` and ``files_of`` read only the
    rows of the versions asked about. A page read from the disk cache is not even decoded
    until one of them is asked for (``load``): a warm plan answers from what was derived from
    the page before, named by ``token`` (the page's URL and body digest; None when the files
    are not one cached page, such as a folder's). Safe to share between threads.
    """

    __slots__ = (
        "_by_version",
        "_extra",
        "_facts",
        "_files",
        "_load",
        "_lock",
        "_made",
        "_materialised",
        "_ready_v",
        "_rows_v",
        "_url",
        "index",
        "name",
        "source",
        "token",
    )

    def __init__(
        self,
        *,
        name: str,
        files: Iterable[DistFile] = (),
        source: str,
        rows: Sequence[Mapping[str, Any]] = (),
        page_url: str = "",
        index: str = "",
        load: Callable[[], tuple[Sequence[Mapping[str, Any]], Sequence[DistFile]]] | None = None,
        token: str | None = None,
    ) -> None:
        self.name, self.source, self.index, self.token = name, source, index, token
        self._url = page_url
        self._rows_v: tuple[Mapping[str, Any], ...] = tuple(rows)
        self._ready_v: tuple[DistFile, ...] = ()
        self._extra: tuple[DistFile, ...] = tuple(files)
        self._load = load
        self._materialised = load is None
        if load is None:
            self._ready_v = self._extra
        self._files: tuple[DistFile, ...] | None = None
        self._by_version: dict[Version, list[int]] | None = None
        self._made: dict[int, DistFile] = {}
        self._facts: dict[Version, tuple[FileFacts, ...]] = {}
        self._lock = threading.RLock()

    def _materialise(self) -> None:
        if self._materialised:
            return
        with self._lock:
            if self._materialised:
                return
            assert self._load is not None
            rows, page_files = self._load()
            self._rows_v = tuple(rows)
            self._ready_v = (*page_files, *self._extra)
            self._materialised = True

    @property
    def _rows(self) -> tuple[Mapping[str, Any], ...]:
        self._materialise()
        return self._rows_v

    @property
    def _ready(self) -> tuple[DistFile, ...]:
        self._materialise()
        return self._ready_v

    @property
    def files(self) -> tuple[DistFile, ...]:
        """Every file, in the order the page and the folders list them."""
        if self._files is None:
            self._files = tuple(self._file(i) for i in range(len(self._rows) + len(self._ready)))
        return self._files

    def versions(self) -> Mapping[Version, list[int]]:
        """The versions the filenames carry (files that carry none are left out), each with
        the positions of its files in ``files``."""
        found = self._by_version
        if found is None:
            with self._lock:
                found = self._by_version
                if found is None:
                    groups: dict[Version, list[int]] = {}
                    for i, name in enumerate(self._filenames()):
                        v = file_version(name)
                        if v is not None:
                            groups.setdefault(v, []).append(i)
                    self._by_version = found = groups
        return found

    def files_of(self, version: Version) -> list[DistFile]:
        """The files of exactly ``version``, in page order."""
        return [self._file(i) for i in self.versions().get(version, ())]

    def facts(self, version: Version) -> tuple[FileFacts, ...]:
        """``FileFacts`` of each file of ``version``, read straight off the rows."""
        found = self._facts.get(version)
        if found is None:
            found = tuple(self._fact(i) for i in self.versions().get(version, ()))
            self._facts[version] = found
        return found

    def _filenames(self) -> Iterable[str]:
        yield from (row["filename"] for row in self._rows)
        yield from (f.filename for f in self._ready)

    def _fact(self, i: int) -> FileFacts:
        rows = self._rows
        if i >= len(rows):
            f = self._ready[i - len(rows)]
            return FileFacts(f.filename, f.requires_python, f.yanked, f.upload_time)
        row = rows[i]
        return FileFacts(
            row["filename"],
            row.get("requires-python") or None,
            bool(row.get("yanked", False)),
            _parse_time(row.get("upload-time")),
        )

    def _file(self, i: int) -> DistFile:
        rows = self._rows
        if i >= len(rows):
            return self._ready[i - len(rows)]
        found = self._made.get(i)
        if found is None:  # two threads may both build it: the same value, no harm
            try:
                found = _dist_file(dict(rows[i]), self._url, self.index)
            except (ValueError, KeyError, TypeError, AttributeError) as e:
                raise InfrastructureError(
                    f"{self.source} lists a file of {self.name} that cannot be read ({e})",
                    hint="is this URL a package index (PEP 503/691)? "
                    "PyPI's is https://pypi.org/simple",
                    ref="index-garbage",
                ) from e
            self._made[i] = found
        return found

    def plus(self, files: Iterable[DistFile], *, source: str) -> ProjectFiles:
        """These files and then ``files`` (the same rows, parsed no more than before); the
        result is no longer one cached page, so it has no ``token``."""
        self._materialise()
        out = ProjectFiles(
            name=self.name,
            files=(*self._ready, *files),
            source=source,
            rows=self._rows,
            page_url=self._url,
            index=self.index,
        )
        out._made = self._made
        return out

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ProjectFiles):
            return NotImplemented
        return (self.name, self.source, self.files) == (other.name, other.source, other.files)

    def __hash__(self) -> int:
        return hash((self.name, self.source, self.files))

    def __repr__(self) -> str:
        if not self._materialised:
            return f"ProjectFiles(name={self.name!r}, source={self.source!r}, not read yet)"
        n = len(self._rows_v) + len(self._ready_v)
        return f"ProjectFiles(name={self.name!r}, source={self.source!r}, {n} files)"


def _file_url(page_url: str, href: str) -> str:
    # PyPI's file URLs are absolute and carry no user info: most rows need no parsing at all.
    if href.startswith(("https://", "http://")) and "@" not in href:
        return href
    return strip_credentials(urljoin(page_url, href))


class _AnchorParser(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.anchors: list[dict[str, str | None]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "a":
            self.anchors.append(dict(attrs))


def parse_simple_html(text: str, page_url: str, *, index: str = "") -> list[DistFile]:
    """Files of a PEP 503 project page. HTML carries no upload times."""
    if "<" not in text:
        raise ValueError("no HTML in the answer")
    parser = _AnchorParser()
    parser.feed(text)
    out: list[DistFile] = []
    for a in parser.anchors:
        href = a.get("href")
        if not href:
            continue
        url, frag = urldefrag(urljoin(page_url, href))
        url = strip_credentials(url)
        filename = unquote(urlsplit(url).path.rsplit("/", 1)[-1])
        hashes: tuple[tuple[str, str], ...] = ()
        if "=" in frag:
            algo, value = frag.split("=", 1)
            hashes = ((algo, value),)
        yanked = "data-yanked" in a
        core: tuple[tuple[str, str], ...] | None = None
        for attr in ("data-core-metadata", "data-dist-info-metadata"):  # PEP 714, then 658
            if attr in a:
                # An attribute without a value still says the file exists.
                core = _metadata_hashes(a[attr] if a[attr] is not None else "true")
                break
        out.append(
            DistFile(
                filename=filename,
                url=url,
                hashes=hashes,
                requires_python=a.get("data-requires-python") or None,
                yanked=yanked,
                yanked_reason=a.get("data-yanked") or None,
                index=index,
                core_metadata=core,
            )
        )
    return out
