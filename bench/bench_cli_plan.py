"""Benchmark: the first plans of a fresh process, through the CLI, side by side with uv.

Run from the repository root (needs PyPI, and Python 3.11 where uv finds it):

    python bench/bench_cli_plan.py [--rounds 3] [--pins llamafactory==0.9.5]
        [--package datasets --good 4.0.0 --bad 4.1.0] [--json]

envbisect: ``envbisect run --package P --pins PINS --good G --bad B --dry-run --no-config`` in
a fresh process plans both ends (the pins that apply to the target plus ``P==G``, and ``P==B``)
and builds nothing. uv: ``uv pip compile --no-config`` of the same two requirement sets, one
after the other. Two arms: online (uv's cache revalidated; envbisect's too) and offline
(envbisect ``--offline`` against ``uv pip compile --offline``: the caches only); and cold
(both caches empty every round: the very first plan on a machine). Both sides
set the user's index settings aside (``--no-config``, no UV_INDEX*/PIP_* variables), so both
read PyPI alone. The metadata caches of both are warmed by one untimed round (so envbisect
remembers both plans, core/planmemo.py); a third envbisect side plans afresh
(``ENVBISECT_NO_PLAN_MEMO=1``: a question asked for the first time, over warm pages). Rounds
alternate; medians and ratios (``--json``: the figures, for bench/figures.py).
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
from pathlib import Path

from benchfig import Figure, Side, compile_bytecode, emit

BIN = Path(sys.executable).parent


def _run(argv: list[str], **kw: object) -> float:
    start = time.perf_counter()
    proc = subprocess.run(argv, capture_output=True, text=True, **kw)  # type: ignore[call-overload]
    if proc.returncode != 0:
        raise SystemExit(f"failed: {' '.join(argv)}\n{proc.stderr[-2000:]}")
    return time.perf_counter() - start


def clean_env() -> dict[str, str]:
    """This process's environment without the index variables of uv and pip."""
    drop = ("UV_INDEX", "UV_DEFAULT_INDEX", "UV_EXTRA_INDEX_URL", "UV_FIND_LINKS", "PIP_")
    return {k: v for k, v in os.environ.items() if not k.startswith(drop)}


