"""``--inherit``: candidate environments see the --python interpreter's own packages (on a GPU
machine, its CUDA torch), planned as they are there and never installed. The "machine's
interpreter" here is a virtualenv the test fills from the local index (tests/support/stacks.py:
cpapp imports ``old_api`` from cp-lib, which dropped it in 2.0.0). Real uv environments."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from conftest import write_repro
from envbisect.env.uv import Uv, find_uv
from support.cli import envbisect
from support.index_server import LocalIndex

pytestmark = pytest.mark.slow


@pytest.fixture
def machine(stacks: LocalIndex, python: str, tmp_path: Path) -> str:
    """An interpreter holding cp-lib 1.0.0 and cp-helper 1.0.0, as a GPU box's python3 holds
    torch and transformers."""
    uv = find_uv()
    env = Uv(binary=uv, offline=False).env()
    base = tmp_path / "machine"
    subprocess.run([uv, "venv", "-q", "--python", python, str(base)], check=True, env=env)
    subprocess.run([uv, "pip", "install", "-q", "--no-config", "--python", str(base / "bin" /
                    "python"), "--index-url", stacks.url, "cp-lib==1.0.0", "cp-helper==1.0.0"],
                   check=True, env=env)  # fmt: skip
    return str(base / "bin" / "python")


def common(stacks: LocalIndex, machine: str, tmp: Path) -> list[str]:
    return ["--index-url", stacks.url, "--python", machine, "--inherit", "--results",
            str(tmp / "r"), "--cache-dir", str(tmp / "c"), "--no-config", "--json"]  # fmt: skip


def test_probe_uses_the_machines_packages_and_installs_only_the_rest(
    stacks: LocalIndex, machine: str, tmp_path: Path
) -> None:
    repro = write_repro(tmp_path, "cpapp")
    out = envbisect("probe", "--with", "cpapp==1.0.0", "--repro", str(repro),
                    *common(stacks, machine, tmp_path))  # fmt: skip
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert data["outcome"]["kind"] == "pass"  # cp-lib 1.0.0 is the machine's: old_api is there
    installed = {d["name"] for d in data["installed"]}
    assert "cpapp" in installed and "cp-lib" not in installed and "cp-helper" not in installed
    assert "--inherit: each environment sees" in out.stderr and "cp-lib 1.0.0" in out.stderr


def test_run_bisects_a_package_in_front_of_the_machines(
    stacks: LocalIndex, machine: str, tmp_path: Path
) -> None:
    """cp-lib's candidates are installed in each environment, in front of the machine's
    1.0.0; cp-helper stays the machine's (planned at 1.0.0, never installed)."""
    repro = write_repro(tmp_path, "cpapp")
    out = envbisect("run", "--package", "cp-lib", "--with", "cpapp==1.0.0", "--good", "1.0.0",
                    "--bad", "2.1.0", "--repro", str(repro),
                    *common(stacks, machine, tmp_path))  # fmt: skip
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert (data["first_bad"], data["last_good"]) == ("2.0.0", "1.5.0")
    for row in data["probes"]:
        names = {d["name"]: d["version"] for d in row["installed"]}
        assert "cp-helper" not in names  # the machine's
        # The candidate, but where it is the machine's own version: that one is used.
        assert names.get("cp-lib") == (None if row["version"] == "1.0.0" else row["version"])
