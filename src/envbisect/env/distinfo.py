"""The distributions of one site-packages folder, read as importlib.metadata reads them, for
the environment report read in envbisect's own process (``envreport.read_venv``).

importlib.metadata and the email parser under it cost each probe about 10 ms of imports; a
uv virtualenv holds only ``*.dist-info`` folders, whose METADATA headers this module reads by
the email parser's own rules (compat32: the headers end at a line that is neither ``Name:``
nor a continuation, values keep their continuation lines). A folder with an ``.egg-info`` or
two folders of one name raises ``NotPlain`` (the report is then asked of the interpreter, as
before); a RECORD that needs the csv module, or requirements in ``requires.txt``, are read by
importlib.metadata itself, imported for that distribution alone. tests/env/test_distinfo.py
compares both readers on folders of distributions and on fuzzed METADATA. ``read_installed``
is what a build installed (names and versions, by the same header rules), for the store.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

from envbisect.core.names import is_project_name, is_version
from envbisect.model import InstalledDist

_LINES = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+$")  # io.StringIO(newline="")'s lines
_HEADER = re.compile(r"From |[\041-\071\073-\176]*:|[\t ]")  # email.feedparser.headerRE
_NORMALIZE = re.compile(r"[-_.]+")


class NotPlain(Exception):
    """Something this reader does not read the way importlib.metadata would."""


class Headers:
    """The headers of a METADATA file, as ``email.message_from_string`` keeps them."""

    def __init__(self, text: str) -> None:
        self._items: list[tuple[str, str]] = []
        lines: list[str] = []  # the feedparser's header lines: up to one that is not
        for line in _LINES.findall(text):  # (the blank line, or the body without one)
            if not _HEADER.match(line):
                break
            lines.append(line)
        raw: list[str] = []
        for line in lines:  # email.feedparser's _parse_headers
            if line[0] in " \t":
                if raw:  # a continuation (before any header: a defect, dropped)
                    raw.append(line)
                continue
            self._end(raw)
            # An envelope line ("From ...", first, last or misplaced) is no header; a line
            # with no name (": x") the parser drops, and no one asks for the name "" here.
            raw = [] if line.startswith("From ") else [line]
        self._end(raw)

    def _end(self, raw: list[str]) -> None:
        if raw:  # compat32's header_source_parse
            name, value = raw[0].split(":", 1)
            value = value.lstrip(" \t") + "".join(raw[1:])
            self._items.append((name, value.rstrip("\r\n")))

    def __getitem__(self, name: str) -> str | None:
        key = name.lower()
        return next((v for k, v in self._items if k.lower() == key), None)

    def get_all(self, name: str) -> list[str] | None:
        key = name.lower()
        return [v for k, v in self._items if k.lower() == key] or None


class DistInfo:
    """One ``*.dist-info`` folder: what the report's ``walk`` asks of a distribution."""

    def __init__(self, path: Path) -> None:
        self._path = path
        self._metadata: Headers | None = None

    def read_text(self, filename: str) -> str | None:
        try:
            return (self._path / filename).read_text(encoding="utf-8")
        except (FileNotFoundError, IsADirectoryError, NotADirectoryError, PermissionError):
            return None

    @property
    def metadata(self) -> Headers:
        if self._metadata is None:
            text = self.read_text("METADATA") or self.read_text("PKG-INFO") or ""
            self._metadata = Headers(text)
        return self._metadata

    @property
    def requires(self) -> list[str] | None:
        found = self.metadata.get_all("Requires-Dist")
        if found is None and self.read_text("requires.txt") is not None:
            return self._importlib().requires  # type: ignore[no-any-return]
        return found

    @property
    def files(self) -> Any:
        """The report asks only where RECORD is missing or quotes a path (csv): rare, and
        importlib.metadata's answer (its version's rules) is kept there."""
        return self._importlib().files

    def _importlib(self) -> Any:
        from importlib.metadata import PathDistribution

        return PathDistribution(self._path)

    def locate_file(self, path: str) -> Path:
        return self._path.parent / path


def distributions(site: Path) -> list[DistInfo]:
    """The distributions of ``site`` in importlib.metadata's order (the folder's listing);
    ``NotPlain`` where it holds what only importlib.metadata reads."""
    found: list[DistInfo] = []
    names: set[str] = set()
    for child in os.listdir(site):
        low = child.lower()
        if low.endswith(".egg-info"):
            raise NotPlain(child)
        if low.endswith(".dist-info"):
            name = _NORMALIZE.sub("-", low.rpartition(".")[0].partition("-")[0])
            if name in names:
                raise NotPlain(child)  # importlib.metadata groups these by name
            names.add(name)
            found.append(DistInfo(site / child))
    return found


def read_installed(venv: Path) -> tuple[InstalledDist, ...]:
    """What a venv holds, from its ``*.dist-info/METADATA`` files.

    Only entries with a PEP 503 name and a PEP 440 version: a wheel can install any file
    (a fake ``.dist-info`` through ``.data/purelib``), and what is read here goes into the
    store, reports and lockfiles, where a newline would become another line."""
    found: dict[str, InstalledDist] = {}
    for site in site_packages(venv):
        for info in sorted(site.glob("*.dist-info")):
            meta = info / "METADATA"
            if not meta.is_file():
                continue
            headers = Headers(meta.read_text(encoding="utf-8", errors="replace"))
            name, version = headers["Name"], headers["Version"]
            if name and version and is_project_name(name) and is_version(version):
                found[name.lower()] = InstalledDist(name=str(name), version=str(version))
    return tuple(sorted(found.values(), key=lambda d: d.name.lower()))


def site_packages(venv: Path) -> list[Path]:
    """A venv's site-packages folders."""
    if os.name == "nt":
        return [venv / "Lib" / "site-packages"]
    return sorted(venv.glob("lib/python*/site-packages")) + sorted(
        venv.glob("lib64/python*/site-packages")
    )
