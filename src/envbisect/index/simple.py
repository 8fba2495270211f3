"""The Simple API's two forms, parsed: PEP 691 JSON and PEP 503 HTML pages in, ``DistFile``
rows out (upload times from PEP 700, metadata hashes from PEP 658/714, yanked from PEP 592).
Pure: text in, data out; the client fetches and caches the pages."""

from __future__ import annotations

from datetime import datetime
from html.parser import HTMLParser
from typing import Any
from urllib.parse import unquote, urldefrag, urljoin, urlsplit

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
    api = str((data.get("meta") or {}).get("api-version", "1.0"))
    if api.split(".")[0] != "1":
        raise ValueError(f"Simple API version {api} is not supported")
    out: list[DistFile] = []
    for row in data["files"]:
        yanked = row.get("yanked", False)
        # PEP 714 renamed the key; older indexes still send only the PEP 658 one.
        meta = row.get("core-metadata", row.get("dist-info-metadata"))
        out.append(
            DistFile(
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
        )
    return out


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
