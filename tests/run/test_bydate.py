"""Bisect by date on the local index: a transitive break (dateapp pinned, a later datelib
release breaks it), the culprit named and confirmed alone; bad input."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import timedelta
from pathlib import Path

import pytest

from envbisect.core.results.parts import Direction, Status
from envbisect.env.repro import Repro
from envbisect.errors import NoAnswer, UsageError
from envbisect.model import IndexConfig
from envbisect.modes.bydate import DateOptions, run_by_date
from support.cli import envbisect
from support.corpus import EPOCH
from support.index_server import LocalIndex
from support.installs import install_and_run
from support.options import flat_options, flat_with

pytestmark = pytest.mark.slow


def options(index: LocalIndex, python: str, tmp_path: Path, good: int, bad: int) -> DateOptions:
    repro = tmp_path / "repro.py"
    repro.write_text("import dateapp\ndateapp.run()\n")
    return DateOptions(
        good=(EPOCH + timedelta(days=good)).isoformat(),
        bad=(EPOCH + timedelta(days=bad)).isoformat(),
        with_reqs=("dateapp==1.0.0",),
        common=flat_options(
            repro=Repro.build(origin=tmp_path, repro_file=str(repro)),
            indexes=IndexConfig(index_url=index.url),
            python=python,
            results=tmp_path / "r",
            cache_dir=tmp_path / "c",
        ),
    )


def test_transitive_break_found_by_date_and_confirmed(
    index: LocalIndex, python: str, tmp_path: Path
) -> None:
    res = run_by_date(options(index, python, tmp_path, good=2, bad=45))
    assert res.status is Status.FOUND and res.direction is Direction.REGRESSION
    assert res.to_dict()["culprits"] == [
        {"package": "datelib", "good_version": "1.2.0", "bad_version": "1.3.0"}
    ]
    assert res.first_bad_date is not None and res.last_good_date is not None
    assert res.first_bad_date.date() == (EPOCH + timedelta(days=30)).date()
    assert res.last_good_date.date() == (EPOCH + timedelta(days=25)).date()
    (conf,) = res.to_dict()["confirmation"]
    assert conf["confirmed"] is True and conf["outcome"]["kind"] == "fail"
    # Eight release moments in the window (datelib and noiselib), and a binary search.
    assert res.candidates == 9 and len(res.rows) <= 2 + 3
    good = res.row(res.last_old)
    assert good is not None and {d.name: d.version for d in good.installed}["datelib"] == "1.2.0"
    assert "datelib==1.2.0" in Path(str(res.lock_path)).read_text()
    # The lock and its PEP 751 twin install elsewhere on their own, and pass there.
    install_and_run(
        Path(str(res.lock_path)), Path(str(res.pylock_path)), "dateapp", python, tmp_path
    )
    assert "## Culprit" in Path(str(res.report_path)).read_text()


def test_by_date_with_jobs_2_same_culprit_fewer_rounds(
    index: LocalIndex, python: str, tmp_path: Path
) -> None:
    for sub in ("one", "two"):
        (tmp_path / sub).mkdir()
    one = run_by_date(options(index, python, tmp_path / "one", good=2, bad=45))
    two_opts = options(index, python, tmp_path / "two", good=2, bad=45)
    two = run_by_date(replace(two_opts, common=flat_with(two_opts.common, jobs=2)))
    assert two.to_dict()["culprits"] == one.to_dict()["culprits"]
    assert (two.first_new, two.last_old) == (one.first_new, one.last_old)
    assert two.to_dict()["search"]["rounds"] < one.to_dict()["search"]["rounds"]


def test_a_window_that_does_not_bracket_the_failure(
    index: LocalIndex, python: str, tmp_path: Path
) -> None:
    with pytest.raises(NoAnswer):
        run_by_date(options(index, python, tmp_path, good=2, bad=22))  # both ends pass


def test_bad_dates(index: LocalIndex, python: str, tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="is not before"):
        run_by_date(options(index, python, tmp_path, good=40, bad=10))
    with pytest.raises(UsageError, match="in the future"):
        run_by_date(options(index, python, tmp_path, good=2, bad=365 * 30))
    with pytest.raises(UsageError, match="no release of any"):
        run_by_date(options(index, python, tmp_path, good=46, bad=47))


def test_cli_json(index: LocalIndex, python: str, tmp_path: Path) -> None:
    (tmp_path / "repro.py").write_text("import dateapp\ndateapp.run()\n")
    proc = envbisect(
        "run", "--by-date",
        "--good", (EPOCH + timedelta(days=2)).date().isoformat(),
        "--bad", (EPOCH + timedelta(days=45)).date().isoformat(),
        "--with", "dateapp==1.0.0", "--repro", str(tmp_path / "repro.py"),
        "--index-url", index.url, "--python", python, "--results", str(tmp_path / "r"),
        "--cache-dir", str(tmp_path / "c"), "--json",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["culprits"][0]["package"] == "datelib"
    assert data["first_bad_date"] and data["last_good_date"]
    wrong = envbisect("run", "--by-date", "--good", "2024-01-01", "--with", "dateapp==1.0.0",
                      "--", "true")  # fmt: skip
    assert wrong.returncode == 2 and "needs --good DATE and --bad DATE" in wrong.stderr
