"""bench/gpu/check.sh, the GPU proof for a machine without network, run here with
``--device cpu`` (this machine has no GPU: that is what cannot exist here). The "machine's
python3" is a virtualenv holding the CPU build of torch (from the local wheel folder),
transformers, peft and accelerate; bench/gpu/prepare.sh fills the folder the check carries
(from PyPI). Every environment of the check reuses that torch (--inherit), with no index
(an empty file:// one) and --offline: nothing is downloaded during the check."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from envbisect.env.uv import Uv, find_uv
from support.pypi import WHEELS, pypi_reachable

ROOT = Path(__file__).resolve().parents[2]

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not pypi_reachable(), reason="PyPI cannot be reached from here"),
    pytest.mark.skipif(
        not any(WHEELS.glob(f"torch-*+cpu-cp{sys.version_info[0]}{sys.version_info[1]}-*.whl")),
        reason=f"no CPU torch wheel for this Python in {WHEELS}",
    ),
]


def test_the_gpu_check_runs_on_cpu_with_the_machines_torch(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "UV_CACHE_DIR"}  # uv's shared cache
    uv = find_uv()
    folder, machine = tmp_path / "carry", tmp_path / "machine"
    py = f"{sys.version_info[0]}.{sys.version_info[1]}"
    prep = subprocess.run(["bash", str(ROOT / "bench/gpu/prepare.sh"), str(folder), py],
                          capture_output=True, text=True, env=env, timeout=600)  # fmt: skip
    assert prep.returncode == 0, prep.stderr
    size = sum(f.stat().st_size for f in folder.iterdir())
    assert size < 60 * 2**20, size  # what the check carries fits in 60 MiB
    torch = sorted(WHEELS.glob(f"torch-*+cpu-cp{py.replace('.', '')}-*.whl"))[-1]
    subprocess.run([uv, "venv", "-q", "--seed", "--python", sys.executable, str(machine)],
                   check=True, env=Uv(binary=uv, offline=False).env())  # fmt: skip
    subprocess.run([uv, "pip", "install", "-q", "--no-config", "--python",
                    str(machine / "bin" / "python"), str(torch), "transformers<5", "peft==0.15.2",
                    "accelerate"], check=True, env=env, timeout=900)  # fmt: skip
    work = tmp_path / "work"
    ran = subprocess.run(
        ["bash", str(ROOT / "bench/gpu/check.sh"), str(folder), "--device", "cpu", "--python",
         str(machine / "bin" / "python")],
        capture_output=True, text=True, env={**env, "WORK": str(work)}, timeout=1200,
    )  # fmt: skip
    assert ran.returncode == 0, ran.stdout + ran.stderr
    steps = {
        s["step"]: s for s in map(json.loads, (work / "summary.jsonl").read_text().splitlines())
    }
    lora = steps["lora-step"]
    assert lora["exit"] == 0 and lora["outcome"] == "pass", lora
    (report,) = lora["reports"]
    assert report["device"] == "cpu" and report["torch"] == torch.name.split("-")[1]
    assert report["loss_last"] < report["loss_first"]
    assert steps["llamafactory-train"].get("skipped")  # the machine has no llamafactory
    bisect = steps["peft-bisection"]
    assert bisect["exit"] in (0, 1) and bisect["probes"] >= 2, bisect  # both ends probed
    # Nothing the machine holds went into an environment: torch was never installed.
    envs = work / "results" / ".envs"
    assert not list(envs.glob("*/lib/python*/site-packages/torch")) if envs.exists() else True
