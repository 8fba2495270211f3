"""``run.json``, typed: how the last run of a matrix was made, and what an update did.

Every ``run.json`` committed under ``results/`` reads into a ``LastRun`` and writes back byte
for byte (the keys in the order ``envbisect matrix`` writes them); one an older envbisect
wrote, with fields missing, reads with defaults; a malformed one is one ``UsageError``
(``results-malformed``) naming the field, also when ``publish`` meets it.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from envbisect.core.living.lastrun import Counts, LastRun, Recheck, UpdateNote
from envbisect.core.living.update import Gone
from envbisect.errors import UsageError
from support.cli import envbisect

ROOT = Path(__file__).resolve().parents[2]
RUNS = sorted((ROOT / "results").glob("*/run.json"))


@pytest.mark.parametrize("path", RUNS, ids=lambda p: p.parent.name)
def test_every_committed_run_json_writes_back_byte_for_byte(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    last = LastRun.from_dict(json.loads(text))
    assert json.dumps(last.to_dict(), indent=2) + "\n" == text
    assert LastRun.from_dict(last.to_dict()) == last
    assert last.measured and last.command.startswith("envbisect matrix")
    assert last.counts.cells >= last.counts.built + last.counts.reused


def test_the_committed_runs_include_an_update_with_rechecks() -> None:
    """So the round trip above covers ``update`` and its rechecks, not only whole runs."""
    updates = [u for p in RUNS if (u := LastRun.from_dict(json.loads(p.read_text())).update)]
    assert updates and any(u.rechecked for u in updates)
    r = next(r for u in updates for r in u.rechecked)
    assert r.key == (r.python, r.versions) and r.versions


def test_an_update_note_says_why_a_value_left_and_what_was_probed() -> None:
    gone = Gone(python="3.11", package="peft", version="0.1.0", why="yanked", cells=3)
    recheck = Recheck(python="3.11", versions=(("peft", "0.2.0"),), before="pass", after="fail")
    failed = Recheck(python="3.11", versions=(("peft", "0.3.0"),), before="pass", why="no wheel")
    note = UpdateNote(new=0, gone=(gone,), rechecked=(recheck,), not_rechecked=(failed,))
    assert note.probed and not UpdateNote(gone=(gone,)).probed
    assert note.why_removed() == {("3.11", "peft", "0.1.0"): "yanked"}
    d = note.to_dict()
    # rechecked names the cell alone; not_rechecked says why, beside the outcome published
    assert d["rechecked"] == [{"python": "3.11", "versions": {"peft": "0.2.0"}}]
    assert d["not_rechecked"][0]["why"] == "no wheel" and "why" not in recheck.to_dict()
    back = UpdateNote.from_dict(d)
    assert back.gone == (gone,) and back.not_rechecked == (failed,)
    assert back.rechecked == (Recheck(python="3.11", versions=(("peft", "0.2.0"),)),)


def test_a_run_json_an_older_envbisect_wrote_reads_with_defaults() -> None:
    last = LastRun.from_dict({"command": "envbisect matrix m.toml", "measured": "2026-01-01"})
    assert last.update is None and last.axis_versions is None and last.checked is None
    assert last.counts == Counts() and last.jobs == 1 and not last.env
    assert LastRun.from_dict({}) == LastRun()
    # Nothing it did not say is written back: no update, no checked, no axes.
    assert set(last.to_dict()) == {"command", "measured", "machine", "targets", "counts",
                                   "full", "jobs"}  # fmt: skip


@pytest.mark.parametrize(
    ("bad", "field"),
    [
        ([], "holds list"),
        ({"counts": {"cells": "many"}}, "'counts' has cells 'many'"),
        ({"jobs": True}, "'jobs' is True"),
        ({"axis_versions": {"3.11": "1.0"}}, "'axis_versions'"),
        ({"update": {"gone": [{"python": "3.11"}]}}, "a value that left"),
        ({"update": {"rechecked": "all"}}, "rechecked 'all'"),
        ({"update": {"rechecked": [{"versions": {}}]}}, "a recheck names no Python"),
        ({"targets": ["3.11"]}, "'targets'"),
    ],
)
def test_a_malformed_run_json_is_one_usage_error_naming_its_field(bad: Any, field: str) -> None:
    with pytest.raises(UsageError) as e:
        LastRun.from_dict(bad)
    assert e.value.ref == "results-malformed" and field in e.value.message
    assert e.value.message.startswith("malformed run.json") and e.value.hint


def test_publish_of_a_malformed_run_json_is_that_error_and_writes_nothing(
    tmp_path: Path,
) -> None:
    results = tmp_path / "results"
    shutil.copytree(ROOT / "results" / "datasets-pyarrow", results / "datasets-pyarrow")
    folder = results / "datasets-pyarrow"
    run = folder / "run.json"
    data = json.loads(run.read_text())
    data["update"]["rechecked"][0] = "3.11"
    run.write_text(json.dumps(data, indent=2) + "\n")
    before = {p: p.read_bytes() for p in folder.rglob("*") if p.is_file()}
    proc = envbisect(
        "publish", "--offline", "--results", str(results),
        str(ROOT / "matrices" / "datasets-pyarrow.toml"), cwd=tmp_path,
    )  # fmt: skip
    assert proc.returncode == 2, proc.stderr
    assert "malformed run.json: a recheck is '3.11'" in proc.stderr
    assert "[results-malformed]" in proc.stderr and "hint:" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert {p: p.read_bytes() for p in folder.rglob("*") if p.is_file()} == before
