"""Benchmark: probes through a Slurm cluster against the local executor, side by side.

Run from the repository root as root, with Debian's slurm-wlm installed (apt-get install
slurm-wlm; the bench starts its own two-node cluster on 127.0.0.1, as the tests do):

    python bench/bench_slurm.py [--rounds 7]

Everything runs on this machine, on the tests' local index (127.0.0.1).

1. Per-probe cost, one probe at a time: a warm environment (one small wheel, hard links from
   uv's cache) built and probed through the session with ``--executor local`` and with
   ``--executor slurm``, alternated; medians and the ratio. The Slurm column adds sbatch,
   Slurm's scheduling and job start, the task and record through the shared folder, and the
   controller's polling (exec/slurm.py: POLL).
2. A matrix (gridapp x gridlib, 42 cells, ``--full``) with ``--jobs 2``: local threads against
   Slurm jobs on two nodes; medians of the rounds, alternated, and the ratio.
"""

from __future__ import annotations

import argparse
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

from envbisect.env.repro import Repro  # noqa: E402
from envbisect.exec.slurm import SlurmExecutor  # noqa: E402
from envbisect.model import IndexConfig  # noqa: E402
from envbisect.modes.living.matrix import load_matrix, run_matrix  # noqa: E402
from envbisect.modes.session import Session  # noqa: E402
from support.corpus import build_index  # noqa: E402
from support.options import flat_options  # noqa: E402
from support.slurmcluster import SlurmCluster, missing  # noqa: E402


def per_probe(work: Path, index_url: str, rounds: int) -> dict[str, float]:
    script = work / "probe.py"
    script.write_text("import crashy\n")
    repro = Repro.from_file(str(script), work)
    times: dict[str, list[float]] = {"local": [], "slurm": []}
    for r in range(rounds + 1):  # the first round warms uv's cache
        for name in times:
            opts = flat_options(repro=repro, indexes=IndexConfig(index_url=index_url),
                                 python=sys.executable, cache_dir=work / "c",
                                 results=work / f"pp-{name}-{r}")  # fmt: skip
            slurm = SlurmExecutor(1, folder=work / "jobs") if name == "slurm" else None
            # A fresh store each time: every probe builds its environment.
            with Session(opts, executor=slurm) as session:
                spec = session.env_spec(["crashy==1.0.0"])
                _ = session.target  # the interpreter's facts: not the probe's cost
                start = time.perf_counter()
                session.probe(spec)
                if r:
                    times[name].append(time.perf_counter() - start)
            if slurm is not None:
                slurm.close()
    return {k: statistics.median(v) for k, v in times.items()}


def matrix(work: Path, index_url: str, rounds: int) -> dict[str, float]:
    (work / "repro.py").write_text("import gridapp\ngridapp.run()\n")
    path = work / "grid.toml"
    path.write_text(GRID.format(python=sys.executable, index=index_url))
    spec = load_matrix(path)
    times: dict[str, list[float]] = {"local --jobs 2": [], "slurm --jobs 2": []}
    run_matrix(spec, flat_options(results=work / "mx-warm", cache_dir=work / "c"), full=True)
    for r in range(rounds):
        for i, name in enumerate(times):
            extra = {"executor": "slurm"} if "slurm" in name else {}
            opts = flat_options(results=work / f"mx-{i}-{r}", cache_dir=work / "c",
                                 jobs=2, **extra)  # fmt: skip
            start = time.perf_counter()
            run_matrix(spec, opts, full=True)
            times[name].append(time.perf_counter() - start)
    return {k: statistics.median(v) for k, v in times.items()}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=7)
    args = ap.parse_args()
    if missing():
        print(f"cannot run: {missing()}", file=sys.stderr)
        return 3
    work = Path(tempfile.mkdtemp(prefix="envbisect-bench-slurm-"))
    index = build_index(work / "index")
    cluster = SlurmCluster(work / "slurm")
    try:
        cluster.start({"node1": 0, "node2": 0})
        os.environ.update(cluster.env)
        pp = per_probe(work, index.url, args.rounds)
        mx = matrix(work, index.url, max(1, args.rounds // 2))
    finally:
        cluster.stop()
        index.stop()
    print(
        f"# envbisect on Slurm ({sys.executable}, {os.cpu_count()} cores, {args.rounds} rounds)\n"
    )
    print("| one warm probe, one at a time | median s |\n|---|---:|")
    for name, s in pp.items():
        print(f"| --executor {name} | {s:.3f} |")
    extra = pp["slurm"] - pp["local"]
    print(f"| slurm / local | {pp['slurm'] / pp['local']:.2f}x (+{extra:.3f} s) |")
    print("\n| gridapp x gridlib --full (42 cells) | median s |\n|---|---:|")
    for name, s in mx.items():
        print(f"| {name} | {s:.1f} |")
    names = list(mx)
    print(f"| slurm / local | {mx[names[1]] / mx[names[0]]:.2f}x |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
