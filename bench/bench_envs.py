"""Benchmark: environments per bisection, and the cost of one warm environment.

Run from the repository root (``python bench/bench_envs.py [--sizes 8,16,32,64,128]
[--rounds 7] [--pypi] [--json]``); prints a table (``--json``: the figures, for
bench/figures.py). Everything is
measured side by side in one run on a local index on 127.0.0.1 (these machines are noisy:
medians and ratios, not absolute seconds). ``--pypi`` adds the same warm-environment
comparison for a real requirement set from PyPI (needs the network).

1. Environments built per bisection against ceil(log2 n), for n candidate versions with the
   first bad version at several positions.
2. Median seconds for a warm environment, create + install + probe start:
   envbisect (uv venv + uv pip install from the shared cache, hard links) against
   ``python -m venv`` + ``pip install --isolated`` of the same requirements from the same
   index (neither reads the user's index settings: envbisect's uv runs with --no-config).
"""

from __future__ import annotations

import argparse
import math
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import timedelta
from pathlib import Path
from typing import TextIO

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from benchfig import Figure, Side, emit  # noqa: E402

from envbisect.env.interp import find_python  # noqa: E402
from envbisect.env.repro import Repro  # noqa: E402
from envbisect.env.uv import BuiltEnv, Materializer, Uv, find_uv  # noqa: E402
from envbisect.model import EnvSpec, IndexConfig  # noqa: E402
from envbisect.modes.run import RunOptions, run_bisect  # noqa: E402
from support.corpus import EPOCH, PASS, SEGFAULT  # noqa: E402
from support.index_server import IndexFile, LocalIndex  # noqa: E402
from support.options import flat_options  # noqa: E402
from support.wheels import build_wheel  # noqa: E402


def build_bench_index(root: Path, sizes: list[int]) -> LocalIndex:
    root.mkdir(parents=True, exist_ok=True)
    index = LocalIndex()
    for n in sizes:
        for pos in _positions(n):
            project = f"bench-{n}-{pos}"
            for i in range(n):
                body = PASS if i < pos else SEGFAULT
                mod = project.replace("-", "_")
                path = build_wheel(root, project, f"1.{i}.0", {f"{mod}/__init__.py": body})
                index.add(
                    IndexFile(project=project, path=path, upload_time=EPOCH + timedelta(days=i))
                )
    # A package with some dependencies for the warm-environment timing.
    deps = []
    for d in range(8):
        name = f"dep{d}"
        blob = {
            f"{name}/__init__.py": "X = 1\n",
            **{f"{name}/m{k}.py": "Y = 2\n" * 200 for k in range(30)},
        }
        index.add(
            IndexFile(project=name, path=build_wheel(root, name, "1.0.0", blob), upload_time=EPOCH)
        )
        deps.append(f"{name}>=1")
    path = build_wheel(root, "appkit", "1.0.0", {"appkit/__init__.py": PASS}, requires=deps)
    index.add(IndexFile(project="appkit", path=path, upload_time=EPOCH))
    return index.start()


