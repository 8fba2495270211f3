"""Judging the real-world suite's answers (bench/realworld.py): whether a case's range is one a
user would give (no end is the answer), and whether a command's JSON answer is right.

"Right" is the version and the failure: the answer's version (by date: the culprit release;
diff: the culprit and its first bad version, with what it drags in forced; lock: the
constraint) is the case's truth, every breakpoint the case lists is in the answer, and the
failure the answer names (the JSON's ``first_bad_outcome``, a breakpoint's outcome, the lock
constraint's outcome, the diff culprit's probe) is the verified one by envbisect's own failure
identity, ``outcome.same_failure``, on an ``Outcome`` rebuilt from the JSON and one from the
case's verified text. Pure: dicts and cases in, verdicts out.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version
from realworld_cases import Case, Failure, Held

from envbisect.core.outcome import same_failure
from envbisect.model import Outcome, OutcomeKind

VERDICTS = ("right", "wrong version", "wrong failure", "ambiguous", "no answer", "error")
_EXC = re.compile(r"^(?P<type>[A-Za-z_][\w.]*)(?::\s|:?$)")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


# -- ranges -----------------------------------------------------------------------------------


def _flag(args: Sequence[str], name: str) -> str | None:
    return args[args.index(name) + 1] if name in args else None


def _version(text: str) -> Version | None:
    try:
        return Version(text)
    except InvalidVersion:
        return None


def _moment(text: str) -> datetime:
    when = datetime.fromisoformat(text.replace("Z", "+00:00"))
    return when if when.tzinfo else when.replace(tzinfo=timezone.utc)


def _pins(text: str) -> dict[str, str]:
    out = {}
    for line in text.splitlines():
        name, sep, version = line.split("#", 1)[0].strip().partition("==")
        if sep:
            out[str(canonicalize_name(name))] = version.strip()
    return out


def range_problems(case: Case) -> list[str]:
    """What is wrong with a case's range: an end that is the answer (the truth, a breakpoint,
    a yanked release the answer names), or ends the wrong way round."""
    problems: list[str] = []
    good, bad = _flag(case.args, "--good"), _flag(case.args, "--bad")
    if case.mode == "run":
        truth = Version(case.truth)
        answers = {truth, *(Version(p.version) for p in case.breakpoints)}
        answers |= {Version(v) for v in case.yanked}
        for flag, value in (("--good", good), ("--bad", bad)):
            v = _version(value) if value else None
            if value and v is None:
                problems.append(f"{flag} {value} is not a version")
            elif v is not None and v in answers:
                problems.append(f"{flag} {value} is the answer")
        lo, hi = (
            (_version(bad or ""), _version(good or ""))
            if case.fix
            else (
                _version(good or ""),
                _version(bad or ""),
            )
        )
        if (lo is not None and not lo < truth) or (hi is not None and not truth < hi):
            problems.append(f"the truth {case.truth} is not strictly between the ends")
    elif case.mode == "by-date":
        if not (case.uploaded and good and bad):
            return [f"{case.name}: a by-date case needs --good, --bad and the upload moment"]
        start, end = _moment(good), _moment(bad)
        moments = [("the culprit", case.uploaded)] + [
            (p.version, p.uploaded) for p in case.breakpoints
        ]
        for what, up in moments:
            moment = _moment(up) if up else None
            if moment is None:
                problems.append(f"breakpoint {what} has no upload moment")
            elif not start < moment < end or moment.date() in (start.date(), end.date()):
                problems.append(f"{what}'s upload {up} is not strictly inside {good}..{bad}")
    elif case.mode == "diff":
        for name in ("good.txt", "bad.txt"):
            pinned = _pins(case.files.get(name, "")).get(str(canonicalize_name(case.package)))
            if pinned is not None and Version(pinned) == Version(case.truth):
                problems.append(f"{name} pins {case.package}=={pinned}: an end is the answer")
    elif case.mode == "lock":
        if _flag(case.args, "--good-date") or "--from" in case.args:
            problems.append("a lock case takes the project's pins: no --good-date, no --from")
    else:
        problems.append(f"unknown mode {case.mode!r}")
    return [f"{case.name}: {p}" for p in problems]


def check_ranges(cases: Sequence[Case]) -> list[str]:
    names = [c.name for c in cases]
    dupes = sorted({n for n in names if names.count(n) > 1})
    return [f"duplicate case name {n}" for n in dupes] + [
        p for c in cases for p in range_problems(c)
    ]


# -- judging ----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class Judgement:
    """A verdict (one of VERDICTS), the answer and its failure in words, and why."""

    verdict: str
    answer: str
    failure: str = ""
    notes: tuple[str, ...] = ()


def outcome_of(data: Mapping[str, Any]) -> Outcome:
    """An Outcome from its JSON form (``Outcome.to_dict``, or a lock constraint's shorter
    one). The JSON has no ``exception`` field: a failure's type is read back from its
    signature (``ImportError: ...``), as ``classify`` wrote it."""
    kind = OutcomeKind(str(data.get("kind")))
    signature = str(data.get("signature") or "")
    exception = data.get("exception")
    if exception is None and kind is OutcomeKind.FAIL:
        m = _EXC.match(signature)
        exception = m["type"] if m and not signature.startswith("exit ") else None
    return Outcome(
        kind=kind,
        signal=data.get("signal"),
        exit_code=data.get("exit_code"),
        signature=signature,
        exception=exception,
        library=data.get("library"),
        function=data.get("function"),
    )


def cell(text: str, limit: int = 90) -> str:
    text = " ".join(_CONTROL.sub(" ", text).split()).replace("|", "\\|")
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _describe(data: Mapping[str, Any] | None) -> str:
    if not data:
        return "no outcome"
    return cell(str(data.get("signature") or data.get("kind")), 80)


def _same(expected: Failure, got: Mapping[str, Any] | None) -> bool:
    if not got or got.get("kind") in (None, "pass", "untestable"):
        return False
    try:
        outcome = outcome_of(got)
    except ValueError:
        return False
    return same_failure(expected.outcome(), outcome)


def _eq(a: object, b: str) -> bool:
    va, vb = _version(str(a)), _version(b)
    return va is not None and va == vb


def _labelled(out: Mapping[str, Any], label: str) -> Mapping[str, Any] | None:
    rows = [*(out.get("probes") or []), *(out.get("reused") or [])]
    row = next((r for r in reversed(rows) if r.get("version") == label), None)
    return row.get("outcome") if row else None


def _releases(label: str) -> set[tuple[str, str]]:
    """The (package, version) pairs of a by-date moment's label: ``DATE (a 1.0, b 2.0)``."""
    m = re.search(r"\((?P<what>[^()]*)\)\s*$", label)
    pairs = set()
    for part in m["what"].split(", ") if m else []:
        name, _, version = part.rpartition(" ")
        if name:
            pairs.add((str(canonicalize_name(name)), version))
    return pairs


