"""The built-in probes for real, on CPU, with the real packages (PyPI).

These need PyPI (this project's machines reach it) and the CPU build of torch that lies in a
local wheel folder (``pip config`` names it: tests/support/pypi.py), so that no multi-GB CUDA torch
is downloaded. They skip, saying why, where either is missing. They use uv's default cache, not
the session's private one, so that a second run installs from hard links.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from support.cli import envbisect
from support.pypi import WHEELS, pypi_reachable

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not pypi_reachable(), reason="PyPI cannot be reached from here"),
]


def probe(*args: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    """``envbisect probe --json ARGS`` with uv's shared cache (real downloads: 15 minutes)."""
    env = {k: v for k, v in os.environ.items() if k != "UV_CACHE_DIR"}  # uv's shared cache
    return envbisect("probe", "--python", sys.executable, "--results", str(tmp_path / "r"),
                     "--json", *args, env=env, timeout=900)  # fmt: skip


def test_datasets_json_passes_on_a_good_pair_and_fails_on_a_known_bad_one(tmp_path: Path) -> None:
    good = probe("--with", "datasets==4.0.0", "--probe", "datasets-json", tmp_path=tmp_path)
    assert good.returncode == 0, good.stderr
    data = json.loads(good.stdout)
    assert data["outcome"]["kind"] == "pass"
    (report,) = data["reports"]
    assert report["datasets"] == "4.0.0" and len(report["seconds"]) == 4
    # datasets 2.14.6 subclasses pyarrow.PyExtensionType, which pyarrow 21 removed.
    bad = probe("--with", "datasets==2.14.6", "--with", "pyarrow==21.0.0", "--with",
                    "numpy<2", "--probe", "datasets-json", tmp_path=tmp_path)  # fmt: skip
    outcome = json.loads(bad.stdout)["outcome"]
    assert outcome["kind"] == "fail"
    assert outcome["signature"].startswith("AttributeError: module 'pyarrow' has no attribute")


@pytest.mark.skipif(
    not any(WHEELS.glob("torch-*+cpu-*.whl")), reason=f"no CPU torch wheel in {WHEELS}"
)
def test_lora_step_on_cpu(tmp_path: Path) -> None:
    wheel = sorted(WHEELS.glob("torch-*+cpu-*.whl"))[-1]
    version = wheel.name.split("-")[1].split("+")[0]
    py = f"cp{sys.version_info[0]}{sys.version_info[1]}"
    if f"-{py}-" not in wheel.name:
        pytest.skip(f"the CPU torch wheel in {WHEELS} is not for {py}")
    proc = probe("--find-links", str(WHEELS), "--with", f"torch=={version}",
                 "--with", "transformers", "--with", "peft", "--probe", "lora-step",
                 tmp_path=tmp_path)  # fmt: skip
    assert proc.returncode == 0, proc.stderr + proc.stdout
    data = json.loads(proc.stdout)
    (report,) = data["reports"]
    assert report["device"] == "cpu" and report["dtype"] == "float32"
    assert report["loss_last"] < report["loss_first"]
    assert report["torch"].endswith("+cpu")
    installed = {d["name"] for d in data["installed"]}
    assert not any(n.startswith("nvidia-") for n in installed), "a CUDA torch was installed"


@pytest.mark.skipif(
    not any(WHEELS.glob("torch-*+cpu-*.whl")), reason=f"no CPU torch wheel in {WHEELS}"
)
def test_llamafactory_train_on_cpu(tmp_path: Path) -> None:
    """A real llamafactory-cli train run, offline, with the local CPU torch.

    LLaMA-Factory 0.9.3 is the newest release that runs on a CPU build of torch newer than
    2.9: 0.9.4 and later import torchaudio unconditionally, whose last release (2.9.1) needs
    torch==2.9.1 (a CUDA build of several GB from PyPI). pyarrow<20: a newer pyarrow needs
    numpy 2, which 0.9.3's pins exclude (a real break in the environment of today).
    """
    wheel = sorted(WHEELS.glob("torch-*+cpu-*.whl"))[-1]
    version = wheel.name.split("-")[1].split("+")[0]
    if f"-cp{sys.version_info[0]}{sys.version_info[1]}-" not in wheel.name:
        pytest.skip(f"the CPU torch wheel in {WHEELS} is not for this Python")
    proc = probe("--find-links", str(WHEELS), "--with", f"torch=={version}",
                 "--with", "llamafactory==0.9.3", "--with", "pyarrow<20",
                 "--probe", "llamafactory-train", tmp_path=tmp_path)  # fmt: skip
    assert proc.returncode == 0, proc.stderr + proc.stdout
    data = json.loads(proc.stdout)
    assert data["outcome"]["kind"] == "pass", data["outcome"]
    (report,) = data["reports"]
    assert report["llamafactory"] == "0.9.3" and report["device"] == "cpu"
    assert report["steps"] == 3 and report["adapter_saved"] is True
    assert all(0 < x < 100 for x in report["losses"])


