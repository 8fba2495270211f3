"""What a bug report implies beyond the rows it lists, for ``envbisect repro``.

``in_frames``: the distributions its traceback's installed frames show (a requirement of a
listed package, or installed by hand) are built too. ``left_by``: a package it does not list,
needed disjointly by two it lists, is taken as pip left it after installing the one forced
over the pins (that one's requirement wins, as uv's --override). Each read from the index
the session holds; modes/reproduce.py says what was added.
"""

from __future__ import annotations

from collections.abc import Sequence

from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from envbisect.core.evidence.failure import read_failure
from envbisect.core.evidence.importnames import frame_distributions
from envbisect.core.markers import applies
from envbisect.core.pins.sources import PinSet
from envbisect.errors import EnvbisectError
from envbisect.index.source import IndexMetadataSource
from envbisect.modes.session import Session


def in_frames(session: Session, text: str, pins: PinSet) -> list[str]:
    """The distributions the traceback's installed frames show and the report does not list:
    they were there (a requirement of a listed package, or installed by hand), so they are
    built too, as of the report's day (said)."""
    listed = {canonicalize_name(p.name) for p in pins.requirements}
    tops = [f.top for f in read_failure(text).frames if f.top]
    found = []
    for dist in frame_distributions(t for t in tops if t is not None):
        if dist not in listed and dist not in ("pip", "setuptools", "importlib-metadata"):
            try:
                session.client.project_files(dist)
            except EnvbisectError:
                continue
            found.append(dist)
    if found:
        session.progress.message(
            f"envbisect: the traceback's frames show {', '.join(found)} installed, which the "
            "report does not list: built too"
        )
    return found


def left_by(session: Session, overrides: Sequence[str], pins: PinSet) -> list[str]:
    """The requirements of the packages installed over the pins (``name==version`` each) on
    packages the report does not list: pip, installing them, satisfies those and nothing
    else, so they win over the pins' (uv's --override, as the report's own versions are)."""
    listed = {canonicalize_name(p.name) for p in pins.requirements}
    source = IndexMetadataSource(session.client, session.target)
    markers = {**session.target.marker_environment(), "extra": ""}
    left: dict[str, str] = {}
    try:
        for text in overrides:
            name, _, version = text.partition("==")
            try:
                deps = source.dependencies(canonicalize_name(name), Version(version))
            except (EnvbisectError, InvalidVersion):
                continue
            for r in deps:
                key = canonicalize_name(r.name)
                if key not in listed and r.specifier and applies(r.marker, markers):
                    left.setdefault(key, f"{key}{r.specifier}")
    finally:
        source.close()
    return sorted(left.values())
