"""``envbisect check``'s answer: the shipped data read, every rule run, the findings in order.

Who does what: ``CheckData.from_dict`` takes the data the package ships (checkdb.json, read
by the command) and the published tables found at hand; ``diagnose`` runs each rule over what
the report says (core/checks/observed.py) and returns the typed ``Diagnosis``, which the
command prints from its fields (``lines``) or as JSON (``to_dict``). Pure.

Exit codes, as the other commands: 0 no finding, 1 findings (2, a usage error, is the
command's).
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from packaging.requirements import InvalidRequirement, Requirement
from packaging.version import Version

from envbisect.core.checks.arguments import unused_keys
from envbisect.core.checks.cudarules import cuda_rules, torch_build
from envbisect.core.checks.extensions import extension_rules
from envbisect.core.checks.finding import ORDER, Finding, Kind, command
from envbisect.core.checks.observed import Observed
from envbisect.core.checks.published import published
from envbisect.core.checks.releasepins import declared_floor, forward_release, off_pins

EXIT_FINDINGS = 1


@dataclass(frozen=True, slots=True, kw_only=True)
class CheckData:
    """What the rules know: releases' pins, bitsandbytes' binaries, the published tables
    (the shipped ones replaced by those at hand of the same name), and when it was written."""

    releases: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    bitsandbytes: Mapping[str, Mapping[str, Sequence[str]]] = field(default_factory=dict)
    tables: tuple[Mapping[str, Any], ...] = ()
    written: str = ""

    @classmethod
    def from_dict(
        cls, data: Mapping[str, Any], at_hand: Sequence[Mapping[str, Any]] = ()
    ) -> CheckData:
        tables = {str(t.get("table")): t for t in data.get("published", ())}
        tables.update({str(t.get("table")): t for t in at_hand})
        return cls(
            releases=data.get("releases", {}),
            bitsandbytes=data.get("bitsandbytes", {}),
            tables=tuple(tables.values()),
            written=str(data.get("written", "")),
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class Diagnosis:
    """The findings for one report, in ``ORDER`` (core/checks/finding.py)."""

    observed: Observed
    findings: tuple[Finding, ...]
    measured: tuple[str, ...] = ()  # combinations the published tables measured passing
    data_written: str = ""
    tables: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()  # what the rules read and set aside, said

    @property
    def exit_code(self) -> int:
        return EXIT_FINDINGS if self.findings else 0

    def summary(self) -> str:
        """What was read, on one line: the report's formats and the machine it describes."""
        obs = self.observed
        parts = [", ".join(obs.formats) or "no environment block"]
        if obs.python is not None:
            parts.append(f"Python {obs.python.value}")
        if obs.system:
            parts.append(obs.system)
        for subject in ("llamafactory", "llmtuner"):
            if obs.version(subject):
                parts.append(f"{subject} {obs.version(subject)}")
        build = torch_build(obs)
        torch = obs.version("torch")
        if torch:
            built = ""
            if build is not None:
                built = f" ({'CPU-only' if build.cuda == 'cpu' else build.cuda})"
                if build.cuda[:1].isdigit():
                    built = f" (CUDA {build.cuda}{', inferred' if build.inferred else ''})"
            parts.append(f"torch {torch}{built}")
        if obs.driver is not None:
            parts.append(f"driver {obs.driver.value}")
        if obs.gpus:
            parts.append(f"GPU {obs.gpus[0].value}")
        if obs.stage is not None:
            parts.append(f"stage {obs.stage.value}")
        return "; ".join(parts)

    def lines(self) -> list[str]:
        """The answer as text (stdout of ``envbisect check``)."""
        out = [f"envbisect check: {self.observed.origin} ({self.summary()})"]
        for f in self.findings:
            out.append(f"{f.severity} [{f.kind.value}] {f.message}")
            for e in f.evidence:
                where = f"line {e.line}" if e.line else "here"
                out.append(f"  {where}: {e.text}" + (f"  (read from {e.how})" if e.how else ""))
            out.append(f"  fix: {f.fix}")
            out += [f"  or:  {other}" for other in f.also]
            if f.verify:
                out.append(f"  prove it: {f.verify}")
            if f.source:
                out.append(f"  source: {f.source}")
        out += [f"measured: {m}" for m in self.measured]
        out += [f"note: {n}" for n in self.notes]
        n = len(self.findings)
        out.append(f"{n} finding{'' if n == 1 else 's'}" if n else "no finding")
        return out

    def to_dict(self) -> dict[str, Any]:
        obs = self.observed
        build = torch_build(obs)
        return {
            "status": "findings" if self.findings else "ok",
            "report": obs.origin,
            "read": {
                "formats": list(obs.formats),
                "python": obs.python.value if obs.python else None,
                "system": obs.system,
                "torch": obs.version("torch"),
                "torch_build": build.cuda if build else None,
                "torch_build_inferred": build.inferred or None if build else None,
                "driver": obs.driver.value if obs.driver else None,
                "driver_cuda": obs.driver_cuda.value if obs.driver_cuda else None,
                "gpus": [g.value for g in obs.gpus],
                "stage": obs.stage.value if obs.stage else None,
                "packages": {k: v.value for k, v in sorted(obs.packages.items())},
                # how a person wrote the versions no tool's block holds (or that replace one)
                "written": {k: v.how for k, v in sorted(obs.packages.items()) if v.how},
            },
            "findings": [f.to_dict() for f in self.findings],
            "measured": list(self.measured),
            "notes": list(self.notes),
            "data": {"written": self.data_written, "tables": list(self.tables)},
        }


