"""The registry of report formats: every name a reader writes is declared there, every format
declared there is read from a sample, and what the rest of the code reads from it (whether a
format lists every package, the commands hints name) is as it was."""

from __future__ import annotations

from pathlib import Path

import pytest

from envbisect.core.envreport.read import read_report
from envbisect.core.envreport.registry import (
    FORMATS,
    FREEZE,
    READERS,
    YAML_READERS,
    ReportFormat,
    lists_every_package,
)
from envbisect.core.pins.sources import FORMS
from envbisect.env.pinsource import REPORT_FORMS

DATA = Path(__file__).parents[1] / "data" / "reports"

# One sample per format (the shipped report texts, and a plain ``- X version: V`` list).
SAMPLES = {
    "pip freeze": (DATA / "pip-freeze.txt").read_text(encoding="utf-8"),
    "pip list": (DATA / "pip-list.txt").read_text(encoding="utf-8"),
    "pip list (legacy layout)": (DATA / "pip-list-legacy.txt").read_text(encoding="utf-8"),
    "pip list (json)": (DATA / "pip-list.json").read_text(encoding="utf-8"),
    "conda list": (DATA / "conda-list.txt").read_text(encoding="utf-8"),
    "llamafactory-cli env": (DATA / "llamafactory-env.txt").read_text(encoding="utf-8"),
    "transformers env": (DATA / "transformers-env.txt").read_text(encoding="utf-8"),
    "accelerate env": (DATA / "accelerate-env.txt").read_text(encoding="utf-8"),
    "an environment list (- X version: V)": "- numpy version: 1.26.4\n- scipy version: 1.13.0\n",
    "torch collect_env": (DATA / "collect-env.txt").read_text(encoding="utf-8"),
    "conda env export": (DATA / "conda-env-export.yml").read_text(encoding="utf-8"),
}


def test_each_format_is_declared_once_and_read_under_its_name() -> None:
    names = [f.name for f in FORMATS]
    assert len(names) == len(set(names))
    assert sorted(SAMPLES) == sorted(names)
    for name, text in SAMPLES.items():
        report = read_report(text)
        assert report is not None, name
        assert report.formats == (name,), name


def test_every_reader_is_tried_once() -> None:
    declared = {f.read for f in FORMATS}
    assert len(READERS) == len(set(READERS)) and set(READERS) == declared
    assert set(YAML_READERS) == {f.read for f in FORMATS if f.in_yaml}


@pytest.mark.parametrize("fmt", FORMATS, ids=lambda f: f.name)
def test_complete_as_repro_read_it(fmt: ReportFormat) -> None:
    """The lists of every package: pip freeze, pip list (each layout), conda list."""
    name = fmt.name
    assert lists_every_package([name]) == name.startswith(("pip freeze", "pip list", "conda list"))


def test_hints_name_the_commands_as_before() -> None:
    assert FREEZE.name == "pip freeze"
    assert REPORT_FORMS == (
        "the output of pip freeze, uv pip freeze, pip list, conda list, llamafactory-cli env, "
        "transformers env, accelerate env or python -m torch.utils.collect_env"
    )
    assert "an environment report (pip freeze, pip list, conda list, llamafactory-cli env...;" in (
        FORMS
    )
    assert not lists_every_package(["this machine"]) and not lists_every_package([])
