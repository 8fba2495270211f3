"""Benchmark: per-probe overhead of ``envbisect probe`` as a user runs it, two installations A/B.

Run from the repository root, with any Python that has ``packaging`` (the tests' helpers need
it), e.g. the project's venv:

    python bench/bench_probe.py [--before OLD/.venv/bin/envbisect] \\
        --after .venv/bin/envbisect [--rounds 15] [--python PATH] [--json]

It compares two installations of envbisect (say the code before a refactor and after it), or
one (``--after`` alone: envbisect against the floor, the figure of bench/figures.py), on
one tiny wheel (benchpkg 1.0, no dependencies) served by the tests' local index on 127.0.0.1.
Each timed probe is the whole process, wall time:

    ENVBISECT probe --with benchpkg==1.0 --index-url URL --no-config --python PY \\
        --results FRESH_DIR --cache-dir META_CACHE -- python -c pass

A fresh ``--results`` directory every time, so the store never answers and every probe really
builds its environment; one ``UV_CACHE_DIR`` for the whole run, warmed by one untimed probe per
installation, so every build is hard links from uv's cache. Each installation keeps its own
metadata cache (``--cache-dir``) for the whole run, warmed by the same untimed probe. The
floor is the same work scripted by hand with the same uv: ``uv venv`` + ``uv pip install
benchpkg==1.0`` + ``DIR/bin/python -c pass`` (with ``--no-config``, as envbisect runs uv).

Each round times before, after and floor once, in an order that rotates from round to round,
so all three see the same machine noise. Prints median, min and max seconds for each, the
after/before ratio of the medians, and each installation's overhead over the floor (median
minus the floor's median). These machines are noisy: compare the ratio and the overheads,
not absolute seconds.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from benchfig import Figure, Side, compile_bytecode, emit, shown  # noqa: E402

from envbisect.env.uv import UV_ENV_DROP  # noqa: E402
from support.index_server import IndexFile, LocalIndex  # noqa: E402
from support.wheels import build_wheel  # noqa: E402

PACKAGE = "benchpkg"
VERSION = "1.0"
# Variables that would point uv or envbisect at other indexes, caches or settings than the
# bench gives them: envbisect's own list for uv, plus these.
_ENV_DROP = (*UV_ENV_DROP, "UV_OFFLINE", "ENVBISECT_CACHE_DIR")


class BenchError(Exception):
    """A timed command failed: its command line, exit status and output tail."""


@dataclass
class Subject:
    """One thing timed each round: a label and a callable that does one probe."""

    label: str
    once: Callable[[], float]
    seconds: list[float] = field(default_factory=list)


def bench_env(uv_cache: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in _ENV_DROP}
    env["UV_CACHE_DIR"] = str(uv_cache)
    env["UV_NO_PROGRESS"] = "1"
    env["NO_COLOR"] = "1"
    return env


def build_index(root: Path) -> LocalIndex:
    root.mkdir(parents=True, exist_ok=True)
    path = build_wheel(root, PACKAGE, VERSION, {f"{PACKAGE}/__init__.py": "X = 1\n"})
    index = LocalIndex()
    index.add(
        IndexFile(project=PACKAGE, path=path, upload_time=datetime(2024, 1, 1, tzinfo=timezone.utc))
    )
    return index.start()


def timed(cmd: list[str], env: dict[str, str]) -> float:
    """Wall seconds of one process; a failure is a BenchError with its output's tail."""
    start = time.perf_counter()
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, stdin=subprocess.DEVNULL)
    seconds = time.perf_counter() - start
    if proc.returncode != 0:
        tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-15:])
        raise BenchError(f"exit {proc.returncode}: {' '.join(cmd)}\n{tail}")
    return seconds


def envbisect_probe(
    envbisect: str, python: str, index_url: str, meta_cache: Path, work: Path, env: dict[str, str]
) -> Callable[[], float]:
    """One ``envbisect probe`` with a fresh results directory (removed afterwards, untimed)."""

    def once() -> float:
        results = Path(tempfile.mkdtemp(prefix="results-", dir=work))
        try:
            return timed(
                [
                    envbisect,
                    "probe",
                    "--with",
                    f"{PACKAGE}=={VERSION}",
                    "--index-url",
                    index_url,
                    "--no-config",
                    "--python",
                    python,
                    "--results",
                    str(results),
                    "--cache-dir",
                    str(meta_cache),
                    "--",
                    "python",
                    "-c",
                    "pass",
                ],
                env,
            )
        finally:
            shutil.rmtree(results, ignore_errors=True)

    return once


def floor_probe(
    uv: str, python: str, index_url: str, work: Path, env: dict[str, str]
) -> Callable[[], float]:
    """The same environment scripted by hand: uv venv + uv pip install + python -c pass."""

    def once() -> float:
        parent = Path(tempfile.mkdtemp(prefix="floor-", dir=work))
        venv = parent / "venv"
        vpy = str(venv / "bin" / "python")
        try:
            return (
                timed([uv, "venv", str(venv), "--python", python, "--quiet", "--no-config"], env)
                + timed(
                    [
                        uv,
                        "pip",
                        "install",
                        "--python",
                        vpy,
                        "--quiet",
                        "--no-config",
                        "--index-url",
                        index_url,
                        f"{PACKAGE}=={VERSION}",
                    ],
                    env,
                )
                + timed([vpy, "-c", "pass"], env)
            )
        finally:
            shutil.rmtree(parent, ignore_errors=True)

    return once


def uv_next_to(envbisect: str) -> str:
    """The uv of the venv ``envbisect`` lives in (its bin folder), else the one on PATH."""
    here = Path(envbisect).parent / "uv"
    if here.is_file() and os.access(here, os.X_OK):
        return str(here)
    found = shutil.which("uv")
    if not found:
        raise SystemExit(f"no uv next to {envbisect} nor on PATH")
    return found


