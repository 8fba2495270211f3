"""Atom 1.0 feeds (RFC 4287) of what changed in published matrices.

Pure: a matrix's meta and history in (``core.history``), the text of ``feed.xml`` out; the
index's feed gathers every matrix's entries, newest first. Built with ``xml.etree``, so every
value is escaped; characters XML 1.0 cannot carry (control characters from a repro's output)
are dropped first. Ids are ``urn:uuid:`` names made from the matrix and the date, the same on
every machine and every republish; the feed's ``updated`` is its newest entry's date (a
republish that changes nothing leaves the file as it was). Links are relative to the feed's
own folder unless ``base`` (the published site's URL) is given.
"""

from __future__ import annotations

import re
import uuid
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from dataclasses import dataclass
from urllib.parse import quote

from envbisect.core.living.history import Change
from envbisect.core.living.meta import MatrixMeta

NS = "http://www.w3.org/2005/Atom"
LIMIT = 50  # entries in the index's feed
_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")
_EPOCH = "1970-01-01T00:00:00+00:00"


@dataclass(frozen=True, slots=True, kw_only=True)
class Entry:
    id: str
    title: str
    updated: str
    link: str
    content: str


def _clean(text: object) -> str:
    return _NOT_XML.sub("", str(text))


def entry_id(matrix: str, date: str) -> str:
    return f"urn:uuid:{uuid.uuid5(uuid.NAMESPACE_URL, f'envbisect:{matrix}:{date}')}"


def entries(folder: str, meta: MatrixMeta, history: Sequence[Change]) -> list[Entry]:
    """One entry per change, newest first; links to the matrix's page (``folder``: its path
    from the feed, "" for its own)."""
    name = meta.name
    page = f"{quote(folder, safe='')}/table.html" if folder else "table.html"
    out = []
    for ch in reversed(history):
        text = "\n".join(ch.lines) or ch.headline()
        if ch.command:
            text += f"\n\n{ch.command}"
        out.append(
            Entry(
                id=entry_id(name, ch.date),
                title=f"{name}: {ch.headline()}",
                updated=ch.date,
                link=page,
                content=text,
            )
        )
    return out


def matrix_feed(meta: MatrixMeta, history: Sequence[Change], *, base: str = "") -> str:
    """``results/<matrix>/feed.xml``."""
    name = meta.name
    return atom(
        feed_id=entry_id(name, "feed"),
        title=f"{name}: compatibility table",
        subtitle=meta.description,
        page="table.html",
        self_href="feed.xml",
        updated=meta.measured or _EPOCH,
        items=entries("", meta, history),
        base=base,
    )


def index_feed(
    matrices: Sequence[tuple[str, MatrixMeta, Sequence[Change]]], *, base: str = ""
) -> str:
    """``results/feed.xml``: every matrix's changes, newest first."""
    items = [e for folder, meta, hist in matrices for e in entries(folder, meta, hist)]
    items.sort(key=lambda e: e.updated, reverse=True)
    dates = [m.measured for _, m, _ in matrices if m.measured]
    return atom(
        feed_id=entry_id("", "index"),
        title="Published compatibility matrices",
        subtitle="What changed in each table measured by envbisect matrix",
        page="index.html",
        self_href="feed.xml",
        updated=max(dates, default=_EPOCH),
        items=items[:LIMIT],
        base=base,
    )


def atom(
    *,
    feed_id: str,
    title: str,
    subtitle: str,
    page: str,
    self_href: str,
    updated: str,
    items: Sequence[Entry],
    base: str = "",
) -> str:
    """A feed document; ``updated``: used when there is no entry (else the newest's)."""
    prefix = base.rstrip("/") + "/" if base else ""
    root = ET.Element("feed", {"xmlns": NS})
    _text(root, "id", feed_id)
    _text(root, "title", title)
    if subtitle:
        _text(root, "subtitle", subtitle)
    _text(root, "updated", max((e.updated for e in items), default=updated))
    ET.SubElement(root, "link", {"rel": "alternate", "type": "text/html", "href": prefix + page})
    ET.SubElement(
        root, "link", {"rel": "self", "type": "application/atom+xml", "href": prefix + self_href}
    )
    author = ET.SubElement(root, "author")
    _text(author, "name", "envbisect")
    _text(root, "generator", "envbisect")
    for e in items:
        entry = ET.SubElement(root, "entry")
        _text(entry, "id", e.id)
        _text(entry, "title", e.title)
        _text(entry, "updated", e.updated)
        ET.SubElement(
            entry, "link", {"rel": "alternate", "type": "text/html", "href": prefix + e.link}
        )
        content = _text(entry, "content", e.content)
        content.set("type", "text")
    ET.indent(root)
    return '<?xml version="1.0" encoding="utf-8"?>\n' + ET.tostring(root, "unicode") + "\n"


def _text(parent: ET.Element, tag: str, text: str) -> ET.Element:
    el = ET.SubElement(parent, tag)
    el.text = _clean(text)
    return el
