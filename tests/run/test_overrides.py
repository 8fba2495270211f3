"""``--override``, as uv's, in every mode (tests/support/stacks.py: ovapp 1.0.0 requires
ov-lib<=1.5 but works only with ov-lib 2.0.0, and 2.5.0 dropped what it imports). Real uv
environments on the local index, the real CLI."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from conftest import write_repro
from envbisect.env.uv import Uv, find_uv
from support.cli import assert_clean_error, envbisect
from support.index_server import LocalIndex
from support.locks import locked

pytestmark = pytest.mark.slow


def common(stacks: LocalIndex, python: str, tmp: Path) -> list[str]:
    return ["--index-url", stacks.url, "--python", python, "--results", str(tmp / "r"),
            "--cache-dir", str(tmp / "c"), "--no-config"]  # fmt: skip


def test_probe_builds_the_environment_off_the_pins(
    stacks: LocalIndex, python: str, tmp_path: Path
) -> None:
    repro = write_repro(tmp_path, "ovapp")
    args = ["probe", "--with", "ovapp==1.0.0", "--repro", str(repro), "--json",
            *common(stacks, python, tmp_path)]  # fmt: skip
    on = envbisect(*args)  # on the pins: ov-lib 1.5.0, no NEW
    assert on.returncode == 4, on.stderr  # the probe failed
    assert "NEW" in json.loads(on.stdout)["outcome"]["signature"]
    off = envbisect(*args, "--override", "ov-lib==2.0.0")
    assert off.returncode == 0, off.stderr
    data = json.loads(off.stdout)
    assert data["outcome"]["kind"] == "pass"
    assert {d["name"]: d["version"] for d in data["installed"]}["ov-lib"] == "2.0.0"
    assert "overrides: ov-lib==2.0.0" in off.stderr
    # The same from a file, and planned the same without building anything.
    listed = tmp_path / "over.txt"
    listed.write_text("# off the pins\nov-lib==2.0.0\n")
    dry = envbisect(*args, "--override", str(listed), "--dry-run")
    assert dry.returncode == 0, dry.stderr
    (plan,) = json.loads(dry.stdout)["plans"]
    assert plan["pins"]["ov-lib"] == "2.0.0" and plan["pins"]["ovapp"] == "1.0.0"


def test_run_bisects_versions_above_the_cap(
    stacks: LocalIndex, python: str, tmp_path: Path
) -> None:
    """Every ov-lib is a candidate once the cap is overridden; the candidate's own pin wins
    over the override (``ov-lib>=1.0``) in each environment."""
    repro = write_repro(tmp_path, "ovapp")
    out = envbisect("run", "--package", "ov-lib", "--with", "ovapp==1.0.0", "--good", "2.0.0",
                    "--bad", "2.5.0", "--override", "ov-lib>=1.0", "--repro", str(repro),
                    "--json", *common(stacks, python, tmp_path))  # fmt: skip
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert data["first_bad"] == "2.5.0" and data["overrides"] == ["ov-lib>=1.0"]
    report = Path(data["report"]).read_text()
    assert "overrides (every requirement on these takes these versions): `ov-lib>=1.0`" in report
    without = envbisect("run", "--package", "ov-lib", "--with", "ovapp==1.0.0", "--good",
                        "2.0.0", "--bad", "2.5.0", "--repro", str(repro), "--json",
                        *common(stacks, python, tmp_path / "w"))  # fmt: skip
    assert without.returncode != 0  # both ends lie above ovapp's cap: neither can be built


def test_lock_off_the_pins_installs_as_listed(
    stacks: LocalIndex, python: str, tmp_path: Path
) -> None:
    repro = write_repro(tmp_path, "ovapp")
    out = envbisect("lock", "--with", "ovapp==1.0.0", "--override", "ov-lib>=2.0", "--repro",
                    str(repro), "--json", *common(stacks, python, tmp_path))  # fmt: skip
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    (c,) = data["constraints"]
    assert (c["package"], c["first_bad"], c["last_good"]) == ("ov-lib", "2.5.0", "2.0.0")
    assert locked(data["lock"]) == {"ovapp": "1.0.0", "ov-lib": "2.0.0"}
    text = Path(data["lock"]).read_text()
    assert "uv pip install --no-deps --require-hashes -r requirements.txt" in text
    uv = find_uv()
    env = Uv(binary=uv, offline=False).env()
    venv = tmp_path / "venv"
    subprocess.run([uv, "venv", "-q", "--python", python, str(venv)], check=True, env=env)
    subprocess.run([uv, "pip", "install", "-q", "--no-config", "--python", str(venv / "bin" /
                    "python"), "--no-deps", "--require-hashes", "-r", data["lock"]], check=True,
                   env=env)  # fmt: skip
    ran = subprocess.run([str(venv / "bin" / "python"), str(repro)], capture_output=True,
                         text=True)  # fmt: skip
    assert ran.returncode == 0, ran.stderr


def test_diff_between_two_off_pin_locks(stacks: LocalIndex, python: str, tmp_path: Path) -> None:
    good, bad = tmp_path / "good.txt", tmp_path / "bad.txt"
    good.write_text("ovapp==1.0.0\nov-lib==2.0.0\n")
    bad.write_text("ovapp==1.0.0\nov-lib==2.5.0\n")
    repro = write_repro(tmp_path, "ovapp")
    out = envbisect("diff", str(good), str(bad), "--override", "ov-lib>=2.0", "--repro",
                    str(repro), "--json", *common(stacks, python, tmp_path))  # fmt: skip
    assert out.returncode == 0, out.stderr
    (culprit,) = json.loads(out.stdout)["culprits"]
    assert (culprit["package"], culprit["bad_version"]) == ("ov-lib", "2.5.0")


def test_a_bad_override_is_a_usage_error(stacks: LocalIndex, python: str, tmp_path: Path) -> None:
    def probe(*over: str) -> subprocess.CompletedProcess[str]:
        return envbisect("probe", "--with", "ovapp==1.0.0", *over,
                         *common(stacks, python, tmp_path), "--", "true")  # fmt: skip

    assert_clean_error(probe("--override", "ov-lib[x]==2"), 2, "name and versions")
    assert_clean_error(probe("--override", "not a req!"), 2, "not a requirement")
    assert_clean_error(probe("--override", "ov-lib==1", "--override", "ov-lib==2"), 2,
                       "overridden twice")  # fmt: skip
    assert_clean_error(probe("--override", str(tmp_path / "none.txt")), 2, "cannot read it")
