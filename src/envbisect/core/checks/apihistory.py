"""``check`` offline: what the traceback names, looked up in the API history envbisect ships
(envbisect/data/apihistory.json.gz, written by bench/make_api_history.py).

The history holds, for the training stack's packages, what each release added and removed:
modules, names per public module, parameters per public function and method. A name that a
release removed (or brought) is a change of the question "does M offer X?", and the same
rules as ``envbisect why`` (core/evidence/boundaries.py) turn it into fixes, the report's
versions deciding which side to move. Only the callee's side is known offline (the caller's
code is not in the history); ``check --online`` and ``envbisect why`` read both. Pure: the
data and the text in, findings out.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Mapping
from typing import Any

from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from envbisect.core.checks.finding import Finding, Kind
from envbisect.core.checks.observed import Observed, Said
from envbisect.core.evidence.boundaries import NO, YES, Change, History, merged
from envbisect.core.evidence.failure import (
    BadCall,
    Evidence,
    MissingAttr,
    MissingModule,
    MissingName,
    read_failure,
)
from envbisect.core.evidence.stated import stated_python
from envbisect.core.results.why import describe


def _tops(package: Mapping[str, Any]) -> set[str]:
    """The top-level import names a package's history speaks of."""
    out: set[str] = set()
    for change in package.get("changes", {}).values():
        for part in ("names", "params"):
            out.update(k.split(".")[0] for k in change.get(part, {}))
        for sign in ("+", "-"):
            out.update(m.split(".")[0] for m in change.get("modules", {}).get(sign, ()))
    return out


def _package_of(data: Mapping[str, Any], top: str) -> str | None:
    for name, package in data.get("packages", {}).items():
        if top in _tops(package):
            return str(name)
    return None


def _flips(package: Mapping[str, Any], changed: Any) -> Iterator[tuple[str, str, int]]:
    """``(release before, release, new answer)`` for each release whose changes ``changed``
    (a function of one release's changes: YES, NO or None) says flipped the answer."""
    releases = list(package.get("releases", ()))
    for before, release in itertools.pairwise(releases):
        new = changed(package.get("changes", {}).get(release, {}))
        if new is not None:
            yield before, release, new


def _history(
    package: str, data: Mapping[str, Any], question: str, changed: Any, installed: str | None
) -> History | None:
    p = data["packages"][package]
    flips = list(_flips(p, changed))
    if not flips:
        return None
    releases = tuple(str(r) for r in p["releases"])
    changes: list[Change] = []
    state = NO if flips[0][2] == YES else YES
    answers: list[tuple[str, int | None]] = []
    by_release = {r: n for _, r, n in flips}
    for r in releases:
        if r in by_release:
            if by_release[r] != state:
                last = answers[-1][0] if answers else r
                changes.append(Change(last_old=last, first_new=r, old=state, new=by_release[r]))
            state = by_release[r]
        answers.append((r, state))
    at = dict(answers).get(installed) if installed else None
    if installed and at is None:  # a release the history does not list: its neighbours agree
        at = _between(answers, installed)
    return History(
        package=package,
        role="callee",
        question=question,
        versions=releases,
        changes=tuple(changes),
        answers=tuple(answers),
        installed=installed,
        installed_answer=at,
    )


def _between(answers: list[tuple[str, int | None]], version: str) -> int | None:
    try:
        want = Version(version)
    except InvalidVersion:
        return None
    below = [a for r, a in answers if Version(r) <= want]
    above = [a for r, a in answers if Version(r) >= want]
    return below[-1] if below and above and below[-1] == above[0] else None


def _names(module: str, name: str) -> Any:
    def changed(c: Mapping[str, Any]) -> int | None:
        d = c.get("names", {}).get(module, {})
        if name in d.get("+", ()):
            return YES
        if name in d.get("-", ()):
            return NO
        if module in c.get("modules", {}).get("-", ()):
            return NO
        return None

    return changed


def _module(module: str) -> Any:
    def changed(c: Mapping[str, Any]) -> int | None:
        mods = c.get("modules", {})
        return YES if module in mods.get("+", ()) else NO if module in mods.get("-", ()) else None

    return changed


def _param(suffix: str, keyword: str) -> Any:
    def changed(c: Mapping[str, Any]) -> int | None:
        for qual, d in c.get("params", {}).items():
            if qual.endswith(suffix):
                if keyword in d.get("+", ()):
                    return YES
                if keyword in d.get("-", ()):
                    return NO
        return None

    return changed


def _question(item: Evidence) -> tuple[str, str, Any] | None:
    """``(top-level import name, the question in words, what a release's changes say)``."""
    if isinstance(item, MissingName):
        top = item.module.split(".")[0]
        return top, f"{item.module} offers {item.name}", _names(item.module, item.name)
    if isinstance(item, MissingAttr) and item.of_module:
        top = item.owner.split(".")[0]
        return top, f"{item.owner} has {item.name}", _names(item.owner, item.name)
    if isinstance(item, MissingModule) and "." in item.module and not item.not_package:
        top = item.module.split(".")[0]
        return top, f"ships {item.module}", _module(item.module)
    if isinstance(item, BadCall) and item.keyword:
        suffix = f".{item.callee}" if item.owner else f".{item.func}"
        return "", f"{item.callee}() accepts {item.keyword}", _param(suffix, item.keyword)
    return None


def shipped_findings(data: Mapping[str, Any], text: str, obs: Observed) -> list[Finding]:
    """The findings the shipped history supports for the failures ``text`` names."""
    if not data.get("packages"):
        return []
    out = []
    failure = read_failure(text)
    for item in failure.items[:8]:
        asked = _question(item)
        if asked is None:
            continue
        top, question, changed = asked
        if top:
            package = _package_of(data, top)
            packages = [package] if package is not None else []
        else:  # a call: any package whose history changed such a parameter
            packages = [str(p) for p in data["packages"]]
        for package in packages:
            said = obs.version(package) or obs.version(canonicalize_name(package))
            h = _history(package, data, question, changed, said.split("+")[0] if said else None)
            fixes = merged([h]) if h is not None else []
            if h is None or not fixes:
                continue
            if h.installed is not None and h.installed_answer == YES:
                # the release the report states has it: the failure ran with another install.
                # Where its paths show another Python than the report's, another environment
                # (the fix holds there); else one another package overwrote: no version fix
                said_python = obs.python_minor() or stated_python(text)
                if failure.python is None or said_python in (None, failure.python):
                    break
                elsewhere = (
                    f"; the text's {package} {h.installed} has it, but the failure's paths show "
                    f"Python {failure.python}, not the report's {said_python}: another "
                    "environment ran it, and the fix is for that one"
                )
            else:
                elsewhere = ""
            out.append(
                Finding(
                    kind=Kind.RELEASE,
                    severity="error",
                    package=package,
                    message=f"a release changed what it names: {describe(h)}{elsewhere}",
                    evidence=(Said(value=item.text, line=item.at, text=item.text),),
                    fix=fixes[0].command,
                    also=tuple(f.command for f in fixes[1:]),
                    verify=f"envbisect why {obs.origin} --prove"
                    if obs.origin != "<stdin>"
                    else None,
                    source=f"envbisect's API history of {package} (releases since "
                    f"{data.get('since')}, written {data.get('written')})",
                )
            )
            break
    return out
