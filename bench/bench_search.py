"""Benchmark: k-ary rounds (--jobs) and flaky repros (--repeat, the probabilistic search).

Run from the repository root: python bench/bench_search.py [--seeds 200] [--real]

1. Rounds and probes against n for --jobs 1, 2, 4: the strategy driven over every boundary
   position of a range of n candidates (simulated outcomes, no environments).
2. Flaky repros: --seeds simulated searches (default 200) per fail rate (0.5 and 0.3), n = 32,
   a random boundary each; bad points fail with that rate per run, good points never. Side by
   side: the probabilistic search (one run per probe, --confidence 0.95), --repeat 3 starting
   plain (it turns probabilistic when runs disagree), and plain bisection with the same budget
   (--repeat R with R x (log2 n + 2) = the probabilistic search's median runs; a crash in any
   run marks a point). 2b: the same with a 2% false-failure rate on good versions, for the
   clean side's prior in flaky.py against tighter ones. right / wrong: a first bad version
   named, and whether it is the true one; no answer: the ends did not verify, or the search
   stopped below its confidence.
3. With --real: wall time of ``envbisect run`` on the tests' local index (crashy, 12
   candidates, a repro that takes 1 s like a small real one) with --jobs 1, 2 and 4, fresh
   stores, median of --rounds runs each, side by side.
"""

from __future__ import annotations

import argparse
import math
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from envbisect.core.results.parts import Status  # noqa: E402
from envbisect.model import Outcome, OutcomeKind  # noqa: E402
from envbisect.strategy import flaky  # noqa: E402
from envbisect.strategy.bisect import Bisector  # noqa: E402
from support.options import flat_options  # noqa: E402

PASS = Outcome(kind=OutcomeKind.PASS, exit_code=0)
SEGV = Outcome(kind=OutcomeKind.CRASH, signal="SIGSEGV", signature="SIGSEGV")


def simulate(
    bis: Bisector,
    first_bad: int,
    rate: float,
    rng: random.Random,
    jobs: int = 1,
    false_rate: float = 0.0,
) -> tuple[int, int, int]:
    """(runs, probes, rounds) to the end of the search. Good points fail like the bad ones
    with ``false_rate`` per run (0: never)."""
    seen: dict[int, list[Outcome]] = {}
    runs = probes = rounds = 0
    while batch := bis.next_batch(jobs):
        rounds += 1
        for i in batch:
            probes += 1
            have = seen.setdefault(i, [])
            while len(have) < bis.runs_wanted(i):
                if i >= first_bad:
                    have.append(SEGV if rng.random() < rate else PASS)
                else:
                    have.append(SEGV if false_rate and rng.random() < false_rate else PASS)
                runs += 1
            bis.record(i, next((o for o in have if o is SEGV), PASS), have)
    return runs, probes, rounds


def rounds_table() -> None:
    print("1. rounds and probes against n (every boundary position; max / mean)")
    print(f"{'n':>5} | " + " | ".join(f"jobs {k}: rounds, probes" for k in (1, 2, 4)))
    for n in (8, 16, 32, 64, 128, 256, 512):
        cells = []
        for jobs in (1, 2, 4):
            rounds, probes = [], []
            for first_bad in range(1, n):
                bis = Bisector(n=n)
                _, p, r = simulate(bis, first_bad, 1.0, random.Random(0), jobs)
                res = bis.result
                assert res is not None and res.first_new == first_bad
                rounds.append(r)
                probes.append(p)
            cells.append(
                f"{max(rounds):>2} / {statistics.mean(rounds):4.1f}, "
                f"{max(probes):>2} / {statistics.mean(probes):4.1f}"
            )
        print(f"{n:>5} | " + " | ".join(f"{c:>22}" for c in cells))
    print("(log2 n + 2 for jobs 1; about log_{k+1} n + 1 for jobs k: the ends share a round)")


def flaky_row(
    label: str,
    make: Callable[[], Bisector],
    *,
    n: int,
    rate: float,
    seeds: int,
    seed_base: int,
    false_rate: float = 0.0,
) -> tuple[str, list[int]]:
    right = wrong = 0
    runs, probes = [], []
    for seed in range(seeds):
        rng = random.Random(seed_base + seed)
        first_bad = rng.randrange(1, n)
        bis = make()
        r, p, _ = simulate(bis, first_bad, rate, rng, false_rate=false_rate)
        res = bis.result
        if res is not None and res.status == Status.FOUND:
            right += res.first_new == first_bad
            wrong += res.first_new != first_bad
        runs.append(r)
        probes.append(p)
    runs.sort()
    line = (
        f"{rate:>4} | {label:<40} | {right / seeds:>6.1%} | {wrong / seeds:>6.1%} | "
        f"{(seeds - right - wrong) / seeds:>9.1%} | "
        f"{statistics.median(runs):>11.0f} | {runs[int(0.9 * len(runs))]:>4} | "
        f"{statistics.median(probes):>13.0f}"
    )
    return line, runs


