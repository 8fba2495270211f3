"""``--dry-run`` plans what a command would build and builds nothing; a closed stdout ends
quietly. The real CLI in a subprocess, on the local index (127.0.0.1); the plans as lines,
quick, in-process."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from conftest import write_repro
from envbisect.modes.dryrun import _exact_pins, render
from support.cli import envbisect, start
from support.index_server import LocalIndex


def nothing_built(results: Path) -> bool:
    envs = results / ".envs"
    return not (envs.exists() and any(envs.iterdir())) and not (results / "envbisect.db").exists()


@pytest.mark.slow
def test_run_dry_run_plans_both_ends_and_builds_nothing(
    index: LocalIndex, python: str, tmp_path: Path
) -> None:
    results = tmp_path / "r"
    proc = envbisect("run", "--package", "crashy", "--with", "helperlib", "--dry-run", "--json",
                     "--index-url", index.url, "--python", python, "--results", str(results),
                     "--repro", str(write_repro(tmp_path, "crashy")))  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["dry_run"] is True
    plans = data["plans"]
    assert [p["label"] for p in plans] == ["1.0.0", "1.11.0"]  # the ends a search builds first
    assert plans[0]["pins"]["crashy"] == "1.0.0" and "helperlib" in plans[0]["pins"]
    assert plans[1]["pins"]["crashy"] == "1.11.0"
    assert all(p["conflict"] is None for p in plans)
    assert nothing_built(results)
    text = envbisect("run", "--package", "crashy", "--dry-run", "--index-url", index.url,
                     "--python", python, "--results", str(results), "--", "true")  # fmt: skip
    assert text.returncode == 0
    assert "dry run: 2 environment(s) planned, nothing built" in text.stdout
    # No pins and no --with: the plan is still the whole environment uv will install (crashy
    # 1.11.0 needs helperlib >= 2), not the one requirement.
    assert "  crashy==1.11.0" in text.stdout and "  helperlib==2." in text.stdout
    assert "1.11.0: 2 package(s)" in text.stdout


@pytest.mark.slow
def test_a_dry_run_of_exact_pins_lists_what_they_pull_in(
    index: LocalIndex, python: str, tmp_path: Path
) -> None:
    """``probe --with crashy==1.11.0``: one exact pin, and uv installs helperlib with it."""
    proc = envbisect("probe", "--with", "crashy==1.11.0", "--dry-run", "--index-url",
                     index.url, "--python", python, "--results", str(tmp_path / "r"), "--",
                     "true")  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "the environment: 2 package(s)" in proc.stdout and "  helperlib==2." in proc.stdout


@pytest.mark.slow
def test_probe_dry_run_shows_a_conflict(index: LocalIndex, python: str, tmp_path: Path) -> None:
    results = tmp_path / "r"
    proc = envbisect("probe", "--with", "crashy==1.10.0", "--with", "helperlib<2", "--dry-run",
                     "--json", "--index-url", index.url, "--python", python, "--results",
                     str(results), "--", "true")  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    (plan,) = json.loads(proc.stdout)["plans"]
    assert plan["conflict"] and not plan["pins"]  # crashy >= 1.9 needs helperlib >= 2
    assert nothing_built(results)


@pytest.mark.slow
def test_matrix_dry_run_plans_every_cell(index: LocalIndex, python: str, tmp_path: Path) -> None:
    (tmp_path / "repro.py").write_text("import gridapp\ngridapp.run()\n")
    path = tmp_path / "grid.toml"
    path.write_text(f'[matrix]\nname = "grid"\npython = ["{python}"]\nindex_url = "{index.url}"\n'
                    'repro = "repro.py"\n[[axis]]\npackage = "gridapp"\n[[axis]]\n'
                    'package = "gridlib"\n')  # fmt: skip
    results = tmp_path / "r"
    proc = envbisect("matrix", str(path), "--dry-run", "--json", "--results", str(results),
                     "--cache-dir", str(tmp_path / "c"))  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    plans = json.loads(proc.stdout)["plans"]
    assert len(plans) == 42  # 7 x 6 cells, each planned
    assert sum(1 for p in plans if p["conflict"]) == 2  # the two unresolvable cells
    assert all(p["pins"] for p in plans if not p["conflict"])
    assert not (results / ".envs").exists() and not (results / "grid").exists()


@pytest.mark.slow
def test_a_contemporary_cell_moves_a_package_with_no_file_that_day_forward(
    index: LocalIndex, python: str, tmp_path: Path
) -> None:
    """``rest = "contemporary"`` plans a cell as of its day; fwd-helper's release of that day
    has no wheel here (support/descent.py), so the cell takes its first release that installs,
    as lock does, instead of being unresolvable (old LLaMA-Factory releases need ``fire``,
    whose first wheel came years after its first release)."""
    (tmp_path / "repro.py").write_text("import fwdapp\n")
    path = tmp_path / "fwd.toml"
    path.write_text(f'[matrix]\nname = "fwd"\npython = ["{python}"]\nindex_url = "{index.url}"\n'
                    'repro = "repro.py"\nrest = "contemporary"\nwith = ["fwdapp==1.0.0"]\n'
                    '[[axis]]\npackage = "fwd-lib"\n')  # fmt: skip
    proc = envbisect("matrix", str(path), "--dry-run", "--json", "--results", str(tmp_path / "r"),
                     "--cache-dir", str(tmp_path / "c"))  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    plans = {p["pins"].get("fwd-lib"): p for p in json.loads(proc.stdout)["plans"]}
    assert set(plans) == {"1.0.0", "2.0.0"}, plans
    assert all(p["conflict"] is None and p["pins"]["fwd-helper"] == "1.1.0" for p in plans.values())


@pytest.mark.slow
def test_a_closed_stdout_ends_quietly(index: LocalIndex, python: str, tmp_path: Path) -> None:
    """``envbisect ... --json | head``: the reader is gone before the answer is printed."""
    proc = start("versions", "crashy", "--json", "--index-url", index.url, "--python", python)
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()
    err = proc.stderr.read()
    assert proc.wait(timeout=120) == 141
    assert "Traceback" not in err and "BrokenPipe" not in err


def test_exact_pins_are_the_plan_and_plans_print_as_lines() -> None:
    """Quick (no uv): requirements that are all exact pins are the plan as they stand (names
    canonical, sorted); any other (a range, a marker, a URL) leaves the plan to uv."""
    assert _exact_pins(["Raisy==1.0.0", "six==1.16.0"]) == {"raisy": "1.0.0", "six": "1.16.0"}
    for other in ("raisy>=1.0", "raisy==1.0; python_version<'3'", "raisy @ file:///x", "r a"):
        assert _exact_pins(["six==1.16.0", other]) is None, other
    views: list[dict[str, Any]] = [
        {"label": "good 1.0.0", "requirements": [], "pins": {"raisy": "1.0.0"}, "conflict": None},
        {"label": "bad 1.5.0", "requirements": [], "pins": {}, "conflict": "no solution"},
    ]
    assert render(views) == [
        "dry run: 2 environment(s) planned, nothing built",
        "good 1.0.0: 1 package(s)",
        "  raisy==1.0.0",
        "bad 1.5.0: unresolvable: no solution",
    ]
