"""Reading package indexes: the Simple API (PEP 691 JSON, PEP 503 HTML) and find-links folders.

Index precedence follows uv's default ``first-index`` strategy, so that the versions envbisect
plans over are the ones uv will install: the extra indexes in the order given, then the main
index; the first index that knows the project supplies all of its files. Files found in
``--find-links`` folders are added to those (uv merges flat indexes the same way).

Network errors are retried with exponential backoff, then raised as ``IndexUnreachable`` naming
the URL with any credentials masked. Tests swap the httpx *transport*, never the client.
"""

from __future__ import annotations

import hashlib
import re
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from html.parser import HTMLParser
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urldefrag, urljoin, urlsplit, urlunsplit
from urllib.request import url2pathname

import httpx
from packaging.utils import canonicalize_name

from . import __version__
from .candidates import file_version
from .errors import IndexUnreachable, InfrastructureError, UnknownPackage
from .model import DistFile, IndexConfig

ACCEPT = (
    "application/vnd.pypi.simple.v1+json, "
    "application/vnd.pypi.simple.v1+html;q=0.2, "
    "text/html;q=0.01"
)
_RETRY_STATUS = {429, 500, 502, 503, 504}


def mask_url(url: str) -> str:
    """The URL with any user name and password replaced by ``***``."""
    parts = urlsplit(url)
    if "@" not in parts.netloc:
        return url
    host = parts.netloc.rsplit("@", 1)[1]
    return urlunsplit(parts._replace(netloc=f"***@{host}"))


def strip_credentials(url: str) -> str:
    """The URL without its user info: file URLs we keep must never carry a password."""
    parts = urlsplit(url)
    if "@" not in parts.netloc:
        return url
    return urlunsplit(parts._replace(netloc=parts.netloc.rsplit("@", 1)[1]))


def mask_text(text: str) -> str:
    """Mask credentials in every URL inside free text (uv's messages, our own)."""
    return re.sub(r"(\w+://)[^/\s@]+@", r"\1***@", text)


@dataclass(frozen=True, slots=True, kw_only=True)
class ProjectFiles:
    name: str
    files: tuple[DistFile, ...]
    source: str  # the (masked) index URL or folder the files came from


class IndexClient:
    """Reads project file lists from the configured indexes. One instance per run."""

    def __init__(
        self,
        config: IndexConfig,
        *,
        transport: httpx.BaseTransport | None = None,
        retries: int = 3,
        backoff: float = 0.5,
        timeout: float = 30.0,
    ) -> None:
        self.config = config
        self.retries = max(1, retries)
        self.backoff = backoff
        self._client = httpx.Client(
            transport=transport,
            timeout=timeout,
            follow_redirects=True,
            headers={"User-Agent": f"envbisect/{__version__}", "Accept": ACCEPT},
        )
        self._memo: dict[str, ProjectFiles] = {}

    def close(self) -> None:
        self._client.close()

    def __enter__(self) -> IndexClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def index_urls(self) -> list[str]:
        """Indexes in the order uv consults them (extra indexes take priority)."""
        return [*self.config.extra_index_urls, self.config.index_url]

    def project_files(self, name: str) -> ProjectFiles:
        """All files of ``name``: the first index that has it, plus find-links folders.

        Raises ``UnknownPackage`` when no index and no folder has the project.
        """
        key = canonicalize_name(name)
        if key in self._memo:
            return self._memo[key]
        files: list[DistFile] = []
        source = ""
        for base in self.index_urls():
            found = self._fetch_project(base, key)
            if found is not None:
                files.extend(found)
                source = mask_url(base)
                break
        for link in self.config.find_links:
            local = list(_find_links_files(link, key))
            files.extend(local)
            if local and not source:
                source = link
        if not files and not source:
            where = ", ".join(mask_url(u) for u in self.index_urls())
            if self.config.find_links:
                where += ", " + ", ".join(self.config.find_links)
            raise UnknownPackage(
                f"no package named {name!r} on {where}",
                hint="check the spelling, or point --index-url / --find-links "
                "at the index that has it",
            )
        result = ProjectFiles(name=key, files=tuple(files), source=source)
        self._memo[key] = result
        return result

    def _fetch_project(self, base: str, key: str) -> list[DistFile] | None:
        url = f"{base.rstrip('/')}/{key}/"
        if url.startswith("file:"):
            return _file_index_project(url)
        resp = self._get(url)
        if resp.status_code == 404:
            return None
        if resp.status_code >= 400:
            raise IndexUnreachable(
                f"{mask_url(url)} answered HTTP {resp.status_code}",
                hint="check the index URL and any credentials it needs",
            )
        ctype = resp.headers.get("content-type", "").split(";")[0].strip().lower()
        final_url = str(resp.url)
        try:
            if ctype == "application/vnd.pypi.simple.v1+json":
                return parse_simple_json(resp.json(), final_url, index=mask_url(base))
            if ctype in ("text/html", "application/vnd.pypi.simple.v1+html", ""):
                return parse_simple_html(resp.text, final_url, index=mask_url(base))
        except (ValueError, KeyError, TypeError) as e:
            raise InfrastructureError(
                f"{mask_url(url)} did not answer a readable Simple API page ({e})",
                hint="is this URL a package index (PEP 503/691)? PyPI's is https://pypi.org/simple",
                ref="index-garbage",
            ) from e
        raise InfrastructureError(
            f"{mask_url(url)} answered {ctype or 'no content type'}, not a Simple API page",
            hint="is this URL a package index (PEP 503/691)? PyPI's is https://pypi.org/simple",
            ref="index-garbage",
        )

    def _get(self, url: str) -> httpx.Response:
        last: Exception | None = None
        for attempt in range(self.retries):
            if attempt:
                time.sleep(self.backoff * (2 ** (attempt - 1)))
            try:
                resp = self._client.get(url)
            except httpx.TransportError as e:
                last = e
                continue
            if resp.status_code in _RETRY_STATUS:
                last = None
                continue
            return resp
        reason = f"{type(last).__name__}" if last is not None else "server errors"
        raise IndexUnreachable(
            f"cannot reach {mask_url(url)} ({reason}, {self.retries} attempts)",
            hint="check the network and the index URL (--index-url); "
            "a rerun reuses every probe already finished",
        ) from last