Check = tuple[Failure, Mapping[str, Any] | None, str]  # expected, got, where


def _run(case: Case, out: Mapping[str, Any]) -> tuple[str, list[str], list[Check]]:
    key = "first_fixed" if case.fix else "first_bad"
    got = out.get(key)
    answer = f"{case.package} {got}"
    wrong: list[str] = []
    direction = "fix" if case.fix else "regression"
    if out.get("direction") != direction:
        wrong.append(f"a {out.get('direction')} search, not a {direction} search")
    if not _eq(got, case.truth):
        wrong.append(f"{key} {got}, not {case.truth}")
    yanked = [str(v) for v in out.get("yanked_between") or []]
    if case.yanked or yanked:
        answer += f" (yanked between: {', '.join(yanked) or 'none'})"
    missing = [v for v in case.yanked if v not in yanked]
    if missing:
        wrong.append(f"yanked_between lacks {', '.join(missing)}")
    points = list(out.get("breakpoints") or [])
    if len(points) > 1:
        answer += f" (breakpoints: {', '.join(str(b.get(key)) for b in points)})"
    checks: list[Check] = [(case.failure, out.get("first_bad_outcome"), str(got))]
    for p in case.breakpoints:
        found = next((b for b in points if _eq(b.get(key), p.version)), None)
        if found is None:
            wrong.append(f"breakpoints lack {p.version}")
        else:
            checks.append((p.failure, found.get("outcome"), f"breakpoint {p.version}"))
    return answer, wrong, checks


def _by_date(case: Case, out: Mapping[str, Any]) -> tuple[str, list[str], list[Check]]:
    truth = (str(canonicalize_name(case.package)), case.truth)
    culprits = [(str(canonicalize_name(c["package"])), str(c["bad_version"]))
                for c in out.get("culprits") or []]  # fmt: skip
    answer = " + ".join(f"{p} {v}" for p, v in culprits) or "no culprit"
    wrong = [] if culprits == [truth] else [f"culprits {answer}, not {' '.join(truth)}"]
    points = list(out.get("breakpoints") or [])
    if len(points) > 1:
        named = [", ".join(f"{p} {v}" for p, v in sorted(_releases(str(b.get("first_bad")))))
                 for b in points]  # fmt: skip
        answer += f" (breakpoints: {'; '.join(named)})"
    checks: list[Check] = [(case.failure, out.get("first_bad_outcome"), answer)]
    for pt in case.breakpoints:
        want = (truth[0], pt.version)
        found = next((b for b in points if want in _releases(str(b.get("first_bad")))), None)
        if found is None:
            wrong.append(f"breakpoints lack {' '.join(want)}")
        else:
            checks.append((pt.failure, found.get("outcome"), f"breakpoint {pt.version}"))
    return answer, wrong, checks


