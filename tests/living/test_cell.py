"""A published cell, its matrix's meta and the whole ``results.json``, typed.

Every cell committed under ``results/`` reads into a ``PublishedCell`` and writes back to
the same dict, key order included; each whole ``results.json`` writes back byte for byte. A
malformed cell is one ``UsageError`` (``results-malformed``) that names the field and says
what to do, in the core and on the command line.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from envbisect.core.living.cell import MALFORMED, PublishedCell, read_cells
from envbisect.core.living.document import PublishedTable
from envbisect.core.living.meta import MatrixMeta
from envbisect.errors import UsageError
from support.cli import envbisect

ROOT = Path(__file__).resolve().parents[2]
PUBLISHED = sorted((ROOT / "results").glob("*/results.json"))


def _cells() -> list[dict[str, Any]]:
    return [c for p in PUBLISHED for c in json.loads(p.read_text())["cells"]]


def test_every_committed_cell_round_trips() -> None:
    dicts = _cells()
    assert len(dicts) > 300 and {"pylock"} <= {k for d in dicts for k in d}
    for d in dicts:
        cell = PublishedCell.from_dict(d)
        assert cell.to_dict() == d
        assert list(cell.to_dict()) == list(d)  # the key order results.json has
        assert PublishedCell.from_dict(cell.to_dict()) == cell
        assert cell.key == (d["python"], tuple(d["versions"].items()))


@pytest.mark.parametrize("path", PUBLISHED, ids=lambda p: p.parent.name)
def test_every_committed_results_json_writes_back_byte_for_byte(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    table = PublishedTable.from_dict(json.loads(text), source=str(path))
    assert json.dumps(table.to_dict(), indent=2) + "\n" == text
    assert MatrixMeta.from_dict(table.meta.to_dict()) == table.meta
    assert table.meta.axes and table.meta.measured


def test_a_cell_an_older_publisher_wrote_reads_with_defaults() -> None:
    old = {"python": "3.11", "versions": {"a": "1.0"}, "state": "measured", "kind": "pass"}
    cell = PublishedCell.from_dict(old)
    assert cell.installed is None and cell.pylock is None and cell.signature == ""
    assert "installed" not in cell.to_dict() and "pylock" not in cell.to_dict()
    assert cell.passes and cell.version("a") == "1.0" and cell.combo() == "a 1.0"


GOOD = {"python": "3.11", "versions": {"a": "1.0", "b": "2.0"}, "state": "measured",
        "kind": "pass", "installed": [{"name": "a", "version": "1.0"}]}  # fmt: skip


@pytest.mark.parametrize(
    ("change", "named"),
    [
        ({"state": "bogus"}, "'state' is 'bogus'"),
        ({"state": None}, "'state'"),
        ({"kind": "exploded"}, "'kind' is 'exploded'"),
        ({"python": 3.11}, "'python' is 3.11"),
        ({"versions": {"a": 1}}, "'versions'"),
        ({"versions": []}, "'versions'"),
        ({"seconds": "fast"}, "'seconds' is 'fast'"),
        ({"installed": [{"name": "a"}]}, "'installed'"),
        ({"installed": "a==1"}, "'installed'"),
        ({"lock": 7}, "'lock' is 7"),
        ({"deep": "trained"}, "'deep' is 'trained'"),
        ({"deep": [{"probe": "t"}]}, "'kind' is missing"),
        ({"deep": [{"probe": "t", "kind": "great"}]}, "a deep run's 'kind' is 'great'"),
        ({"deep": [{"kind": "pass"}]}, "'probe' is missing"),
        ({"deep": [{"probe": "t", "kind": "pass", "seconds": True}]}, "'seconds' is True"),
    ],
)
def test_a_malformed_cell_is_one_usage_error_naming_its_field(
    change: dict[str, Any], named: str
) -> None:
    with pytest.raises(UsageError) as e:
        read_cells([GOOD, {**GOOD, **change}], source="results/m/results.json")
    assert e.value.ref == MALFORMED and e.value.hint and "git checkout" in e.value.hint
    assert e.value.message.startswith("results/m/results.json, cell 1: malformed published cell")
    assert named in e.value.message
    missing = {k: v for k, v in GOOD.items() if k != "python"}
    with pytest.raises(UsageError, match="'python' is missing"):
        PublishedCell.from_dict(missing)
    with pytest.raises(UsageError, match="not an object"):
        PublishedCell.from_dict(["a", "b"])


def test_a_cell_with_deep_runs_round_trips_and_one_without_writes_no_key() -> None:
    runs = [{"probe": "llamafactory-train:ppo", "kind": "fail", "signature": "ValueError: x",
             "seconds": 61.5, "measured_at": "2026-12-05T18:00:00+00:00"}]  # fmt: skip
    cell = PublishedCell.from_dict({**GOOD, "deep": runs})
    assert [(r.probe, r.passes) for r in cell.deep] == [("llamafactory-train:ppo", False)]
    assert cell.to_dict()["deep"] == runs
    assert "deep" not in PublishedCell.from_dict(GOOD).to_dict()
    meta = {"name": "m", "description": "", "axes": ["a"], "probes": ["p"], "deep_probes": ["t"],
            "command": "c"}  # fmt: skip
    assert MatrixMeta.from_dict(meta).to_dict() == meta
    assert MatrixMeta.from_dict(meta).deep_probes == ("t",)


def test_a_malformed_matrix_block_is_the_same_error() -> None:
    bad: dict[str, Any]
    for bad in ({"cells": []}, {"matrix": {"name": "m", "axes": "a"}, "cells": []}):
        with pytest.raises(UsageError) as e:
            PublishedTable.from_dict(bad, source="r.json")
        assert e.value.ref == MALFORMED and "r.json" in e.value.message


def test_publish_of_a_malformed_results_json_says_which_cell_and_what_to_do(
    tmp_path: Path,
) -> None:
    results = tmp_path / "results"
    shutil.copytree(ROOT / "results" / "transformers-peft", results / "transformers-peft")
    path = results / "transformers-peft" / "results.json"
    data = json.loads(path.read_text())
    data["cells"][3]["state"] = "maybe"
    path.write_text(json.dumps(data, indent=2) + "\n")
    proc = envbisect(
        "publish", "--offline", "--results", str(results),
        str(ROOT / "matrices" / "transformers-peft.toml"), cwd=tmp_path,
    )  # fmt: skip
    assert proc.returncode == 2, proc.stderr
    assert "cell 3: malformed published cell" in proc.stderr and "'state' is 'maybe'" in proc.stderr
    assert "results-malformed" in proc.stderr and "hint:" in proc.stderr
    assert "Traceback" not in proc.stderr
