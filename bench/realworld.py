"""Real-world suite: real breakages from PyPI's history, each run with the real CLI and judged
on the version and the failure it names.

Run from the repository root (needs PyPI): ``python bench/realworld.py`` prints a Markdown
table, one row a case: case | mode | truth | answer | answer's failure | verdict | probes |
seconds. ``--only NAME`` (repeatable) runs some; ``--list`` lists them with their sources and
why their ranges are what they are; ``--check-ranges`` checks that no end is the answer (done
before every run too); ``--against REV`` also runs every case with ``git archive REV src`` on
PYTHONPATH and prints both tables and a side-by-side one (before and after, in one run).

The cases (realworld_simple.py, realworld_cases.py) are breakages users hit and reported, each
verified by hand with plain uv, and each given the range a user would give: no ends, ends at
least 8 releases or 3 months from the truth, or the project's own pins; no end is the answer.

A verdict says whether the answer is right and, when not, how it went wrong:
    right           the version (by date: the culprit release; diff: the culprit and its first
                    bad version, what it drags in forced; lock: the constraint) and the failure
                    it names are the verified ones, and every breakpoint the case lists is there
    wrong version   another version, culprit or constraint (or a breakpoint missing)
    wrong failure   the right version, but its failure is not the verified one by envbisect's
                    own failure identity (``outcome.same_failure``)
    ambiguous       several candidates (untestable points hide the boundary)
    no answer       the search gave none (exit 1)
    error           no JSON answer: a usage or infrastructure error, or the case's time ran out

Each case runs ``envbisect run`` (by version or ``--by-date``), ``diff`` or ``lock`` as a
subprocess with ``--json``, ``--no-config`` (the suite reads PyPI alone, whatever this
machine's uv.toml or pip.conf say, as on a user's machine), a fresh results folder in a
temporary directory and one shared cache (``--cache DIR``: uv's downloads under ``DIR/uv``,
envbisect's metadata under ``DIR/meta``; another revision's under ``DIR/meta-REV``), so that a
second run downloads nothing. ``--timeout`` bounds every probe, ``--case-timeout`` a case.

Interpreters: a version such as ``3.10`` is passed as the path of a pyenv interpreter when
``~/.pyenv/versions/3.10.*`` exists (uv does not look behind pyenv's shims), else as it is.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import signal
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import date, datetime, timezone
from io import BytesIO
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))

from packaging.utils import canonicalize_name  # noqa: E402
from packaging.version import InvalidVersion, Version  # noqa: E402
from realworld_cases import CASES as NEW_CASES  # noqa: E402
from realworld_cases import Case, Failure  # noqa: E402
from realworld_simple import CASES as SIMPLE_CASES  # noqa: E402

from envbisect.core.outcome import same_failure  # noqa: E402
from envbisect.model import Outcome, OutcomeKind  # noqa: E402

CASES: tuple[Case, ...] = SIMPLE_CASES + NEW_CASES
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


def _cell(text: str, limit: int = 90) -> str:
    text = " ".join(_CONTROL.sub(" ", text).split()).replace("|", "\\|")
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _describe(data: Mapping[str, Any] | None) -> str:
    if not data:
        return "no outcome"
    return _cell(str(data.get("signature") or data.get("kind")), 80)


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
    truth = (str(canonicalize_name(case.package)), case.truth)
    cons = list(out.get("constraints") or [])
    named = [(str(canonicalize_name(c["package"])), str(c["specifier"])) for c in cons]
    answer = ", ".join(f"{p}{s}" for p, s in named) or "nothing held back"
    wrong = [] if named == [truth] else [f"constraints {answer}, not {''.join(truth)}"]
    got = next((c.get("outcome") for c, n in zip(cons, named, strict=True) if n == truth), None)
    return answer, wrong, [(case.failure, got, "".join(truth))]


_MODES = {"run": _run, "by-date": _by_date, "diff": _diff, "lock": _lock}


def judge(case: Case, out: Mapping[str, Any]) -> Judgement:
    """The verdict on one command's JSON object."""
    status = out.get("status")
    if status == "error":
        err = out.get("error") or {}
        return Judgement(verdict="error", answer=f"error [{err.get('ref')}]",
                         notes=(_cell(str(err.get("message")), 300),))  # fmt: skip
    if status == "no-answer":
        return Judgement(verdict="no answer", answer="no answer",
                         notes=(_cell(str(out.get("reason", "")), 300),))  # fmt: skip
    if status == "ambiguous":
        key = "first_fixed_candidates" if case.fix else "first_bad_candidates"
        cands = ", ".join(str(v) for v in out.get(key) or [])
        return Judgement(verdict="ambiguous", answer=f"one of {cands}",
                         failure=_describe(out.get("first_bad_outcome")))  # fmt: skip
    if status != "found":
        return Judgement(verdict="error", answer=f"status {status}")
    answer, wrong, checks = _MODES[case.mode](case, out)
    unlike = [
        f"{where}: {_describe(got)}, not {_cell(expected.short(), 120)}"
        for expected, got, where in checks
        if not _same(expected, got)
    ]
    verdict = "wrong version" if wrong else "wrong failure" if unlike else "right"
    return Judgement(verdict=verdict, answer=_cell(answer, 160),
                     failure=_describe(checks[0][1]), notes=(*wrong, *unlike))  # fmt: skip


