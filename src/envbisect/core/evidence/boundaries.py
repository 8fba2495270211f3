"""From release histories to fixes: which release changed the named thing, and which side to
move.

A history is one yes/no question asked of one distribution's releases (oldest first), with the
changes a search found (strategy/releases.py). Two roles:

- the **callee** (the distribution that should offer the name, the module, the parameter):
  "yes" is what the failing code needs. Where the release the report runs says "no": the
  nearest change below it from yes to no is the release that removed it (hold back below it:
  ``pkg<first_bad``, and ``last_good`` is the last that had it); the nearest change above it
  from no to yes is the release that brought it (move up: ``pkg>=first_good``).
- the **caller** (the distribution whose code makes the import or the call): "yes" is "still
  does what fails". Where its release says "yes": the nearest change above it from yes to no
  is the release that caught up (move up to it); the nearest change below from no to yes is
  the release that began doing it (hold back below it).

Without the report's version, the newest release stands in for it (a report is usually of
what ``pip install -U`` gave). Pure: histories in, fixes out.
"""

from __future__ import annotations

import itertools
import shlex
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from packaging.version import InvalidVersion, Version

YES, NO = 1, 0


@dataclass(frozen=True, slots=True, kw_only=True)
class Change:
    """The answer changes from ``old`` (at ``last_old``) to ``new`` (at ``first_new``);
    ``hidden``: releases between whose answer could not be read."""

    last_old: str
    first_new: str
    old: int
    new: int
    hidden: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "last_old": self.last_old,
            "first_new": self.first_new,
            "from": bool(self.old),
            "to": bool(self.new),
            "hidden": list(self.hidden),
        }


@dataclass(frozen=True, slots=True, kw_only=True)
class History:
    """``question`` in words ("pyarrow defines PyExtensionType"); ``answers``: the releases
    read and their answers (None: could not say), in version order."""

    package: str
    role: str  # "callee" or "caller"
    question: str
    versions: tuple[str, ...]
    changes: tuple[Change, ...]
    answers: tuple[tuple[str, int | None], ...] = ()
    installed: str | None = None
    installed_answer: int | None = None
    reads: int = 0
    repro: str = ""  # Python code that fails where the answer is the failing one ("": none)

    def to_dict(self) -> dict[str, Any]:
        return {
            "package": self.package,
            "role": self.role,
            "question": self.question,
            "releases": len(self.versions),
            "read": [
                {"version": v, "answer": None if a is None else bool(a)} for v, a in self.answers
            ],
            "changes": [c.to_dict() for c in self.changes],
            "installed": self.installed,
            "installed_answer": None
            if self.installed_answer is None
            else bool(self.installed_answer),
        }


@dataclass(frozen=True, slots=True, kw_only=True)
class Fix:
    """``package op version``: ``<`` holds it back below ``version``, ``>=`` moves it up."""

    package: str
    op: str
    version: str
    why: str
    role: str = ""
    floor: str | None = None  # a hold-back that also needs at least this release

    @property
    def requirement(self) -> str:
        if self.floor is not None:
            return f"{self.package}>={self.floor},{self.op}{self.version}"
        return f"{self.package}{self.op}{self.version}"

    @property
    def command(self) -> str:
        return shlex.join(["pip", "install", self.requirement])

    @property
    def forward(self) -> bool:
        return self.op == ">="

    def to_dict(self) -> dict[str, Any]:
        return {
            "requirement": self.requirement,
            "command": self.command,
            "why": self.why,
            "forward": self.forward,
            "package": self.package,
        }


def _key(v: str) -> Version | None:
    try:
        return Version(v)
    except InvalidVersion:
        return None


def _position(h: History) -> tuple[str, int | None]:
    """The release standing for the report's (its own, else the newest) and its answer. The
    report's own release that could not be read answers as the failure shows: the callee
    lacks what is needed, the caller does what fails."""
    if h.installed is not None:
        ans = h.installed_answer
        if ans is None:
            ans = _inferred(h, h.installed)
        if ans is None:
            ans = NO if h.role == "callee" else YES
        return h.installed, ans
    # the newest release whose answer is known (a newest without a binary, or unreadable,
    # says nothing of the failure)
    newest = next((v for v, a in reversed(h.answers) if a is not None), h.versions[-1])
    return newest, _inferred(h, newest)


def _inferred(h: History, version: str) -> int | None:
    """The answer at ``version`` as the read releases and the changes tell."""
    for v, a in h.answers:
        if v == version:
            return a
    want = _key(version)
    if want is None:
        return None
    known = [(k, a) for v, a in h.answers if a is not None and (k := _key(v)) is not None]
    below = [a for k, a in known if k <= want]
    above = [a for k, a in known if k >= want]
    if below and above and below[-1] == above[0]:
        return below[-1]
    return None


def _at_or_below(c: Change, where: Version, answer: int) -> bool:
    first, last = _key(c.first_new), _key(c.last_old)
    if first is None or last is None:
        return False
    if first <= where:
        return True
    return last < where and c.new == answer


