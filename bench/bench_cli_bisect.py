"""Benchmark: a whole bisection through the CLI against a hand-written uv binary search.

Run from the repository root:
python bench/bench_cli_bisect.py [--versions 16] [--rounds 3] [--json]

A package (bisectpkg 1.0.0 to 1.N-1.0, no dependencies; 1.B.0 on raise, B = 2N/3) is served
by the tests' local index on 127.0.0.1. Timed, each a whole process, rounds alternating:

- envbisect: ``envbisect run --package bisectpkg --good 1.0.0 --bad 1.N-1.0 --index-url URL
  --no-config --python PY -- python -c "import bisectpkg; bisectpkg.run()"`` with a fresh
  ``--results``
  (the store never answers), one metadata cache for the whole run;
- by hand: a Python loop that checks both ends, then halves the range: at each version it
  runs ``uv venv`` + ``uv pip install bisectpkg==V`` + the same command, as a user would script
  it (bench_probe.py's floor, once per step).

One ``UV_CACHE_DIR`` for both, warmed by an untimed round; both set the user's index
settings aside (``--no-config``). Both must name the same first bad version and build the
same number of environments, every round (the bench stops with exit 1 otherwise); prints
medians and the ratio (``--json``: the figure, for bench/figures.py).

``--pypi`` (needs PyPI): the real case of the issue tracker, pyarrow 15.0.0 to 26.0.1 under
``datasets==2.14.6`` (pyarrow 21 dropped what datasets 2.14.6 imports), probed with
``import datasets``: ``envbisect run --package pyarrow --with datasets==2.14.6 --probe
import:datasets`` (``--jobs 1`` and ``--jobs 2``) against the same search by hand over the same
versions (those ``envbisect versions pyarrow`` says install here), each step ``uv venv`` +
``uv pip install datasets==2.14.6 pyarrow==V`` (uv picks the rest, as envbisect's ``latest``
policy does) + ``python -c "import datasets"``. uv's own cache (the user's), warmed by the
untimed round.

``--wide S`` (``--versions 64``, say): the shape of a machine with more cores than probes, on
this one: every probe sleeps S seconds before ``bisectpkg.run()``, so probes at once do not
take each other's CPU (as GPU jobs mostly wait); envbisect at ``--jobs`` 1, 2, 4 and 8
against the search by hand.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from functools import partial
from pathlib import Path

import bench_probe as bp
from benchfig import Figure, Side, compile_bytecode, emit, shown

from support.index_server import IndexFile, LocalIndex
from support.wheels import build_wheel

PACKAGE = "bisectpkg"
REPRO = ["python", "-c", f"import {PACKAGE}; {PACKAGE}.run()"]


def build_index(root: Path, n: int, first_bad: int) -> LocalIndex:
    root.mkdir(parents=True, exist_ok=True)
    index = LocalIndex()
    for i in range(n):
        body = (
            "def run():\n    return 1\n" if i < first_bad else "def run():\n    raise ValueError\n"
        )
        path = build_wheel(root, PACKAGE, f"1.{i}.0", {f"{PACKAGE}/__init__.py": body})
        when = datetime(2024, 1, 1, tzinfo=timezone.utc) + timedelta(days=i)
        index.add(IndexFile(project=PACKAGE, path=path, upload_time=when))
    return index.start()


def venv_passes(
    uv: str, python: str, work: Path, env: dict[str, str], install: list[str], probe: list[str]
) -> bool:
    """One step of a search by hand: ``uv venv`` + ``uv pip install INSTALL`` + the probe (run
    with the venv's python), in a folder removed afterwards."""
    parent = Path(tempfile.mkdtemp(prefix="hand-", dir=work))
    venv = parent / "venv"
    vpy = str(venv / "bin" / "python")
    try:
        subprocess.run([uv, "venv", str(venv), "--python", python, "--quiet", "--no-config"],
                       env=env, check=True, capture_output=True)  # fmt: skip
        subprocess.run([uv, "pip", "install", "--python", vpy, "--quiet", "--no-config",
                        *install], env=env, check=True, capture_output=True)  # fmt: skip
        return subprocess.run([vpy, *probe], env=env, capture_output=True).returncode == 0
    finally:
        shutil.rmtree(parent, ignore_errors=True)


def binary_search(n: int, passes: Callable[[int], bool]) -> tuple[int, int]:
    """(first failing index, steps): both ends checked, then the range halved, as a user
    scripts it."""
    built = 0

    def step(i: int) -> bool:
        nonlocal built
        built += 1
        return passes(i)

    lo, hi = 0, n - 1
    if not step(lo) or step(hi):
        raise SystemExit("the ends do not behave as built")
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if step(mid):
            lo = mid
        else:
            hi = mid
    return hi, built


def by_hand(
    uv: str, python: str, url: str, n: int, work: Path, env: dict[str, str],
    repro: list[str] = REPRO,
) -> tuple[int, int]:  # fmt: skip
    """(first bad index, environments built): both ends checked, then binary search."""
    return binary_search(n, lambda i: venv_passes(
        uv, python, work, env, ["--index-url", url, f"{PACKAGE}==1.{i}.0"], repro[1:]))  # fmt: skip


def ours(envbisect: str, python: str, url: str, n: int, work: Path, env: dict[str, str],
         repro: list[str] = REPRO, jobs: int = 1) -> tuple[int, int]:  # fmt: skip
    results = Path(tempfile.mkdtemp(prefix="results-", dir=work))
    try:
        argv = [envbisect, "run", "--package", PACKAGE, "--good", "1.0.0", "--bad",
                f"1.{n - 1}.0", "--index-url", url, "--no-config", "--python", python, "--results",
                str(results), "--cache-dir", str(work / "meta"), "--json", "--jobs", str(jobs),
                "--", *repro]  # fmt: skip
        proc = subprocess.run(argv, env=env, capture_output=True, text=True)
        if proc.returncode != 0:
            raise SystemExit(f"envbisect run failed ({proc.returncode}): {proc.stderr[-2000:]}")
        res = json.loads(proc.stdout)
        first_bad = int(str(res["first_bad"]).split(".")[1])
        return first_bad, len(res["probes"])
    finally:
        shutil.rmtree(results, ignore_errors=True)


PYPI_PACKAGE, PYPI_PINS, PYPI_GOOD, PYPI_BAD = "pyarrow", "datasets==2.14.6", "15.0.0", "26.0.1"
PYPI_URL = "https://pypi.org/simple"


def pypi_versions(envbisect: str, python: str, env: dict[str, str]) -> list[str]:
    """The versions envbisect bisects over: installable here, not pre-releases, in range."""
    argv = [envbisect, "versions", PYPI_PACKAGE, "--python", python, "--json", "--no-config"]
    proc = subprocess.run(argv, env=env, capture_output=True, text=True, check=True)
    from packaging.version import Version

    lo, hi = Version(PYPI_GOOD), Version(PYPI_BAD)
    return [c["version"] for c in json.loads(proc.stdout)["candidates"]
            if c["installable"] and not c["prerelease"] and not c["yanked"]
            and lo <= Version(c["version"]) <= hi]  # fmt: skip


def pypi_by_hand(
    uv: str, python: str, versions: list[str], work: Path, env: dict[str, str]
) -> tuple[str, int]:
    install = ["--index-url", PYPI_URL, "--only-binary", ":all:", PYPI_PINS]
    first, built = binary_search(len(versions), lambda i: venv_passes(
        uv, python, work, env, [*install, f"{PYPI_PACKAGE}=={versions[i]}"],
        ["-c", "import datasets"]))  # fmt: skip
    return versions[first], built


def pypi_ours(
    envbisect: str, python: str, work: Path, env: dict[str, str], jobs: int
) -> tuple[str, int]:
    results = Path(tempfile.mkdtemp(prefix="results-", dir=work))
    try:
        argv = [envbisect, "run", "--package", PYPI_PACKAGE, "--with", PYPI_PINS, "--good",
                PYPI_GOOD, "--bad", PYPI_BAD, "--probe", "import:datasets", "--no-config",
                "--python", python, "--results", str(results), "--jobs", str(jobs),
                "--json"]  # fmt: skip
        proc = subprocess.run(argv, env=env, capture_output=True, text=True)
        if proc.returncode != 0:
            raise SystemExit(f"envbisect run failed ({proc.returncode}): {proc.stderr[-2000:]}")
        res = json.loads(proc.stdout)
        return str(res["first_bad"]), len(res["probes"])
    finally:
        shutil.rmtree(results, ignore_errors=True)


def pypi_main(args: argparse.Namespace) -> int:
    work = Path(tempfile.mkdtemp(prefix="envbisect-bench-bisect-pypi-"))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("UV_INDEX", "PIP_"))}
    env.update(UV_NO_PROGRESS="1", NO_COLOR="1")
    uv = bp.uv_next_to(args.envbisect)
    python = bp.find_python(uv, args.python or "3.11", env)
    versions = pypi_versions(args.envbisect, python, env)
    sides: dict[str, Callable[[], tuple[str, int]]] = {
        "envbisect run": lambda: pypi_ours(args.envbisect, python, work, env, 1),
        "envbisect run --jobs 2": lambda: pypi_ours(args.envbisect, python, work, env, 2),
        "uv binary search by hand": lambda: pypi_by_hand(uv, python, versions, work, env),
    }
    times: dict[str, list[float]] = {k: [] for k in sides}
    seen: dict[str, tuple[str, int]] = {}
    try:
        for r in range(args.rounds + 1):  # round 0 warms uv's cache and the metadata cache
            order = list(sides.items())
            for label, fn in order[r % len(order) :] + order[: r % len(order)]:
                start = time.perf_counter()
                got = fn()
                if r:
                    times[label].append(time.perf_counter() - start)
                seen[label] = got
            if len({a for a, _ in seen.values()}) != 1:
                print(f"the sides disagree: {seen}", file=sys.stderr)
                return 1
    finally:
        shutil.rmtree(work, ignore_errors=True)
    med = {k: statistics.median(v) for k, v in times.items()}
    hand = med["uv binary search by hand"]
    first = seen["envbisect run"][0]
    what = (f"{PYPI_PACKAGE} {PYPI_GOOD}..{PYPI_BAD} under {PYPI_PINS}, import datasets, "
            f"{len(versions)} versions (first bad {first})")  # fmt: skip
    cmd = (f"envbisect run --package {PYPI_PACKAGE} --with {PYPI_PINS} --good {PYPI_GOOD} "
           f"--bad {PYPI_BAD} --probe import:datasets --no-config")  # fmt: skip
    hand_cmd = (f"uv venv + uv pip install --no-config {PYPI_PINS} {PYPI_PACKAGE}==V + "
                "python -c 'import datasets', per step")  # fmt: skip
    figs = [
        Figure(what=f"{what}, --jobs {jobs}",
               a=Side(label=label, value=med[label], command=cmd + f" --jobs {jobs}"),
               b=Side(label="a hand-written uv binary search", value=hand, command=hand_cmd),
               note=f"environments: envbisect {seen[label][1]}, by hand "
                    f"{seen['uv binary search by hand'][1]}; the same first bad version")
        for jobs, label in ((1, "envbisect run"), (2, "envbisect run --jobs 2"))
    ]  # fmt: skip
    if args.json:
        emit("bench_cli_bisect_pypi", figs, rounds=args.rounds)
        return 0
    print(f"# {what}, {args.rounds} rounds, {os.cpu_count()} cores\n")
    print("| | median s | first bad | environments |\n|---|---:|---:|---:|")
    for k, sec in med.items():
        print(f"| {k} | {sec:.1f} | {seen[k][0]} | {seen[k][1]} |")
    for f in figs:
        print(f"\n{f.a.label} / by hand: {f.comparison()}")
    return 0


