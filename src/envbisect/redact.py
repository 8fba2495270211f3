"""Keeping credentials out of what envbisect shows and stores.

Pure string functions, standard library only, so that any module can mask a URL without
importing the network edge. ``mask_url`` and ``mask_text`` are for what a person reads
(messages, reports, logs): user info becomes ``***``. ``strip_credentials`` is for what is kept
(file URLs, cache keys): user info is dropped, and the index client adds it back per request.
``mask_env`` and ``mask_env_args`` are for ``--env NAME=VALUE``: a value whose name or shape
says credential (``HF_TOKEN``, ``*_PASSWORD``, ``hf_...``, ``ghp_...``) becomes ``***``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from urllib.parse import urlsplit, urlunsplit

# Names that say a variable holds a secret (AWS_SECRET_ACCESS_KEY, HF_TOKEN, WANDB_API_KEY,
# PGPASSWORD, HTTP_AUTHORIZATION...), and the prefixes of tokens that say so by their shape.
_SECRET_NAME = re.compile(
    r"TOKEN|SECRET|PASSW|PASSPHRASE|CREDENTIAL|AUTH|COOKIE|SESSION|PRIVATE|(?:^|_)PAT(?:_|$)"
    r"|(?:^|_)(?:API_?)?KEY(?:_|$)|(?:^|_)PWD(?:_|$)",
    re.IGNORECASE,
)
_SECRET_VALUE = re.compile(
    r"^(?:hf_|ghp_|gho_|ghs_|ghu_|github_pat_|glpat-|sk-|xox[abprs]-|AKIA|ASIA|ya29\.|eyJ)"
)


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


def mask_env(name: str, value: str) -> str:
    """``value`` as it may be shown: ``***`` when it looks like a credential, else with the
    credentials of any URL in it masked."""
    if _SECRET_NAME.search(name) or _SECRET_VALUE.match(value):
        return "***"
    return mask_text(value)


def mask_env_map(env: Mapping[str, str] | Iterable[tuple[str, str]]) -> dict[str, str]:
    """Every value of ``env`` through ``mask_env``."""
    items = env.items() if isinstance(env, Mapping) else env
    return {k: mask_env(k, v) for k, v in items}


def mask_env_args(argv: Iterable[str]) -> list[str]:
    """A command line with the value of every ``--env NAME=VALUE`` (and ``--env=NAME=VALUE``)
    through ``mask_env``: the command line is what reports show."""
    out: list[str] = []
    after_flag = False
    for arg in argv:
        if after_flag:
            out.append(_mask_pair(arg))
        elif arg.startswith("--env="):
            out.append("--env=" + _mask_pair(arg[len("--env=") :]))
        else:
            out.append(arg)
        after_flag = arg == "--env"
    return out


def _mask_pair(pair: str) -> str:
    name, sep, value = pair.partition("=")
    return f"{name}{sep}{mask_env(name, value)}" if sep else pair