# -- running ----------------------------------------------------------------------------------


def find_interpreter(version: str) -> str:
    """A pyenv interpreter's path for ``version`` (3.10) when there is one, else ``version``."""
    versions = Path.home() / ".pyenv" / "versions"
    if versions.is_dir():
        for candidate in sorted(versions.glob(f"{version}.*"), reverse=True):
            exe = candidate / "bin" / f"python{version}"
            if exe.exists():
                return str(exe)
    return version


def archived(rev: str, into: Path) -> Path:
    """``git archive REV src`` unpacked under ``into``: that revision's package."""
    blob = subprocess.run(["git", "archive", rev, "src"], cwd=ROOT, capture_output=True,
                          check=True).stdout  # fmt: skip
    with tarfile.open(fileobj=BytesIO(blob)) as tf:
        tf.extractall(into, filter="data")
    return into / "src"


@dataclass(frozen=True, slots=True, kw_only=True)
class Revision:
    label: str  # as the tables name it
    src: Path  # put on PYTHONPATH
    meta: str  # its metadata cache's folder under --cache


@dataclass(frozen=True, slots=True, kw_only=True)
class Result:
    case: Case
    revision: str
    judgement: Judgement
    probes: int
    seconds: float
    cache_growth_kib: int | None = None


HEAD = {"run": ["run"], "by-date": ["run", "--by-date"], "diff": ["diff"], "lock": ["lock"]}


def command(case: Case, work: Path, meta: Path, timeout: int) -> list[str]:
    args = list(case.args)
    for name in case.files:
        args = [a.replace("{" + name + "}", str(work / name)) for a in args]
    return [
        sys.executable,
        "-m",
        "envbisect",
        *HEAD[case.mode],
        *args,
        "--python",
        find_interpreter(case.python),
        "--timeout",
        str(timeout),
        "--results",
        str(work / "results"),
        "--cache-dir",
        str(meta),
        "--no-config",
        "--json",
        *(["--", *case.repro] if case.repro else []),
    ]


def _du_kib(path: Path) -> int | None:
    proc = subprocess.run(["du", "-sk", "--dereference-args", str(path)], capture_output=True,
                          text=True, check=False)  # fmt: skip
    return int(proc.stdout.split()[0]) if proc.returncode == 0 and proc.stdout else None


def _communicate(proc: subprocess.Popen[str], limit: float) -> tuple[str, str, bool]:
    try:
        out, err = proc.communicate(timeout=limit)
        return out, err, False
    except subprocess.TimeoutExpired:
        for sig in (signal.SIGTERM, signal.SIGKILL):  # the case's own process group only
            try:
                os.killpg(proc.pid, sig)
            except ProcessLookupError:
                break
            try:
                out, err = proc.communicate(timeout=30)
                return out, err, True
            except subprocess.TimeoutExpired:
                continue
        out, err = proc.communicate()
        return out, err, True


