"""``--override``, as uv's: a requirement that replaces every requirement on its project.

``--override transformers==4.52.4`` builds llamafactory 0.9.2 with transformers 4.52.4 though
the release requires ``transformers<=4.49.0``: wherever a requirement names transformers (the
user's own, or any package's), its versions are the override's. Extras and markers of the
requirement replaced stay (they say *whether* it applies; the override says *which*
versions). uv takes the same list (``--overrides FILE``) when it plans or installs. Pure.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass

from packaging.requirements import InvalidRequirement, Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import NormalizedName, canonicalize_name

from envbisect.errors import UsageError

Overrides = Mapping[NormalizedName, SpecifierSet]


def parse(lines: Iterable[tuple[str, str]]) -> dict[NormalizedName, str]:
    """Each override line (a requirement; blank lines, comments and options skipped), with
    where it came from (``--override``, ``--override FILE``), by project: ``name ->
    "name<spec>"``. A bad line, or one project overridden twice with different specifiers,
    is a usage error naming it."""
    out: dict[NormalizedName, str] = {}
    for origin, raw in lines:
        line = raw.split(" #", 1)[0].strip()
        if not line or line.startswith(("#", "-")):
            continue
        try:
            req = Requirement(line)
        except InvalidRequirement as e:
            raise UsageError(
                # packaging's message ends in the text and a caret under it: its first line
                f"{origin}: {line!r} is not a requirement ({str(e).splitlines()[0]})",
                hint="an override is a requirement such as transformers==4.52.4",
                ref="bad-override",
            ) from None
        if req.url or req.marker is not None or req.extras:
            raise UsageError(
                f"{origin}: {line!r}: an override is a name and versions only",
                hint="e.g. --override 'transformers==4.52.4' (no extras, marker or URL)",
                ref="bad-override",
            )
        name = canonicalize_name(req.name)
        text = f"{name}{req.specifier}"
        if name in out and out[name] != text:
            raise UsageError(
                f"{origin}: {name} is overridden twice ({out[name]}, {text})",
                hint="give one override per project",
                ref="bad-override",
            )
        out[name] = text
    return out


@dataclass(frozen=True, slots=True)
class OverrideSet:
    """``--override``, parsed once (``read``): each project's versions, by name. Iterated, the
    ``name<spec>`` lines uv takes, sorted (a table's or a report's own join them as lines)."""

    pairs: tuple[tuple[NormalizedName, SpecifierSet], ...] = ()

    @classmethod
    def read(cls, lines: Iterable[tuple[str, str]]) -> OverrideSet:
        """Override lines with where each came from (``parse``: a bad one is a usage error)."""
        return cls.of(parse(lines).values())

    @classmethod
    def of(cls, texts: Iterable[str]) -> OverrideSet:
        """``name<spec>`` texts already checked (a later one of a project wins)."""
        if isinstance(texts, OverrideSet):
            return texts
        found: dict[NormalizedName, SpecifierSet] = {}
        for text in texts:
            req = Requirement(text)
            found[canonicalize_name(req.name)] = req.specifier
        return cls(tuple(sorted(found.items(), key=lambda kv: kv[0])))

    @property
    def by_name(self) -> dict[NormalizedName, SpecifierSet]:
        return dict(self.pairs)

    @property
    def texts(self) -> tuple[str, ...]:
        return tuple(f"{name}{spec}" for name, spec in self.pairs)

    def __iter__(self) -> Iterator[str]:
        return iter(self.texts)

    def __len__(self) -> int:
        return len(self.pairs)


def as_specifiers(texts: Iterable[str]) -> dict[NormalizedName, SpecifierSet]:
    """Overrides (``name<spec>`` texts, or an ``OverrideSet`` as it was read) as ``name ->
    specifier``."""
    return OverrideSet.of(texts).by_name


def for_environment(overrides: Sequence[str], requirements: Sequence[str]) -> tuple[str, ...]:
    """The overrides one environment is installed with: an overridden project the
    environment pins exactly (the plan's version, the candidate under test) is overridden
    to exactly that version, so the installer takes the version planned; the rest as given."""
    exact: dict[NormalizedName, str] = {}
    for text in requirements:
        try:
            req = Requirement(text)
        except InvalidRequirement:
            continue
        specs = list(req.specifier)
        if len(specs) == 1 and specs[0].operator in ("==", "===") and "*" not in specs[0].version:
            exact[canonicalize_name(req.name)] = f"{canonicalize_name(req.name)}{specs[0]}"
    out = []
    for text in overrides:
        name = canonicalize_name(Requirement(text).name)
        out.append(exact.get(name, text))
    return tuple(sorted(out))


def apply(req: Requirement, overrides: Overrides) -> Requirement:
    """``req`` with the override's versions, if its project is overridden."""
    spec = overrides.get(canonicalize_name(req.name))
    if spec is None or str(spec) == str(req.specifier):
        return req
    return _replaced(str(req), str(spec))


def apply_all(reqs: Iterable[Requirement], overrides: Overrides) -> list[Requirement]:
    return [apply(r, overrides) for r in reqs] if overrides else list(reqs)


def off_pins(
    requires: Iterable[tuple[str, Requirement]], versions: Mapping[NormalizedName, str]
) -> list[str]:
    """What an override takes outside the pins: for each (package, its requirement) whose
    project is pinned in ``versions`` at a version the requirement excludes, "transformers
    4.52.4 (llamafactory 0.9.2 requires <=4.49.0)", deduplicated, in order."""
    out: list[str] = []
    for who, req in requires:
        name = canonicalize_name(req.name)
        have = versions.get(name)
        if have is None or not str(req.specifier):
            continue
        if not req.specifier.contains(have, prereleases=True):
            text = f"{name} {have} ({who} requires {req.specifier})"
            if text not in out:
                out.append(text)
    return out


@functools.lru_cache(maxsize=1 << 12)
def _replaced(text: str, spec: str) -> Requirement:
    clone = Requirement(text)
    clone.specifier = SpecifierSet(spec)
    return clone