def requirement_sets(args: argparse.Namespace, python: str) -> list[list[str]]:
    out = subprocess.run([str(BIN / "envbisect"), "pins", args.pins, "--python", python,
                          "--json", "--no-config"], capture_output=True, text=True, check=True,
                         env=clean_env()).stdout  # fmt: skip
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
    ap.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = ap.parse_args()
    compile_bytecode()
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
    env = clean_env()
    ours = [str(BIN / "envbisect"), "run", "--package", args.package, "--pins", args.pins,
            "--python", python, "--good", args.good, "--bad", args.bad, "--dry-run", "--json",
            "--no-config", "--results", str(work / "r")]  # fmt: skip
    repro = ["--", "true"]  # the command after --: anything after it is the repro's

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

    def cold_ours() -> float:
        """envbisect with empty caches: a fresh --cache-dir and results folder."""
        fresh = Path(tempfile.mkdtemp(dir=work))
        argv = [*ours[: ours.index("--results")], "--results", str(fresh / "r"),
                "--cache-dir", str(fresh / "c")]  # fmt: skip
        try:
            return _run([*argv, *repro], env=env)
        finally:
            shutil.rmtree(fresh, ignore_errors=True)

    def cold_uv() -> float:
        """uv with an empty cache (UV_CACHE_DIR fresh)."""
        fresh = Path(tempfile.mkdtemp(dir=work))
        saved = dict(env)
        env["UV_CACHE_DIR"] = str(fresh)
        try:
            return compile_both()
        finally:
            env.clear()
            env.update(saved)
            shutil.rmtree(fresh, ignore_errors=True)

    sides: dict[str, Callable[[], float]] = {
        "envbisect --dry-run (2 plans)": lambda: _run([*ours, *repro], env=env),
        # --offline before the --: after it, it would be an argument of the repro.
        "envbisect --dry-run --offline": lambda: _run([*ours, "--offline", *repro], env=env),
        # The same question asked for the first time: plans resolved, not remembered.
        "envbisect --dry-run --offline, not remembered": lambda: _run(
            [*ours, "--offline", *repro], env={**env, "ENVBISECT_NO_PLAN_MEMO": "1"}
        ),
        "uv pip compile x2, online": lambda: compile_both(),
        "uv pip compile x2, --offline": lambda: compile_both("--offline"),
        # The very first plan on a machine: nothing cached on either side.
        "envbisect --dry-run, cold caches": cold_ours,
        "uv pip compile x2, cold cache": cold_uv,
    }
    times: dict[str, list[float]] = {k: [] for k in sides}
    for r in range(args.rounds + 1):  # the first round warms both caches
        order = list(sides.items())
        # Alternate who goes first; the warming round reads online before offline, so the
        # offline sides find the caches filled even on a fresh machine.
        for name, fn in order if (r % 2 or not r) else reversed(order):
            t = fn()
            if r:
                times[name].append(t)
    med = {k: statistics.median(v) for k, v in times.items()}
    what = (f"first 2 plans in a fresh process ({args.pins}'s pins + {args.package} "
            f"{args.good} / {args.bad}, Python {args.python})")  # fmt: skip
    cmd_a = (f"envbisect run --package {args.package} --pins {args.pins} --good {args.good} "
             f"--bad {args.bad} --dry-run --no-config")  # fmt: skip
    cmd_b = "uv pip compile --no-config --only-binary :all: end.in (x2: both ends)"
    figures = [
        Figure(what=f"{what}, online",
               a=Side(label="envbisect --dry-run", value=med["envbisect --dry-run (2 plans)"],
                      command=cmd_a + " -- true"),
               b=Side(label="uv pip compile x2", value=med["uv pip compile x2, online"],
                      command=cmd_b)),
        Figure(what=f"{what}, online, nothing cached (the first plan on a machine)",
               a=Side(label="envbisect --dry-run, empty --cache-dir",
                      value=med["envbisect --dry-run, cold caches"],
                      command=cmd_a + " --cache-dir EMPTY -- true"),
               b=Side(label="uv pip compile x2, empty UV_CACHE_DIR",
                      value=med["uv pip compile x2, cold cache"],
                      command="UV_CACHE_DIR=EMPTY " + cmd_b)),
        Figure(what=f"{what}, offline",
               a=Side(label="envbisect --dry-run --offline",
                      value=med["envbisect --dry-run --offline"],
                      command=cmd_a + " --offline -- true"),
               b=Side(label="uv pip compile x2 --offline",
                      value=med["uv pip compile x2, --offline"], command=cmd_b + " --offline")),
        Figure(what=f"{what}, offline, plans not remembered (a question asked for the first "
                    "time)",
               a=Side(label="envbisect --dry-run --offline, ENVBISECT_NO_PLAN_MEMO=1",
                      value=med["envbisect --dry-run --offline, not remembered"],
                      command="ENVBISECT_NO_PLAN_MEMO=1 " + cmd_a + " --offline -- true"),
               b=Side(label="uv pip compile x2 --offline",
                      value=med["uv pip compile x2, --offline"], command=cmd_b + " --offline")),
    ]  # fmt: skip
    if args.json:
        emit("bench_cli_plan", figures, rounds=args.rounds)
        return 0
    print(
        f"# first plans of a fresh process ({args.pins} + {args.package} {args.good} and "
        f"{args.bad}, Python {args.python}, {os.cpu_count()} cores, {args.rounds} rounds; "
        "index settings set aside on both sides: --no-config)\n"
    )
    print("| | median s |\n|---|---:|")
    for name, sec in med.items():
        print(f"| {name} | {sec:.2f} |")
    print(f"\nenvbisect / uv online: {figures[0].comparison()}; "
          f"nothing cached: {figures[1].comparison()}; "
          f"envbisect --offline / uv --offline: {figures[2].comparison()}; "
          f"not remembered, offline: {figures[3].comparison()}")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
