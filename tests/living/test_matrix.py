"""Compatibility matrices on the local index, against a grid whose truth is known
(support/corpus.py: gridapp >= 1.4 crashes with gridlib >= 1.3; gridapp 1.6 needs
gridlib >= 1.2), plus schema errors, resume, publishing and the page in a real browser."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from packaging.version import Version

from envbisect.core.living.cell import CellState
from envbisect.core.living.spec import select_versions
from envbisect.errors import UsageError
from envbisect.modes.living.matrix import load_matrix, run_matrix
from envbisect.progress import Progress
from support.cli import envbisect
from support.corpus import grid_truth
from support.index_server import LocalIndex
from support.installs import install_and_run
from support.options import bump_matrix, flat_options

pytestmark = pytest.mark.slow

MATRIX = """
[matrix]
name = "grid"
description = "gridapp x gridlib"
python = ["{python}"]
index_url = "{index}"
repro = "repro.py"
timeout = 60

[[axis]]
package = "gridapp"
select = "all"

[[axis]]
package = "gridlib"
select = "all"
"""


def write_matrix(tmp_path: Path, index: LocalIndex, python: str, text: str = MATRIX) -> Path:
    (tmp_path / "repro.py").write_text("import gridapp\ngridapp.run()\n")
    path = tmp_path / "grid.toml"
    path.write_text(text.format(python=python, index=index.url))
    return path


class Count(Progress):
    def __init__(self, stop_after: int | None = None) -> None:
        self.started = 0
        self.stop_after = stop_after

    def probe_started(self, version: str, left: int, steps_left: int) -> None:
        self.started += 1
        if self.stop_after is not None and self.started > self.stop_after:
            raise KeyboardInterrupt

    def probe_finished(self, *args: object) -> None:
        pass


def test_grid_comes_out_right_cell_by_cell_with_fewer_probes(
    index: LocalIndex, python: str, tmp_path: Path
) -> None:
    spec = load_matrix(write_matrix(tmp_path, index, python))
    counter = Count()
    res = run_matrix(
        spec, flat_options(results=tmp_path / "r", cache_dir=tmp_path / "c"), progress=counter
    )
    assert len(res.cells) == 7 * 6
    for cell in res.cells:
        app, lib = dict(cell.versions)["gridapp"], dict(cell.versions)["gridlib"]
        truth = grid_truth(app, lib)
        if truth == "unresolvable":
            assert cell.state is CellState.UNRESOLVABLE and "gridlib>=1.2" in cell.reason
            continue
        assert cell.state in (CellState.MEASURED, CellState.INFERRED), (cell.label(), cell.state)
        assert cell.outcome is not None and cell.outcome.kind.value == truth, cell.label()
    counts = res.counts()
    # Monotone rows: every row's ends, plus a bisection in the rows that change.
    assert counts.built == counter.started < 40
    assert counts.inferred > 0 and counts.inferred + counts.built == 40
    full = run_matrix(
        spec, flat_options(results=tmp_path / "r", cache_dir=tmp_path / "c"), full=True
    )
    assert full.counts().inferred == 0 and full.counts().reused == counts.built


def test_outside_pins_builds_the_cells_the_pins_rule_out(
    index: LocalIndex, python: str, tmp_path: Path
) -> None:
    """``outside_pins = true``: gridapp 1.6 requires gridlib>=1.2, yet its cells with gridlib
    1.0 and 1.1 are built (the axis versions override the requirement, as uv's --override)
    and pass, where without it they are unresolvable."""
    text = MATRIX.replace("timeout = 60\n", "timeout = 60\noutside_pins = true\n")
    spec = load_matrix(write_matrix(tmp_path, index, python, text))
    assert spec.outside_pins
    res = run_matrix(spec, flat_options(results=tmp_path / "r", cache_dir=tmp_path / "c"),
                     full=True)  # fmt: skip
    cells = {(dict(c.versions)["gridapp"], dict(c.versions)["gridlib"]): c for c in res.cells}
    assert not [c.label() for c in res.cells if c.state is CellState.UNRESOLVABLE]
    for lib in ("1.0.0", "1.1.0"):
        c = cells[("1.6.0", lib)]
        assert c.state is CellState.MEASURED and c.outcome is not None
        assert c.outcome.kind.value == "pass", c.label()
        assert c.spec is not None and c.spec.overrides == ("gridapp==1.6.0", f"gridlib=={lib}")
    assert cells[("1.5.0", "1.3.0")].outcome.kind.value == "crash"  # type: ignore[union-attr]


def test_outside_pins_follows_the_later_axis_where_two_disagree(
    index: LocalIndex, python: str, tmp_path: Path
) -> None:
    """sideapp 1.0.0 requires sidetok<2, sidelib 2.0.0 requires sidetok>=2: the cell is built
    as ``pip install sidelib==2.0.0`` over sideapp builds it (sidetok 2.0.0, the later axis's
    need, overridden too), not left "unresolvable: sidetok"."""
    (tmp_path / "side.py").write_text(
        "import sideapp, sidelib, sidetok\nprint(sidelib.__version__, sidetok.__version__)\n"
    )
    path = tmp_path / "side.toml"
    path.write_text(f'[matrix]\nname = "side"\npython = ["{python}"]\nindex_url = "{index.url}"\n'
                    'repro = "side.py"\noutside_pins = true\n[[axis]]\npackage = "sideapp"\n'
                    '[[axis]]\npackage = "sidelib"\n')  # fmt: skip
    res = run_matrix(load_matrix(path), flat_options(results=tmp_path / "r",
                     cache_dir=tmp_path / "c"), full=True)  # fmt: skip
    cells = {dict(c.versions)["sidelib"]: c for c in res.cells}
    assert set(cells) == {"1.0.0", "2.0.0"}
    two = cells["2.0.0"]
    assert two.state is CellState.MEASURED and two.outcome is not None, two.reason
    assert two.outcome.kind.value == "pass"
    assert two.spec is not None and "sidetok==2.0.0" in two.spec.overrides  # as planned
    assert {(d.name, d.version) for d in two.installed} >= {("sidelib", "2.0.0"),
                                                             ("sidetok", "2.0.0")}  # fmt: skip
    one = cells["1.0.0"]
    assert one.spec is not None and not any(o.startswith("sidetok") for o in one.spec.overrides)


def test_interrupted_matrix_resumes(index: LocalIndex, python: str, tmp_path: Path) -> None:
    spec = load_matrix(write_matrix(tmp_path, index, python))
    with pytest.raises(Exception) as e:
        run_matrix(
            spec,
            flat_options(results=tmp_path / "r", cache_dir=tmp_path / "c"),
            progress=Count(stop_after=5),
        )
    assert type(e.value).__name__ == "Interrupted"
    res = run_matrix(spec, flat_options(results=tmp_path / "r", cache_dir=tmp_path / "c"))
    assert res.counts().reused == 5  # the five finished probes were not run again


def test_publish_and_the_page_in_a_real_browser(
    index: LocalIndex, python: str, tmp_path: Path
) -> None:
    path = write_matrix(tmp_path, index, python)
    proc = envbisect(
        "matrix", str(path), "--results", str(tmp_path / "r"),
        "--cache-dir", str(tmp_path / "c"), "--jobs", "2", "--json",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    out = tmp_path / "r" / "grid"
    table = (out / "table.md").read_text()
    assert "| **1.5.0** |" in table and "💥 crash SIGSEGV" in table and "⊘ unresolvable" in table
    data = json.loads((out / "results.json").read_text())
    assert len(data["cells"]) == 42
    rec_file = next(out.glob("recommended-py*.txt"))
    rec = rec_file.read_text()
    assert "gridapp==1.6.0" in rec and "gridlib==1.2.0" in rec and "--hash=sha256:" in rec
    # Every cell's lock has its PEP 751 twin (a name uv takes: no dots), and the recommended
    # pair installs on its own (the lock names its index) with uv, pip and uv pip sync.
    cell_locks = sorted((out / "locks").rglob("*.txt"))
    assert cell_locks and all(
        (t.parent / f"pylock.{t.stem.replace('.', '_')}.toml").is_file() for t in cell_locks
    )
    (rec_pylock,) = out.glob("pylock.recommended-py*.toml")
    assert "." not in rec_pylock.name[len("pylock.") : -len(".toml")]
    install_and_run(rec_file, rec_pylock, "gridapp", python, tmp_path)
    svg = (out / "heatmap.svg").read_text()
    assert svg.startswith("<svg") and svg.count("<rect") > 42
    csv_rows = (out / "results.csv").read_text().splitlines()
    assert csv_rows[0].startswith("python,gridapp,gridlib,state") and len(csv_rows) == 43
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        pytest.skip("Chromium is not installed (.ci/run installs Debian's chromium)")
    html_file = out / "table.html"
    cells = json.loads((out / "results.json").read_text())["cells"]
    crash = next(
        i for i, c in enumerate(cells) if c["kind"] == "crash" and c["state"] == "measured"
    )
    dom = subprocess.run(
        [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--no-first-run", "--disable-component-update", "--disable-sync",
         f"--user-data-dir={tmp_path / 'chrome'}", "--dump-dom",
         html_file.as_uri() + f"#cell=c{crash}"],
        capture_output=True, text=True, timeout=120,
    ).stdout  # fmt: skip
    assert '<table class="grid">' in dom
    assert len(re.findall(r'<td[^>]*data-cell="c\d+"', dom)) == 42
    # The details pane, filled by the click handler in the page's own script:
    pane = dom.split('id="details"', 1)[1].split("</div>", 1)[0]
    assert f'data-cell="c{crash}"' in pane and "SIGSEGV" in pane and "installed: " in pane
    # The page leads with the answer: the newest passing cell and a link to its lockfile.
    answer = dom.split('id="answer"', 1)[1].split("</section>", 1)[0]
    assert "gridapp 1.6.0 + gridlib 1.2.0" in answer
    assert re.search(r'<a class="rec" id="rec-py[0-9.]+" href="recommended-py[0-9.]+\.txt"', answer)
    # The findings, against the corpus's truth: the crash's ranges and the conflict's.
    apps = sorted({c["versions"]["gridapp"] for c in cells}, key=Version)
    libs = sorted({c["versions"]["gridlib"] for c in cells}, key=Version)
    crash_app = min(
        (a for a in apps if any(grid_truth(a, b) == "crash" for b in libs)), key=Version
    )
    crash_lib = min((b for b in libs if grid_truth(apps[-1], b) == "crash"), key=Version)
    no_env = [b for b in libs if grid_truth(apps[-1], b) == "unresolvable"]
    found = dom.split('id="findings"', 1)[1].split("</section>", 1)[0]
    assert (f"gridapp &gt;= {crash_app} crash (SIGSEGV) with every gridlib &gt;= {crash_lib}: "
            "SIGSEGV in libc") in found  # fmt: skip
    assert (f"gridapp {apps[-1]} cannot be installed with every gridlib &lt;= {no_env[-1]}: "
            "gridapp needs gridlib&gt;=1.2") in found  # fmt: skip
    # Every measured passing cell links its own lockfile; the filter hides the unresolvable.
    for c in cells:
        if c["state"] == "measured" and c["kind"] == "pass":
            assert (out / c["lock"]).is_file() and f'href="{c["lock"]}"' in dom
    filtered = subprocess.run(
        [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--no-first-run", "--disable-component-update", "--disable-sync",
         f"--user-data-dir={tmp_path / 'chrome2'}", "--dump-dom",
         html_file.as_uri() + "#hide=unresolvable"],
        capture_output=True, text=True, timeout=120,
    ).stdout  # fmt: skip
    assert f"{42 - len(no_env)} of 42 cells shown" in filtered
    listing = (tmp_path / "r" / "index.html").read_text()
    assert re.search(r"href=['\"]grid/table\.html", listing) and "crash (SIGSEGV)" in listing


def test_schema_errors_name_the_file_and_the_key(tmp_path: Path) -> None:
    head = "[matrix]\nprobes = ['import:x']\n"
    bad = {
        head + "rest = 'sometimes'\n[[axis]]\npackage = 'a'\n": "[matrix] rest",
        head + "[[axis]]\npackage = 'a'\nselect = 'minr'\n": "[[axis]] 1 select",
        head + "[[axis]]\npackage = 'a'\nrange = '>>2'\n": "[[axis]] 1 range",
        "[matrix]\nprobes = ['import:x']\n": "[[axis]]",
        "[matrix]\n[[axis]]\npackage = 'a'\n": "[matrix] probes",
        "[matrix]\nprobes = ['x']\nrepeats = 0\n[[axis]]\npackage = 'a'\n": "[matrix] repeats",
        "[matrix]\nprobes = ['x']\ncolour = 'red'\n[[axis]]\npackage = 'a'\n": "[matrix] colour",
        "[matrix\n": "not valid TOML",
    }  # fmt: skip
    for text, key in bad.items():
        path = tmp_path / "m.toml"
        path.write_text(text)
        with pytest.raises(UsageError) as e:
            load_matrix(path)
        assert e.value.message.startswith(f"{path}: ") and key in e.value.message, e.value.message
        assert e.value.hint


def test_bad_matrices_fail_before_anything_is_built(
    index: LocalIndex, python: str, tmp_path: Path
) -> None:
    def matrix(text: str) -> subprocess.CompletedProcess[str]:
        path = write_matrix(tmp_path, index, python, text)
        return envbisect(
            "matrix", str(path), "--results",
            str(tmp_path / "r"), "--cache-dir", str(tmp_path / "c"), "--max-cells", "10",
        )  # fmt: skip

    too_big = matrix(MATRIX)
    assert too_big.returncode == 2 and "more than --max-cells 10" in too_big.stderr
    empty = matrix(MATRIX.replace('select = "all"\n\n[[axis]]', 'range = ">9"\n\n[[axis]]', 1))
    assert empty.returncode == 2 and "selects no version" in empty.stderr
    probe = matrix(MATRIX.replace('repro = "repro.py"', 'probes = ["lora-stpe"]'))
    assert probe.returncode == 2 and "no built-in probe named 'lora-stpe'" in probe.stderr
    blocker = tmp_path / "blocker"
    blocker.write_text("")
    path = write_matrix(tmp_path, index, python)
    unwritable = envbisect("matrix", str(path), "--results", str(blocker / "r"))
    assert unwritable.returncode == 3 and "results database" in unwritable.stderr
    for p in (too_big, empty, probe, unwritable):
        assert "Traceback" not in p.stderr and "hint: " in p.stderr
    assert not (tmp_path / "r" / ".envs").exists() or not any((tmp_path / "r" / ".envs").iterdir())


def test_selection_rules() -> None:
    vs = [Version(v) for v in ("2.16.0", "2.16.1", "2.17.0", "3.0.0", "3.0.2", "3.1.0")]
    assert [str(v) for v in select_versions("minor-latest", vs)] == [
        "2.16.1",
        "2.17.0",
        "3.0.2",
        "3.1.0",
    ]
    assert [str(v) for v in select_versions("major-latest", vs)] == ["2.17.0", "3.1.0"]
    assert select_versions("all", vs) == sorted(vs)


def test_repeats_are_runs_per_cell_as_repeat_is_everywhere(tmp_path: Path) -> None:
    """``repeats = 3`` is --repeat 3: three runs of the same repro in each cell's environment
    (one implementation; the stored row grows, the repro is the same one)."""
    from envbisect.modes.living.matrix import matrix_options, matrix_repro

    base = "[matrix]\nprobes = ['import:x']\n{extra}[[axis]]\npackage = 'a'\n"
    path = tmp_path / "m.toml"
    path.write_text(base.format(extra=""))
    once = load_matrix(path)
    path.write_text(base.format(extra="repeats = 3\n"))
    thrice = load_matrix(path)
    assert matrix_repro(thrice) == matrix_repro(once)
    assert matrix_options(thrice, flat_options()).probing.repeat == 3
    assert matrix_options(once, flat_options()).probing.repeat == 1


def test_a_non_monotone_row_is_caught_by_the_middle_check(
    index: LocalIndex, python: str, tmp_path: Path
) -> None:
    path = bump_matrix(index, python, tmp_path)
    res = run_matrix(
        load_matrix(path), flat_options(results=tmp_path / "r", cache_dir=tmp_path / "c")
    )
    kinds = {dict(c.versions)["bumplib"]: c.outcome.kind.value for c in res.cells if c.outcome}
    # Both ends pass, the middle crashes: the halves are searched, nothing is mis-inferred.
    assert kinds == {f"1.{i}.0": ("crash" if 3 <= i <= 5 else "pass") for i in range(9)}
    assert res.counts().built < 9


def test_a_cell_outside_the_pins_is_marked_and_its_lock_installs_as_listed(
    index: LocalIndex, python: str, tmp_path: Path
) -> None:
    """Published: the cell past sideapp's pins says which cap it crosses (results.json's
    ``outside``), and its lock says to install it as listed (``--no-deps``): uv installs it so
    and the repro passes; resolved, uv refuses it (sideapp 1.0.0 requires sidelib<2)."""
    from envbisect.env.uv import find_uv

    (tmp_path / "side.py").write_text("import sideapp, sidelib, sidetok\n")
    path = tmp_path / "side.toml"
    path.write_text(f'[matrix]\nname = "side"\npython = ["{python}"]\nindex_url = "{index.url}"\n'
                    'repro = "side.py"\noutside_pins = true\n[[axis]]\npackage = "sideapp"\n'
                    '[[axis]]\npackage = "sidelib"\n')  # fmt: skip
    r = tmp_path / "r"
    proc = envbisect("matrix", str(path), "--full", "--results", str(r), "--cache-dir",
                     str(tmp_path / "c"), "--no-config", cwd=tmp_path)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    cells = {
        c["versions"]["sidelib"]: c
        for c in json.loads((r / "side/results.json").read_text())["cells"]
    }
    assert "outside" not in cells["1.0.0"]
    assert cells["2.0.0"]["outside"] == (
        "sidelib 2.0.0 (sideapp 1.0.0 requires <2); sidetok>=2 as sidelib 2.0.0 needs"
    )
    lock = r / "side" / cells["2.0.0"]["lock"]
    head = lock.read_text()
    assert "outside the pins (sidelib 2.0.0 (sideapp 1.0.0 requires <2)" in head
    assert "--no-deps" in head
    assert "† outside the pins" in (r / "side/table.md").read_text()
    uv = find_uv()
    venv = tmp_path / "v"
    subprocess.run([uv, "venv", "-q", "--python", python, str(venv)], check=True)
    py = str(venv / "bin" / "python")
    base = [uv, "pip", "install", "-q", "--python", py, "--require-hashes", "-r", str(lock)]
    assert subprocess.run(base, capture_output=True, text=True).returncode != 0  # resolved
    subprocess.run([*base, "--no-deps"], check=True)
    assert subprocess.run([py, "-c", "import sideapp, sidelib, sidetok"]).returncode == 0


def test_deep_probes_run_on_each_rows_edges_and_are_published(
    index: LocalIndex, python: str, tmp_path: Path
) -> None:
    """``deep_probes`` run, each on its own, on every row's first and last passing cell and
    its newest passing inside the pins: gridapp 1.3.0 passes with every gridlib (1.0.0 and
    1.5.0); gridapp 1.6.0 passes with 1.0.0 to 1.2.0, the first two past its pins (>=1.2), so
    1.0.0 (outside) and 1.2.0 (the last, inside). results.json and the pages say what each gave;
    a second run probes nothing again and publishes the same file."""
    text = (
        MATRIX.replace("timeout = 60\n", "timeout = 60\noutside_pins = true\n"
                       'deep_probes = ["import:gridlib", "import:gridapp"]\n')
        .replace('package = "gridapp"\nselect = "all"', 'package = "gridapp"\nversions = '
                 '["1.3.0", "1.6.0"]')
    )  # fmt: skip
    path = write_matrix(tmp_path, index, python, text)
    r = tmp_path / "r"
    argv = ("matrix", str(path), "--full", "--results", str(r), "--cache-dir",
            str(tmp_path / "c"), "--no-config")  # fmt: skip
    proc = envbisect(*argv, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "deep probes (import:gridlib, import:gridapp) on 4 edge cell(s)" in proc.stderr
    assert proc.stderr.count("[import:gridapp]: pass") == 4, proc.stderr
    published = (r / "grid/results.json").read_text()
    data = json.loads(published)
    assert data["matrix"]["deep_probes"] == ["import:gridlib", "import:gridapp"]
    deep = {
        (c["versions"]["gridapp"], c["versions"]["gridlib"]): c["deep"]
        for c in data["cells"]
        if "deep" in c
    }
    assert set(deep) == {("1.3.0", "1.0.0"), ("1.3.0", "1.5.0"), ("1.6.0", "1.0.0"),
                         ("1.6.0", "1.2.0")}  # fmt: skip
    for runs in deep.values():
        assert [(d["probe"], d["kind"]) for d in runs] == [
            ("import:gridlib", "pass"),
            ("import:gridapp", "pass"),
        ]
        assert all(d["seconds"] > 0 and d["measured_at"] for d in runs)
    table = (r / "grid/table.md").read_text()
    assert "Deeper probes (import:gridlib, import:gridapp) on each row's edges:" in table
    assert "- **gridapp 1.6.0 + gridlib 1.0.0** †: import:gridlib: pass" in table
    assert "Deeper probes on each row's edges" in (r / "grid/table.html").read_text()
    again = envbisect(*argv, cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    said = [ln for ln in again.stderr.splitlines() if re.search(r": (pass|fail|crash)", ln)]
    assert len(said) == 12 + 8, again.stderr  # the cells, then the deep runs
    assert all("(from the store)" in ln for ln in said), again.stderr
    assert json.loads((r / "grid/results.json").read_text())["cells"] == data["cells"]


def test_an_unknown_deep_probe_fails_before_anything_is_built(
    index: LocalIndex, python: str, tmp_path: Path
) -> None:
    text = MATRIX.replace("timeout = 60\n", 'timeout = 60\ndeep_probes = ["lora-stpe"]\n')
    path = write_matrix(tmp_path, index, python, text)
    proc = envbisect("matrix", str(path), "--results", str(tmp_path / "r"), "--no-config",
                     cwd=tmp_path)  # fmt: skip
    assert proc.returncode == 2 and "lora-stpe" in proc.stderr, proc.stderr
    assert not (tmp_path / "r" / ".envs").exists() or not any((tmp_path / "r" / ".envs").iterdir())
