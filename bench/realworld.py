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
realworld_judge.py decides the verdicts.

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
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))

from realworld_cases import CASES as NEW_CASES  # noqa: E402
from realworld_cases import Case  # noqa: E402
from realworld_judge import VERDICTS, Judgement, cell, check_ranges, judge  # noqa: E402
from realworld_llamafactory import CASES as LF_CASES  # noqa: E402
from realworld_simple import CASES as SIMPLE_CASES  # noqa: E402
from revision import archived  # noqa: E402

CASES: tuple[Case, ...] = SIMPLE_CASES + NEW_CASES + LF_CASES


def torch_wheels() -> str:
    """The folder of CPU torch wheels the LLaMA-Factory cases read (``{wheels}`` in their
    arguments): ENVBISECT_TORCH_WHEELS, else pip's configured find-links folder."""
    folder = os.environ.get("ENVBISECT_TORCH_WHEELS", "").strip()
    if not folder:
        got = subprocess.run([sys.executable, "-m", "pip", "config", "get", "global.find-links"],
                             capture_output=True, text=True, check=False)  # fmt: skip
        folder = got.stdout.strip().split()[0] if got.returncode == 0 and got.stdout.strip() else ""
    if not folder:
        raise SystemExit(
            "the LLaMA-Factory cases need a folder holding a CPU build of torch 2.13.0 for "
            "CPython 3.11: set ENVBISECT_TORCH_WHEELS (or pip's global.find-links)"
        )
    return folder


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
    if any("{wheels}" in a for a in args):
        args = [a.replace("{wheels}", torch_wheels()) for a in args]
    for name in case.files:
        args = [a.replace("{" + name + "}", str(work / name)) for a in args]
    return [
        sys.executable,
        "-m",
        "envbisect",
        *HEAD[case.mode],
        *args,
        "--no-config",  # the user's index settings set aside: PyPI alone, on any machine
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


@dataclass(frozen=True, slots=True, kw_only=True)
class Ran:
    """What one command did: its stdout (the JSON), stderr, exit status and time."""

    stdout: str
    stderr: str
    returncode: int | None
    timed_out: bool
    seconds: float
    cache_growth_kib: int | None = None


def run_case(case: Case, rev: Revision, opts: argparse.Namespace) -> Ran:
    with tempfile.TemporaryDirectory(prefix=f"rw-{case.name}-") as tmp:
        work = Path(tmp)
        for name, text in case.files.items():
            (work / name).write_text(text)
        cmd = command(case, work, opts.cache / rev.meta, opts.timeout)
        env = dict(os.environ, UV_CACHE_DIR=str(opts.cache / "uv"), PYTHONPATH=str(rev.src))
        before = _du_kib(opts.cache / "uv") if case.heavy else None
        started = time.monotonic()
        proc = subprocess.Popen(cmd, cwd=work, env=env, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True,
                                start_new_session=True)  # fmt: skip
        stdout, stderr, timed_out = _communicate(proc, opts.case_timeout)
        seconds = time.monotonic() - started
        after = _du_kib(opts.cache / "uv") if before is not None else None
        growth = after - before if after is not None and before is not None else None
        ran = Ran(stdout=stdout, stderr=stderr, returncode=proc.returncode, timed_out=timed_out,
                  seconds=seconds, cache_growth_kib=growth)  # fmt: skip
        if opts.verbose:
            sys.stderr.write(stderr)
        if opts.save:
            folder = _folder(opts.save, rev.label)
            folder.mkdir(parents=True, exist_ok=True)
            (folder / f"{case.name}.json").write_text(stdout)
            (folder / f"{case.name}.stderr").write_text(stderr)
            (folder / f"{case.name}.cmd").write_text(shlex.join(cmd) + "\n")
            run = {"returncode": ran.returncode, "timed_out": timed_out, "seconds": seconds,
                   "cache_growth_kib": growth}  # fmt: skip
            (folder / f"{case.name}.run.json").write_text(json.dumps(run) + "\n")
        return ran


def _folder(save: Path, label: str) -> Path:
    return save / re.sub(r"[^\w.-]+", "_", label)


def result_of(case: Case, revision: str, ran: Ran, case_timeout: float) -> Result:
    """The judged result of one command (run now, or read back with --rejudge)."""
    try:
        out: dict[str, Any] = json.loads(ran.stdout)
    except json.JSONDecodeError:
        tail = (ran.stderr.strip().splitlines() or ["no output"])[-1]
        why = f"no answer within --case-timeout {case_timeout} s" if ran.timed_out else tail
        judgement = Judgement(verdict="error", answer=f"exit {ran.returncode}",
                              notes=(cell(why, 300),))  # fmt: skip
        return Result(case=case, revision=revision, judgement=judgement, probes=0,
                      seconds=ran.seconds, cache_growth_kib=ran.cache_growth_kib)  # fmt: skip
    return Result(case=case, revision=revision, judgement=judge(case, out),
                  probes=len(out.get("probes") or []), seconds=ran.seconds,
                  cache_growth_kib=ran.cache_growth_kib)  # fmt: skip


def rejudge(save: Path, cases: Sequence[Case]) -> tuple[list[str], list[Result]]:
    """The revisions and results a --save folder holds, judged again (no command runs)."""
    labels = json.loads((save / "revisions.json").read_text())
    results = []
    for label in labels:
        folder = _folder(save, label)
        for c in cases:
            run_file = folder / f"{c.name}.run.json"
            if not run_file.exists():
                continue
            run = json.loads(run_file.read_text())
            ran = Ran(stdout=(folder / f"{c.name}.json").read_text(),
                      stderr=(folder / f"{c.name}.stderr").read_text(),
                      returncode=run["returncode"], timed_out=run["timed_out"],
                      seconds=run["seconds"],
                      cache_growth_kib=run["cache_growth_kib"])  # fmt: skip
            results.append(result_of(c, label, ran, 0))
    return labels, results


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
            f"| {r.case.name} | {_mode(r.case)} | {cell(truth_text(r.case))} | {j.answer} |"
            f" {j.failure} | {_mark(j.verdict)} | {r.probes} | {r.seconds:.0f} |"
        )
    lines += ["", summary(results) + f" ({date.today().isoformat()})."]
    notes = [(r.case.name, n) for r in results for n in r.judgement.notes
             if r.judgement.verdict != "right"]  # fmt: skip
    for r in results:
        if r.cache_growth_kib is not None:
            grew = f"uv cache grew by {r.cache_growth_kib / 1048576:.1f} GiB during the case"
            notes.append((r.case.name, f"{grew}; {r.case.cost}"))
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