WIDE_JOBS = (1, 2, 4, 8)


def wide_main(args: argparse.Namespace) -> int:
    """``--wide S``: the shape of a wide machine, where probes do not compete for the CPU (a
    GPU job's host side mostly waits): each probe sleeps S seconds, then runs the same
    ``bisectpkg.run()``. envbisect at ``--jobs`` 1, 2, 4 and 8 against the search by hand;
    the same first bad version every time, more environments as K grows (a K+1-way split
    each round, after the round that checks both ends)."""
    n, first_bad = args.versions, (2 * args.versions) // 3
    repro = ["python", "-c", f"import time, {PACKAGE}; time.sleep({args.wide}); {PACKAGE}.run()"]
    work = Path(tempfile.mkdtemp(prefix="envbisect-bench-bisect-wide-"))
    env = bp.bench_env(work / "uv-cache")
    uv = bp.uv_next_to(args.envbisect)
    python = bp.find_python(uv, args.python, env)
    index = build_index(work / "files", n, first_bad)
    hand = "uv binary search by hand"
    sides: dict[str, Callable[[], tuple[int, int]]] = {
        f"envbisect run --jobs {k}": partial(
            ours, args.envbisect, python, index.url, n, work, env, repro, k
        )
        for k in WIDE_JOBS
    }
    sides[hand] = lambda: by_hand(uv, python, index.url, n, work, env, repro)
    times: dict[str, list[float]] = {k: [] for k in sides}
    seen: dict[str, tuple[int, int]] = {}
    try:
        for r in range(args.rounds + 1):  # round 0 warms uv's cache and the metadata cache
            for label, fn in sides.items() if r % 2 == 0 else reversed(list(sides.items())):
                start = time.perf_counter()
                seen[label] = fn()
                if r:
                    times[label].append(time.perf_counter() - start)
            if {first for first, _ in seen.values()} != {first_bad}:
                print(f"a side missed the first bad version: {seen}", file=sys.stderr)
                return 1
    finally:
        index.stop()
        shutil.rmtree(work, ignore_errors=True)
    med = {k: statistics.median(v) for k, v in times.items()}
    what = (f"a whole bisection, {n} versions, probes that wait {args.wide:g} s (the shape of a "
            f"wide machine: no probe takes another's CPU), first bad 1.{first_bad}.0")  # fmt: skip
    figs = [
        Figure(
            what=f"{what}, --jobs {k}",
            a=Side(label=f"envbisect run --jobs {k}", value=med[f"envbisect run --jobs {k}"],
                   command=f"envbisect run --package {PACKAGE} --good 1.0.0 --bad 1.{n - 1}.0 "
                   f"--index-url URL --no-config --jobs {k} -- python -c '...sleep; run()'"),
            b=Side(label="a hand-written uv binary search", value=med[hand],
                   command="uv venv + uv pip install --no-config bisectpkg==V + the repro, "
                   "per step"),
            note=f"environments: envbisect {seen[f'envbisect run --jobs {k}'][1]}, by hand "
            f"{seen[hand][1]}; the same first bad version",
        )
        for k in WIDE_JOBS
    ]  # fmt: skip
    if args.json:
        emit("bench_cli_bisect", figs, rounds=args.rounds)
        return 0
    print(f"# {what}, {args.rounds} rounds\n")
    print("| | median s | environments | vs by hand |\n|---|---:|---:|---:|")
    for k, sec in med.items():
        print(f"| {k} | {sec:.2f} | {seen[k][1]} | {sec / med[hand]:.2f}x |")
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--versions", type=int, default=16)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--envbisect", default=str(Path(sys.executable).parent / "envbisect"))
    ap.add_argument("--python", default=None)
    ap.add_argument("--pypi", action="store_true", help="the real case on PyPI (see above)")
    ap.add_argument(
        "--wide",
        type=float,
        metavar="S",
        default=None,
        help="a probe that waits S seconds, at --jobs 1, 2, 4 and 8 (see above)",
    )
    ap.add_argument("--json", action="store_true", help="print the figure as JSON")
    args = ap.parse_args()
    compile_bytecode()
    if args.pypi:
        return pypi_main(args)
    if args.wide is not None:
        return wide_main(args)
    n, first_bad = args.versions, (2 * args.versions) // 3
    work = Path(tempfile.mkdtemp(prefix="envbisect-bench-bisect-"))
    env = bp.bench_env(work / "uv-cache")
    uv = bp.uv_next_to(args.envbisect)
    python = bp.find_python(uv, args.python, env)
    index = build_index(work / "files", n, first_bad)
    times: dict[str, list[float]] = {"envbisect run": [], "uv binary search by hand": []}
    seen: dict[str, tuple[int, int]] = {}
    try:
        for r in range(args.rounds + 1):  # round 0 warms uv's cache and the metadata cache
            for label in times if r % 2 == 0 else reversed(list(times)):
                start = time.perf_counter()
                if label == "envbisect run":
                    got = ours(args.envbisect, python, index.url, n, work, env)
                else:
                    got = by_hand(uv, python, index.url, n, work, env)
                if r:
                    times[label].append(time.perf_counter() - start)
                seen[label] = got
            # Both sides answer the same, with as many environments, every round.
            if len(set(seen.values())) != 1:
                print(f"the two sides disagree: {seen}", file=sys.stderr)
                return 1
    finally:
        index.stop()
        shutil.rmtree(work, ignore_errors=True)
    med = {k: statistics.median(v) for k, v in times.items()}
    first, built = seen["envbisect run"]
    assert first == first_bad, (first, first_bad)  # the answer is the one built in
    what = f"a whole bisection, {n} versions, {built} environments (first bad 1.{first}.0)"
    cmd = ["envbisect", "run", "--package", PACKAGE, "--good", "1.0.0", "--bad", f"1.{n - 1}.0",
           "--index-url", "URL", "--no-config", "--", *REPRO]  # fmt: skip
    fig = Figure(
        what=what,
        a=Side(label="envbisect run", value=med["envbisect run"], command=shown(cmd, {})),
        b=Side(label="a hand-written uv binary search", value=med["uv binary search by hand"],
               command="uv venv + uv pip install --no-config bisectpkg==V + the repro, "
               "per step"),
        note="both sides: the same first bad version and the same number of environments",
    )  # fmt: skip
    if args.json:
        emit("bench_cli_bisect", [fig], rounds=args.rounds)
        return 0
    print(f"# one bisection over {n} versions (first bad 1.{first_bad}.0), {args.rounds} rounds\n")
    print("| | median s | first bad | environments |\n|---|---:|---:|---:|")
    for k, sec in med.items():
        print(f"| {k} | {sec:.2f} | 1.{seen[k][0]}.0 | {seen[k][1]} |")
    ours_s, hand_s = med["envbisect run"], med["uv binary search by hand"]
    print(f"\nenvbisect / by hand: {fig.comparison()} ({ours_s - hand_s:+.2f} s); both sides "
          "agree on the answer and the environments built")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