def run_case(case: Case, rev: Revision, opts: argparse.Namespace) -> Result:
    with tempfile.TemporaryDirectory(prefix=f"rw-{case.name}-") as tmp:
        work = Path(tmp)
        for name, text in case.files.items():
            (work / name).write_text(text)
        cmd = command(case, work, opts.cache / rev.meta, opts.timeout)
        env = dict(os.environ, UV_CACHE_DIR=str(opts.cache / "uv"), PYTHONPATH=str(rev.src))
        before = _du_kib(opts.cache / "uv") if case.heavy else None
        started = time.monotonic()
        proc = subprocess.Popen(
            cmd,
            cwd=work,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
        stdout, stderr, timed_out = _communicate(proc, opts.case_timeout)
        seconds = time.monotonic() - started
        growth = None
        if before is not None:
            after = _du_kib(opts.cache / "uv")
            growth = after - before if after is not None else None
        if opts.verbose:
            sys.stderr.write(stderr)
        if opts.save:
            folder = opts.save / re.sub(r"[^\w.-]+", "_", rev.label)
            folder.mkdir(parents=True, exist_ok=True)
            (folder / f"{case.name}.json").write_text(stdout)
            (folder / f"{case.name}.stderr").write_text(stderr)
            (folder / f"{case.name}.cmd").write_text(shlex.join(cmd) + "\n")
        try:
            out: dict[str, Any] = json.loads(stdout)
        except json.JSONDecodeError:
            tail = (stderr.strip().splitlines() or ["no output"])[-1]
            why = f"no answer within --case-timeout {opts.case_timeout} s" if timed_out else tail
            judgement = Judgement(verdict="error", answer=f"exit {proc.returncode}",
                                  notes=(_cell(why, 300),))  # fmt: skip
            return Result(case=case, revision=rev.label, judgement=judgement, probes=0,
                          seconds=seconds, cache_growth_kib=growth)  # fmt: skip
        return Result(case=case, revision=rev.label, judgement=judge(case, out),
                      probes=len(out.get("probes") or []), seconds=seconds,
                      cache_growth_kib=growth)  # fmt: skip


# -- tables -----------------------------------------------------------------------------------


def truth_text(case: Case) -> str:
    if case.mode == "lock":
        return f"{case.package}{case.truth}"
    text = f"{case.package} {case.truth}" + (" (first fixed)" if case.fix else "")
    if case.breakpoints:
        text += f" (+ breakpoint {', '.join(p.version for p in case.breakpoints)})"
    if case.yanked:
        text += f" ({', '.join(case.yanked)} yanked)"
    if case.forced:
        text += f" ({', '.join(case.forced)} forced)"
    return text


def _mode(case: Case) -> str:
    return "run --by-date" if case.mode == "by-date" else case.mode


def _mark(verdict: str) -> str:
    return verdict if verdict == "right" else f"**{verdict}**"


def summary(results: Sequence[Result]) -> str:
    counts = {v: sum(r.judgement.verdict == v for r in results) for v in VERDICTS}
    parts = [f"{n} {v}" for v, n in counts.items() if n and v != "right"]
    return (
        f"{counts['right']}/{len(results)} right" + (f" ({', '.join(parts)})" if parts else "")
        + f"; {sum(r.probes for r in results)} environments built,"
        f" {sum(r.seconds for r in results):.0f} s in all"
    )  # fmt: skip


def table(results: Sequence[Result]) -> str:
    lines = [
        "| case | mode | truth | answer | answer's failure | verdict | probes | s |",
        "|---|---|---|---|---|---|---:|---:|",
    ]
    for r in results:
        j = r.judgement
        lines.append(
            f"| {r.case.name} | {_mode(r.case)} | {_cell(truth_text(r.case))} | {j.answer} |"
            f" {j.failure} | {_mark(j.verdict)} | {r.probes} | {r.seconds:.0f} |"
        )
    lines += ["", summary(results) + f" ({date.today().isoformat()})."]
    notes = [(r.case.name, n) for r in results for n in r.judgement.notes
             if r.judgement.verdict != "right"]  # fmt: skip
    notes += [(r.case.name, f"uv cache grew by {r.cache_growth_kib / 1048576:.1f} GiB")
              for r in results if r.cache_growth_kib is not None]  # fmt: skip
    if notes:
        lines.append("")
        lines += [f"- {name}: {note}" for name, note in notes]
    return "\n".join(lines)


def side_by_side(results: Sequence[Result], labels: Sequence[str]) -> str:
    head = " | ".join(f"{label}: verdict, probes, s" for label in labels)
    lines = [f"| case | {head} |", "|---|" + "---|" * len(labels)]
    by = {(r.case.name, r.revision): r for r in results}
    for name in dict.fromkeys(r.case.name for r in results):
        cells = []
        for label in labels:
            r = by.get((name, label))
            cells.append(f"{_mark(r.judgement.verdict)}, {r.probes}, {r.seconds:.0f}" if r else "-")
        lines.append(f"| {name} | {' | '.join(cells)} |")
    return "\n".join(lines)


def _this_tree() -> str:
    head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT,
                          capture_output=True, text=True, check=False).stdout.strip()  # fmt: skip
    dirty = subprocess.run(["git", "status", "--porcelain", "src"], cwd=ROOT,
                           capture_output=True, text=True, check=False).stdout.strip()  # fmt: skip
    return f"this tree ({head or '?'}{'+changes' if dirty else ''})"


