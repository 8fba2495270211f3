"""Keeping credentials out of what envbisect shows and stores.

Pure string functions, standard library only, so that any module can mask a URL without
importing the network edge. ``mask_url`` and ``mask_text`` are for what a person reads
(messages, reports, logs): user info becomes ``***``. ``strip_credentials`` is for what is kept
(file URLs, cache keys): user info is dropped, and the index client adds it back per request.
"""

from __future__ import annotations

import re
from urllib.parse import urlsplit, urlunsplit


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
