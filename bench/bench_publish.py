"""Benchmark: ``envbisect publish --offline`` on a fresh clone's tables, the whole process.

    python bench/bench_publish.py [--envbisect .venv/bin/envbisect] [--rounds 5] [--record]

A copy of matrices/ and results/ in a temporary folder (no store: a fresh clone's), then
``ENVBISECT publish --offline --no-config`` there ROUNDS times (wall time, start to exit): the
pages, pictures and lockfiles of every table made again from the published results.json. The
first run is left out (bytecode, the disk cache). Nothing is asserted; ``--record`` keeps the
median in bench/last.json (bench/lastrun.py), where docs/how-to/matrices.md cites it.
"""

from __future__ import annotations

import argparse
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from lastrun import record

ROOT = Path(__file__).resolve().parent.parent


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    ap.add_argument("--envbisect", default=str(ROOT / ".venv" / "bin" / "envbisect"))
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--record", action="store_true", help="keep the figure in bench/last.json")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        shutil.copytree(ROOT / "matrices", work / "matrices")
        shutil.copytree(ROOT / "results", work / "results")
        tables = len(list((work / "results").glob("*/results.json")))
        argv = [args.envbisect, "publish", "--offline", "--no-config"]
        seconds = []
        for i in range(args.rounds + 1):
            start = time.perf_counter()
            proc = subprocess.run(argv, capture_output=True, text=True, cwd=work)
            if i:  # the first warms the disk cache and writes bytecode
                seconds.append(time.perf_counter() - start)
            if proc.returncode != 0:
                raise SystemExit(f"publish: exit {proc.returncode}: {proc.stderr[-2000:]}")
    median = statistics.median(seconds)
    print(f"publish --offline, {tables} tables: median {median:.2f} s, "
          f"min {min(seconds):.2f}, max {max(seconds):.2f}")  # fmt: skip
    if args.record:
        shown = [a for a in sys.argv[1:] if a != "--envbisect" and not a.endswith("envbisect")]
        record(
            {"publish.offline": f"{median:.1f} s", "publish.tables": str(tables)},
            shlex.join(["python", "bench/bench_publish.py", *shown]),
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
