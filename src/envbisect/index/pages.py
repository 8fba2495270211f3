"""A project page as an index answered it: checked, then read into ``ProjectFiles``.

Who does what: ``fresh_page`` turns an HTTP answer into a ``Page`` (the form index/cache.py
keeps), refusing bad credentials and failures; ``parse_page`` reads a fetched or cached page's
files with index/simple.py, and calls anything but a Simple API page index garbage.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from envbisect.errors import IndexUnreachable, InfrastructureError
from envbisect.index.cache import Page
from envbisect.index.simple import ProjectFiles, parse_simple_html, simple_json_rows
from envbisect.redact import strip_credentials
from envbisect.textsafe import for_terminal

if TYPE_CHECKING:
    import httpx

_JSON = "application/vnd.pypi.simple.v1+json"
_HTML = ("text/html", "application/vnd.pypi.simple.v1+html", "")
_NOT_AN_INDEX = "is this URL a package index (PEP 503/691)? PyPI's is https://pypi.org/simple"


def fresh_page(resp: httpx.Response, shown: str, *, fetched: float, max_age: float) -> Page:
    """A project page as answered (a 404 is a page too: the index lacks the project); an
    answer that refuses the credentials, or any other failure, is an error."""
    if resp.status_code in (401, 403):
        raise InfrastructureError(
            f"{shown} answered HTTP {resp.status_code}: the credentials are missing or wrong",
            hint="check the user name and password in --index-url / --extra-index-url",
            ref="index-auth",
        )
    if resp.status_code != 404 and not resp.is_success:
        raise IndexUnreachable(
            f"{shown} answered HTTP {resp.status_code}",
            hint="check the index URL and any credentials it needs",
        )
    return Page(
        url=strip_credentials(str(resp.url)),
        status=resp.status_code,
        content_type=resp.headers.get("content-type", "").split(";")[0].strip().lower(),
        body=resp.text if resp.status_code != 404 else "",
        etag=resp.headers.get("etag"),
        last_modified=resp.headers.get("last-modified"),
        fetched=fetched,
        max_age=max_age,
    )


def parse_page(page: Page, key: str, index: str, shown: str) -> ProjectFiles | None:
    """Files of a fetched or cached page; None for a 404. ``shown`` is the URL for messages.
    A JSON page's rows stay raw until a version of them is asked for (see ``ProjectFiles``)."""
    if page.status == 404:
        return None
    try:
        if page.content_type == _JSON:
            rows = simple_json_rows(json.loads(page.body))
            return ProjectFiles(name=key, source=index, rows=rows, page_url=page.url, index=index)
        if page.content_type in _HTML:
            files = parse_simple_html(page.body, page.url, index=index)
            return ProjectFiles(name=key, source=index, files=files)
    except (ValueError, KeyError, TypeError, AttributeError) as e:
        raise InfrastructureError(
            f"{shown} did not answer a readable Simple API page ({_said(e)})",
            hint=_NOT_AN_INDEX,
            ref="index-garbage",
        ) from e
    raise InfrastructureError(
        f"{shown} answered {page.content_type or 'no content type'}, not a Simple API page",
        hint=_NOT_AN_INDEX,
        ref="index-garbage",
    )


def _said(e: BaseException) -> str:
    """Why a page could not be read, on one line and without control characters: its words
    may be the index's own (a version field, a file name)."""
    return " ".join(for_terminal(str(e)).split())[:300]
