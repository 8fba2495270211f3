"""A requirement's marker evaluated as installers do, never a traceback.

``packaging`` raises on markers that parse but cannot be compared: ``python_version ~= "3"``
(``~=`` needs two release segments: ``UndefinedComparison``), a variable the environment
lacks (``UndefinedEnvironmentName``). Such lines exist in METADATA on PyPI, written by hand;
uv and pip skip the requirement. ``applies`` does the same: a marker that cannot be evaluated
does not apply. Pure.
"""

from __future__ import annotations

from collections.abc import Mapping

from packaging.markers import Marker, UndefinedComparison, UndefinedEnvironmentName
from packaging.version import InvalidVersion


def applies(marker: Marker | None, env: Mapping[str, str]) -> bool:
    """Whether a requirement with ``marker`` applies in ``env`` (None: always); a marker that
    cannot be evaluated does not. (A user's own pins say so instead: core/pins/pinset.py.)"""
    if marker is None:
        return True
    try:
        return marker.evaluate(dict(env))
    except (UndefinedComparison, UndefinedEnvironmentName, InvalidVersion, TypeError):
        return False