def with_forward_fixes(diagnosis: Diagnosis, data: CheckData) -> Diagnosis:
    """Each finding read from the wheels (a release changed what the code used), or from the
    report's own version-check error, whose package a later release of the report's
    LLaMA-Factory declares and accepts at the user's version: that release first (``pip
    install -U 'llamafactory>=0.9.2'``), the finding's own fix after it."""
    obs = diagnosis.observed
    out = []
    for f in diagnosis.findings:
        have = obs.version(f.package) if f.package else None
        forward = f.fix.startswith("pip install -U ")
        ahead = (
            forward_release(obs, data.releases, f.package, have)
            if f.kind in (Kind.RELEASE, Kind.OFF_PINS) and f.package and have and not forward
            else None
        )
        floor = (
            declared_floor(obs, data.releases, f.package)
            if f.kind is Kind.RELEASE and f.package and ahead is None
            else None
        )
        moved = _moved_up(f.fix, f.package) if floor is not None else None
        if floor is not None and moved is not None and floor[2] > moved:
            project, release, least = floor
            f = replace(
                f,
                message=f"{f.message}; {project} {release} asks {f.package}>={least}",
                fix=command("pip", "install", f"{f.package}>={least}"),
            )
        if ahead is not None:
            project, release = ahead
            f = replace(
                f,
                message=f"{f.message}; {project} {release} declares {f.package} {have} supported",
                fix=command("pip", "install", "-U", f"{project}>={release}"),
                also=(f.fix, *f.also),
            )
        out.append(f)
    return replace(diagnosis, findings=tuple(out))


def _moved_up(fix: str, package: str | None) -> Version | None:
    """The version an install line moves ``package`` up to (``pip install 'vllm>=0.3.0'``)."""
    for word in shlex.split(fix)[2:]:
        try:
            req = Requirement(word)
        except InvalidRequirement:
            continue
        if req.name == package:
            ups = [Version(s.version) for s in req.specifier if s.operator == ">="]
            return max(ups) if ups else None
    return None


def diagnose(obs: Observed, data: CheckData) -> Diagnosis:
    """Every rule over ``obs``; the findings in ``ORDER``, each rule's in its own order."""
    failing, measured = published(obs, data.tables)
    keys, notes = unused_keys(obs, data.releases)
    found = [
        *off_pins(obs, data.releases),
        *keys,
        *cuda_rules(obs),
        *extension_rules(obs, data.bitsandbytes),
        *failing,
    ]
    found.sort(key=lambda f: ORDER.index(f.kind))  # stable: each rule's order kept
    return Diagnosis(
        observed=obs,
        findings=tuple(found),
        measured=tuple(measured),
        data_written=data.written,
        tables=tuple(str(t.get("table")) for t in data.tables),
        notes=tuple(notes),
    )