def _positions(n: int) -> list[int]:
    return sorted({1, n // 3, n // 2, n - 1})


def bench_bisection(
    index: LocalIndex, python: str, sizes: list[int], work: Path, log: TextIO
) -> dict[int, int]:
    """The most environments a bisection built over the positions, per n."""
    print("\n## Environments built per bisection (first bad at several positions)\n", file=log)
    print("| n versions | first bad at | envs built | ceil(log2 n) + 2 |", file=log)
    print("|---:|---:|---:|---:|", file=log)
    worst: dict[int, int] = {}
    repro_file = work / "repro.py"
    for n in sizes:
        for pos in _positions(n):
            project = f"bench-{n}-{pos}"
            repro_file.write_text(f"import {project.replace('-', '_')} as m\nm.run()\n")
            res = run_bisect(
                RunOptions(
                    package=project,
                    common=flat_options(
                        repro=Repro.from_file(str(repro_file), work),
                        indexes=IndexConfig(index_url=index.url),
                        python=python,
                        results=work / "results",
                    ),
                )
            )
            assert res.first_new == f"1.{pos}.0", (project, res.first_new)
            built = sum(1 for r in res.rows if not r.reused)
            worst[n] = max(worst.get(n, 0), built)
            print(f"| {n} | {pos} | {built} | {math.ceil(math.log2(n)) + 2} |", file=log)
    return worst


def time_envbisect(uv: Uv, python: str, spec: EnvSpec, envs: Path) -> tuple[float, int]:
    m = Materializer(uv, envs)
    start = time.perf_counter()
    built = m.build(spec, python)
    assert isinstance(built, BuiltEnv), built
    subprocess.run([str(built.python), "-c", "pass"], check=True)
    seconds = time.perf_counter() - start
    m.remove(built.path)
    return seconds, len(built.installed)


def time_pip(python: str, reqs: list[str], index_url: str, envs: Path) -> float:
    path = Path(tempfile.mkdtemp(dir=envs))
    start = time.perf_counter()
    subprocess.run([python, "-m", "venv", str(path)], check=True)
    vpy = path / "bin" / "python"
    subprocess.run(
        [
            str(vpy),
            "-m",
            "pip",
            "install",
            "--isolated",
            "-q",
            "--disable-pip-version-check",
            "--index-url",
            index_url,
            *reqs,
        ],
        check=True,
    )
    subprocess.run([str(vpy), "-c", "pass"], check=True)
    seconds = time.perf_counter() - start
    shutil.rmtree(path)
    return seconds


def bench_warm(
    label: str,
    uv: Uv,
    python: str,
    reqs: list[str],
    index_url: str,
    work: Path,
    rounds: int,
    log: TextIO,
) -> Figure:
    spec = EnvSpec.build(reqs, python=python, indexes=IndexConfig(index_url=index_url))
    envs = work / "envs"
    envs.mkdir(exist_ok=True)
    # Warm both caches once, then alternate so that both see the same machine noise.
    _, installed = time_envbisect(uv, python, spec, envs)
    time_pip(python, reqs, index_url, envs)
    a, b = [], []
    for _ in range(rounds):
        a.append(time_envbisect(uv, python, spec, envs)[0])
        b.append(time_pip(python, reqs, index_url, envs))
    ma, mb = statistics.median(a), statistics.median(b)
    print(f"| {label} | {installed} | {ma:.2f} | {mb:.2f} | {mb / ma:.1f}x |", file=log)
    return Figure(
        what=f"a warm environment, create + install + probe start: {label} ({installed} "
        "packages)",
        a=Side(label="envbisect (uv, hard links from its cache)", value=ma,
               command="Materializer.build(spec) + python -c pass"),
        b=Side(label="python -m venv + pip install", value=mb,
               command="python -m venv DIR && DIR/bin/python -m pip install --isolated "
               f"--index-url URL {' '.join(reqs)} && python -c pass"),
    )  # fmt: skip


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="8,16,32,64,128")
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--pypi", action="store_true", help="also time a real PyPI requirement set")
    ap.add_argument("--python", default=None, help="interpreter of the environments")
    ap.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = ap.parse_args()
    log = sys.stderr if args.json else sys.stdout
    sizes = [int(s) for s in args.sizes.split(",")]
    work = Path(tempfile.mkdtemp(prefix="envbisect-bench-"))
    os.environ.setdefault("UV_CACHE_DIR", str(work / "uv-cache"))
    uv = Uv(binary=find_uv(), offline=False)
    python = find_python(uv, args.python)
    print(f"# envbisect benchmark ({python}, {os.cpu_count()} cores)", file=log)
    index = build_bench_index(work / "files", sizes)
    figures = []
    try:
        worst = bench_bisection(index, python, sizes, work, log)
        for n, built in worst.items():
            figures.append(Figure(
                what=f"environments built by one bisection over {n} versions (the most over "
                f"{len(_positions(n))} positions of the first bad one)",
                a=Side(label="envbisect run", value=built, unit="environments",
                       command="run_bisect(package=bench-N-P) on the tests' index"),
                b=Side(label="the bound ceil(log2 n) + 2", value=math.ceil(math.log2(n)) + 2,
                       unit="environments", command="the two ends + a binary search"),
            ))  # fmt: skip
        print("\n## Warm environment: create + install + probe start (median seconds)\n", file=log)
        print(f"({args.rounds} rounds each, alternating)\n", file=log)
        print("| requirements | packages installed | envbisect (uv) | venv + pip | pip / uv |",
              file=log)  # fmt: skip
        print("|---|---:|---:|---:|---:|", file=log)
        figures.append(bench_warm("local index: appkit + 8 deps", uv, python, ["appkit==1.0.0"],
                                  index.url, work, args.rounds, log))  # fmt: skip
        if args.pypi:
            figures.append(bench_warm(
                "PyPI: datasets==2.14.6, numpy<2, pyarrow<21", uv, python,
                ["datasets==2.14.6", "numpy<2", "pyarrow<21"], "https://pypi.org/simple", work,
                args.rounds, log))  # fmt: skip
    finally:
        index.stop()
        shutil.rmtree(work, ignore_errors=True)
    if args.json:
        emit("bench_envs", figures, rounds=args.rounds)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
