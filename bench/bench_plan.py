"""Benchmark: planning cost, with a cold and a warm metadata cache (real PyPI).

Run from the repository root: ``python bench/bench_plan.py`` (needs PyPI). Prints:
1. Planning every candidate of one package under a project's pins (default: datasets under
   llamafactory==0.9.5): wall time and metadata bytes fetched, cold cache then warm cache.
2. A ~1,000-cell matrix (the package's candidates x another package's versions), warm cache:
   cells per second, and how many were consistent.
Medians are not needed here: one pass plans hundreds of environments; the cold/warm ratio is
the figure to quote.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

from packaging.requirements import Requirement

from envbisect.core.candidates import build_candidates
from envbisect.core.plan import MatchCache, Plan, PlanTarget, Policy
from envbisect.core.resolve import plan
from envbisect.env.interp import find_python, locate
from envbisect.env.pinsource import load_pins
from envbisect.env.uv import Uv, find_uv
from envbisect.index.client import IndexClient
from envbisect.index.source import IndexMetadataSource
from envbisect.model import IndexConfig


def plan_all(
    client: IndexClient, target_python: str, pins_spec: str, package: str, other: str, cells: int
) -> None:
    target = locate(Uv(binary=find_uv(), offline=False), target_python, None)[1]
    env = target.marker_environment()
    pins = load_pins(pins_spec, cwd=Path.cwd(), fetch_metadata=client.metadata_for)
    roots = [p.requirement for p in pins.applicable(env) if p.name not in (package, other)]
    spec = pins.specifier_for(package, env)
    source = IndexMetadataSource(client, target)
    cands = [
        c
        for c in build_candidates(client.project_files(package).files, target).candidates
        if c.installable and spec.contains(c.version)
    ]
    ptarget = PlanTarget(markers=env, python_version=target.python_version)
    cache: MatchCache = {}
    return_times = []
    ok = 0
    for c in cands:
        start = time.perf_counter()
        result = plan([*roots, Requirement(f"{package}=={c.version}")], source, ptarget,
                      policy=Policy.LATEST, cache=cache)  # fmt: skip
        return_times.append(time.perf_counter() - start)
        ok += isinstance(result, Plan)
    median_ms = statistics.median(return_times) * 1000
    stats = client.stats
    print(f"  {len(cands)} candidates of {package} in {spec}; {ok} consistent; "
          f"total {sum(return_times):.1f} s, median {median_ms:.0f} ms per plan; "
          f"{stats.requests} requests, {stats.bytes_fetched / 1e6:.1f} MB fetched, "
          f"{stats.cache_hits} cache hits")  # fmt: skip
    if not cells:
        return
    others = [
        c.version
        for c in build_candidates(client.project_files(other).files, target).candidates
        if c.installable
    ]
    per_row = max(1, cells // max(1, len(cands)))
    others = others[-per_row:]
    start = time.perf_counter()
    n = good = 0
    for c in cands:
        for o in others:
            result = plan(
                [*roots, Requirement(f"{package}=={c.version}"), Requirement(f"{other}=={o}")],
                source,
                ptarget,
                policy=Policy.LATEST,
                cache=cache,
            )
            n += 1
            good += isinstance(result, Plan)
    wall = time.perf_counter() - start
    print(f"  matrix {len(cands)} x {len(others)} = {n} cells ({package} x {other}): {wall:.1f} s, "
          f"{n / wall:.0f} cells/s, {good} consistent, {n - good} unresolvable; "
          f"{client.stats.bytes_fetched / 1e6:.1f} MB fetched in all")  # fmt: skip


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--pins", default="llamafactory==0.9.5")
    ap.add_argument("--package", default="datasets")
    ap.add_argument("--other", default="pyarrow")
    ap.add_argument("--cells", type=int, default=1000)
    ap.add_argument("--python", default="3.11")
    args = ap.parse_args()
    python = find_python(Uv(binary=find_uv(), offline=False), args.python)
    cache = Path(tempfile.mkdtemp(prefix="envbisect-plan-bench-"))
    try:
        for label in ("cold cache", "warm cache"):
            print(f"{label}:")
            with IndexClient(IndexConfig(), cache_dir=cache) as client:
                plan_all(client, python, args.pins, args.package, args.other,
                         args.cells if label == "warm cache" else 0)  # fmt: skip
    finally:
        shutil.rmtree(cache, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
