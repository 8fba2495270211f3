"""Benchmark: probes spent on a range with two different failures, against the stated bound,
and (``--against REV``) side by side with another revision of envbisect in the same run.

Run from the repository root: python bench/bench_breakpoints.py [--against REV]

The case is the tests' local index (tests/support/corpus.py ``_two_family``): twoapp 1.0.0
pinned, twolib 1.3.0 removes the a() it calls, 1.8.0 the b() it calls first, twonoise
releases daily (about 50 release moments). The newest environment fails on b, the middle of
the window on a. Three real CLI runs per revision, each with a fresh store (real uv
environments, the real repro): ``run --package twolib``, ``run --by-date``, ``lock``. Printed:
the answer, probes built and run (not answers from the store), and the bound
k·(ceil(log2 n) + 1) + 2 for k = 2 failures over n candidates (the lock adds its proof).

``--against REV`` runs the same three commands with ``git archive REV src`` on PYTHONPATH
(for instance the last commit before the segmented search, to see what it cost before).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from revision import archived  # noqa: E402

from support.corpus import EPOCH, build_index  # noqa: E402


def commands(url: str, work: Path) -> dict[str, list[str]]:
    rep = work / "repro.py"
    rep.write_text("import twoapp\ntwoapp.run()\n")
    common = ["--index-url", url, "--no-config", "--repro", str(rep), "--json", "--timeout", "60"]
    good = (EPOCH + timedelta(hours=12)).strftime("%Y-%m-%dT%H:%M:%SZ")
    bad = (EPOCH + timedelta(days=40)).strftime("%Y-%m-%dT%H:%M:%SZ")
    return {
        "run --package twolib": ["run", "--package", "twolib", "--with", "twoapp==1.0.0",
                                 "--with", "twonoise==0.0.0", *common],
        "run --by-date": ["run", "--by-date", "--good", good, "--bad", bad,
                          "--with", "twoapp==1.0.0", *common],
        "lock": ["lock", "--with", "twoapp==1.0.0", *common],
    }  # fmt: skip


def answer(name: str, data: dict[str, Any]) -> str:
    if name == "lock":
        held = [f"{c['package']}{c['specifier']}" for c in data.get("constraints", [])]
        return f"{data.get('status')}: " + (", ".join(held) or "nothing held")
    if data.get("status") == "ambiguous":
        return f"ambiguous: one of {len(data.get('first_bad_candidates') or [])}"
    first = str(data.get("first_bad"))
    if name == "run --by-date":
        culprits = [f"{c['package']} {c['bad_version']}" for c in data.get("culprits", [])]
        first = ", ".join(culprits) or first
    points = len(data.get("breakpoints") or [])
    return f"{data.get('status')}: {first}" + (f" ({points} breakpoints)" if points else "")


Row = tuple[str, str, str, int, int, float]  # revision, command, answer, probes, n, seconds


def run_all(label: str, url: str, src: Path, out: list[Row]) -> None:
    env = dict(os.environ, PYTHONPATH=str(src))
    for name, args in commands(url, Path(tempfile.mkdtemp(prefix="bench-bp-"))).items():
        work = Path(tempfile.mkdtemp(prefix="bench-bp-run-"))
        t = time.perf_counter()
        proc = subprocess.run(
            [sys.executable, "-m", "envbisect", *args, "--results", str(work / "results"),
             "--cache-dir", str(work / "cache")],
            capture_output=True, text=True, cwd=work, env=env, check=False,
        )  # fmt: skip
        seconds = time.perf_counter() - t
        try:
            data = json.loads(proc.stdout)
        except json.JSONDecodeError:
            tail = (proc.stderr.strip().splitlines() or ["no output"])[-1]
            out.append((label, name, f"exit {proc.returncode}: {tail}", 0, 0, seconds))
            continue
        probes = len(data.get("probes") or [])
        n = int(data.get("candidates") or 0) or _moments(proc.stderr)
        out.append((label, name, answer(name, data), probes, n, seconds))


def _moments(stderr: str) -> int:
    for line in stderr.splitlines():
        if "release moment(s)" in line:
            return int(line.split("envbisect: ")[1].split(" ")[0]) + 1
    return 0


def bound(n: int, k: int = 2) -> int:
    return k * (math.ceil(math.log2(max(n, 2))) + 1) + 2


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--against", metavar="REV", help="also run this git revision's src")
    opts = parser.parse_args()
    index = build_index(Path(tempfile.mkdtemp(prefix="bench-bp-index-")))
    os.environ.setdefault("UV_CACHE_DIR", tempfile.mkdtemp(prefix="bench-bp-uv-"))
    rows: list[Row] = []
    try:
        if opts.against:
            run_all(opts.against, index.url, archived(opts.against, Path(tempfile.mkdtemp())),
                    rows)  # fmt: skip
        run_all("this tree", index.url, ROOT / "src", rows)
    finally:
        index.stop()
    print("| revision | command | answer | probes | candidates n | bound 2(⌈log2 n⌉+1)+2 | s |")
    print("|---|---|---|---:|---:|---:|---:|")
    for label, name, ans, probes, n, s in rows:
        print(f"| {label} | {name} | {ans} | {probes} | {n} | {bound(n)} | {s:.0f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
