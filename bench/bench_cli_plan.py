"""Benchmark: the first plans of a fresh process, through the CLI, side by side with uv.

Run from the repository root (needs PyPI, and Python 3.11 where uv finds it):

    python bench/bench_cli_plan.py [--rounds 3] [--pins llamafactory==0.9.5]
        [--package datasets --good 4.0.0 --bad 4.1.0]

envbisect: ``envbisect run --package P --pins PINS --good G --bad B --dry-run`` in a fresh
process plans both ends (the pins that apply to the target plus ``P==G``, and ``P==B``) and
builds nothing. uv: ``uv pip compile`` of the same two requirement sets, one after the other,
online (uv's cache revalidated) and ``--offline`` (uv's cache only). The metadata caches of
both are warmed by one untimed round. Rounds alternate; medians and ratios.
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
from collections.abc import Callable
from pathlib import Path

BIN = Path(sys.executable).parent


def _run(argv: list[str], **kw: object) -> float:
    start = time.perf_counter()
    proc = subprocess.run(argv, capture_output=True, text=True, **kw)  # type: ignore[call-overload]
    if proc.returncode != 0:
        raise SystemExit(f"failed: {' '.join(argv)}\n{proc.stderr[-2000:]}")
    return time.perf_counter() - start


def requirement_sets(args: argparse.Namespace, python: str) -> list[list[str]]:
    out = subprocess.run([str(BIN / "envbisect"), "pins", args.pins, "--python", python,
                          "--json"], capture_output=True, text=True, check=True).stdout  # fmt: skip
    rows = json.loads(out)["requirements"]
    pins = [f"{r['name']}{r['specifier']}" + (f" ; {r['marker']}" if r["marker"] else "")
            for r in rows if r["applies"] and r["name"] != args.package]  # fmt: skip
    return [[*pins, f"{args.package}=={v}"] for v in (args.good, args.bad)]


def main() -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--pins", default="llamafactory==0.9.5")
    ap.add_argument("--package", default="datasets")
    ap.add_argument("--good", default="4.0.0")
    ap.add_argument("--bad", default="4.1.0")
    ap.add_argument("--python", default="3.11")
    args = ap.parse_args()
    uv = subprocess.run([sys.executable, "-c", "import uv; print(uv.find_uv_bin())"],
                        capture_output=True, text=True, check=True).stdout.strip()  # fmt: skip
    python = subprocess.run([uv, "python", "find", args.python], capture_output=True, text=True,
                            check=True).stdout.strip()  # fmt: skip
    work = Path(tempfile.mkdtemp(prefix="envbisect-cli-plan-"))
    sets = requirement_sets(args, python)
    ins = []
    for i, reqs in enumerate(sets):
        path = work / f"end{i}.in"
        path.write_text("\n".join(reqs) + "\n")
        ins.append(path)
    env = {k: v for k, v in os.environ.items() if not k.startswith("UV_INDEX")}
    ours = [str(BIN / "envbisect"), "run", "--package", args.package, "--pins", args.pins,
            "--python", python, "--good", args.good, "--bad", args.bad, "--dry-run", "--json",
            "--results", str(work / "r"), "--", "true"]  # fmt: skip

    def compile_both(*extra: str) -> float:
        return sum(
            _run(
                [
                    uv,
                    "pip",
                    "compile",
                    "--no-config",
                    "-q",
                    "--python",
                    python,
                    "--only-binary",
                    ":all:",
                    *extra,
                    str(p),
                    "-o",
                    str(p.with_suffix(".txt")),
                ],
                env=env,
            )
            for p in ins
        )

    sides: dict[str, Callable[[], float]] = {
        "envbisect --dry-run (2 plans)": lambda: _run(ours, env=env),
        "envbisect --dry-run --offline": lambda: _run([*ours, "--offline"], env=env),
        "uv pip compile x2, online": lambda: compile_both(),
        "uv pip compile x2, --offline": lambda: compile_both("--offline"),
    }
    times: dict[str, list[float]] = {k: [] for k in sides}
    for r in range(args.rounds + 1):  # the first round warms both caches
        for name, fn in sides.items():
            t = fn()
            if r:
                times[name].append(t)
    med = {k: statistics.median(v) for k, v in times.items()}
    print(
        f"# first plans of a fresh process ({args.pins} + {args.package} {args.good} and "
        f"{args.bad}, Python {args.python}, {os.cpu_count()} cores, {args.rounds} rounds)\n"
    )
    print("| | median s |\n|---|---:|")
    for name, s in med.items():
        print(f"| {name} | {s:.2f} |")
    base = med["uv pip compile x2, online"]
    print(
        f"\nenvbisect / uv online: {med['envbisect --dry-run (2 plans)'] / base:.2f}x; "
        f"envbisect --offline / uv --offline: "
        f"{med['envbisect --dry-run --offline'] / med['uv pip compile x2, --offline']:.1f}x"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