def _diff(case: Case, out: Mapping[str, Any]) -> tuple[str, list[str], list[Check]]:
    truth = (str(canonicalize_name(case.package)), case.truth)
    culprits = list(out.get("culprits") or [])
    named = [(str(canonicalize_name(c["package"])), str(c["bad_version"])) for c in culprits]
    answer = " + ".join(f"{p} {v}" for p, v in named) or "no culprit"
    wrong = [] if named == [truth] else [f"culprits {answer}, not {' '.join(truth)}"]
    first = culprits[0] if culprits else {}
    dragged = {str(canonicalize_name(n)) for n in first.get("forced") or []}
    dragged |= {str(canonicalize_name(m["package"])) for m in first.get("moved_with") or []}
    if dragged:
        answer += f" (forced / moved with it: {', '.join(sorted(dragged))})"
    for name in case.forced:
        if str(canonicalize_name(name)) not in dragged:
            wrong.append(f"{name} is not forced by (nor moved with) the culprit")
    roots = out.get("roots")
    if isinstance(roots, Mapping) and case.forced and roots.get("roots") != [truth[0]]:
        wrong.append(f"roots {roots.get('roots')}, not [{truth[0]}]")
    label = f"{first.get('package')} {first.get('bad_version')}"
    got = _labelled(out, label) or out.get("first_bad_outcome")
    return answer, wrong, [(case.failure, got, label)]


def _lock(case: Case, out: Mapping[str, Any]) -> tuple[str, list[str], list[Check]]:
    """Every constraint the case holds (in any order), none more, each answering its
    failure. A case whose truth is "" holds nothing back: the newest environment passes."""
    held = case.held or (
        (Held(package=case.package, specifier=case.truth, failure=case.failure),)
        if case.truth
        else ()
    )
    truth = [(str(canonicalize_name(h.package)), h.specifier) for h in held]
    cons = list(out.get("constraints") or [])
    named = [(str(canonicalize_name(c["package"])), str(c["specifier"])) for c in cons]
    answer = ", ".join(f"{p}{s}" for p, s in named) or "nothing held back"
    want = ", ".join(f"{p}{s}" for p, s in truth)
    wrong = [] if sorted(named) == sorted(truth) else [f"constraints {answer}, not {want}"]
    checks: list[Check] = []
    for h, t in zip(held, truth, strict=True):
        got = next((c.get("outcome") for c, n in zip(cons, named, strict=True) if n == t), None)
        checks.append((h.failure, got, "".join(t)))
    return answer, wrong, checks


_MODES = {"run": _run, "by-date": _by_date, "diff": _diff, "lock": _lock}


def judge(case: Case, out: Mapping[str, Any]) -> Judgement:
    """The verdict on one command's JSON object."""
    status = out.get("status")
    if status == "error":
        err = out.get("error") or {}
        return Judgement(verdict="error", answer=f"error [{err.get('ref')}]",
                         notes=(cell(str(err.get("message")), 300),))  # fmt: skip
    if status == "no-answer":
        return Judgement(verdict="no answer", answer="no answer",
                         notes=(cell(str(out.get("reason", "")), 300),))  # fmt: skip
    if status == "ambiguous":
        key = "first_fixed_candidates" if case.fix else "first_bad_candidates"
        cands = [str(v) for v in out.get(key) or []]
        shown = cands if len(cands) <= 4 else [*cands[:2], "…", cands[-1]]
        what = ", ".join(shown) if len(cands) <= 4 else f"{len(cands)}: {', '.join(shown)}"
        return Judgement(verdict="ambiguous", answer=cell(f"one of {what}", 160),
                         failure=_describe(out.get("first_bad_outcome")))  # fmt: skip
    if status != "found":
        return Judgement(verdict="error", answer=f"status {status}")
    answer, wrong, checks = _MODES[case.mode](case, out)
    unlike = [
        f"{where}: {_describe(got)}, not {cell(expected.short(), 120)}"
        for expected, got, where in checks
        if not _same(expected, got)
    ]
    verdict = "wrong version" if wrong else "wrong failure" if unlike else "right"
    return Judgement(verdict=verdict, answer=cell(answer, 160),
                     failure=_describe(checks[0][1]) if checks else "",
                     notes=(*wrong, *unlike))  # fmt: skip