def _parse_time(value: object) -> datetime | None:
    if not isinstance(value, str) or not value:
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None


def parse_simple_json(data: dict[str, Any], page_url: str, *, index: str = "") -> list[DistFile]:
    """Files of a PEP 691 project page (with PEP 700 upload times)."""
    out: list[DistFile] = []
    for row in data["files"]:
        yanked = row.get("yanked", False)
        out.append(
            DistFile(
                filename=row["filename"],
                url=strip_credentials(urljoin(page_url, row["url"])),
                hashes=tuple(sorted((str(k), str(v)) for k, v in row.get("hashes", {}).items())),
                requires_python=row.get("requires-python") or None,
                upload_time=_parse_time(row.get("upload-time")),
                yanked=bool(yanked),
                yanked_reason=yanked if isinstance(yanked, str) and yanked else None,
                size=row.get("size"),
                index=index,
            )
        )
    return out


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
        out.append(
            DistFile(
                filename=filename,
                url=url,
                hashes=hashes,
                requires_python=a.get("data-requires-python") or None,
                yanked=yanked,
                yanked_reason=a.get("data-yanked") or None,
                index=index,
            )
        )
    return out


def _file_index_project(url: str) -> list[DistFile] | None:
    """A ``file://`` Simple index (a folder of project folders with index.html)."""
    folder = Path(url2pathname(urlsplit(url).path))
    page = folder / "index.html"
    if not page.is_file():
        return None
    return parse_simple_html(page.read_text(encoding="utf-8"), page.as_uri(), index=url)


def _find_links_files(link: str, key: str) -> Iterator[DistFile]:
    """Files of project ``key`` in a find-links folder (a plain directory of dists)."""
    folder = Path(url2pathname(urlsplit(link).path)) if link.startswith("file:") else Path(link)
    if not folder.is_dir():
        return
    for path in sorted(folder.iterdir()):
        version = file_version(path.name)
        if version is None:
            continue
        stem = path.name.split("-", 1)[0]
        if canonicalize_name(stem) != key:
            continue
        yield DistFile(filename=path.name, url=path.resolve().as_uri(), index=str(folder))


def local_sha256(url: str) -> str | None:
    """sha256 of a ``file://`` URL's file (find-links files carry no hash), else None."""
    if not url.startswith("file:"):
        return None
    path = Path(url2pathname(urlsplit(url).path))
    h = hashlib.sha256()
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()
