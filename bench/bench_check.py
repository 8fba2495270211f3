"""Benchmark: how long ``envbisect check`` takes, the whole process, as a user runs it.

    python bench/bench_check.py [--envbisect .venv/bin/envbisect] [--rounds 15] [--here] [--record]

For each report under tests/data/reports/check/ (and, with ``--here``, for this machine), runs
``ENVBISECT check REPORT --json`` ROUNDS times (wall time, the process from start to exit)
and prints the median, min and max seconds; ``ENVBISECT --version`` is timed the same way
beside them, the floor every command pays (the interpreter and envbisect's CLI starting).
The first run of each is left out (it warms the disk cache and writes bytecode). Nothing is
asserted. ``--record`` keeps the figures docs/how-to/check.md cites in bench/last.json
(bench/lastrun.py): the median over the reports, how many reports, the size of the data
check ships.
"""

from __future__ import annotations

import argparse
import shlex
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from lastrun import record

ROOT = Path(__file__).resolve().parent.parent
CHECKDB = ROOT / "src" / "envbisect" / "data" / "checkdb.json"
HERE = ROOT / "tests" / "data" / "reports" / "check"
REPORTS = sorted(HERE.rglob("*.md"))


def timed(argv: list[str], rounds: int) -> list[float]:
    subprocess.run(argv, capture_output=True, check=False, cwd=ROOT)  # warm, not counted
    out = []
    for _ in range(rounds):
        start = time.perf_counter()
        proc = subprocess.run(argv, capture_output=True, check=False, cwd=ROOT)
        out.append(time.perf_counter() - start)
        if proc.returncode not in (0, 1):
            raise SystemExit(f"{' '.join(argv)}: exit {proc.returncode}: {proc.stderr!r}")
    return out


def line(label: str, seconds: list[float]) -> str:
    return (
        f"{label:<42} median {statistics.median(seconds):.3f} s  "
        f"min {min(seconds):.3f}  max {max(seconds):.3f}"
    )


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    ap.add_argument("--envbisect", default=str(ROOT / ".venv" / "bin" / "envbisect"))
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--here", action="store_true", help="also time check --here")
    ap.add_argument("--record", action="store_true", help="keep the figures in bench/last.json")
    args = ap.parse_args()
    exe = args.envbisect
    print(line("envbisect --version (the floor)", timed([exe, "--version"], args.rounds)))
    medians = []
    for report in REPORTS:
        seconds = timed([exe, "check", str(report), "--json"], args.rounds)
        medians.append(statistics.median(seconds))
        print(line(f"check {report.relative_to(HERE)}", seconds))
    print(f"{'every report':<42} median of medians {statistics.median(medians):.3f} s, "
          f"slowest {max(medians):.3f} s")  # fmt: skip
    here = None
    if args.here:
        here = timed([exe, "check", "--here", "--json"], args.rounds)
        print(line("check --here", here))
    if args.record:
        figures = {
            "check.median": f"{statistics.median(medians):.2f} s",
            "check.fastest": f"{min(medians):.2f} s",
            "check.slowest": f"{max(medians):.2f} s",
            "check.reports": str(len(REPORTS)),
            "checkdb.size": f"{round(CHECKDB.stat().st_size / 1024)} KiB",
        }
        if here is not None:
            figures["check.here"] = f"{statistics.median(here):.2f} s"
        shown = [a for a in sys.argv[1:] if a != "--envbisect" and not a.endswith("envbisect")]
        record(figures, shlex.join(["python", "bench/bench_check.py", *shown]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