def _print(results: Sequence[Result], labels: Sequence[str]) -> None:
    for label in labels:
        if len(labels) > 1:
            print(f"\n### {label}\n")
        print(table([r for r in results if r.revision == label]))
    if len(labels) > 1:
        print("\n### side by side\n")
        print(side_by_side(results, labels))


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
    parser.add_argument("--rejudge", type=Path, metavar="DIR",
                        help="judge a --save folder again (run nothing)")  # fmt: skip
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
    if opts.rejudge:
        if not (opts.rejudge / "revisions.json").exists():
            parser.error(f"{opts.rejudge} is not a --save folder (no revisions.json)")
        saved_labels, saved = rejudge(opts.rejudge, cases)
        _print(saved, saved_labels)
        return 0 if all(r.judgement.verdict == "right" for r in saved
                        if r.revision == saved_labels[-1]) else 1  # fmt: skip
    opts.cache = opts.cache.absolute()
    revisions = [Revision(label=_this_tree(), src=ROOT / "src", meta="meta")]
    if opts.against:
        src = archived(opts.against, Path(tempfile.mkdtemp(prefix="rw-src-")))
        safe = re.sub(r"[^\w.-]+", "_", opts.against)
        revisions.insert(0, Revision(label=opts.against, src=src, meta=f"meta-{safe}"))
    labels = [rev.label for rev in revisions]
    if opts.save:
        opts.save.mkdir(parents=True, exist_ok=True)
        (opts.save / "revisions.json").write_text(json.dumps(labels) + "\n")
    results: list[Result] = []
    for c in cases:
        for rev in revisions:
            sys.stderr.write(f"realworld: {c.name} [{rev.label}] ...\n")
            sys.stderr.flush()
            r = result_of(c, rev.label, run_case(c, rev, opts), opts.case_timeout)
            j = r.judgement
            sys.stderr.write(
                f"realworld: {c.name} [{rev.label}]: {j.answer}: {j.verdict} ({r.probes}"
                f" probes, {r.seconds:.0f} s){'; ' + '; '.join(j.notes) if j.notes else ''}\n"
            )
            results.append(r)
    _print(results, labels)
    mine = [r for r in results if r.revision == labels[-1]]
    return 0 if all(r.judgement.verdict == "right" for r in mine) else 1


if __name__ == "__main__":
    sys.exit(main())
