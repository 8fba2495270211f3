"""Benchmark: the lockfile step of a run (``modes.outputs.lock_entries``), in-process.

Run from the repository root after the first-plan bench (it reads the same cached pages):

    python bench/bench_lock_step.py [--rounds 5] [--json]

The installed set is the first plan of ``envbisect run --dry-run --json`` (default: LLaMA-Factory
0.9.5's pins plus datasets 4.0.0, 125 distributions). The index client reads their project
pages first and groups them by version, untimed, as the run's planning has done by the time
it writes its lockfile; then, side by
side in one process, medians of:

- ``lock_entries``: what the run does now (only the rows of each installed version);
- every file filtered again: what it did before (``project_files(name).files`` walked whole,
  every filename parsed, on a client whose pages were read but never parsed into files).
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

from benchfig import Figure, Side, emit

from envbisect.core.candidates import file_version
from envbisect.env.interp import locate
from envbisect.env.uv import Uv, find_uv
from envbisect.index.client import IndexClient, default_cache_dir
from envbisect.model import IndexConfig, InstalledDist
from envbisect.modes.outputs import lock_entries

BIN = Path(sys.executable).parent


def plan(pins: str, python: str) -> list[InstalledDist]:
    with tempfile.TemporaryDirectory(prefix="envbisect-lock-step-") as results:
        out = subprocess.run([str(BIN / "envbisect"), "run", "--package", "datasets", "--pins",
                              pins, "--python", python, "--good", "4.0.0", "--bad", "4.1.0",
                              "--dry-run", "--json", "--no-config", "--results", results, "--",
                              "true"], capture_output=True, text=True,
                             check=True).stdout  # fmt: skip
    reqs = json.loads(out)["plans"][0]["requirements"]
    return [InstalledDist(name=r.split("==")[0], version=r.split("==")[1]) for r in reqs]


def main() -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--pins", default="llamafactory==0.9.5")
    ap.add_argument("--python", default=sys.executable)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--json", action="store_true", help="print the figure as JSON")
    args = ap.parse_args()
    installed = tuple(plan(args.pins, args.python))
    target = locate(Uv(binary=find_uv(), offline=False), args.python, None)[1]
    supported = frozenset(target.supported_tags())
    find_uv()

    def fresh() -> IndexClient:
        client = IndexClient(IndexConfig(), cache_dir=default_cache_dir(), offline=True)
        # The run read these pages and grouped them by version while it planned.
        for pf in client.project_files_many(d.name for d in installed).values():
            pf.versions()
        return client

    def now() -> float:
        client = fresh()
        start = time.perf_counter()
        lock_entries(installed, target, client, allow_sdist=False)
        return time.perf_counter() - start

    def before() -> float:
        client = fresh()
        start = time.perf_counter()
        for d in installed:
            want = file_version(f"x-{d.version}.tar.gz")
            for f in client.project_files(d.name).files:
                if file_version(f.filename) != want or f.yanked:
                    continue
                if f.is_wheel:
                    target.wheel_compatible(f.filename, supported)
        return time.perf_counter() - start

    times: dict[str, list[float]] = {"lock_entries (one version's rows)": [],
                                     "every file filtered again": []}  # fmt: skip
    for _ in range(args.rounds):
        times["lock_entries (one version's rows)"].append(now())
        times["every file filtered again"].append(before())
    med = {k: statistics.median(v) for k, v in times.items()}
    a, b = med["lock_entries (one version's rows)"], med["every file filtered again"]
    fig = Figure(
        what=f"the lockfile step, {len(installed)} distributions ({args.pins}'s first plan), "
        "in-process",
        a=Side(label="lock_entries: one version's rows", value=a,
               command="modes.outputs.lock_entries(installed, target, client)"),
        b=Side(label="every file filtered again (the old way)", value=b,
               command="project_files(name).files walked whole, every filename parsed"),
    )  # fmt: skip
    if args.json:
        emit("bench_lock_step", [fig], rounds=args.rounds)
        return 0
    print(f"# the lockfile step, {len(installed)} installed distributions, {args.rounds} rounds\n")
    print("| | median s |\n|---|---:|")
    for k, sec in med.items():
        print(f"| {k} | {sec:.3f} |")
    print(f"\nnow / before: {fig.comparison()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
