"""Pins as values: one requirement and where it was written (``Pin``), and everything one pin
source says (``PinSet``), with what holds for a target's marker environment and extras.

Who does what: the parsers in sources.py (and from_report.py for environment reports) build these;
the planner, the lockfile step and the reports read them. Pure: no IO. Markers are evaluated
against an environment passed in (``Target.marker_environment()``), never silently against the
running process; ``env=None`` means packaging's default environment. Extras are compared
normalized (PEP 685); ``self_references`` (a project's references to its own extras) are
expanded when extras are selected. A marker that cannot be evaluated is a ``UsageError`` (ref
``pins-marker``); an extra the source does not provide one with ref ``pins-unknown-extra``.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from packaging.markers import Marker, UndefinedComparison, UndefinedEnvironmentName
from packaging.requirements import Requirement
from packaging.specifiers import InvalidSpecifier, Specifier, SpecifierSet
from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from envbisect.errors import UsageError
from envbisect.redact import mask_url

if TYPE_CHECKING:
    from envbisect.core.envreport.facts import ReportFacts

__all__ = ["Pin", "PinSet", "select_extras"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Pin:
    """One requirement and where it was written.

    ``extra`` names the optional-dependency group (or the ``extra == "x"`` marker) the pin is
    gated on. ``text`` is the requirement as written, so that specifiers are reported in the
    order the author wrote them (packaging sorts them).
    """

    requirement: Requirement
    origin: str
    hashes: tuple[str, ...] = ()
    extra: str | None = None
    text: str = ""

    @property
    def name(self) -> str:
        """The canonical (PEP 503) name."""
        return canonicalize_name(self.requirement.name)

    @property
    def specifier_text(self) -> str:
        """The specifier in the order written, e.g. ``>=2.16.0,<=4.0.0``."""
        return _written_specifier(self.text, self.requirement)

    @property
    def exact_version(self) -> Version | None:
        """The version of an ``==X`` or ``===X`` clause (no wildcard), if the pin has one
        (envbisect's own locks write ``torch===2.13.0`` where a ``+cpu`` twin is at hand)."""
        for spec in self.requirement.specifier:
            if spec.operator in ("==", "===") and not spec.version.endswith(".*"):
                try:
                    return Version(spec.version)
                except InvalidVersion:
                    return None
        return None

    def applies(self, env: Mapping[str, str] | None = None, extras: Collection[str] = ()) -> bool:
        """Whether the pin holds for ``env`` (None: the running process) with ``extras``."""
        chosen = _canon_all(extras)
        marker = self.requirement.marker
        gated_by_marker = marker is not None and "extra" in _marker_words(marker)
        if self.extra is not None and not gated_by_marker and self.extra not in chosen:
            return False
        return _holds(marker, env, chosen, self.origin)

    def to_dict(
        self, env: Mapping[str, str] | None = None, extras: Collection[str] = ()
    ) -> dict[str, Any]:
        req = self.requirement
        return {
            "name": req.name,
            "specifier": self.specifier_text,
            "marker": str(req.marker) if req.marker is not None else None,
            "extras": sorted(req.extras),
            "extra": self.extra,
            "origin": self.origin,
            "hashes": list(self.hashes),
            "applies": self.applies(env, extras),
        }


@dataclass(frozen=True, slots=True, kw_only=True)
class PinSet:
    """Everything one pin source says: requirements, constraints, indexes, extras.

    ``extras`` are the extras selected when the source was loaded; they are always in effect,
    and the ``extras`` passed to the methods add to them. ``skipped`` records lines that name
    no index requirement (editables, local paths, bare URLs) so that callers can warn.
    ``index_url`` keeps its credentials (uv needs them); ``to_dict`` masks them.
    ``report``: what an environment report says besides its pins (its Python, platform,
    torch build, how each version was mapped; core/envreport/facts.py), None for other sources.
    """

    source: str
    requirements: tuple[Pin, ...]
    constraints: tuple[Pin, ...] = ()
    index_url: str | None = None
    extra_index_urls: tuple[str, ...] = ()
    find_links: tuple[str, ...] = ()
    is_lock: bool = False
    skipped: tuple[str, ...] = ()
    project: str | None = None
    provides_extras: tuple[str, ...] = ()
    extras: tuple[str, ...] = ()
    self_references: tuple[Pin, ...] = ()
    requires_python: str | None = None
    report: ReportFacts | None = None
    # A released distribution read as the pin source (``llamafactory==0.9.5``): itself, as
    # ``name==version`` (lock holds it as part of the environment it locks).
    release: str | None = None

    def selected_extras(
        self, env: Mapping[str, str] | None = None, extras: Collection[str] = ()
    ) -> frozenset[str]:
        """The selected extras, closed over the project's references to its own extras."""
        chosen = set(_canon_all(self.extras)) | _canon_all(extras)
        grown = True
        while grown:
            grown = False
            for ref in self.self_references:
                more = _canon_all(ref.requirement.extras) - chosen
                if more and ref.applies(env, chosen):
                    chosen |= more
                    grown = True
        return frozenset(chosen)

    def applicable(self, env: Mapping[str, str], extras: Collection[str] = ()) -> list[Pin]:
        """The requirements whose marker (and extra group) holds for ``env`` and ``extras``."""
        chosen = self.selected_extras(env, extras)
        return [pin for pin in self.requirements if pin.applies(env, chosen)]

    def baseline(
        self, env: Mapping[str, str] | None = None, extras: Collection[str] = ()
    ) -> dict[str, Version]:
        """Canonical name -> version of every ``==X`` pin (requirements, then constraints).

        With no ``env`` every pin counts, whatever its marker; with one, only those that apply.
        Where a name is pinned twice, the first pin wins.
        """
        chosen = self.selected_extras(env, extras)
        found: dict[str, Version] = {}
        for pin in (*self.requirements, *self.constraints):
            version = pin.exact_version
            if version is None or pin.name in found:
                continue
            if env is None or pin.applies(env, chosen):
                found[pin.name] = version
        return found

    def specifier_for(
        self, name: str, env: Mapping[str, str] | None = None, extras: Collection[str] = ()
    ) -> SpecifierSet:
        """The intersection of the specifiers of every applicable requirement and constraint."""
        key = canonicalize_name(name)
        chosen = self.selected_extras(env, extras)
        spec = SpecifierSet()
        for pin in (*self.requirements, *self.constraints):
            if pin.name == key and pin.applies(env, chosen):
                spec &= pin.requirement.specifier
        return spec

    def to_dict(
        self, env: Mapping[str, str] | None = None, extras: Collection[str] = ()
    ) -> dict[str, Any]:
        chosen = self.selected_extras(env, extras)
        return {
            "source": self.source,
            "requirements": [pin.to_dict(env, chosen) for pin in self.requirements],
            "constraints": [pin.to_dict(env, chosen) for pin in self.constraints],
            "index_url": mask_url(self.index_url) if self.index_url else None,
            "extra_index_urls": [mask_url(u) for u in self.extra_index_urls],
            "find_links": [mask_url(u) for u in self.find_links],
            "is_lock": self.is_lock,
            "extras": sorted(chosen),
            "skipped": list(self.skipped),
            **({"report": self.report.to_dict()} if self.report is not None else {}),
        }


def select_extras(pins: PinSet, extras: Collection[str], *, label: str) -> PinSet:
    """``pins`` with ``extras`` selected; an extra the source does not provide is an error."""
    chosen = tuple(dict.fromkeys(canonicalize_name(e) for e in extras))
    for extra in chosen:
        if extra not in pins.provides_extras:
            provided = ", ".join(pins.provides_extras)
            raise UsageError(
                f"{label} has no extra named {extra!r}",
                hint=f"it provides: {provided}" if provided else "it provides no extras",
                ref="pins-unknown-extra",
            )
    return replace(pins, extras=tuple(dict.fromkeys((*pins.extras, *chosen))))


# -- helpers ------------------------------------------------------------------------------------

_QUOTED = re.compile(r"'[^']*'|\"[^\"]*\"")


def _written_specifier(text: str, req: Requirement) -> str:
    """The specifier clauses in the order written, or packaging's (sorted) form."""
    fallback = str(req.specifier)
    head = re.match(r"\s*[A-Za-z0-9][A-Za-z0-9._-]*\s*(\[[^\]]*\])?\s*", text)
    if not text or req.url or head is None:
        return fallback
    rest = text[head.end() :].split(";", 1)[0].strip()
    if rest.startswith("(") and rest.endswith(")"):
        rest = rest[1:-1]
    try:
        clauses = [str(Specifier(c.strip())) for c in rest.split(",") if c.strip()]
    except InvalidSpecifier:
        return fallback
    written = ",".join(clauses)
    return written if SpecifierSet(written) == req.specifier else fallback


def _marker_words(marker: Marker) -> set[str]:
    """The names a marker mentions outside its quoted values."""
    return set(re.findall(r"[A-Za-z_]+", _QUOTED.sub("", str(marker))))


def _holds(
    marker: Marker | None, env: Mapping[str, str] | None, extras: frozenset[str], origin: str
) -> bool:
    if marker is None:
        return True
    environment: dict[str, str | AbstractSet[str]] = dict(env) if env is not None else {}
    words = _marker_words(marker)
    try:
        if words & {"extras", "dependency_groups"}:
            # PEP 751 lock-file markers test membership in the selected sets.
            environment["extras"] = extras
            environment["dependency_groups"] = frozenset()
            return marker.evaluate(environment, context="lock_file")
        if "extra" in words:
            # One evaluation per selected extra, as pip and uv do.
            return any(
                marker.evaluate({**environment, "extra": extra}) for extra in sorted(extras) or [""]
            )
        return marker.evaluate(environment)
    except (UndefinedComparison, UndefinedEnvironmentName) as e:
        raise UsageError(
            f"{origin}: cannot evaluate the marker {str(marker)!r}: {e}",
            hint="check the marker's variable names and compared values (PEP 508)",
            ref="pins-marker",
        ) from e


def _canon_all(extras: Collection[str]) -> frozenset[str]:
    return frozenset(canonicalize_name(e) for e in extras)
