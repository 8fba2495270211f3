"""``outside_pins``: a cell built as a user builds it past a release's pins.

``pip install transformers==5.0.0`` over llamafactory 0.9.2 installs transformers 5.0.0 and
what *it* needs (tokenizers 0.22), though llamafactory 0.9.2 requires tokenizers<=0.21.0; pip
warns, and the user runs it (with ``DISABLE_VERSION_CHECK=1``). An ``outside_pins`` cell is
that environment: the axis versions override every requirement on their projects, and where
two axis packages need disjoint versions of a third project, the later axis's need wins
(overrides it too). Without that, every such cell would only say "unresolvable: tokenizers",
which is not the question the table is asked.

Only direct requirements of the axis packages are followed, and only where they leave no
version at all: a conflict further down stays the cell's reason (said on the page).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace

from packaging.requirements import Requirement
from packaging.utils import NormalizedName, canonicalize_name
from packaging.version import InvalidVersion, Version

from envbisect.core.markers import applies
from envbisect.core.overrides import off_pins
from envbisect.core.plan import Fallback
from envbisect.core.target import Target
from envbisect.errors import EnvbisectError
from envbisect.index.source import IndexMetadataSource
from envbisect.modes.planning import RunPlanner


def followed(
    versions: Sequence[tuple[str, str]], source: IndexMetadataSource, target: Target
) -> tuple[str, ...]:
    """The overrides the cell needs beyond its axis versions: ``name<spec>`` of the later
    axis package for each project two axis packages need disjoint versions of."""
    markers = {**target.marker_environment(), "extra": ""}
    axes = [(canonicalize_name(p), Version(v)) for p, v in versions]
    names = {n for n, _ in axes}

    def needs(name: NormalizedName, version: Version) -> dict[NormalizedName, Requirement]:
        try:
            deps = source.dependencies(name, version)
        except EnvbisectError:  # no metadata: the planner says why, not this
            return {}
        return {
            canonicalize_name(d.name): d for d in deps if d.specifier and applies(d.marker, markers)
        }

    out: dict[NormalizedName, str] = {}
    for i in range(len(axes) - 1, 0, -1):
        later = needs(*axes[i])
        for earlier in axes[:i]:
            for dep, theirs in needs(*earlier).items():
                mine = later.get(dep)
                if mine is None or dep in names or dep in out:
                    continue
                have = [pv.version for pv in source.versions(dep) if pv.installable]
                if any(mine.specifier.contains(v) and theirs.specifier.contains(v) for v in have):
                    continue  # something fits both: the planner picks it
                if any(mine.specifier.contains(v) for v in have):
                    out[dep] = f"{dep}{mine.specifier}"
    return tuple(sorted(out.values()))


def outside_note(
    versions: Sequence[tuple[str, str]],
    source: IndexMetadataSource,
    target: Target,
    installed: Sequence[tuple[str, str]] = (),
) -> str | None:
    """Why a cell lies outside the pins, in words (``None``: it does not): "transformers
    5.0.0 (llamafactory 0.9.2 requires <=4.49.0,>=4.41.2); tokenizers>=0.22.0,<=0.23.0 as
    transformers 5.0.0 needs", as ``repro`` says a report's (core/overrides.off_pins).
    ``installed``: the cell's environment (name, version), whose packages' caps count too
    (trl 0.24.0 needs transformers>=4.56.1). Shown on the table's page."""
    markers = {**target.marker_environment(), "extra": ""}
    axes = {canonicalize_name(p): v for p, v in versions}
    pinned = [(canonicalize_name(p), v) for p, v in versions]
    for n, v in sorted(installed):
        if canonicalize_name(n) not in axes:
            pinned.append((canonicalize_name(n), v))
    requires = []
    for name, version in pinned:
        try:
            deps = source.dependencies(name, Version(version))
        except (EnvbisectError, InvalidVersion):
            continue
        requires += [(f"{name} {version}", d) for d in deps if applies(d.marker, markers)]
    said = off_pins(requires, axes)
    extra = followed(versions, source, target)
    if extra:
        last, at = pinned[len(axes) - 1]
        said.append(f"{', '.join(extra)} as {last} {at} needs")
    return "; ".join(said) or None


class OutsidePlanners:
    """The planner of each set of followed overrides (one per distinct set: a table has a
    handful, a tokenizers range per transformers minor)."""

    def __init__(
        self,
        base: RunPlanner,
        base_overrides: Sequence[str],
        target: Target,
        fallback: Callable[[tuple[str, ...]], Fallback],
    ) -> None:
        assert isinstance(base.source, IndexMetadataSource)
        self.base = base
        self.base_overrides = tuple(base_overrides)
        self.target = target
        self.fallback = fallback  # uv's planner, with these overrides
        self._made: dict[tuple[str, ...], RunPlanner] = {(): base}

    def for_cell(self, versions: Sequence[tuple[str, str]]) -> tuple[RunPlanner, tuple[str, ...]]:
        source = self.base.source
        assert isinstance(source, IndexMetadataSource)
        extra = followed(versions, source, self.target)
        planner = self._made.get(extra)
        if planner is None:
            over = (*self.base_overrides, *extra)
            planner = self._made[extra] = replace(
                self.base,
                source=IndexMetadataSource(source.client, self.target, overrides=over),
                fallback=self.fallback(over),
            )
        return planner, extra

    def close(self) -> None:
        for extra, planner in self._made.items():
            if extra and isinstance(planner.source, IndexMetadataSource):
                planner.source.close()
