"""Benchmark: what the live display costs, side by side with the frame interval and a no-op
reporter.

Run from the repository root (no network):

    python bench/bench_display.py [--rounds 7] [--probes 4] [--width 120]

A frame: the display's renderable (every probe in flight with its phase and elapsed time, a
100-point range fitted to the width, the ETA) drawn by rich into a string, as Live does 8
times a second. A phase report: ``RichReporter.phase`` (what a local worker calls at each
phase) against the base ``Reporter.phase``, the no-op. Rounds alternate; medians and ratios.
"""

from __future__ import annotations

import argparse
import io
import statistics
import time

from rich.console import Console

from envbisect.cli.display import RichProgress
from envbisect.model import Outcome, OutcomeKind
from envbisect.progress import Progress

FRAME_INTERVAL = 1 / 8  # RichReporter's refresh_per_second


def _reporter(probes: int, width: int) -> tuple[RichProgress, Console]:
    console = Console(file=io.StringIO(), width=width, force_terminal=True, emoji=False)
    rep = RichProgress(console, live=False)
    for i in range(3):
        rep.probe_finished(f"0.{i}.0", Outcome(kind=OutcomeKind.PASS), 20.0 + i, False, "")
    drawing = "[" + ", ".join(["G"] * 30 + ["?"] * 40 + ["B"] * 30) + "]"
    rep.probe_finished("0.9.0", Outcome(kind=OutcomeKind.FAIL), 21.0, False, drawing)
    for i in range(probes):
        rep.probe_started(f"1.{i}.0", 40, 6)
        rep.phase(f"1.{i}.0", "running")
    return rep, console


def _time(fn: object, n: int) -> float:
    assert callable(fn)
    start = time.perf_counter()
    for _ in range(n):
        fn()
    return (time.perf_counter() - start) / n


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--probes", type=int, default=4)
    ap.add_argument("--width", type=int, default=120)
    args = ap.parse_args()
    rep, console = _reporter(args.probes, args.width)
    noop = Progress()

    def frame() -> None:
        console.file = io.StringIO()
        console.print(rep._render())

    frames, phases, noops = [], [], []
    for _ in range(args.rounds):
        frames.append(_time(frame, 200))
        phases.append(_time(lambda: rep.phase("1.0.0", "running"), 20000))
        noops.append(_time(lambda: noop.phase("1.0.0", "running"), 20000))
    f, p, z = (statistics.median(x) for x in (frames, phases, noops))
    print(f"frame ({args.probes} probes, width {args.width}): median {f * 1e6:.0f} us; "
          f"{f / FRAME_INTERVAL:.2%} of one core at 8 frames/s")  # fmt: skip
    print(f"phase report: median {p * 1e9:.0f} ns (no-op reporter {z * 1e9:.0f} ns, "
          f"ratio {p / z:.1f}x)")  # fmt: skip


if __name__ == "__main__":
    main()
