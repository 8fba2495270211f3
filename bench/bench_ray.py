"""Benchmark: probes on a Ray cluster against the local executor, measured side by side.

Run from the repository root with Ray installed (``pip install -e '.[ray]'``):

    python bench/bench_ray.py [--rounds 7]

Everything runs on this machine, on the tests' local index (127.0.0.1) and a Ray cluster on
loopback that the bench starts itself (token authentication on, as a real one should be).

1. Per-probe cost, one probe at a time: a warm environment (one small wheel, hard links from
   uv's cache) built and probed through the session with ``--executor local`` and with
   ``--executor ray`` (one node), alternated; medians and the ratio. The Ray column adds
   shipping the task, Ray's scheduling and the record's way back.
2. A matrix (gridapp x gridlib, 42 cells, ``--full``) on two Ray nodes of one CPU each against
   ``--jobs 2`` locally; medians of the rounds, alternated, and the ratio.
3. A model of the committed datasets x pyarrow matrix (results/datasets-pyarrow: 182 testable
   cells, each cell's measured build + probe seconds) on 1, 8 and 64 nodes of one probe each:
   the drive loop's rounds simulated with those seconds plus the per-task overhead measured in
   part 1, and planning on the controller (serial). Both the full sweep and the default
   strategy (rows walked as the matrix runs them, outcomes from the sweep).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "bench"))

from bench_matrix import GRID  # noqa: E402

from envbisect.core.living.cell import CellState  # noqa: E402
from envbisect.core.results.parts import ProbeRow, RowVerdict  # noqa: E402
from envbisect.env.repro import Repro  # noqa: E402
from envbisect.exec.ray import RayExecutor  # noqa: E402
from envbisect.model import EnvSpec, IndexConfig, Outcome, OutcomeKind  # noqa: E402
from envbisect.modes.living.matrix import load_matrix, run_matrix  # noqa: E402
from envbisect.modes.session import Session  # noqa: E402
from envbisect.strategy.rows import Cell, MatrixRows  # noqa: E402
from support.corpus import build_index  # noqa: E402
from support.options import flat_options  # noqa: E402
from support.raycluster import RayCluster, use_token  # noqa: E402

# Planning on the controller, per cell, warm metadata cache (README: 672 cells in 71.5 s).
PLAN_SECONDS_PER_CELL = 71.5 / 672


def per_probe(work: Path, index_url: str, cluster: RayCluster, rounds: int) -> dict[str, float]:
    script = work / "probe.py"
    script.write_text("import crashy\n")
    repro = Repro.from_file(str(script), work)
    times: dict[str, list[float]] = {"local": [], "ray": []}
    ray = RayExecutor(1, address=cluster.address)  # connected once, as a run connects once
    try:
        for r in range(rounds + 1):  # the first round warms uv's cache and Ray's workers
            for name in times:
                opts = flat_options(repro=repro, indexes=IndexConfig(index_url=index_url),
                                     python=sys.executable, cache_dir=work / "c",
                                     results=work / f"pp-{name}-{r}")  # fmt: skip
                # A fresh store each time: every probe builds its environment.
                with Session(opts, executor=ray if name == "ray" else None) as session:
                    spec = session.env_spec(["crashy==1.0.0"])
                    _ = session.target  # the interpreter's facts: not the probe's cost
                    start = time.perf_counter()
                    session.probe(spec)
                    if r:
                        times[name].append(time.perf_counter() - start)
    finally:
        ray.close()
    return {k: statistics.median(v) for k, v in times.items()}


def matrix_two_nodes(work: Path, index_url: str, rounds: int) -> dict[str, float]:
    (work / "repro.py").write_text("import gridapp\ngridapp.run()\n")
    path = work / "grid.toml"
    path.write_text(GRID.format(python=sys.executable, index=index_url))
    spec = load_matrix(path)
    two = RayCluster()
    two.stop()
    two.start_head(cpus=1)
    two.add_node(cpus=1)
    times: dict[str, list[float]] = {"local --jobs 2": [], "ray, 2 nodes": []}
    try:
        run_matrix(spec, flat_options(results=work / "mx-warm", cache_dir=work / "c"), full=True)
        for r in range(rounds):
            for name in times:
                on_ray = {"executor": "ray", "ray_address": two.address}
                extra = on_ray if "ray" in name else {}
                opts = flat_options(results=work / f"mx-{len(name)}-{r}", cache_dir=work / "c",
                                     jobs=2, **extra)  # fmt: skip
                start = time.perf_counter()
                run_matrix(spec, opts, full=True)
                times[name].append(time.perf_counter() - start)
    finally:
        two.stop()
    return {k: statistics.median(v) for k, v in times.items()}


def model(overhead: float) -> list[tuple[int, float, float, int]]:
    """(nodes, full sweep s, default strategy s, rounds of the default) for the committed
    datasets x pyarrow matrix, from its measured cell times."""
    data = json.loads((ROOT / "results" / "datasets-pyarrow" / "results.json").read_text())
    axes = data["matrix"]["axes"]
    truth = {json.dumps(c["versions"]): c for c in data["cells"]}
    plan = PLAN_SECONDS_PER_CELL * len(truth)
    out = []
    for nodes in (1, 8, 64):
        walls = []
        for full in (True, False):
            rows: dict[str, list[Cell]] = {}
            for key, c in truth.items():
                versions = tuple((a, c["versions"][a]) for a in axes)
                cell = Cell(python="3.11", versions=versions)
                if c["state"] == "unresolvable":
                    cell.state = CellState.UNRESOLVABLE
                else:
                    cell.spec = EnvSpec.build([key], python="model", indexes=IndexConfig())
                rows.setdefault(json.dumps(versions[:-1]), []).append(cell)
            strategy = MatrixRows(list(rows.values()), full=full)
            wall, rounds = plan, 0

            while batch := strategy.next_batch(nodes):
                rounds += 1
                seconds = [float(truth[c.key]["seconds"] or 0.0) for c in batch]
                wall += max(seconds) + overhead
                for c in batch:
                    t = truth[c.key]
                    o = Outcome(kind=OutcomeKind(t["kind"]), signature=str(t["signature"]))
                    row = ProbeRow(version=c.label(), outcome=o, verdict=RowVerdict.NONE,
                                   reused=False, build_seconds=0.0, probe_seconds=0.0,
                                   env_id="")  # fmt: skip
                    strategy.record(c, row)
            walls.append((wall, rounds))
        out.append((nodes, walls[0][0], walls[1][0], walls[1][1]))
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--rounds", type=int, default=7)
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="envbisect-ray-bench-"))
    os.environ.setdefault("UV_CACHE_DIR", str(work / "uv-cache"))
    os.environ["RAY_USAGE_STATS_ENABLED"] = "0"
    use_token(work)
    index = build_index(work / "index")
    cluster = RayCluster()
    cluster.stop()
    cluster.start_head(cpus=2)
    try:
        pp = per_probe(work, index.url, cluster, args.rounds)
    finally:
        cluster.stop()
    mx = matrix_two_nodes(work, index.url, max(1, args.rounds // 2))
    index.stop()
    print(f"# envbisect on Ray ({sys.executable}, {os.cpu_count()} cores, {args.rounds} rounds)\n")
    print("| one warm probe, one at a time | median s |\n|---|---:|")
    for name, s in pp.items():
        print(f"| --executor {name} | {s:.3f} |")
    print(f"| ray / local | {pp['ray'] / pp['local']:.2f}x (+{pp['ray'] - pp['local']:.3f} s) |")
    print("\n| gridapp x gridlib --full (42 cells) | median s |\n|---|---:|")
    for name, s in mx.items():
        print(f"| {name} | {s:.1f} |")
    names = list(mx)
    print(f"| ray / local | {mx[names[1]] / mx[names[0]]:.2f}x |")
    overhead = max(0.0, pp["ray"] - pp["local"])
    print("\n| datasets x pyarrow (182 testable cells), modelled | --full | default strategy | "
          "rounds (default) |\n|---|---:|---:|---:|")  # fmt: skip
    for nodes, full, default, rounds in model(overhead):
        print(f"| {nodes} node(s), one probe each | {full / 60:.1f} min | {default / 60:.1f} min "
              f"| {rounds} |")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
