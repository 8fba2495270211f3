"""Versions off a release's pins: LLaMA-Factory's (per stage), and those of the packages whose
own pins bite in its environments (transformers, trl, peft, accelerate, datasets).

Who does what: the shipped data (bench/make_check_data.py) holds each release's Requires-Dist
and, for llamafactory and llmtuner, the versions its own code checks at run time, each with
the stage it applies to (``None``: every stage; ``ppo``: ``train/ppo/trainer.py``'s, which
no other stage runs). ``off_pins`` compares the report's versions with them:

    the code's checks      error: the release raises ImportError before training (a
                           ``check_version`` is skipped by ``DISABLE_VERSION_CHECK=1``, a bare
                           ``require_version`` is not: the finding says which)
    transformers' import   error: its ``dependency_versions_check`` raises for the packages in
                           ``pkgs_to_check_at_runtime`` (tokenizers, huggingface-hub...)
    Requires-Dist          warning: pip would not have installed it (an extra's requirement
                           counts where the report has the package: off every extra that
                           names it; of transformers and the rest, only the extras' packages
                           their import checks, not transformers' torch extra capping torch)

A development version (``0.9.4.dev0``, a git checkout) is checked against both releases
around it and a version is reported only when both refuse it: its own pins lie between
theirs. A release the data does not know is not checked. The error a report shows counts too:
``X is required for a normal functioning of this module, but found X==V`` (the check that
raised) and pip's ``A requires X..., but you have X V which is incompatible``.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from packaging.markers import InvalidMarker
from packaging.requirements import InvalidRequirement, Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from envbisect.core.checks.finding import Finding, Kind, command, evidence, python_flag
from envbisect.core.checks.observed import Observed, Said
from envbisect.core.markers import applies

# The releases checked, in the order their findings are listed: the report's subject first.
SUBJECTS = ("llamafactory", "llmtuner")
DECLARED = ("transformers", "trl", "peft", "accelerate", "datasets")
# The probe that proves a LLaMA-Factory environment: a real training step of the stage.
_STAGE_PROBE = "llamafactory-train:{stage}"

_REQUIRED = re.compile(
    r"(?P<spec>(?P<name>[A-Za-z][\w.-]*?)\s*(?P<ops>(?:[<>=!~]=?\s*[\w.*+]+\s*,?\s*)+)) is "
    r"required for a normal functioning of this module, but found (?P<found>[\w.-]+)=="
    r"(?P<version>[\w.+!-]+)"
)
_PIP = re.compile(
    r"(?P<requirer>[\w.-]+) (?P<rversion>\d[\w.+!-]*) requires (?P<name>[\w.-]+)"
    r"(?:\[[^\]]*\])?(?P<ops>[<>=!~][^ ]*), but you have (?P<found>[\w.-]+) "
    r"(?P<version>\d[\w.+!-]*) which is incompatible"
)


@dataclass(frozen=True, slots=True, kw_only=True)
class Bound:
    """One constraint a release puts on a package: the specifier, how it binds (``code``: its
    check raises; ``import``: transformers' import check raises; ``declared``: Requires-Dist),
    where it is, and whether DISABLE_VERSION_CHECK=1 skips it."""

    spec: SpecifierSet
    how: str
    where: str
    stage: str | None = None
    skippable: bool = False
    extra: str | None = None


def off_pins(obs: Observed, releases: Mapping[str, Mapping[str, Any]]) -> list[Finding]:
    found: dict[str, Finding] = {}
    stage = obs.stage.value if obs.stage else None
    for project in (*SUBJECTS, *DECLARED):
        said = obs.packages.get(project)
        version = _ver(said.value) if said else None
        if said is None or version is None or project not in releases:
            continue
        around = _around(releases[project], version)
        if not around:
            continue
        for name, other in obs.packages.items():
            if name == project or name in found:
                continue
            have = _ver(other.value)
            if have is None:
                continue
            refused = [_refusal(project, rel, data, name, have, stage, obs) for rel, data in around]
            if all(r is not None for r in refused):
                rel, bound = next(r for r in reversed(refused) if r is not None)
                finding = _finding(obs, project, said, rel, around, name, other, bound)
                ahead = _forward(obs, project, releases[project], rel, name, have, stage)
                if ahead is not None:
                    to, moved = ahead
                    along = f" (pip moves {', '.join(moved)} to its pins too)" if moved else ""
                    finding = replace(
                        finding,
                        message=f"{finding.message}; {project} {to} accepts {name} "
                        f"{other.value}{along}",
                        fix=command("pip", "install", "-U", f"{project}>={to}"),
                        also=(finding.fix,),
                        verify=_verify_forward(finding.verify, project, rel, to, name, have),
                    )
                found[name] = finding
    for finding in _from_errors(obs, found):
        found[finding.package or ""] = finding
    return list(found.values())


def _forward(
    obs: Observed,
    project: str,
    data: Mapping[str, Any],
    release: str,
    name: str,
    have: Version,
    stage: str | None,
) -> tuple[str, tuple[str, ...]] | None:
    """The first release of ``project`` after ``release`` that accepts ``name`` at ``have``
    and refuses none of the report's other versions that ``release`` accepted: the fix that
    moves forward (what maintainers usually answer: the next release supports it). Where
    every such release refuses another of them, the first, with the packages pip would move
    along with it."""
    accepted = [
        (n, x)
        for n, said in obs.packages.items()
        if n not in (name, project) and (x := _ver(said.value)) is not None
        if _refusal(project, release, data[release], n, x, stage, obs) is None
    ]
    later = sorted((Version(r), r) for r in data if Version(r) > Version(release))
    takers = [
        r
        for parsed, r in later
        if not parsed.is_prerelease
        and _declares(data[r], name)  # a release that stops naming it says nothing of it
        and _refusal(project, r, data[r], name, have, stage, obs) is None
    ]
    for r in takers:
        moved = [n for n, x in accepted if _refusal(project, r, data[r], n, x, stage, obs)]
        if not moved:
            return r, ()
    if takers:  # pip -U moves the others the release refuses too: said
        r = takers[0]
        return r, tuple(n for n, x in accepted if _refusal(project, r, data[r], n, x, stage, obs))
    return None


def forward_release(
    obs: Observed, releases: Mapping[str, Mapping[str, Any]], name: str, have: str
) -> tuple[str, str] | None:
    """(project, release): the first release of the report's LLaMA-Factory after its own that
    declares ``name`` and accepts it at ``have``: where a release changed what the project's
    code used (a finding read from the wheels), the project's later release that supports the
    user's version is the fix that moves forward (the maintainers' usual "update it")."""
    version = _ver(have)
    stage = obs.stage.value if obs.stage else None
    if version is None:
        return None
    for project in SUBJECTS:
        said = obs.packages.get(project)
        mine = _ver(said.value) if said else None
        if mine is None or project not in releases:
            continue
        data = releases[project]
        for parsed, r in sorted((Version(r), r) for r in data):
            if parsed <= mine or parsed.is_prerelease:
                continue
            if _declares(data[r], name) and not _refusal(
                project, r, data[r], name, version, stage, obs
            ):
                return project, r
    return None


def declared_floor(
    obs: Observed, releases: Mapping[str, Mapping[str, Any]], name: str
) -> tuple[str, str, Version] | None:
    """(project, release, floor): the lowest version of ``name`` the report's LLaMA-Factory
    asks for (its Requires-Dist, extras included, and its code's checks): the report's own
    release, or for a checkout its frames show (``.../src/llamafactory/...``) with no version,
    the newest release. A fix that moves ``name`` up moves it at least that far."""
    for project in SUBJECTS:
        said = obs.packages.get(project)
        data = releases.get(project, {})
        known = sorted((Version(r), r) for r in data if _ver(r) is not None)
        if not known:
            continue
        if said is not None:
            mine = _ver(said.value)
            candidates = [r for parsed, r in known if mine is not None and parsed <= mine][-1:]
        elif any(f"{project}/" in line or f"{project}\\" in line for line in obs.lines):
            # a checkout: the newest release that names the package stands in
            candidates = [r for _, r in reversed(known)]
        else:
            continue
        for release in candidates:
            texts = [
                *data[release].get("requires", ()),
                *(c["req"] for c in data[release].get("checks", ())),
            ]
            floors = [
                Version(spec.version)
                for t in texts
                if (r := _req(t)) is not None and canonicalize_name(r.name) == name
                for spec in r.specifier
                if spec.operator in (">=", "==", "~=") and _ver(spec.version) is not None
            ]
            if floors:
                return project, release, max(floors)
    return None


def _declares(data: Mapping[str, Any], name: str) -> bool:
    """Whether the release bounds ``name`` at all (its Requires-Dist or its code's checks)."""
    texts = [*data.get("requires", ()), *(c["req"] for c in data.get("checks", ()))]
    return any((r := _req(t)) is not None and canonicalize_name(r.name) == name for t in texts)


def _verify_forward(
    verify: str | None, project: str, release: str, to: str, name: str, have: Version
) -> str | None:
    """The proof of the forward fix: the same lock, of the later release, with the report's
    version of ``name`` asked for."""
    if verify is None:
        return None
    words = [to if w == f"{project}=={release}" else w for w in shlex.split(verify)]
    words = [f"{project}=={to}" if w == to else w for w in words]
    at = words.index("--probe") if "--probe" in words else len(words)
    return command(*words[:at], "--with", f"{name}=={have}", *words[at:])


def _around(data: Mapping[str, Any], version: Version) -> list[tuple[str, Mapping[str, Any]]]:
    """The release itself; for a development or pre-release, the releases around it (module
    doc); none for a release the data does not know."""
    known = sorted(((Version(v), v) for v in data), key=lambda t: t[0])
    public = Version(version.public)
    exact = next((v for parsed, v in known if parsed == public), None)
    if exact is not None and not public.is_prerelease:
        return [(exact, data[exact])]
    if not (public.is_prerelease or public.is_devrelease) or not known:
        return []
    before = [v for parsed, v in known if parsed < public]
    after = [v for parsed, v in known if parsed >= Version(public.base_version)]
    return [(v, data[v]) for v in (before[-1:] + after[:1])]


def _refusal(
    project: str,
    release: str,
    data: Mapping[str, Any],
    name: str,
    have: Version,
    stage: str | None,
    obs: Observed,
) -> tuple[str, Bound] | None:
    """The first of the release's bounds on ``name`` that refuses ``have`` (module doc)."""
    have = Version(have.public)
    for check in data.get("checks", ()):
        req = _req(check["req"])
        if req is None or canonicalize_name(req.name) != name:
            continue
        if check["stage"] is not None and check["stage"] != stage:
            continue
        if not req.specifier.contains(have, prereleases=True):
            bound = Bound(
                spec=req.specifier,
                how="code",
                where=check["where"],
                stage=check["stage"],
                skippable=check["skippable"],
            )
            return release, bound
    plain: list[SpecifierSet] = []
    extras: list[tuple[SpecifierSet, str]] = []
    env = _markers(obs)
    for text in data.get("requires", ()):
        req = _req(text)
        if req is None or canonicalize_name(req.name) != name or not req.specifier:
            continue
        marker = str(req.marker) if req.marker else ""
        try:
            if "extra" in marker:
                extra = _extra(marker)
                if req.marker is not None and applies(req.marker, {**env, "extra": extra}):
                    extras.append((req.specifier, extra))
            elif applies(req.marker, {**env, "extra": ""}):
                plain.append(req.specifier)
        except InvalidMarker:
            continue
    runtime = {canonicalize_name(n) for n in data.get("runtime", ())}
    how = "import" if name in runtime else "declared"
    for spec in plain:
        if not spec.contains(have, prereleases=True):
            return release, Bound(spec=spec, how=how, where="Requires-Dist")
    # An extra's requirement binds where the release's own code reads the package (LLaMA-
    # Factory's extras; transformers' import check of accelerate), not an extra nobody asked
    # for (transformers' torch extra capping torch).
    binding = project in SUBJECTS or name in runtime
    refused = all(not s.contains(have, prereleases=True) for s, _ in extras)
    if extras and not plain and binding and refused:
        spec, extra = extras[0]
        where = f"Requires-Dist, extra {extra}"
        return release, Bound(spec=spec, how=how, where=where, extra=extra)
    return None


def _finding(
    obs: Observed,
    project: str,
    said: Said,
    release: str,
    around: Sequence[tuple[str, Mapping[str, Any]]],
    name: str,
    other: Said,
    bound: Bound,
) -> Finding:
    spec = str(bound.spec)
    reported = said.value
    which = (
        f"{project} {release}"
        if len(around) == 1
        else f"{project} {reported} (between {around[0][0]} and {around[-1][0]}: both refuse it)"
    )
    for_stage = f" for {bound.stage}" if bound.stage else ""
    if bound.how == "code":
        skip = (
            "DISABLE_VERSION_CHECK=1 skips this check"
            if bound.skippable
            else "DISABLE_VERSION_CHECK=1 does not skip this check"
        )
        how = f"its code raises ImportError ({bound.where}; {skip})"
    elif bound.how == "import":
        how = "its import raises ImportError (dependency_versions_check)"
    else:
        how = f"it declares {name}{spec} ({bound.where}): pip would not install this"
    declared = _declared_spec(around[-1][1], name)
    conflict = bool(declared) and not _overlap(declared, bound.spec)
    note = (
        f"; the release's own Requires-Dist asks {name}{declared}, which the {bound.stage} "
        "stage refuses: install it over the release's pins"
        if conflict and bound.stage
        else ""
    )
    severity = "warning" if bound.how == "declared" else "error"
    stage = obs.stage.value if obs.stage else None
    verify_words = ["envbisect", "lock"]
    if project in SUBJECTS:
        verify_words += ["--pins", f"{project}=={release}"]
    else:
        verify_words += ["--with", f"{project}=={release}"]
    if bound.extra and project in SUBJECTS:
        verify_words += ["--extras", bound.extra]
    if conflict:
        verify_words += ["--override", f"{name}{spec}"]
    verify_words += python_flag(obs.python_minor())
    if project in SUBJECTS:
        probe = _STAGE_PROBE.format(stage=stage) if stage else "llamafactory"
    else:
        probe = f"import:{project.replace('-', '_')}"
    verify_words += ["--probe", probe]
    return Finding(
        kind=Kind.OFF_PINS,
        severity=severity,
        package=name,
        message=f"{name} {other.value} is off {which}'s pins{for_stage}: {how}{note}",
        evidence=evidence(said, other, obs.stage if bound.stage else None),
        fix=command("pip", "install", f"{name}{spec}"),
        verify=command(*verify_words),
        source=f"{project} {release}: {bound.where}",
    )


def _from_errors(obs: Observed, found: Mapping[str, Finding]) -> list[Finding]:
    """The version checks the report's own error shows failing (module doc): each adds its
    line to a finding of the same package, or is a finding of its own."""
    out: list[Finding] = []
    for pattern, how in ((_REQUIRED, "raised"), (_PIP, "pip")):
        for line, m in obs.find(pattern):
            name = canonicalize_name(m["found"])
            ops = re.sub(r"\s+", "", m["ops"]).rstrip(",")
            req = _req(f"{m['name']}{ops}")
            if req is None:
                continue
            done = found.get(name) or next((f for f in out if f.package == name), None)
            if done is not None:
                merged = Finding(
                    kind=done.kind,
                    severity="error" if how == "raised" else done.severity,
                    package=done.package,
                    message=done.message,
                    evidence=evidence(*done.evidence, line),
                    fix=done.fix,
                    verify=done.verify,
                    source=done.source,
                    also=done.also,
                )
                out = [f for f in out if f.package != name]
                out.append(merged)
                continue
            spec = str(req.specifier)
            said = (
                f"pip says {m['requirer']} {m['rversion']} requires {name}{spec}"
                if how == "pip"
                else f"the report's error says {name}{spec} is required"
            )
            subject = next((p for p in (*SUBJECTS, *DECLARED) if p in obs.packages), None)
            verify = None
            if how == "pip" and canonicalize_name(m["requirer"]) in (*SUBJECTS, *DECLARED):
                subject = canonicalize_name(m["requirer"])
            if subject is not None:
                flag = "--pins" if subject in SUBJECTS else "--with"
                release = obs.packages[subject].value if subject in obs.packages else m["rversion"]
                if _ver(release) is not None and not Version(release).is_prerelease:
                    verify = command(
                        "envbisect",
                        "lock",
                        flag,
                        f"{subject}=={release}",
                        *python_flag(obs.python_minor()),
                        "--probe",
                        "llamafactory" if subject in SUBJECTS else f"import:{subject}",
                    )
            out.append(
                Finding(
                    kind=Kind.OFF_PINS,
                    severity="error" if how == "raised" else "warning",
                    package=name,
                    message=f"{name} {m['version'].rstrip('.')} is off the pins: {said}",
                    evidence=evidence(obs.packages.get(name), line),
                    fix=command("pip", "install", f"{name}{spec}"),
                    verify=verify,
                    source="the report's error",
                )
            )
    return out


def _declared_spec(data: Mapping[str, Any], name: str) -> str:
    for text in data.get("requires", ()):
        req = _req(text)
        if req is not None and canonicalize_name(req.name) == name and not req.marker:
            return str(req.specifier)
    return ""


def _overlap(declared: str, spec: SpecifierSet) -> bool:
    """Whether some version satisfies both (tried on the versions either names)."""
    both = SpecifierSet(declared) & spec
    named = [_ver(s.version.rstrip(".*")) for s in [*SpecifierSet(declared), *spec]]
    return any(v is not None and both.contains(v, prereleases=True) for v in named)


def _markers(obs: Observed) -> dict[str, str]:
    system = obs.system or "Linux"
    python = obs.python_minor() or "3.11"
    return {
        "python_version": python,
        "python_full_version": obs.python.value if obs.python else f"{python}.0",
        "sys_platform": {"Linux": "linux", "Windows": "win32", "Darwin": "darwin"}.get(
            system, "linux"
        ),
        "platform_system": system,
        "platform_machine": "x86_64",
        "os_name": "nt" if system == "Windows" else "posix",
        "implementation_name": "cpython",
        "platform_python_implementation": "CPython",
    }


def _extra(marker: str) -> str:
    m = re.search(r"extra == ['\"]([^'\"]+)['\"]", marker)
    return m.group(1) if m else ""


def _req(text: str) -> Requirement | None:
    try:
        return Requirement(text)
    except InvalidRequirement:
        return None


def _ver(text: str) -> Version | None:
    try:
        return Version(text)
    except InvalidVersion:
        return None