def fixes(h: History) -> list[Fix]:
    """The fixes one history supports, the forward one first (see the module's docstring).
    A stated release that contradicts the failure (the callee's has the name, the caller's
    does not make the call) was not the one that failed: the newest stands in for it."""
    contradicts = YES if h.role == "callee" else NO
    if h.installed is not None and h.installed_answer == contradicts:
        h = replace(h, installed=None, installed_answer=None)
    at, answer = _position(h)
    if answer is None:
        return []
    where = _key(at)
    if where is None:
        return []
    if h.installed is None and h.changes:
        older = _older_release_ran(h, answer)
        if older is not None:
            return [older]
    # The callee lacks what is needed (NO), the caller does what fails (YES): the change
    # above to the other answer is the release to move up to; the one below, to hold back.
    failing = NO if h.role == "callee" else YES
    if answer != failing:
        return []
    # A change read around the report's release (no wheel of it, or of its neighbours, to
    # read) counts as below it when the report's answer is the new one, above when the old.
    below = [c for c in h.changes if _at_or_below(c, where, answer)]
    above = [c for c in h.changes if c not in below]
    up = next((c for c in above if c.new != failing), None)
    down = next((c for c in reversed(below) if c.new == failing), None)
    out = [] if up is None else [_move_up(h, up)]
    return out if down is None else [*out, _hold_back(h, down, where, failing)]


def _older_release_ran(h: History, answer: int) -> Fix | None:
    """No version stated: the newest stands in; where it does what the failing code needs,
    the text ran an older release: the last change towards it is the fix."""
    last = h.changes[-1]
    wanted = YES if h.role == "callee" else NO
    if answer != wanted or last.new != wanted:
        return None
    said = "from" if h.role == "callee" else "not from"
    return Fix(
        package=h.package,
        op=">=",
        version=last.first_new,
        role=h.role,
        why=f"{h.question}: {said} {last.first_new} on (no version stated: "
        "the text ran an older release)",
    )


def _move_up(h: History, up: Change) -> Fix:
    """The release to move up to: the first past the change above the report's."""
    said = (
        f"from {up.first_new} on"
        if h.role == "callee"
        else (f"up to {up.last_old}, not from {up.first_new} on")
    )
    return Fix(
        package=h.package, op=">=", version=up.first_new, role=h.role, why=f"{h.question} {said}"
    )


def _hold_back(h: History, down: Change, where: Version, failing: int) -> Fix:
    """The release to hold back below: the change at or below the report's that brought the
    failing answer in (for a callee, with the window the name lived in)."""
    # where the name came in at a change before, the window it lived in
    before = [c for c in h.changes[: h.changes.index(down)] if c.new != failing]
    floor = before[-1].first_new if before and h.role == "callee" else None
    span = f"from {floor} " if floor else ""
    said = (
        f"{span}up to {down.last_old}, not from {down.first_new} on"
        if h.role == "callee"
        else f"from {down.first_new} on"
    )
    # the report's own release inside the gap (not read: an unread patch) fails: the
    # change is at it or before
    cut = down.first_new
    first = _key(down.first_new)
    # (a pre-release of it is below ``<first`` already: pip's ``<2.4.0`` excludes 2.4.0a0)
    if h.installed is not None and first is not None and where < first and not where.is_prerelease:
        cut = h.installed
    return Fix(
        package=h.package,
        op="<",
        version=cut,
        role=h.role,
        floor=floor,
        why=f"{h.question} {said}",
    )


def merged(histories: Sequence[History]) -> list[Fix]:
    """Every history's fixes, forward ones first (the maintainers' usual answer: move the
    side that lags to the release that caught up), each requirement once."""
    out: dict[str, Fix] = {}
    every = [f for h in histories for f in fixes(h)]
    # forward first; then holding the callee back; holding a caller back before the
    # release that began the call last (it keeps old code, and its other fixes, away)
    for f in sorted(every, key=lambda f: (not f.forward, f.role == "caller")):
        out.setdefault(f.requirement, f)
    return list(out.values())


def glibc_needed(filenames: Sequence[str]) -> tuple[int, int] | None:
    """The least glibc any of a release's Linux x86_64 wheels asks for by its manylinux tag
    (``manylinux_2_28`` asks 2.28, ``manylinux2014`` 2.17); None: no such wheel (a pure one
    asks nothing: (0, 0))."""
    best: tuple[int, int] | None = None
    for name in filenames:
        if not name.endswith(".whl"):
            continue
        for plat in name[:-4].split("-")[-1].split("."):
            need = _manylinux(plat)
            if plat == "any":
                need = (0, 0)
            if need is not None and (best is None or need < best):
                best = need
    return best


_LEGACY = {"manylinux1": (2, 5), "manylinux2010": (2, 12), "manylinux2014": (2, 17)}


def _manylinux(plat: str) -> tuple[int, int] | None:
    if not plat.endswith("x86_64"):
        return None
    for legacy, glibc in _LEGACY.items():
        if plat.startswith(legacy + "_"):
            return glibc
    parts = plat.split("_")
    if (
        plat.startswith("manylinux_")
        and len(parts) >= 3
        and parts[1].isdigit()
        and parts[2].isdigit()
    ):
        return int(parts[1]), int(parts[2])
    return None


def read_everywhere(
    package: str,
    role: str,
    question: str,
    answers: Sequence[tuple[str, int | None]],
    installed: str | None,
) -> History:
    """A history whose every release was answered (from the index page alone: no search),
    its changes between neighbouring known answers."""
    known = [(v, a) for v, a in answers if a is not None]
    changes = tuple(
        Change(last_old=v1, first_new=v2, old=a1, new=a2)
        for (v1, a1), (v2, a2) in itertools.pairwise(known)
        if a1 != a2
    )
    at = dict(answers).get(installed) if installed else None
    return History(
        package=package,
        role=role,
        question=question,
        versions=tuple(v for v, _ in answers),
        changes=changes,
        answers=tuple(answers),
        installed=installed,
        installed_answer=at,
        reads=len(answers),
    )
