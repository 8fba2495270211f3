"""Package files on this machine: ``file://`` Simple indexes and ``--find-links`` folders.

Who does what: ``IndexClient`` (client.py) asks these for a project's files as it asks an HTTP
index for its page; nothing here makes a request or keeps a cache. ``local_sha256`` hashes a
local file (find-links files carry no hash), for the lockfiles.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from packaging.utils import canonicalize_name

from envbisect.core.candidates import file_version
from envbisect.index.simple import parse_simple_html
from envbisect.index.wheelmeta import file_path, stream_sha256
from envbisect.model import DistFile


def file_index_project(url: str) -> list[DistFile] | None:
    """A ``file://`` Simple index's files of a project (a folder of project folders with
    index.html; ``url`` is the project's folder), or None when it has no such project."""
    folder = file_path(url)
    page = folder / "index.html"
    if not page.is_file():
        return None
    return parse_simple_html(page.read_text(encoding="utf-8"), page.as_uri(), index=url)


def find_links_files(link: str, key: str) -> Iterator[DistFile]:
    """Files of project ``key`` in a find-links folder (a plain directory of dists)."""
    folder = file_path(link) if link.startswith("file:") else Path(link)
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
    path = file_path(url)
    with path.open("rb") as fh:
        return stream_sha256(fh)
