"""Scorer: ``envbisect why`` (or ``check``) against real failures whose fix the maintainers
confirmed.

    python bench/why_corpus.py [--envbisect .venv/bin/envbisect] [--cache-dir DIR | --warm]
                               [--offline] [--only ID] [--cases ABCD|R]
                               [--command why|check-online|check]

The corpus is tests/data/failures/cases-*.toml: each case a failure's text as posted (its
issue cited), its kind, and every fix the maintainers accept (``pkg<V``: hold back below the
release that broke it; ``pkg>=V``: move up to the first that works); ``[]`` for a failure
whose cause is not a version. Each case runs as a user runs it, the whole process, ``--json``.

A case is **right** when a proposed fix is one of the accepted ones (same package, same
direction, same version) or, for a case that is not about a version, when no version fix is
proposed; **wrong** when fixes are proposed and none is accepted (on a clean case: any fix);
**missed** when nothing is proposed. Printed: one line per case, the counts, the median and
slowest seconds and the median count of index requests. By default every case gets an empty
cache of its own (the cold figure); ``--warm`` runs each case twice on one cache and times the
second run; ``--cache-dir`` keeps one cache for all. Nothing is asserted: the figures go in
docs/explanation/why.md with the date and the machine.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib
from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "tests" / "data" / "failures"


def cases(sets: str = "") -> list[dict[str, Any]]:
    """Every case, or those of the sets named (``ABCD``: the failures of envbisect why's
    corpus, tracebacks; ``R``: whole reports as people write them, for envbisect check)."""
    out = []
    for path in sorted(CORPUS.glob("cases-*.toml")):
        if sets and path.stem.removeprefix("cases-") not in sets:
            continue
        out += tomllib.loads(path.read_text(encoding="utf-8"))["case"]
    return out


def _norm(req: str) -> list[tuple[str, str, Version]]:
    """Each bound of a fix (``trl>=0.8.0,<0.13.0`` holds two: either may be the accepted
    one)."""
    try:
        r = Requirement(req)
    except InvalidRequirement:
        return []
    return [(canonicalize_name(r.name), s.operator, Version(s.version)) for s in r.specifier]


_RELEASES: dict[str, list[tuple[Version, bool]]] = {}


def releases(name: str) -> list[tuple[Version, bool]]:
    """Every version of ``name`` on PyPI with whether pip would pick it (not yanked, not a
    pre-release): two fixes that let pip pick the same releases are the same fix."""
    if name not in _RELEASES:
        from envbisect.index.client import IndexClient
        from envbisect.model import IndexConfig

        with IndexClient(IndexConfig()) as client:
            pf = client.project_files(name)
            _RELEASES[name] = sorted(
                (v, not v.is_prerelease and any(not f.yanked for f in pf.files_of(v)))
                for v in pf.versions()
            )
    return _RELEASES[name]


def same_fix(a: tuple[str, str, Version], b: tuple[str, str, Version]) -> bool:
    """``a`` and ``b`` name one package, one direction, and versions with no release pip
    would pick between them (``transformers>=4.46.1`` is ``>=4.46.0`` where 4.46.0 is
    yanked)."""
    if a[:2] != b[:2]:
        return False
    if a[2] == b[2]:
        return True
    lo, hi = sorted((a[2], b[2]))
    return not any(picked and lo <= v < hi for v, picked in releases(a[0]))


def judge(case: dict[str, Any], proposed: list[str]) -> str:
    expected = [n for f in case["fixes"] for n in _norm(f)]
    got = [n for f in proposed for n in _norm(f)]
    if not expected:
        return "wrong" if got else "right"
    if any(same_fix(g, e) for g in got for e in expected):
        return "right"
    return "wrong" if got else "missed"


def proposed_fixes(answer: dict[str, Any]) -> list[str]:
    """The fixes of a ``why --json`` or a ``check --json`` answer, as requirements."""
    out = []
    for f in answer.get("findings", []):
        for fix in f.get("fixes", []) or []:
            if isinstance(fix, dict):  # why's: a requirement each
                out.append(fix["requirement"])
        lines = [x for x in f.get("fixes") or [] if isinstance(x, str)]
        if not lines and isinstance(f.get("fix"), str):
            lines = [f["fix"]]
        for line in lines:  # check's: install lines, the forward one first
            if isinstance(line, str):
                out += [w.strip("'\"") for w in line.split()[2:] if not w.startswith("-")]
    return out


def run_case(
    exe: str, case: dict[str, Any], command: str, cache: Path, offline: bool
) -> tuple[dict[str, Any], float]:
    text = CORPUS / case["text"]
    argv = (
        [exe, "check", str(text), "--json"]
        if command.startswith("check")
        else [exe, "why", str(text), "--json"]
    )
    if command == "check-online":
        argv.append("--online")
    if command != "check":
        argv += ["--cache-dir", str(cache)]
        if offline:
            argv.append("--offline")
        if case.get("python") and command == "why":
            argv += ["--python", str(case["python"])]
    start = time.perf_counter()
    proc = subprocess.run(argv, capture_output=True, text=True, check=False, cwd=ROOT)
    took = time.perf_counter() - start
    if proc.returncode not in (0, 1):
        last = (proc.stderr.strip().splitlines() or ["?"])[-1]
        return {"error": f"exit {proc.returncode}: {last}"}, took
    try:
        return json.loads(proc.stdout), took
    except ValueError:
        last = (proc.stderr.strip().splitlines() or ["?"])[-1]
        return {"error": f"exit {proc.returncode}, no JSON: {last}"}, took


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    ap.add_argument("--envbisect", default=str(ROOT / ".venv" / "bin" / "envbisect"))
    ap.add_argument("--cache-dir", type=Path)
    ap.add_argument("--warm", action="store_true", help="time a second run on the same cache")
    ap.add_argument("--offline", action="store_true")
    ap.add_argument("--only", action="append", default=[])
    ap.add_argument("--cases", default="", help="the sets to run (ABCD, R): all by default")
    ap.add_argument("--command", choices=("why", "check", "check-online"), default="why")
    args = ap.parse_args()
    counts = {"right": 0, "wrong": 0, "missed": 0}
    clean_wrong = 0
    seconds, requests = [], []
    with tempfile.TemporaryDirectory(prefix="envbisect-why-") as tmp:
        for case in cases(args.cases):
            if args.only and not any(o in case["id"] for o in args.only):
                continue
            cache = args.cache_dir or Path(tmp) / case["id"]
            answer, took = run_case(args.envbisect, case, args.command, cache, args.offline)
            if args.warm:
                answer, took = run_case(args.envbisect, case, args.command, cache, args.offline)
            fixes = proposed_fixes(answer)
            verdict = judge(case, fixes) if "error" not in answer else "missed"
            counts[verdict] += 1
            clean_wrong += verdict == "wrong" and not case["fixes"]
            seconds.append(took)
            requests.append(int(answer.get("requests", 0)))
            said = answer.get("error") or ", ".join(fixes) or "no fix"
            print(
                f"{verdict:<6} {took:6.1f} s {answer.get('requests', 0):4} req  "
                f"{case['id']:<48} {said}  (accepted: {', '.join(case['fixes']) or 'none'})",
                flush=True,
            )
    total = sum(counts.values())
    if not total:
        print("no case ran", file=sys.stderr)
        return 2
    print(
        f"\n{total} cases: right {counts['right']} ({100 * counts['right'] / total:.0f}%), "
        f"wrong {counts['wrong']} (on a clean case: {clean_wrong}), missed {counts['missed']}"
    )
    print(
        f"seconds per case: median {statistics.median(seconds):.2f}, slowest "
        f"{max(seconds):.2f}; index requests per case: median "
        f"{statistics.median(requests):.0f}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
