"""``envbisect run`` with pins, a baseline and --rest policies; ``pins`` and ``versions``.

Real uv environments from the local index; the planner decides each environment first.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import RecordingProgress
from envbisect.core.results.parts import Direction, Moved, Status
from envbisect.env.repro import Repro
from envbisect.model import IndexConfig
from envbisect.modes.run import RunOptions, run_bisect
from support.cli import envbisect
from support.index_server import LocalIndex
from support.options import flat_options


def repro(tmp_path: Path, body: str) -> Repro:
    path = tmp_path / "repro.py"
    path.write_text(body)
    return Repro.build(origin=tmp_path, repro_file=str(path),
                       extra_env={"DISABLE_VERSION_CHECK": "1"})  # fmt: skip


@pytest.mark.slow
def test_range_from_pins_and_what_moved_with_the_baseline(
    index: LocalIndex, python: str, tmp_path: Path, recorder: RecordingProgress
) -> None:
    pins = tmp_path / "requirements.txt"
    pins.write_text("crashy>=1.2.0,<=1.10.0,!=1.8.0\n")
    lock = tmp_path / "lock.txt"
    lock.write_text("crashy==1.2.0\nhelperlib==1.0.0\n")
    body = (
        "import os\nassert os.environ['DISABLE_VERSION_CHECK'] == '1'\n"
        "import crashy\ncrashy.run()\n"
    )
    res = run_bisect(
        RunOptions(
            package="crashy",
            pins=(str(pins),),
            baseline=str(lock),
            common=flat_options(
                repro=repro(tmp_path, body),
                indexes=IndexConfig(index_url=index.url),
                python=python,
                results=tmp_path / "r",
                cache_dir=tmp_path / "cache",
            ),
        ),
        recorder,
    )
    assert (res.status, res.first_new, res.last_old) == (Status.FOUND, "1.7.0", "1.6.0")
    # The pins' range: 1.2.0 .. 1.10.0 without 1.8.0 (1.4.0 only has an sdist).
    assert res.candidates == 8
    assert recorder.started[:2] == ["1.2.0", "1.10.0"]
    assert "1.8.0" not in recorder.started
    rows = {r.version: r for r in res.rows}
    # crashy >= 1.9 needs helperlib >= 2: the planner moves it off the baseline, and says so.
    assert rows["1.10.0"].moved == (Moved(package="helperlib", before="1.0.0", after="2.0.0"),)
    assert rows["1.2.0"].moved == ()
    installed = {d.name: d.version for d in rows["1.10.0"].installed}
    assert installed == {"crashy": "1.10.0", "helperlib": "2.0.0"}
    data = res.to_dict()
    moved = {p["version"]: p.get("moved") for p in data["probes"]}
    assert moved["1.10.0"] == [{"package": "helperlib", "from": "1.0.0", "to": "2.0.0"}]
    assert moved["1.2.0"] is None
    assert "moved with it: helperlib 1.0.0→2.0.0" in Path(data["report"]).read_text()


def test_contemporary_rest_uses_the_libraries_of_each_release(
    index: LocalIndex, python: str, tmp_path: Path
) -> None:
    res = run_bisect(
        RunOptions(
            package="fixy",
            with_reqs=("helperlib",),
            rest="contemporary",
            common=flat_options(
                repro=repro(tmp_path, "import fixy\nfixy.run()\n"),
                indexes=IndexConfig(index_url=index.url),
                python=python,
                results=tmp_path / "r",
                cache_dir=tmp_path / "cache",
            ),
        )
    )
    rows = {r.version: r for r in res.rows}
    # fixy 1.0.0 was out before any helperlib: no environment of its day exists.
    assert rows["1.0.0"].outcome.kind.value == "untestable"
    assert "unresolvable" in rows["1.0.0"].outcome.signature
    assert "helperlib" in rows["1.0.0"].outcome.signature
    # fixy 1.1.0 (day 30) predates helperlib 2.0.0 (day 30, 5 hours later); 1.5.0 does not.
    helper = {v: {d.name: d.version for d in r.installed}.get("helperlib") for v, r in rows.items()}
    assert helper["1.1.0"] == "1.0.0"
    assert helper["1.5.0"] == "2.0.0"
    assert (res.direction, res.first_new) == (Direction.FIX, "1.3.0")


@pytest.mark.slow
def test_pins_command_json(index: LocalIndex, python: str, tmp_path: Path) -> None:
    pyproject = tmp_path / "pyproject.toml"
    pyproject.write_text(
        '[project]\nname = "demo"\nversion = "1"\n'
        'dependencies = ["crashy>=1.2,!=1.8.0", "helperlib; sys_platform == \'darwin\'"]\n'
    )
    proc = envbisect("pins", str(pyproject), "--python", python, "--index-url", index.url,
                     "--cache-dir", str(tmp_path / "c"), "--json")  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    reqs = {r["name"]: r for r in data["requirements"]}
    assert reqs["crashy"]["specifier"] == ">=1.2,!=1.8.0"
    assert reqs["crashy"]["applies"] is True
    assert reqs["helperlib"]["applies"] is False
    mac = envbisect("pins", str(pyproject), "--python", python, "--platform",
                    "macosx_11_0_arm64", "--index-url", index.url, "--json")  # fmt: skip
    assert {r["name"]: r["applies"] for r in json.loads(mac.stdout)["requirements"]} == {
        "crashy": True,
        "helperlib": True,
    }


def test_pins_from_a_released_distribution(index: LocalIndex, python: str, tmp_path: Path) -> None:
    proc = envbisect("pins", "crashy==1.10.0", "--python", python, "--index-url", index.url,
                     "--cache-dir", str(tmp_path / "c"), "--json")  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    (req,) = json.loads(proc.stdout)["requirements"]
    assert (req["name"], req["specifier"]) == ("helperlib", ">=2")
    missing = envbisect("pins", "crashy==9.9", "--python", python, "--index-url", index.url,
                        "--cache-dir", str(tmp_path / "c"))  # fmt: skip
    assert missing.returncode == 2 and "Traceback" not in missing.stderr
    # after the line that names the indexes: the error and its hint
    lines = missing.stderr.splitlines()
    assert lines[0].startswith("envbisect: index: ") and lines[1].startswith("error: ")
    assert lines[2].startswith("hint: ")


@pytest.mark.slow
def test_versions_command_says_why(index: LocalIndex, python: str, tmp_path: Path) -> None:
    pins = tmp_path / "req.txt"
    pins.write_text("crashy>=1.2.0,!=1.8.0\n")
    cache = str(tmp_path / "c")
    proc = envbisect("versions", "crashy", "--pins", str(pins), "--python", python,
                     "--index-url", index.url, "--cache-dir", cache, "--json")  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    rows = {r["version"]: r for r in json.loads(proc.stdout)["candidates"]}
    assert rows["1.5.0"]["excluded_reason"] is None and rows["1.5.0"]["in_range"]
    assert rows["1.8.0"]["excluded_reason"].startswith("outside the pins")
    assert rows["1.0.0"]["in_range"] is False
    assert rows["1.4.0"]["excluded_reason"].startswith("only an sdist")
    assert rows["1.12.0"]["yanked"] and rows["1.12.0"]["excluded_reason"] == "yanked"
    assert rows["2.0.0rc1"]["prerelease"] and rows["2.0.0rc1"]["excluded_reason"].startswith("pre")
    assert rows["1.5.0"]["upload_time"].startswith("2024-")
    win = envbisect("versions", "gappy", "--python", python, "--platform", "win32",
                    "--index-url", index.url, "--json")  # fmt: skip
    wrows = {r["version"]: r for r in json.loads(win.stdout)["candidates"]}
    assert wrows["1.0.0"]["installable"] and not wrows["1.4.0"]["installable"]