def _cpu_torch() -> str:
    """The version of the local CPU torch wheel for this Python, or skip."""
    wheels = sorted(WHEELS.glob("torch-*+cpu-*.whl"))
    if not wheels:
        pytest.skip(f"no CPU torch wheel in {WHEELS}")
    if f"-cp{sys.version_info[0]}{sys.version_info[1]}-" not in wheels[-1].name:
        pytest.skip(f"the CPU torch wheel in {WHEELS} is not for this Python")
    return wheels[-1].name.split("-")[1].split("+")[0]


def test_llamafactory_import_and_ppo_on_cpu(tmp_path: Path) -> None:
    """0.9.3's entry points, then PPO: a LoRA reward model (rm) trained first, then two PPO
    steps scored by it. 0.9.3 pins trl<=0.9.6, the old PPOTrainer's (trl 0.12 removed it)."""
    proc = probe("--find-links", str(WHEELS), "--with", f"torch=={_cpu_torch()}",
                 "--with", "llamafactory==0.9.3", "--with", "pyarrow<20",
                 "--probe", "llamafactory", "--probe", "llamafactory-train:ppo",
                 tmp_path=tmp_path)  # fmt: skip
    assert proc.returncode == 0, proc.stderr + proc.stdout
    data = json.loads(proc.stdout)
    assert data["outcome"]["kind"] == "pass", data["outcome"]
    imported, trained = data["reports"]
    assert imported["package"] == "llamafactory" and imported["version"] == "0.9.3"
    entry_points = {"run_exp": "llamafactory.train.tuner.run_exp", "cli": "llamafactory.cli.main"}
    assert imported["entry_points"] == {**entry_points, "cli_command": True}
    assert imported["stages"] == ["dpo", "kto", "ppo", "pt", "rm", "sft"]
    assert trained["stage"] == "ppo" and trained["runner"] == "llamafactory-cli train"
    rm, ppo = trained["runs"]
    assert rm["stage"] == "rm" and len(rm["losses"]) == 3 and rm["adapter_saved"]
    assert ppo["stage"] == "ppo" and len(ppo["losses"]) == len(ppo["rewards"]) == 2
    assert ppo["adapter_saved"] and trained["steps"] == 2
    installed = {d["name"]: d["version"] for d in data["installed"]}
    assert installed["trl"] == "0.9.6"


def test_llmtuner_0_6_through_run_exp(tmp_path: Path) -> None:
    """llmtuner 0.6.3: no CLI, so run_exp in a child; pairs as ``output: [chosen, rejected]``;
    no kto stage (untestable). Its dependencies of April 2024: peft 0.21 needs a newer
    transformers, datasets 2.14 cannot load from today's fsspec."""
    pins = ["llmtuner==0.6.3", "transformers==4.40.1", "datasets==2.19.0", "peft==0.10.0",
            "trl==0.8.6", "gradio==4.28.0", "numpy<2", "pyarrow<20",
            f"torch=={_cpu_torch()}"]  # fmt: skip
    env = ["--find-links", str(WHEELS), *(a for p in pins for a in ("--with", p))]
    proc = probe(*env, "--probe", "llamafactory", "--probe", "llamafactory-train:dpo",
                 tmp_path=tmp_path)  # fmt: skip
    assert proc.returncode == 0, proc.stderr + proc.stdout
    imported, trained = json.loads(proc.stdout)["reports"]
    assert imported["package"] == "llmtuner" and imported["version"] == "0.6.3"
    assert imported["entry_points"] == {"run_exp": "llmtuner.train.tuner.run_exp"}
    assert trained["runner"] == "run_exp" and trained["stage"] == "dpo"
    assert trained["steps"] == 3 and trained["adapter_saved"] is True
    kto = probe(*env, "--probe", "llamafactory-train:kto", tmp_path=tmp_path)
    outcome = json.loads(kto.stdout)["outcome"]
    assert outcome["kind"] == "untestable"
    assert outcome["signature"] == "llmtuner 0.6.3 has no kto stage"