def flaky_table(seeds: int) -> None:
    n = 32
    bits = math.ceil(math.log2(n)) + 2
    print(f"\n2. flaky repros: {seeds} simulated searches per rate, n = {n}")
    print(f"{'rate':>4} | {'search':<40} | {'right':>6} | {'wrong':>6} | {'no answer':>9} | "
          f"{'runs median':>11} | {'p90':>4} | {'probes median':>13}")  # fmt: skip
    for rate in (0.5, 0.3):
        ends = partial(Bisector, n=n, good=0, bad=n - 1)
        line, budget = flaky_row(
            "probabilistic, 1 run per probe",
            partial(ends, probabilistic=True),
            n=n, rate=rate, seeds=seeds, seed_base=0,
        )  # fmt: skip
        print(line)
        repeat = max(1, round(statistics.median(budget) / bits))
        others = [
            ("--repeat 3 (plain, turns probabilistic)", partial(ends, repeat=3)),
            (f"plain, same budget (--repeat {repeat})",
             partial(ends, repeat=repeat, switch=False)),
            ("plain, 1 run per probe", partial(ends, switch=False)),
        ]  # fmt: skip
        for k, (label, make) in enumerate(others, 1):
            print(flaky_row(label, make, n=n, rate=rate, seeds=seeds, seed_base=10_000 * k)[0])
    print("\n2b. the same, but good versions also fail like the bad ones on 2% of runs")
    print("    (the clean side's prior, flaky.CLEAN_PRIOR, against tighter ones)")
    default = flaky.CLEAN_PRIOR
    for prior in (default, (0.2, 50.0), (0.1, 100.0)):
        flaky.CLEAN_PRIOR = prior
        for rate in (0.5, 0.3):
            make = partial(Bisector, n=n, good=0, bad=n - 1, probabilistic=True)
            label = f"probabilistic, clean Beta({prior[0]:g}, {prior[1]:g})"
            print(flaky_row(label, make, n=n, rate=rate, seeds=seeds, seed_base=40_000,
                            false_rate=0.02)[0])  # fmt: skip
    flaky.CLEAN_PRIOR = default


def real_jobs(rounds: int) -> None:
    from envbisect.env.interp import find_python
    from envbisect.env.repro import Repro
    from envbisect.env.uv import Uv, find_uv
    from envbisect.model import IndexConfig
    from envbisect.modes.run import RunOptions, run_bisect
    from envbisect.modes.searchoptions import SearchOptions
    from envbisect.progress import Progress
    from support.corpus import build_index

    print("\n3. envbisect run on the local index (crashy, 12 candidates, a 1 s repro)")
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        index = build_index(root / "index")
        repro_file = root / "repro.py"
        repro_file.write_text("import time, crashy\ntime.sleep(1)\ncrashy.run()\n")
        repro = Repro.from_file(str(repro_file), root)
        python = find_python(Uv(binary=find_uv(), offline=False), "3.11")
        times: dict[int, list[float]] = {1: [], 2: [], 4: []}
        rounds_seen: dict[int, int] = {}
        for r in range(rounds + 1):  # the first pass warms uv's cache and is not counted
            for jobs in times:
                opts = RunOptions(
                    package="crashy",
                    search=SearchOptions(),
                    common=flat_options(
                        jobs=jobs,
                        repro=repro,
                        python=python,
                        indexes=IndexConfig(index_url=index.url),
                        results=root / f"results-{r}-{jobs}",
                    ),
                )
                start = time.perf_counter()
                res = run_bisect(opts, Progress())
                took = time.perf_counter() - start
                assert res.first_new == "1.7.0"
                if r:
                    times[jobs].append(took)
                rounds_seen[jobs] = res.to_dict()["search"]["rounds"]
        index.stop()
    base = statistics.median(times[1])
    for jobs, ts in times.items():
        med = statistics.median(ts)
        print(f"  --jobs {jobs}: {rounds_seen[jobs]} rounds, median {med:5.2f} s "
              f"({base / med:.2f}x of --jobs 1)")  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", type=int, default=200)
    ap.add_argument("--real", action="store_true")
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    rounds_table()
    flaky_table(args.seeds)
    if args.real:
        real_jobs(args.rounds)


if __name__ == "__main__":
    main()
