"""Benchmark: what ``envbisect lock`` spends per constraint found, against a person upgrading
one package at a time.

Run from the repository root: python bench/bench_lock.py [--pypi OUT_JSON] [--json]

Both sides build real uv environments and run the real repro, on the tests' local index
(both with the user's index settings set aside: ``--no-config``)
(tests/support/corpus.py ``_lock_family``): lockapp 1.0.0, whose newest environment fails
twice over (lk-alpha 1.3.0 and lk-beta 2.0.0 broke it; lk-fix 1.2.0 broke it and 1.3.0 fixed
it; lk-noise changes nothing). Fresh store and results each side.

- envbisect: ``envbisect lock`` by date (from lockapp's upload) and ``--from`` an old lock
  (upgrade mode); counted: environments built and run (probes), not answers from the store.
- one at a time: from the old lock, take each package in turn to its newest version; when
  the repro fails, step that package down one release at a time until it passes (what a
  person does without a tool). Counted the same way: environments built and run.

With --pypi: the real case in the README (datasets==2.14.6 with today's environment):
envbisect's environments, built, from a run's ``--json`` output, against the person's
*counted, not built* (a lower bound, labelled so): the packages that differ between the
starting environment and today's, plus the releases of each held-back package stepped down
from the newest to the last good one. ``--json``: the figures, for bench/figures.py.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from benchfig import Figure, Side, compile_bytecode, emit  # noqa: E402

from support.corpus import build_index  # noqa: E402

OLD = {"lockapp": "1.0.0", "lk-alpha": "1.0.0", "lk-beta": "1.0.0", "lk-fix": "1.0.0",
       "lk-noise": "0.0.0"}  # fmt: skip
VERSIONS = {
    "lk-alpha": ["1.0.0", "1.1.0", "1.2.0", "1.3.0", "1.4.0"],
    "lk-beta": ["1.0.0", "1.1.0", "2.0.0", "2.1.0"],
    "lk-fix": ["1.0.0", "1.1.0", "1.2.0", "1.3.0", "1.4.0"],
    "lk-noise": [f"0.{i}.0" for i in range(6)],
}


def envbisect_lock(url: str, work: Path, *extra: str) -> tuple[int, float, dict[str, object]]:
    rep = work / "repro.py"
    rep.write_text("import lockapp\nlockapp.run()\n")
    t = time.perf_counter()
    out = subprocess.run(
        [sys.executable, "-m", "envbisect", "lock", "--index-url", url, "--no-config", "--results",
         str(work / "results"), "--cache-dir", str(work / "cache"), "--repro", str(rep),
         "--json", *extra],
        capture_output=True, text=True, cwd=work, check=True,
    )  # fmt: skip
    seconds = time.perf_counter() - t
    data = json.loads(out.stdout)
    return len(data["probes"]), seconds, data


def one_at_a_time(url: str, work: Path) -> tuple[int, float, dict[str, str]]:
    """The person's way, for real: uv venv + uv pip install + the repro per environment."""
    uv = subprocess.run([sys.executable, "-c", "from envbisect.env.uv import find_uv; "
                         "print(find_uv())"], capture_output=True, text=True,
                        check=True).stdout.strip()  # fmt: skip
    env = dict(OLD)
    built = 0
    t = time.perf_counter()

    def passes(pins: dict[str, str]) -> bool:
        nonlocal built
        built += 1
        venv = work / f"env{built}"
        subprocess.run([uv, "venv", "-q", "--no-config", "--python", sys.executable, str(venv)],
                       check=True)  # fmt: skip
        subprocess.run([uv, "pip", "install", "-q", "--no-config", "--python",
                        str(venv / "bin" / "python"), "--index-url", url,
                        *(f"{n}=={v}" for n, v in pins.items())], check=True)  # fmt: skip
        ran = subprocess.run([str(venv / "bin" / "python"), "-c",
                              "import lockapp; lockapp.run()"], capture_output=True)  # fmt: skip
        return ran.returncode == 0

    for name, versions in VERSIONS.items():
        for v in reversed(versions[versions.index(env[name]) + 1 :]):  # newest first, down
            trial = {**env, name: v}
            if passes(trial):
                env = trial
                break
    return built, time.perf_counter() - t, env


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pypi", metavar="OUT_JSON", help="a `envbisect lock --json` output of the "
                    "README's datasets==2.14.6 run, to count its probes")  # fmt: skip
    ap.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = ap.parse_args()
    compile_bytecode()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        os.environ.setdefault("UV_CACHE_DIR", str(root / "uv-cache"))
        index = build_index(root / "index")
        try:
            rows = []
            n, s, data = envbisect_lock(index.url, _dir(root, "by-date"), "--with",
                                        "lockapp==1.0.0")  # fmt: skip
            rows.append(("envbisect lock (by date)", n, _held(data), s))
            old = root / "old.txt"
            old.write_text("".join(f"{k}=={v}\n" for k, v in OLD.items()))
            n, s, data = envbisect_lock(index.url, _dir(root, "from"), "--from", str(old))
            rows.append(("envbisect lock --from old.txt", n, _held(data), s))
            n, s, env = one_at_a_time(index.url, _dir(root, "person"))
            held = sum(1 for k, v in env.items() if k in VERSIONS and v != VERSIONS[k][-1])
            rows.append(("one package at a time", n, held, s))
        finally:
            index.stop()
    ours, upgrade, person = rows
    figures = [
        Figure(what=f"lock: {label}, lockapp and 4 packages, 2 breaks (tests' index): "
               "environments built and run, both sides for real",
               a=Side(label=row[0], value=row[1], unit="environments", command=cmd),
               b=Side(label="one package at a time, built", value=person[1],
                      unit="environments", command="uv venv + uv pip install --no-config + the "
                      "repro per step: each package to its newest, then down one release at a "
                      "time while it fails"),
               extra={"constraints": row[2], "seconds": round(row[3], 1),
                      "person_seconds": round(person[3], 1)})
        for label, row, cmd in (
            ("by date", ours, "envbisect lock --with lockapp==1.0.0 --index-url URL --no-config "
             "--repro repro.py"),
            ("--from an old lock", upgrade, "envbisect lock --from old.txt --index-url URL "
             "--no-config --repro repro.py"),
        )
    ]  # fmt: skip
    if args.pypi:
        figures.append(pypi(Path(args.pypi), quiet=args.json))
    if args.json:
        emit("bench_lock", figures)
        return
    print(f"{'way':32} {'environments':>12} {'held back':>9} {'per constraint':>14} {'s':>6}")
    for way, n, held, s in rows:
        per = f"{n / held:.1f}" if held else "-"
        print(f"{way:32} {n:>12} {held:>9} {per:>14} {s:>6.1f}")


