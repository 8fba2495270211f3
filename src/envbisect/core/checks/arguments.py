"""Config keys a LLaMA-Factory release does not define: ``Some keys are not used by the
HfArgumentParser: ['enable_liger_kernel']``.

Who does what: the shipped data (bench/make_check_data.py) holds, per release of llamafactory
and llmtuner, every field of the dataclasses in its ``hparams`` package (the keys its parser
accepts). ``unused_keys`` reads the message and answers from them: the first release after
the report's that defines every key is the fix (an example config of a newer release run on
an older one, the usual cause); keys the report's own release already defines, or no release
ever did, are no version finding (a typo, a key of another tool), said in a note. Pure.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from packaging.version import InvalidVersion, Version

from envbisect.core.checks.finding import Finding, Kind, command, evidence
from envbisect.core.checks.observed import Observed

_UNUSED = re.compile(r"Some keys are not used by the HfArgumentParser:\s*\[(?P<keys>[^\]]*)\]")
_KEY = re.compile(r"['\"](\w+)['\"]")
_PROJECTS = ("llamafactory", "llmtuner")


def unused_keys(
    obs: Observed, releases: Mapping[str, Mapping[str, Any]]
) -> tuple[list[Finding], list[str]]:
    """The findings (a later release defines the keys) and the notes (none does, or the
    report's own release already did)."""
    for said, m in obs.find(_UNUSED):
        keys = tuple(dict.fromkeys(_KEY.findall(m.group("keys"))))
        if not keys:
            continue
        project = next((p for p in _PROJECTS if p in obs.packages), "llamafactory")
        data = releases.get(project, {})
        known = sorted(
            ((v, set(e["arguments"])) for v, e in data.items() if "arguments" in e and _ok(v)),
            key=lambda t: Version(t[0]),
        )
        if not known:
            continue
        mine = obs.packages.get(project)
        have = _version(mine.value) if mine is not None else None
        older = [fields for v, fields in known if have is not None and Version(v) <= have]
        if mine is not None and older and set(keys) <= older[-1]:
            return [], [
                f"{project} {mine.value} defines {', '.join(keys)}: the config "
                "went to another parser than the one the keys are for (another stage's, "
                "another tool's), not a version to move"
            ]
        later = [
            v for v, fields in known if set(keys) <= fields and (have is None or Version(v) > have)
        ]
        if not later:
            ever = [v for v, fields in known if set(keys) <= fields]
            if ever:  # an older config: the keys were renamed or removed since
                return [], [
                    f"{project} {ever[-1]} is the last release that defines {', '.join(keys)}: "
                    "the config is older than the release (renamed or removed since), not a "
                    "version to move forward to"
                ]
            return [], [
                f"no release of {project} defines {', '.join(keys)}: a typo in the config, "
                "or a key of another tool"
            ]
        first = later[0]
        which = f"{project} {mine.value}" if mine is not None else f"the report's {project}"
        return [
            Finding(
                kind=Kind.OFF_PINS,
                severity="error",
                package=project,
                message=f"{which} does not define the config key{'s' if len(keys) > 1 else ''} "
                f"{', '.join(keys)}: {project} {first} is the first release that does (a "
                "config written for a newer release)",
                evidence=evidence(mine, said),
                fix=command("pip", "install", "-U", f"{project}>={first}"),
                source=f"{project} {first}: its hparams dataclasses",
            )
        ], []
    return [], []


def _ok(v: str) -> bool:
    return _version(v) is not None


def _version(text: str) -> Version | None:
    try:
        return Version(text)
    except InvalidVersion:
        return None
