"""The CI pieces envbisect ships: the living-tables workflow (``envbisect ci-template``, package
data) and the composite action (``action.yml``). Each is valid YAML of the shape GitHub reads,
and every ``envbisect ...`` command it runs parses with envbisect's own parser."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from envbisect import install_requirement
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
                                               .replace('"${python[@]}"', "--python 3.11")
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
    assert installs == install_requirement()  # the project's Source URL, a tag only once released
    bad = subprocess.run(
        [sys.executable, "-m", "envbisect", "ci-template", "--output", str(out / "x")],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert bad.returncode == 2 and "hint: " in bad.stderr and "Traceback" not in bad.stderr


# -- the action's shell step, run in bash as GitHub runs it, with each exit code ---------------

STANDIN = """#!/bin/bash
# envbisect's stand-in: records its arguments, prints an answer, exits as it is told.
printf '%s\\0' "$@" > "$STANDIN_ARGV"
echo "the answer of envbisect $1"
exit "$STANDIN_EXIT"
"""


def _action_step(name: str) -> str:
    doc = yaml.safe_load((ROOT / "action.yml").read_text())
    return str(next(s["run"] for s in doc["runs"]["steps"] if s.get("name") == name))


def run_action_step(
    tmp_path: Path,
    command: str,
    args: str,
    *,
    fail_on_no_answer: str = "true",
    python_version: str = "",
    exit_code: int | None = None,
) -> tuple[int, str, dict[str, str], list[str]]:
    """The action's "Run envbisect" step in ``bash --noprofile --norc -eo pipefail`` (GitHub's
    shell for a composite step) with its inputs in the environment: envbisect itself, or
    (``exit_code``) a stand-in that exits with it. (exit code, the job summary, the step's
    outputs, the argv envbisect got)."""
    script = tmp_path / "step.sh"
    script.write_text(_action_step("Run envbisect"))
    bindir = tmp_path / "bin"
    bindir.mkdir(exist_ok=True)
    path = [str(Path(sys.executable).parent), *os.environ.get("PATH", "").split(os.pathsep)]
    if exit_code is not None:
        standin = bindir / "envbisect"
        standin.write_text(STANDIN)
        standin.chmod(0o755)
        path.insert(0, str(bindir))
    summary, output, argv = tmp_path / "summary.md", tmp_path / "output", tmp_path / "argv"
    env = {
        **os.environ,
        "PATH": os.pathsep.join(path),
        "ENVBISECT_COMMAND": command,
        "ENVBISECT_ARGS": args,
        "FAIL_ON_NO_ANSWER": fail_on_no_answer,
        "PYTHON_VERSION": python_version,
        "RUNNER_TEMP": str(tmp_path),
        "GITHUB_OUTPUT": str(output),
        "GITHUB_STEP_SUMMARY": str(summary),
        "STANDIN_ARGV": str(argv),
        "STANDIN_EXIT": str(exit_code),
    }
    proc = subprocess.run(
        ["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script)],
        env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    outputs = dict(ln.split("=", 1) for ln in output.read_text().splitlines() if "=" in ln)
    got = argv.read_text().split("\0")[:-1] if argv.exists() else []
    return proc.returncode, summary.read_text() if summary.exists() else "", outputs, got


@pytest.mark.parametrize(
    ("command", "code", "fail_on", "step", "said"),
    [
        ("lock", 0, "true", 0, "Answer found (exit 0)."),
        ("lock", 1, "true", 1, "No answer (exit 1)"),
        ("lock", 1, "false", 0, "No answer (exit 1)"),
        ("run", 2, "false", 2, "Bad usage (exit 2)"),
        ("diff", 3, "false", 3, "could not run (exit 3: an infrastructure failure"),
        ("run", 130, "false", 130, "could not run (exit 130)"),
        ("repro", 0, "true", 0, "Reproduced (exit 0)"),
        ("repro", 4, "false", 0, "Not reproduced (exit 4)"),  # the issue-triage example's
        ("repro", 4, "true", 4, "Not reproduced (exit 4)"),
        ("repro", 1, "false", 0, "Cannot be tried here (exit 1)"),
        ("repro", 3, "false", 3, "could not run (exit 3"),
    ],
)
def test_the_action_step_says_and_ends_as_each_exit_code_means(
    tmp_path: Path, command: str, code: int, fail_on: str, step: int, said: str
) -> None:
    ended, summary, outputs, _ = run_action_step(
        tmp_path, command, "issue.md", fail_on_no_answer=fail_on, exit_code=code
    )
    assert ended == step, summary
    assert summary.startswith(f"### envbisect {command}\n") and said in summary
    assert f"the answer of envbisect {command}" in summary  # the answer, in the summary
    assert outputs["exit-code"] == str(code)
    assert Path(outputs["answer"]).read_text() == f"the answer of envbisect {command}\n"


def test_the_action_passes_python_only_when_given(tmp_path: Path) -> None:
    # Always passing --python overrode the Python the report names (repro).
    args = "'my issue.md' --no-config"
    _, _, _, argv = run_action_step(tmp_path, "repro", args, exit_code=0)
    assert argv == ["repro", "my issue.md", "--no-config"]
    _, _, _, argv = run_action_step(tmp_path, "lock", args, python_version="3.12", exit_code=0)
    assert argv == ["lock", "--python", "3.12", "my issue.md", "--no-config"]


def test_the_action_step_runs_the_real_envbisect(tmp_path: Path) -> None:
    ended, summary, outputs, _ = run_action_step(
        tmp_path, "run", "--package x --godo 1", fail_on_no_answer="false"
    )
    assert ended == 2 and outputs["exit-code"] == "2"
    assert "Bad usage (exit 2)" in summary


def test_the_long_fuzz_is_a_scheduled_workflow_of_the_nox_session() -> None:
    doc = yaml.safe_load((ROOT / ".github" / "workflows" / "fuzz.yml").read_text())
    on = doc[True]  # YAML 1.1 reads the key "on" as true
    assert on["schedule"][0]["cron"] and "workflow_dispatch" in on
    steps = doc["jobs"]["fuzz"]["steps"]
    runs = [str(s.get("run", "")) for s in steps]
    assert any(r.startswith("nox -s fuzz") for r in runs)
    kept = next(s for s in steps if s.get("uses", "").startswith("actions/upload-artifact@"))
    assert kept["if"] == "failure()" and kept["with"]["path"] == ".hypothesis/"
    noxfile = (ROOT / "noxfile.py").read_text()
    session = noxfile.split("def fuzz(", 1)[1].split("@nox.session", 1)[0]
    assert '"ENVBISECT_FUZZ": "long"' in session and "tests/test_fuzz.py" in session