def output_of(cmd: list[str], env: dict[str, str]) -> str:
    """The last line a command prints (a version, say); "?" when it prints nothing."""
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
    lines = (proc.stdout.strip() or proc.stderr.strip()).splitlines()
    return lines[-1] if lines else "?"


def find_python(uv: str, request: str | None, env: dict[str, str]) -> str:
    """An interpreter path, as uv finds it for ``request`` (any version when None); a system
    one, not the virtualenv in the working directory, so every probe gets the same path."""
    if request and os.sep in request and os.path.exists(request):
        return request
    cmd = [uv, "python", "find", "--no-config", "--no-project", "--system"]
    cmd += [request] if request else []
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if proc.returncode != 0 or not proc.stdout.strip():
        raise SystemExit(f"uv finds no Python for {request or 'the default'}: {proc.stderr}")
    return proc.stdout.strip().splitlines()[-1]


def run_rounds(subjects: list[Subject], rounds: int) -> None:
    n = len(subjects)
    for r in range(rounds):
        for k in range(n):
            s = subjects[(r + k) % n]  # rotate the order so no subject always goes first
            s.seconds.append(s.once())
        line = "  ".join(f"{s.label} {s.seconds[-1]:.3f}" for s in subjects)
        print(f"round {r + 1}/{rounds}: {line}", file=sys.stderr, flush=True)


def print_table(subjects: list[Subject], floor: Subject) -> None:
    fmed = statistics.median(floor.seconds)
    print("| | median s | min s | max s | median - floor s |")
    print("|---|---:|---:|---:|---:|")
    for s in subjects:
        med = statistics.median(s.seconds)
        over = "" if s is floor else f"{med - fmed:+.3f}"
        print(f"| {s.label} | {med:.3f} | {min(s.seconds):.3f} | {max(s.seconds):.3f} | {over} |")


def main() -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--before", metavar="ENVBISECT", help="the A installation (optional)")
    ap.add_argument("--after", required=True, metavar="ENVBISECT", help="the B installation")
    ap.add_argument("--rounds", type=int, default=15, help="timed rounds (default 15)")
    ap.add_argument("--python", default=None, help="interpreter of the environments")
    ap.add_argument("--uv", default=None, help="uv for the floor (default: next to --after)")
    ap.add_argument("--json", action="store_true", help="print the figure as JSON")
    args = ap.parse_args()
    compile_bytecode()
    for exe in filter(None, (args.before, args.after)):
        if not (os.path.isfile(exe) and os.access(exe, os.X_OK)):
            ap.error(f"not an executable: {exe}")

    work = Path(tempfile.mkdtemp(prefix="envbisect-bench-probe-"))
    env = bench_env(work / "uv-cache")
    uv = args.uv or uv_next_to(args.after)
    uv_before = uv_next_to(args.before or args.after)
    python = find_python(uv, args.python, env)
    index = build_index(work / "files")
    log = sys.stderr if args.json else sys.stdout
    try:
        print(f"# envbisect probe overhead ({python}, {os.cpu_count()} cores)\n", file=log)
        if args.before:
            print(f"before: {args.before} ({output_of([args.before, '--version'], env)})",
                  file=log)  # fmt: skip
        print(f"after:  {args.after} ({output_of([args.after, '--version'], env)})", file=log)
        print(f"floor:  {uv} ({output_of([uv, '--version'], env)})", file=log)
        if output_of([uv_before, "--version"], env) != output_of([uv, "--version"], env):
            print(f"note: the before installation's uv differs: {uv_before}", file=log)
        print(f"index:  {index.url} ({PACKAGE}=={VERSION}, one wheel)\n", file=log)
        after = Subject(
            "after", envbisect_probe(args.after, python, index.url, work / "meta-after", work, env)
        )
        floor = Subject("floor", floor_probe(uv, python, index.url, work, env))
        subjects = [after, floor]
        if args.before:
            before = Subject(
                "before",
                envbisect_probe(args.before, python, index.url, work / "meta-before", work, env),
            )
            subjects.insert(0, before)
        # Warm uv's cache and each installation's metadata cache: one untimed run each.
        for s in subjects:
            s.once()
        run_rounds(subjects, args.rounds)
        ma, fmed = statistics.median(after.seconds), statistics.median(floor.seconds)
        if args.json:
            emit("bench_probe", [Figure(
                what=f"one envbisect probe ({PACKAGE}=={VERSION}: one wheel, local index)",
                a=Side(label="envbisect probe", value=ma, command=shown(
                    ["envbisect", "probe", "--with", f"{PACKAGE}=={VERSION}", "--index-url",
                     "URL", "--no-config", "--", "python", "-c", "pass"], {})),
                b=Side(label="uv venv + uv pip install + run, by hand", value=fmed,
                       command="uv venv --no-config && uv pip install --no-config --index-url "
                       f"URL {PACKAGE}=={VERSION} && python -c pass"),
                compare="difference",
                note="the fixed cost of a probe over the same work scripted by hand",
            )], rounds=args.rounds)  # fmt: skip
            return 0
        print(f"{args.rounds} rounds, order rotating each round; whole-process wall time\n")
        print_table(subjects, floor)
        if args.before:
            mb = statistics.median(subjects[0].seconds)
            print(f"\nafter / before (medians): {ma / mb:.3f}x")
            print(f"overhead over floor: before {mb - fmed:+.3f} s, after {ma - fmed:+.3f} s")
        else:
            print(f"\noverhead over floor: {ma - fmed:+.3f} s")
    except BenchError as e:
        print(f"\nbench aborted, a command failed: {e}", file=sys.stderr)
        return 1
    finally:
        index.stop()
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
