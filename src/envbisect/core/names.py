"""What may become part of a path or a lockfile line: project names, versions, slugs.

Checked before any path is built from them (``results/<name>-<hash>/``, ``results/<matrix>/``)
and before what an environment says it holds is written into a lockfile: a name is a PEP 503
project name, a version a PEP 440 version, a matrix name a plain file name; a URL the user
typed (an index, a repository) is split once, the same way. Pure functions.
"""

from __future__ import annotations

import re
from urllib.parse import SplitResult, urlsplit

from packaging.utils import InvalidName, NormalizedName, canonicalize_name
from packaging.version import InvalidVersion, Version

from envbisect.errors import UsageError
from envbisect.redact import mask_text

# PyTorch's own packages: served by its index (the CPU/CUDA/ROCm variant folders), and the
# ones whose local version label (``+cu121``) names such a build.
TORCH_PACKAGES: frozenset[NormalizedName] = frozenset(
    canonicalize_name(n)
    for n in (
        "torch",
        "torchvision",
        "torchaudio",
        "torchtext",
        "torchdata",
        "triton",
        "pytorch-triton",
        "pytorch-triton-rocm",
        "pytorch-triton-xpu",
    )
)

# Built against one torch build and pinned to its version (torchvision 0.28.0 requires
# torch==2.13.0): which build is said only by the local label, which the pin ignores (PEP 440:
# ==2.13.0 matches 2.13.0+cpu). The planner pairs them by build (core/planprovider.py).
TORCH_BUILT: frozenset[NormalizedName] = frozenset(
    canonicalize_name(n) for n in ("torchvision", "torchaudio", "torchtext")
)

# Starts with a letter or digit: never "." or "..", never hidden, never absolute.
SLUG = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")
_NAME_HINT = (
    "a project name is letters, digits and . _ - (PEP 508), such as datasets or ruamel.yaml"
)


MAX_NAME = 200  # longer than any project name on PyPI; a folder name holds 255 bytes


def is_project_name(text: str) -> bool:
    if len(text) > MAX_NAME:
        return False
    try:
        canonicalize_name(text, validate=True)
    except InvalidName:
        return False
    return True


def is_version(text: str) -> bool:
    try:
        Version(text)
    except InvalidVersion:
        return False
    # Version() accepts surrounding whitespace; nothing around it may reach a lockfile line.
    return text == text.strip()


def project_name(text: str, *, what: str) -> NormalizedName:
    """``text`` as a canonical project name, or a ``UsageError`` naming ``what``."""
    if is_project_name(text):
        return canonicalize_name(text)
    shown = repr(text) if len(text) <= 80 else repr(text[:60]) + f"... ({len(text)} characters)"
    raise UsageError(f"{what} {shown} is not a project name", hint=_NAME_HINT, ref="bad-name")


def slug(text: str, *, what: str) -> str:
    """``text`` if it is a plain file name (no separator, no leading dot, at most 100)."""
    if not SLUG.fullmatch(text):
        raise UsageError(
            f"{what} {text!r} is not a plain name",
            hint="use letters, digits and . _ - only, starting with a letter or digit "
            "(it names a folder under --results)",
            ref="bad-name",
        )
    return text


def split_url(text: str, *, what: str, hint: str, ref: str) -> SplitResult:
    """``text`` split as a URL, or a ``UsageError`` naming ``what`` (a bad port counts); the
    URL is shown masked, as ``mask_text`` masks it: it may hold a password."""
    try:
        parts = urlsplit(text)
        parts.port  # noqa: B018  (raises on a bad port)
    except ValueError as e:
        raise UsageError(
            f"{what} {mask_text(text)!r} is not a URL ({e})", hint=hint, ref=ref
        ) from None
    return parts
