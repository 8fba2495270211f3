"""Benchmark: compatibility matrices. Run from the repository root: python bench/bench_matrix.py

On the tests' local index (gridapp x gridlib, 7 x 6 cells, a known grid) it prints:
1. cells probed by the monotone strategy against cells in the grid (and the full sweep);
2. wall time of the matrix with --jobs 1 and --jobs 2, side by side, fresh stores, median of
   --rounds runs each (these machines are noisy: compare the ratio);
3. disk used by all the matrix's environments (kept with keep_envs) against the sum of their
   apparent sizes: uv installs hard links from its cache, so the files are shared.
``--pypi`` measures (3) on a 2 x 2 slice of the real datasets x pyarrow matrix instead.
4. For every committed results/*/results.json swept with --full: the default strategy replayed
   against those measured outcomes (no environments): cells it would probe, and cells it would
   infer wrongly.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from packaging.version import Version  # noqa: E402

from envbisect.core.living.cell import CellState  # noqa: E402
from envbisect.model import IndexConfig  # noqa: E402
from envbisect.modes.living.matrix import load_matrix, run_matrix  # noqa: E402
from support.corpus import build_index  # noqa: E402
from support.options import flat_options  # noqa: E402

GRID = """
[matrix]
name = "grid"
python = ["{python}"]
index_url = "{index}"
repro = "repro.py"
[[axis]]
package = "gridapp"
[[axis]]
package = "gridlib"
"""
PYPI = """
[matrix]
name = "slice"
python = ["3.11"]
probes = ["import:datasets"]
rest = "contemporary"
[[axis]]
package = "datasets"
versions = ["3.6.0", "4.0.0"]
[[axis]]
package = "pyarrow"
versions = ["20.0.0", "21.0.0"]
"""


def disk(envs: Path) -> tuple[int, int, int]:
    """(apparent bytes of every file, bytes of distinct files, bytes of the files that are
    not hard links into uv's cache: what the environments cost on top of it)."""
    apparent, seen, own = 0, {}, 0
    for root, _, names in os.walk(envs):
        for n in names:
            st = os.lstat(os.path.join(root, n))
            if not os.path.isfile(os.path.join(root, n)) or os.path.islink(os.path.join(root, n)):
                continue
            apparent += st.st_size
            key = (st.st_dev, st.st_ino)
            if key not in seen:
                seen[key] = st.st_blocks * 512
                own += st.st_blocks * 512 if st.st_nlink == 1 else 0
    return apparent, sum(seen.values()), own


def replay(results_json: Path) -> tuple[int, int, int, int]:
    """(cells, testable, probed by the default strategy, mis-inferred) against a full sweep."""
    import json

    from envbisect.model import EnvSpec, Outcome, OutcomeKind
    from envbisect.strategy.rows import Cell, walk_row

    data = json.loads(results_json.read_text())
    truth = {json.dumps(c["versions"]): c for c in data["cells"]}
    axes = data["matrix"]["axes"]
    probed = 0

    rows: dict[str, list[Cell]] = {}
    for key, c in truth.items():
        versions = tuple((a, c["versions"][a]) for a in axes)
        cell = Cell(python=str(c["python"]), versions=versions)
        if c["state"] == "unresolvable":
            cell.state = CellState.UNRESOLVABLE
        else:
            cell.spec = EnvSpec.build([key], python="replay", indexes=IndexConfig())
        rows.setdefault(json.dumps(versions[:-1]), []).append(cell)
    for row in rows.values():
        row.sort(key=lambda c: Version(c.versions[-1][1]))
        # The row walk asks for cells; the full sweep's outcome answers each.
        walk = walk_row(row)
        asked: Cell | None = next(walk, None)
        while asked is not None:
            probed += 1
            c = truth[asked.key]
            outcome = Outcome(kind=OutcomeKind(str(c["kind"])), signature=str(c["signature"]))
            asked.state, asked.outcome = CellState.MEASURED, outcome
            try:
                asked = walk.send(outcome)
            except StopIteration:
                asked = None
    wrong = sum(
        1
        for row in rows.values()
        for c in row
        if c.state is CellState.INFERRED and c.outcome is not None
        and c.outcome.kind.value != truth[c.key]["kind"]
    )  # fmt: skip
    testable = sum(c["state"] != "unresolvable" for c in truth.values())
    return len(truth), testable, probed, wrong


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--pypi", action="store_true")
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="envbisect-matrix-bench-"))
    os.environ.setdefault("UV_CACHE_DIR", str(work / "uv-cache"))
    index = build_index(work / "index")
    try:
        (work / "repro.py").write_text("import gridapp\ngridapp.run()\n")
        path = work / "grid.toml"
        path.write_text(GRID.format(python=sys.executable, index=index.url))
        spec = load_matrix(path)
        res = run_matrix(
            spec, flat_options(results=work / "warm", cache_dir=work / "c")
        )  # warm uv's cache
        c = res.counts()
        full = run_matrix(
            spec, flat_options(results=work / "full", cache_dir=work / "c"), full=True
        ).counts()
        print(f"# envbisect matrix benchmark ({sys.executable}, {os.cpu_count()} cores)\n")
        print("| grid | cells | probed (monotone) | inferred | unresolvable | probed (--full) |")
        print("|---|---:|---:|---:|---:|---:|")
        print(f"| gridapp x gridlib | {c.cells} | {c.built} | {c.inferred} | "
              f"{c.unresolvable} | {full.built} |")  # fmt: skip
        times: dict[int, list[float]] = {1: [], 2: []}
        for r in range(args.rounds):
            for jobs in (1, 2):
                start = time.perf_counter()
                run_matrix(spec, flat_options(results=work / f"j{jobs}-{r}", jobs=jobs,
                                               cache_dir=work / "c"), full=True)  # fmt: skip
                times[jobs].append(time.perf_counter() - start)
        m1, m2 = statistics.median(times[1]), statistics.median(times[2])
        print("\n| --full matrix wall time | --jobs 1 | --jobs 2 | ratio |\n|---|---:|---:|---:|")
        print(f"| median of {args.rounds} | {m1:.1f} s | {m2:.1f} s | {m1 / m2:.2f}x |")
        if args.pypi:
            path = work / "slice.toml"
            path.write_text(PYPI)
            spec = load_matrix(path)
            os.environ.pop("UV_CACHE_DIR")  # uv's own cache: the real PyPI wheels
        run_matrix(
            spec,
            flat_options(results=work / "kept", keep_envs=True, cache_dir=work / "c"),
            full=True,
        )
        apparent, used, own = disk(work / "kept" / ".envs")
        print(f"\n| environments of {spec.name} | apparent size | distinct files | "
              f"not in uv's cache |\n|---|---:|---:|---:|\n"
              f"| {sum(1 for _ in (work / 'kept' / '.envs').iterdir())} | "
              f"{apparent / 1e6:.1f} MB | {used / 1e6:.1f} MB | {own / 1e6:.1f} MB |")  # fmt: skip
        print("\n| committed matrix (swept with --full) | cells | testable | probed by the "
              "default strategy | inferred wrongly |\n|---|---:|---:|---:|---:|")  # fmt: skip
        for results_json in sorted((ROOT / "results").glob("*/results.json")):
            cells, testable, probed, wrong = replay(results_json)
            print(f"| {results_json.parent.name} | {cells} | {testable} | {probed} | {wrong} |")
    finally:
        index.stop()
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
