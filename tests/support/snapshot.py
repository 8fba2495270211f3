"""A frozen index snapshot as a MetadataSource: the planner's golden tests run on it.

Format (JSON): {"project": {"version": {"requires": [...], "requires_python": str|null,
"upload_time": ISO 8601|null, "installable": bool}}}.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import NormalizedName, canonicalize_name
from packaging.version import Version

from envbisect.core.plan import PackageVersion


class SnapshotSource:
    def __init__(self, data: Mapping[str, Mapping[str, Mapping[str, Any]]]) -> None:
        self.data = {canonicalize_name(k): v for k, v in data.items()}
        self.version_calls: list[str] = []
        self.overrides: dict[NormalizedName, SpecifierSet] = {}  # core.plan's MetadataSource

    def versions(self, name: str) -> Sequence[PackageVersion]:
        key = canonicalize_name(name)
        self.version_calls.append(key)
        out = []
        for v, row in self.data.get(key, {}).items():
            when = row.get("upload_time")
            out.append(
                PackageVersion(
                    name=key,
                    version=Version(v),
                    requires_python=row.get("requires_python"),
                    upload_time=datetime.fromisoformat(when) if when else None,
                    installable=row.get("installable", True),
                )
            )
        return out

    def dependencies(self, name: str, version: Version) -> Sequence[Requirement]:
        rows = self.data[canonicalize_name(name)]
        for v, row in rows.items():
            if Version(v) == version:
                return [Requirement(r) for r in row.get("requires", [])]
        raise KeyError((name, version))