def _list(cases: Sequence[Case]) -> None:
    for c in cases:
        print(f"{c.name}: {c.kind}; {truth_text(c)} (Python {c.python})")
        repro = f" -- {shlex.join(c.repro)}" if c.repro else ""
        print(f"    envbisect {_mode(c)} {shlex.join(c.args)}{repro}")
        print(f"    failure: {c.failure.short()!r}")
        print(f"    range: {c.ends}")
        print(f"    source: {c.source}")
        print(f"    verified by hand: {c.verified}")
        if c.cost:
            print(f"    cost: {c.cost}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--only", action="append", metavar="NAME", help="run this case only")
    parser.add_argument("--list", action="store_true", help="list the cases and their sources")
    parser.add_argument("--check-ranges", action="store_true",
                        help="check that no case's end is its answer, and stop")  # fmt: skip
    parser.add_argument("--against", metavar="REV",
                        help="also run every case with this git revision's src")  # fmt: skip
    parser.add_argument(
        "--cache",
        type=Path,
        default=Path.home() / ".cache" / "envbisect-realworld",
        help="shared cache: uv's under DIR/uv, envbisect's metadata under DIR/meta",
    )
    parser.add_argument("--timeout", type=int, default=120,
                        help="kill a probe after this long (default 120)")  # fmt: skip
    parser.add_argument("--case-timeout", type=float, default=3600,
                        help="give up on a case after this long (default 3600 s)")  # fmt: skip
    parser.add_argument("--save", type=Path, metavar="DIR",
                        help="keep each command, JSON and stderr in DIR/REVISION")  # fmt: skip
    parser.add_argument("-v", "--verbose", action="store_true", help="show envbisect's progress")
    opts = parser.parse_args(argv)
    problems = check_ranges(CASES)
    if problems or opts.check_ranges:
        for p in problems:
            print(f"range: {p}", file=sys.stderr)
        if not problems:
            print(f"{len(CASES)} cases: no end is an answer, every truth lies between its ends")
        return 1 if problems else 0
    cases = list(CASES)
    if opts.only:
        unknown = set(opts.only) - {c.name for c in CASES}
        if unknown:
            parser.error(f"unknown case(s): {', '.join(sorted(unknown))} (see --list)")
        cases = [c for c in CASES if c.name in opts.only]
    if opts.list:
        _list(cases)
        return 0
    opts.cache = opts.cache.absolute()
    revisions = [Revision(label=_this_tree(), src=ROOT / "src", meta="meta")]
    if opts.against:
        src = archived(opts.against, Path(tempfile.mkdtemp(prefix="rw-src-")))
        safe = re.sub(r"[^\w.-]+", "_", opts.against)
        revisions.insert(0, Revision(label=opts.against, src=src, meta=f"meta-{safe}"))
    results: list[Result] = []
    for c in cases:
        for rev in revisions:
            sys.stderr.write(f"realworld: {c.name} [{rev.label}] ...\n")
            sys.stderr.flush()
            r = run_case(c, rev, opts)
            j = r.judgement
            sys.stderr.write(
                f"realworld: {c.name} [{rev.label}]: {j.answer}: {j.verdict} ({r.probes}"
                f" probes, {r.seconds:.0f} s){'; ' + '; '.join(j.notes) if j.notes else ''}\n"
            )
            results.append(r)
    for rev in revisions:
        if len(revisions) > 1:
            print(f"\n### {rev.label}\n")
        print(table([r for r in results if r.revision == rev.label]))
    if len(revisions) > 1:
        print("\n### side by side\n")
        print(side_by_side(results, [rev.label for rev in revisions]))
    mine = [r for r in results if r.revision == revisions[-1].label]
    return 0 if all(r.judgement.verdict == "right" for r in mine) else 1


if __name__ == "__main__":
    sys.exit(main())
