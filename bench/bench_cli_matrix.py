"""Benchmark: planning a matrix through the CLI, side by side with uv, 10 to 1,000 cells.

Run from the repository root (needs PyPI, and Python 3.11 where uv finds it):

    python bench/bench_cli_matrix.py [--cells 10,50,200,1000] [--rounds 1] [--json]

For each size N a matrix toml of datasets versions x pyarrow versions (N cells, the rest of
each environment at its latest) is written, and timed two ways, warm (one untimed pass of the
largest matrix fills both metadata caches first):

- envbisect: ``envbisect matrix FILE --dry-run --json --no-config`` in a fresh process:
  every cell planned, nothing built;
- uv: ``uv pip compile --no-config`` of each cell's two pins (``datasets==X``,
  ``pyarrow==Y``), one cell after the other, as a script driving uv would (a conflicting
  cell is uv's exit 1, counted).
  uv's time is measured over an evenly spread sample of ``--uv-sample`` cells (all of them
  when N is smaller) and scaled to N: uv revalidates its pages on every run, about a second
  a cell here, and its cost per cell does not depend on N.

Prints the median seconds of each, seconds per cell and the ratio, for every size.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchfig import Figure, Side, compile_bytecode, emit

BIN = Path(sys.executable).parent
TOML = """[matrix]
name = "plan{n}"
python = ["{python}"]
probes = ["import:datasets"]

[[axis]]
package = "datasets"
versions = [{a}]

[[axis]]
package = "pyarrow"
versions = [{b}]
"""


def versions(package: str, python: str, newest: int) -> list[str]:
    out = subprocess.run([str(BIN / "envbisect"), "versions", package, "--python", python,
                          "--json", "--no-config"], capture_output=True, text=True,
                         check=True).stdout  # fmt: skip
    rows = json.loads(out)["candidates"]
    usable = [r["version"] for r in rows if r.get("installable", True)]
    return usable[-newest:]


def shape(n: int) -> tuple[int, int]:
    """a x b = n with a <= b, as square as the divisors allow."""
    a = max(d for d in range(1, int(n**0.5) + 1) if n % d == 0)
    return a, n // a


def quote(vs: list[str]) -> str:
    return ", ".join(f'"{v}"' for v in vs)


def timed(argv: list[str], env: dict[str, str], ok: tuple[int, ...] = (0,)) -> float:
    start = time.perf_counter()
    proc = subprocess.run(argv, capture_output=True, text=True, env=env)
    if proc.returncode not in ok:
        raise SystemExit(f"failed: {' '.join(argv)}\n{proc.stderr[-2000:]}")
    return time.perf_counter() - start


def main() -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--cells", default="10,50,200,1000")
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--python", default="3.11")
    ap.add_argument("--uv-sample", type=int, default=40)
    ap.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = ap.parse_args()
    compile_bytecode()
    sizes = [int(x) for x in args.cells.split(",")]
    uv = subprocess.run([sys.executable, "-c", "import uv; print(uv.find_uv_bin())"],
                        capture_output=True, text=True, check=True).stdout.strip()  # fmt: skip
    python = subprocess.run([uv, "python", "find", args.python], capture_output=True, text=True,
                            check=True).stdout.strip()  # fmt: skip
    drop = ("UV_INDEX", "UV_DEFAULT_INDEX", "UV_EXTRA_INDEX_URL", "UV_FIND_LINKS", "PIP_")
    env = {k: v for k, v in os.environ.items() if not k.startswith(drop)}
    work = Path(tempfile.mkdtemp(prefix="envbisect-cli-matrix-"))
    big_a, big_b = shape(max(sizes))
    # pyarrow has fewer versions with a wheel for one Python: it gets the shorter side.
    ds, pa = versions("datasets", python, big_b), versions("pyarrow", python, big_a)
    matrices: dict[int, tuple[Path, list[tuple[str, str]]]] = {}
    for n in sizes:
        a, b = shape(n)
        if b > len(ds) or a > len(pa):
            raise SystemExit(f"{n} cells need {b} x {a} versions; have {len(ds)} x {len(pa)}")
        path = work / f"plan{n}.toml"
        path.write_text(TOML.format(n=n, python=python, a=quote(ds[-b:]), b=quote(pa[-a:])))
        matrices[n] = (path, [(x, y) for x in ds[-b:] for y in pa[-a:]])

    def ours(n: int) -> float:
        path = matrices[n][0]
        return timed([str(BIN / "envbisect"), "matrix", str(path), "--dry-run", "--json",
                      "--no-config", "--max-cells", str(n), "--results", str(work / "r")],
                     env)  # fmt: skip

    def theirs(n: int) -> float:
        total, cells = 0.0, matrices[n][1]
        step = max(1, len(cells) // args.uv_sample)
        sample = cells[::step][: args.uv_sample]
        for i, (x, y) in enumerate(sample):
            req = work / f"cell{i}.in"
            req.write_text(f"datasets=={x}\npyarrow=={y}\n")
            total += timed([uv, "pip", "compile", "--no-config", "-q", "--python", python,
                            "--only-binary", ":all:", str(req), "-o", str(req.with_suffix(".txt"))],
                           env, ok=(0, 1))  # fmt: skip
        return total * len(cells) / len(sample)

    top = max(sizes)
    ours(top)  # warm both caches with the largest matrix: every version any size uses
    for n in sizes:
        theirs(n)
    log = sys.stderr if args.json else sys.stdout
    print(f"# matrix planning, warm, {os.cpu_count()} cores, {args.rounds} round(s) each\n",
          file=log)  # fmt: skip
    print("| cells | envbisect matrix --dry-run s | s/cell | uv pip compile per cell s (scaled) | "
          "s/cell | ratio |\n|---:|---:|---:|---:|---:|---:|", file=log)  # fmt: skip
    figures = []
    for n in sizes:
        mine = statistics.median([ours(n) for _ in range(args.rounds)])
        uvs = statistics.median([theirs(n) for _ in range(args.rounds)])
        sample = min(n, args.uv_sample)
        figures.append(Figure(
            what=f"matrix planning, {n} cells (datasets x pyarrow, the rest latest), warm",
            a=Side(label="envbisect matrix --dry-run", value=mine,
                   command=f"envbisect matrix plan{n}.toml --dry-run --no-config"),
            b=Side(label="uv pip compile per cell" + (f" ({sample} cells timed, scaled to {n})"
                                                      if sample < n else ""),
                   value=uvs, command="uv pip compile --no-config --only-binary :all: cell.in "
                   "(datasets==X, pyarrow==Y), one cell after the other"),
        ))  # fmt: skip
        print(f"| {n} | {mine:.2f} | {mine / n:.3f} | {uvs:.2f} | {uvs / n:.3f} | "
              f"{mine / uvs:.2f}x |", file=log, flush=True)  # fmt: skip
    if args.json:
        emit("bench_cli_matrix", figures, rounds=args.rounds)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
