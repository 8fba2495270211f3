"""What a failed uv call's output says: an infrastructure problem, or the candidate's own.

Who does what: the materializer (uv.py) and the planner's fallback (uvplan.py) run uv; when a
call fails they ask ``uv_failure`` whether its (masked) output shows something that is not the
candidate's fault, which they raise; else the environment is untestable, and
``first_error_line`` is the reason shown. Reads text only; index/auth.py asks the index once
when a credentialed index may have refused in silence.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from envbisect.errors import IndexUnreachable, InfrastructureError
from envbisect.model import IndexConfig

_UNRESOLVABLE = (
    "No solution found",
    "not found in the package registry",
    "not found in the provided package locations",
    "Failed to build",
    "has no wheels",
    "no wheels with a matching",
    "only-binary",
    "--no-build",
    "is not available for",
    "requires-python",
    "Failed to parse",
)
_AUTH = ("401 Unauthorized", "403 Forbidden", "lack of valid authentication credentials")
_TAMPERED = ("Hash mismatch", "hash mismatch")
# What uv says, offline, of a page or a file its cache lacks (before "No solution found").
_OFFLINE_MISS = (
    "not found in the cache",
    "network was disabled",
    "Network connectivity is disabled",
)
_NETWORK = (
    "error sending request",
    "dns error",
    "Connection refused",
    "connection closed",
    "operation timed out",
    "tcp connect error",
    "Could not connect",
    "Request failed after",
)


def uv_failure(
    text: str, *, offline: bool, indexes: IndexConfig, requirements: Sequence[str], what: str
) -> InfrastructureError | None:
    """The infrastructure error that a failed uv call's (masked) output shows, else None:
    then the candidate itself could not be resolved or installed (untestable).

    None of these says anything about a candidate, and each would make every environment
    "untestable": a package uv's cache lacks while offline, credentials an index refuses
    (uv says so for the first index; under ``unsafe-best-match`` it passes over a refusing
    index in silence, so a "not found" from a credentialed index is checked with one request,
    see index/auth.py), a tampered download, a network failure."""
    if offline and any(p in text for p in _OFFLINE_MISS):
        return InfrastructureError(
            f"offline, and uv's cache lacks a package or file while {what}: {_offline_line(text)}",
            hint="run the same command once online (without --offline) to fill uv's cache, "
            "with the same UV_CACHE_DIR",
            ref="offline-miss",
        )
    if any(p in text for p in _AUTH):
        return _auth_error(what, first_error_line(text))
    if any(p in text for p in _TAMPERED):
        return InfrastructureError(
            f"a download was tampered with while {what}: its hash does not match the "
            f"index's ({first_error_line(text)})",
            hint="the index, or a proxy on the way, served other bytes than it lists; "
            "do not trust this index until that is explained",
            ref="download-tampered",
        )
    unresolvable = any(p in text for p in _UNRESOLVABLE)
    if not unresolvable and any(p in text for p in _NETWORK):
        return IndexUnreachable(
            f"uv could not reach the index while {what}: {first_error_line(text)}",
            hint="check the network and the index URL; a rerun reuses finished probes",
        )
    if unresolvable and not offline and requirements:
        from envbisect.index.auth import refused

        why = refused(indexes, _project(requirements[0]))
        if why is not None:
            return _auth_error(what, why)
    return None


def _auth_error(what: str, why: str) -> InfrastructureError:
    # A wrong password says nothing about the candidate (a warm metadata cache hides it from
    # envbisect's own reads): every environment would be "untestable".
    return InfrastructureError(
        f"the index refused uv's credentials while {what}: {why}",
        hint="check the user name and password in --index-url / --extra-index-url",
        ref="index-auth",
    )


def _offline_line(text: str) -> str:
    """The line of uv's output that names what its cache lacks."""
    for ln in text.splitlines():
        if any(p in ln for p in _OFFLINE_MISS):
            return ln.strip().removeprefix("cause:").strip().removeprefix("Because").strip()
    return first_error_line(text)


def _project(requirement: str) -> str:
    """The project name a requirement starts with (a PEP 508 name: no URL, no path)."""
    m = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)", requirement)
    return m.group(1) if m else ""


def first_error_line(text: str) -> str:
    """The line of uv's output that says what went wrong (its cause, else its error)."""
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    for ln in lines:
        if ln.startswith("╰─▶") or ln.startswith("Because"):
            return ln.lstrip("╰─▶ ").strip()
    for ln in lines:
        low = ln.lower()
        if low.startswith(("error", "×", "x ")):
            return ln.lstrip("×x ").strip()
    return lines[0] if lines else "no output"
