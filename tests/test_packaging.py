"""envbisect as a package others install: what the composite action (``action.yml``) and the
workflow ``envbisect ci-template`` writes install is this project, and the action hands its
``args`` to envbisect as words, never as code.

The PyPI project named ``envbisect`` is an unrelated tool: the tests' index serves a stand-in
for it beside this project's own wheel (built here from the checkout, as ``uv tool install``
builds a directory), so a spec that named it would install the wrong thing, and the test would
see it. Nothing is mocked but ``uv`` and ``envbisect`` on the action's PATH, which record what
the action's scripts run them with (the scripts are GitHub's; the tools would need GitHub).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest
import yaml

from envbisect import DISTRIBUTION, __version__, install_requirement
from envbisect.cli.commands.ci_template import workflow
from envbisect.env.uv import find_uv
from support.index_server import IndexFile, LocalIndex
from support.wheels import build_wheel

ROOT = Path(__file__).resolve().parent.parent
# Records its arguments, one JSON list per line, in $RECORD (a stand-in for uv or envbisect).
RECORDER = """#!{python}
import json, os, sys
with open(os.environ["RECORD"], "a") as f:
    f.write(json.dumps([os.path.basename(sys.argv[0]), *sys.argv[1:]]) + "\\n")
"""


def step(doc: dict[str, Any], name: str) -> dict[str, Any]:
    steps = doc["runs"]["steps"] if "runs" in doc else doc["jobs"]["update"]["steps"]
    return next(s for s in steps if s.get("name") == name)


def run_script(script: str, env: dict[str, str], tmp_path: Path) -> tuple[int, list[list[str]]]:
    """Run a workflow step's bash script with recorders for uv and envbisect on PATH."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    for tool in ("uv", "envbisect"):
        (bin_dir / tool).write_text(RECORDER.format(python=sys.executable))
        (bin_dir / tool).chmod(0o755)
    record = tmp_path / "record.jsonl"
    record.unlink(missing_ok=True)
    for name in ("out", "summary"):
        (tmp_path / name).write_text("")
    full = {
        "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
        "RECORD": str(record),
        "RUNNER_TEMP": str(tmp_path),
        "GITHUB_OUTPUT": str(tmp_path / "out"),
        "GITHUB_STEP_SUMMARY": str(tmp_path / "summary"),
        "HOME": str(tmp_path),
        **env,
    }
    proc = subprocess.run(["bash", "-euo", "pipefail", "-c", script], env=full, cwd=tmp_path,
                          capture_output=True, text=True, timeout=60)  # fmt: skip
    lines = record.read_text().splitlines() if record.is_file() else []
    return proc.returncode, [json.loads(line) for line in lines]


def test_the_action_passes_its_arguments_as_words_and_never_runs_them(tmp_path: Path) -> None:
    doc = yaml.safe_load((ROOT / "action.yml").read_text())
    script = step(doc, "Run envbisect")["run"]
    assert "eval" not in script
    env = {
        "ENVBISECT_COMMAND": "lock",
        "ENVBISECT_ARGS": "--pins 'my pins.toml' --probe import:x $(touch pwned) ; `touch pwned`",
        "FAIL_ON_NO_ANSWER": "true",
        "PYTHON_VERSION": "3.11",
    }
    code, calls = run_script(script, env, tmp_path)
    assert code == 0
    words = ["--pins", "my pins.toml", "--probe", "import:x", "$(touch", "pwned)", ";", "`touch",
             "pwned`"]  # fmt: skip
    assert calls == [["envbisect", "lock", "--python", "3.11", *words]]
    assert not (tmp_path / "pwned").exists()
    # Unbalanced quotes: a clear error, nothing run.
    code, calls = run_script(script, {**env, "ENVBISECT_ARGS": "--pins 'open"}, tmp_path)
    assert code == 2 and calls == []


