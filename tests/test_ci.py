"""The CI pieces envbisect ships: the living-tables workflow (``envbisect ci-template``, package
data) and the composite action (``action.yml``). Each is valid YAML of the shape GitHub reads,
and every ``envbisect ...`` command it runs parses with envbisect's own parser."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from envbisect import __version__
from envbisect.cli.commands.ci_template import workflow
from envbisect.cli.parser import build_parser

ROOT = Path(__file__).resolve().parent.parent
COMMITTED = ROOT / ".github" / "workflows" / "living-tables.yml"
# Shell values the commands are parsed with (what the scripts' variables hold in a run).
VALUES = {
    "$m": "matrices/datasets-pyarrow.toml",
    "$RECHECK_DAYS": "90",
    "$JOBS": "2",
    "$PYTHON_VERSION": "3.11",
}
SAMPLE_ARGS = {"lock": "--pins pyproject.toml --probe import:x",
               "run": "--package x --probe import:x",
               "diff": "main.lock pr.lock --probe import:x",
               "repro": "issue.md"}  # fmt: skip
# An envbisect command in a script line: up to a redirection, a pipe, || or ;.
_COMMAND = re.compile(r"(?:^|\bif\s+|\bthen\s+|;\s*|&&\s*)envbisect\s+([^;|&>]*)")


def scripts(doc: dict[str, Any]) -> list[str]:
    steps = doc["runs"]["steps"] if "runs" in doc else doc["jobs"]["update"]["steps"]
    return [str(s["run"]) for s in steps if "run" in s]


def commands(doc: dict[str, Any]) -> list[list[str]]:
    """Every envbisect command line the document's scripts run, with sample values."""
    out = []
    for script in scripts(doc):
        for line in script.splitlines():
            for m in _COMMAND.finditer(line.strip()):
                text = m.group(1)
                for var, value in VALUES.items():
                    text = text.replace(f'"{var}"', value)
                for command, args in SAMPLE_ARGS.items():
                    if '"$ENVBISECT_COMMAND"' in text:
                        out.append(shlex.split(text.replace('"$ENVBISECT_COMMAND"', command)
                                               .replace('"${args[@]}"', args)))  # fmt: skip
                if '"$ENVBISECT_COMMAND"' not in text:
                    out.append(shlex.split(text))
    return out


def parses(argv: list[str]) -> None:
    assert not any(a.startswith("$") for a in argv), argv  # every variable has a value
    try:
        build_parser().parse_args(argv)
    except SystemExit as e:  # the parser's error: a flag that does not exist
        pytest.fail(f"envbisect {shlex.join(argv)}: exit {e.code}")


def test_the_workflow_is_a_scheduled_job_that_updates_publishes_and_opens_a_pull_request() -> None:
    doc = yaml.safe_load(workflow())
    on = doc[True]  # YAML 1.1 reads the key "on" as true
    assert on["schedule"][0]["cron"] and "workflow_dispatch" in on
    steps = doc["jobs"]["update"]["steps"]
    uses = [s.get("uses", "") for s in steps]
    assert any(u.startswith("actions/cache@") for u in uses)
    cache = next(s for s in steps if s.get("uses", "").startswith("actions/cache@"))
    assert ".cache/uv" in cache["with"]["path"] and ".cache/envbisect" in cache["with"]["path"]
    assert doc["env"]["UV_CACHE_DIR"].endswith(".cache/uv")
    assert doc["env"]["ENVBISECT_CACHE_DIR"].endswith(".cache/envbisect")
    pr = next(s for s in steps if s.get("uses", "").startswith("peter-evans/create-pull-request@"))
    assert pr["with"]["body-path"].endswith("news.md") and pr["with"]["add-paths"] == "results"
    found = commands(doc)
    assert [a[0] for a in found] == ["matrix", "publish"]
    assert "--update" in found[0] and "--recheck" in found[0]
    for argv in found:
        parses(argv)


def test_the_action_runs_lock_run_diff_or_repro_and_writes_the_summary() -> None:
    doc = yaml.safe_load((ROOT / "action.yml").read_text())
    assert doc["runs"]["using"] == "composite"
    assert {"command", "args", "python-version"} <= set(doc["inputs"])
    assert all(s.get("shell") == "bash" for s in doc["runs"]["steps"] if "run" in s)
    assert any("GITHUB_STEP_SUMMARY" in s for s in scripts(doc))
    assert not any("${{" in s for s in scripts(doc))  # inputs reach scripts through env only
    found = commands(doc)
    assert sorted(a[0] for a in found) == ["diff", "lock", "repro", "run"]
    for argv in found:
        parses(argv)


def test_ci_template_writes_the_workflow(tmp_path: Path) -> None:
    out = tmp_path / ".github" / "workflows" / "living-tables.yml"
    proc = subprocess.run(
        [sys.executable, "-m", "envbisect", "ci-template", "--install", ".", "--output", str(out)],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == str(out)
    text = out.read_text()
    assert yaml.safe_load(text)["env"]["ENVBISECT"] == "."
    # The copy this repository runs is the template's, installing the checkout itself.
    assert COMMITTED.read_text() == text
    stdout = subprocess.run(
        [sys.executable, "-m", "envbisect", "ci-template"],
        capture_output=True, text=True, timeout=60,
    ).stdout  # fmt: skip
    assert stdout == workflow()
    installs = yaml.safe_load(stdout)["env"]["ENVBISECT"]
    assert installs == f"envbisect-ml @ git+https://github.com/envbisect/envbisect@v{__version__}"
    bad = subprocess.run(
        [sys.executable, "-m", "envbisect", "ci-template", "--output", str(out / "x")],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert bad.returncode == 2 and "hint: " in bad.stderr and "Traceback" not in bad.stderr