def pypi(path: Path, *, quiet: bool = False) -> Figure:
    """The README's real run: envbisect's environments, against a lower bound for the person
    (each package that differs between the start and today's environment taken to its newest
    once, and each held-back package stepped down release by release to its last good one;
    the incompatibilities a person meets on the way, numpy 2 under pandas 2.1, only add)."""
    data = json.loads(path.read_text())
    rows = data["probes"] + data["reused"]
    start = next(r for r in rows if r["version"].endswith("(start of the window)"))
    newest = next(r for r in rows if r["version"] == "newest")
    a = {d["name"]: d["version"] for d in start["installed"]}
    b = {d["name"]: d["version"] for d in newest["installed"]}
    changed = [n for n in a if n in b and a[n] != b[n]]
    steps = 0
    for c in data["constraints"]:
        out = subprocess.run(
            [sys.executable, "-m", "envbisect", "versions", c["package"], "--python", "3.11",
             "--json"], capture_output=True, text=True, check=True,
        )  # fmt: skip
        from packaging.version import Version

        listed = json.loads(out.stdout)
        versions = [Version(v["version"]) for v in listed["candidates"] if v["installable"]]
        lo, hi = Version(c["last_good"]), Version(b[c["package"]])
        steps += sum(1 for v in versions if lo <= v < hi)  # below the newest, down to good
    person = len(changed) + steps
    held = ", ".join(c["package"] + c["specifier"] for c in data["constraints"])
    if not quiet:
        print(
            f"\nPyPI (datasets==2.14.6): envbisect {len(data['probes'])} environments built "
            f"({len(rows)} probed with the store's) for {_held(data)} constraint(s) ({held}); "
            f"one package at a time (counted, not built: a lower bound): at least {person} "
            f"({len(changed)} packages changed, {steps} releases stepped down)"
        )
    return Figure(
        what=f"lock on PyPI: datasets==2.14.6 and today's environment, {_held(data)} "
        f"constraint(s) ({held})",
        a=Side(label="envbisect lock, built", value=len(data["probes"]), unit="environments",
               command="envbisect lock --with datasets==2.14.6 --no-config --probe ..."),
        b=Side(label="one package at a time, counted (not built): a lower bound", value=person,
               unit="environments", command=f"{len(changed)} packages changed + {steps} "
               "releases stepped down"),
    )  # fmt: skip


def _held(data: dict[str, object]) -> int:
    constraints = data["constraints"]
    assert isinstance(constraints, list)
    return len(constraints)


def _dir(root: Path, name: str) -> Path:
    d = root / name
    d.mkdir()
    return d


if __name__ == "__main__":
    main()