def installed_spec(doc: dict[str, Any], env: dict[str, str], tmp_path: Path) -> str:
    """What the document's "Install envbisect" step hands ``uv tool install``."""
    code, calls = run_script(step(doc, "Install envbisect")["run"], env, tmp_path)
    assert code == 0 and len(calls) == 1 and calls[0][:3] == ["uv", "tool", "install"], calls
    return calls[0][3]


def metadata_name(wheel: Path) -> str:
    with zipfile.ZipFile(wheel) as z:
        meta = next(n for n in z.namelist() if n.endswith(".dist-info/METADATA"))
        text = z.read(meta).decode()
    return next(line.split(": ", 1)[1] for line in text.splitlines() if line.startswith("Name: "))


def is_this_project(site: Path) -> bool:
    """An install is this project when its envbisect package is this checkout's source."""
    ours = (ROOT / "src" / "envbisect" / "cli" / "main.py").read_bytes()
    there = site / "envbisect" / "cli" / "main.py"
    return there.is_file() and there.read_bytes() == ours


@pytest.mark.slow
def test_what_the_action_and_the_workflow_install_is_this_project(tmp_path: Path) -> None:
    uv = find_uv()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("UV_", "PIP_"))}
    # The action with no `envbisect` input installs its own checkout (the ref in `uses:`).
    action = yaml.safe_load((ROOT / "action.yml").read_text())
    assert action["inputs"]["envbisect"]["default"] == ""
    spec = installed_spec(action, {"ENVBISECT": "", "GITHUB_ACTION_PATH": str(ROOT)}, tmp_path)
    assert Path(spec) == ROOT
    # That directory builds (as uv tool install builds it) into this project's wheel.
    dist = tmp_path / "dist"
    subprocess.run([uv, "build", "--wheel", "--no-build-isolation", "--no-config", "--python",
                    sys.executable, "--out-dir", str(dist), spec],
                   check=True, capture_output=True, env=env, timeout=300)  # fmt: skip
    (ours,) = dist.glob("*.whl")
    assert metadata_name(ours) == DISTRIBUTION
    assert ours.name.startswith(f"envbisect_ml-{__version__}-")
    with zipfile.ZipFile(ours) as z:
        entry = z.read(f"envbisect_ml-{__version__}.dist-info/entry_points.txt").decode()
        assert "envbisect = envbisect.cli.main:main" in entry
        assert "envbisect/py.typed" in z.namelist()
    # The workflow installs this repository at the tag of this version (tests/
    # test_install_lines.py installs that URL); by name, once it is on PyPI, it must get this
    # distribution from an index that also serves the other project called envbisect (a
    # stand-in for PyPI's).
    spec = installed_spec(yaml.safe_load(workflow()), {"ENVBISECT": yaml.safe_load(workflow())[
        "env"]["ENVBISECT"]}, tmp_path)  # fmt: skip
    assert spec == install_requirement()
    spec = f"{DISTRIBUTION}=={__version__}"
    (tmp_path / "other").mkdir()
    other = build_wheel(tmp_path / "other", "envbisect", "9.9.9",
                        {"envbisect/__init__.py": "def diagnose(): pass\n"})  # fmt: skip
    index = LocalIndex()
    for wheel, name in ((ours, DISTRIBUTION), (other, "envbisect")):
        index.add(IndexFile(project=name, path=wheel, upload_time=datetime.now(timezone.utc)))
    index.start()
    try:
        for requirement, mine in ((spec, True), ("envbisect", False)):
            target = tmp_path / f"site-{mine}"
            proc = subprocess.run(
                [uv, "pip", "install", "--no-config", "--no-deps", "--index-url", index.url,
                 "--python", sys.executable, "--target", str(target), requirement],
                capture_output=True, text=True, env=env, timeout=120,
            )  # fmt: skip
            assert proc.returncode == 0, proc.stderr
            assert is_this_project(target) is mine, requirement
    finally:
        index.stop()