def test_llamafactory_train_without_llamafactory_is_untestable(tmp_path: Path) -> None:
    proc = probe("--with", "six", "--probe", "llamafactory-train", tmp_path=tmp_path)
    data = json.loads(proc.stdout)
    assert data["outcome"]["kind"] == "untestable"
    assert "llamafactory" in data["outcome"]["signature"]


def test_trl_probes_on_cpu_pass_with_trl_0_12_and_dpo_fails_with_0_11(tmp_path: Path) -> None:
    """sft-step and dpo-step for real: trl 0.12.2 with transformers 4.46.3 trains; trl 0.11.4
    with the same transformers imports and starts, and its DPOTrainer fails at the first
    step (its own ``get_batch_samples(model, batch)`` shadows the one transformers 4.46's
    Trainer calls with the epoch's iterator): a training step fails, not an import. SFT passes
    with both. Measured in results/trl-transformers/ and by hand with plain uv. ``rich``: trl
    0.9 to 0.11 import it without declaring it (tyro brought it, until tyro's later releases
    dropped it: today's environment would stop at ``No module named 'rich'`` first)."""
    torch = _cpu_torch()
    same = ["--find-links", str(WHEELS), "--with", f"torch=={torch}",
            "--with", "transformers==4.46.3", "--with", "accelerate<1.2",
            "--with", "datasets<3.2", "--with", "pyarrow<20", "--with", "rich"]  # fmt: skip
    good = probe(*same, "--with", "trl==0.12.2", "--probe", "sft-step", "--probe", "dpo-step",
                 tmp_path=tmp_path)  # fmt: skip
    assert good.returncode == 0, good.stderr + good.stdout
    data = json.loads(good.stdout)
    assert data["outcome"]["kind"] == "pass"
    sft, dpo = data["reports"]
    assert sft["choices"] == {"tokenizer": "processing_class", "sft_length": "max_seq_length"}
    assert len(sft["losses"]) == 3 and len(dpo["losses"]) == 3
    bad = probe(*same, "--with", "trl==0.11.4", "--probe", "sft-step", "--probe", "dpo-step",
                tmp_path=tmp_path)  # fmt: skip
    data = json.loads(bad.stdout)
    assert data["outcome"]["kind"] == "fail" and data["outcome"]["step"] == "dpo-step"
    assert data["outcome"]["signature"] == (
        "AttributeError: 'generator' object has no attribute 'generate'"
    )
    (sft,) = data["reports"]  # SFT passed first, with the older era's names
    assert sft["choices"] == {"tokenizer": "tokenizer", "sft_length": "max_seq_length"}


def test_trainer_step_resume_and_lora_on_cpu(tmp_path: Path) -> None:
    """trainer-step, :resume and :lora-resume with today's transformers, accelerate and peft."""
    torch = _cpu_torch()
    proc = probe("--find-links", str(WHEELS), "--with", f"torch=={torch}",
                 "--with", "transformers", "--with", "accelerate", "--with", "peft",
                 "--probe", "trainer-step", "--probe", "trainer-step:resume",
                 "--probe", "trainer-step:lora-resume", tmp_path=tmp_path)  # fmt: skip
    assert proc.returncode == 0, proc.stderr + proc.stdout
    reports = json.loads(proc.stdout)["reports"]
    assert [len(r["losses"]) for r in reports] == [3, 4, 4]
    assert [r["probe"] for r in reports] == [
        "trainer-step", "trainer-step:resume", "trainer-step:lora-resume"
    ]  # fmt: skip
