"""The training probes (sft-step, dpo-step, trainer-step) without torch: their choice of
arguments per release and how their outcome is classified.

The scripts run for real, as envbisect runs them (copied with their support files into a
working directory, ``python -X faulthandler``), over stub packages written here: ``trl``,
``transformers``, ``torch``, ``datasets``, ``tokenizers``, ``peft`` and ``accelerate`` as
small modules with dist-info of a chosen version. The stub trainers and configs accept the
keywords the real release of that version accepts (read from trl's wheels: ``tokenizer=``
before 0.12, ``processing_class=`` from 0.12; SFTConfig's ``max_seq_length`` before 0.16,
``max_length`` from 0.20, both from 0.16 to 0.19) and raise ``TypeError`` as Python does
otherwise: a probe that wrote the wrong era's name fails here. The real packages run in
tests/env/test_probes_pypi.py (slow).
"""

from __future__ import annotations

import importlib.util
import json
import math
import shutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

from envbisect.core.outcome import classify
from envbisect.env.repro import BUILTINS, builtin_step
from envbisect.model import OutcomeKind, RawProbe

PROBES = Path(__file__).resolve().parents[2] / "src" / "envbisect" / "env" / "probes"


def _tinytrain() -> ModuleType:
    spec = importlib.util.spec_from_file_location("_tinytrain", PROBES / "_tinytrain.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


tt = _tinytrain()


# -- the eras, pure ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("trl", "tokenizer", "length"),
    [
        ("0.9.6", "tokenizer", "max_seq_length"),
        ("0.11.4", "tokenizer", "max_seq_length"),
        ("0.12.0", "processing_class", "max_seq_length"),
        ("0.12.2", "processing_class", "max_seq_length"),
        ("0.15.2", "processing_class", "max_seq_length"),
        ("0.16.0", "processing_class", "max_length"),
        ("0.19.1", "processing_class", "max_length"),
        ("0.29.1", "processing_class", "max_length"),
        ("1.0.0", "processing_class", "max_length"),
        ("1.16.0", "processing_class", "max_length"),
        ("0.12.0.dev0", "processing_class", "max_seq_length"),
        ("1.2.0+local", "processing_class", "max_length"),
    ],
)
def test_era_names_what_a_user_of_the_release_writes(trl: str, tokenizer: str, length: str) -> None:
    assert tt.era(trl) == {"tokenizer": tokenizer, "sft_length": length}


def test_release_numbers() -> None:
    assert tt.release("0.12.2") == (0, 12, 2)
    assert tt.release("4.57.0.dev0") == (4, 57, 0)
    assert tt.release("2.13.0+cpu") == (2, 13, 0)
    assert tt.release("1.0") == (1, 0, 0)


def test_problem_decides_pass_or_why_not(tmp_path: Path) -> None:
    assert tt.problem("SFTTrainer", [3.1, 3.0, 2.9], 3, []) is None
    assert "logged 2 losses for 3 steps" in tt.problem("SFTTrainer", [3.1, 3.0], 3, [])
    assert "non-finite SFTTrainer loss" in tt.problem("SFTTrainer", [3.1, math.nan, 2.9], 3, [])
    assert "non-finite" in tt.problem("DPOTrainer", [0.69, math.inf, 0.6], 3, [])
    missing = tt.missing(str(tmp_path), ("model.safetensors", "pytorch_model.bin"), ("x.pt",))
    assert missing == ["model.safetensors or pytorch_model.bin", "x.pt"]
    (tmp_path / "pytorch_model.bin").write_text("")
    assert tt.missing(str(tmp_path), ("model.safetensors", "pytorch_model.bin")) == []
    assert tt.problem("Trainer", [1.0, 1.0, 1.0], 3, ["x.pt"]) == "Trainer did not save x.pt"
    assert tt.losses_of(
        [{"loss": 2.0}, {"grad_norm": 1.0}, {"loss": 1.5}, {"train_loss": 1.7}]
    ) == [
        2.0,
        1.5,
    ]


def test_the_training_probes_are_registered_with_their_support_file() -> None:
    for name in ("sft-step", "dpo-step", "trainer-step"):
        step = builtin_step(name)
        assert {p.name for p in step.support} == {
            BUILTINS[name].script,
            "_common.py",
            "_tinytrain.py",
        }
        assert step.args == ()
    assert builtin_step("sft-step:full") == builtin_step("sft-step")  # the default, named
    assert builtin_step("dpo-step:lora").args == ("lora",)
    assert builtin_step("trainer-step:resume").label == "trainer-step:resume"
    assert builtin_step("trainer-step:save") == builtin_step("trainer-step")
    assert builtin_step("trainer-step:lora").digest == builtin_step("trainer-step").digest


# -- the scripts over stub packages ------------------------------------------------------------

STUBS: dict[str, str] = {
    "torch": """
__version__ = "2.13.0+cpu"
def manual_seed(n):
    pass
def tensor(x):
    return list(x)
""",
    "accelerate": "",
    "tokenizers": """
class _NS:
    def __init__(self, **kw):
        self.__dict__.update(kw)
class Tokenizer:
    def __init__(self, model):
        self.model = model
models = _NS(WordLevel=lambda vocab, unk_token: vocab)
pre_tokenizers = _NS(WhitespaceSplit=lambda: None)
""",
    "datasets": """
class Dataset(list):
    @classmethod
    def from_list(cls, rows):
        return cls(rows)
""",
    "peft": """
class LoraConfig:
    def __init__(self, **kw):
        self.kw = kw
def get_peft_model(model, config):
    model.peft = config
    return model
""",
    "transformers": """
import os, json
from _stubrun import run
__version__ = os.environ.get("STUB_TRANSFORMERS", "4.46.3")
class PreTrainedTokenizerFast:
    bos_token_id, eos_token_id, pad_token_id = 2, 3, 1
    def __init__(self, tokenizer_object=None, **kw):
        self.vocab = tokenizer_object.model if tokenizer_object else {"<unk>": 0}
    def __len__(self):
        return len(self.vocab)
    def __call__(self, text):
        return {"input_ids": [self.vocab.get(w, 0) for w in text.split()]}
    def save_pretrained(self, folder):
        os.makedirs(folder, exist_ok=True)
        with open(os.path.join(folder, "vocab.json"), "w") as fh:
            json.dump(self.vocab, fh)
class AutoTokenizer:
    @staticmethod
    def from_pretrained(folder):
        tok = PreTrainedTokenizerFast()
        with open(os.path.join(folder, "vocab.json")) as fh:
            tok.vocab = json.load(fh)
        return tok
class LlamaConfig:
    def __init__(self, **kw):
        self.kw = kw
class LlamaForCausalLM:
    def __init__(self, config=None):
        self.config = config
    def save_pretrained(self, folder, **kw):
        open(os.path.join(folder, "config.json"), "w").close()
class AutoModelForCausalLM:
    @staticmethod
    def from_pretrained(folder):
        return LlamaForCausalLM()
class TrainingArguments:
    def __init__(self, output_dir, **kw):
        self.output_dir, self.kw = output_dir, kw
class _State:
    def __init__(self):
        self.log_history, self.global_step = [], 0
class Trainer:
    def __init__(self, model=None, args=None, train_dataset=None):
        self.model, self.args, self.state = model, args, _State()
    def train(self, resume_from_checkpoint=None):
        run(self, resume_from_checkpoint)
    def save_model(self, out=None):
        name = "adapter_model.safetensors" if hasattr(self.model, "peft") else "model.safetensors"
        os.makedirs(out or self.args.output_dir, exist_ok=True)
        open(os.path.join(out or self.args.output_dir, name), "w").close()
""",
    "trl": """
import os
from transformers import Trainer, TrainingArguments, AutoModelForCausalLM
from importlib.metadata import version
V = tuple(int(x) for x in version("trl").split(".")[:2])
def _check(what, kw, allowed):
    for k in kw:
        if k not in allowed:
            raise TypeError(f"{what}.__init__() got an unexpected keyword argument '{k}'")
_ARGS = {"bf16", "max_steps", "per_device_train_batch_size", "gradient_accumulation_steps",
         "learning_rate", "lr_scheduler_type", "logging_steps", "save_strategy", "report_to",
         "seed", "dataloader_num_workers"}
class SFTConfig(TrainingArguments):
    def __init__(self, output_dir, **kw):
        lengths = {"max_seq_length"} if V < (0, 16) else (
            {"max_length", "max_seq_length"} if V < (0, 20) else {"max_length"})
        _check("SFTConfig", kw, _ARGS | {"dataset_text_field", "packing"} | lengths)
        super().__init__(output_dir, **kw)
class DPOConfig(TrainingArguments):
    def __init__(self, output_dir, **kw):
        _check("DPOConfig", kw, _ARGS | {"beta", "max_length"})
        super().__init__(output_dir, **kw)
class _TrlTrainer(Trainer):
    def __init__(self, model=None, args=None, train_dataset=None, peft_config=None, **kw):
        _check(type(self).__name__, kw, {"tokenizer"} if V < (0, 12) else {"processing_class"})
        super().__init__(model=model, args=args, train_dataset=train_dataset)
    def save_model(self, out=None):
        name = "adapter_model.safetensors" if os.environ.get("STUB_LORA") else "model.safetensors"
        os.makedirs(out or self.args.output_dir, exist_ok=True)
        open(os.path.join(out or self.args.output_dir, name), "w").close()
class SFTTrainer(_TrlTrainer):
    pass
class DPOTrainer(_TrlTrainer):
    pass
""",
    "_stubrun": """
import os
def run(trainer, resume):
    mode = os.environ.get("STUB_MODE", "pass")
    if mode == "raise":
        raise AttributeError("'Accelerator' object has no attribute 'stub_gone'")
    steps = trainer.args.kw["max_steps"]
    start = 2 if resume else 0
    trainer.state.log_history = [{"loss": 3.0 - 0.1 * i} for i in range(steps)]
    if mode == "nan":
        trainer.state.log_history[1]["loss"] = float("nan")
    trainer.state.global_step = steps
    out = trainer.args.output_dir
    if trainer.args.kw.get("save_strategy") == "steps" and mode != "nosave":
        ckpt = os.path.join(out, "checkpoint-2")
        os.makedirs(ckpt, exist_ok=True)
        peft = hasattr(trainer.model, "peft")
        weights = "adapter_model.safetensors" if peft else "model.safetensors"
        for f in ("optimizer.pt", "scheduler.pt", "trainer_state.json", weights):
            open(os.path.join(ckpt, f), "w").close()
    del start
""",
}


def _site(tmp_path: Path, versions: dict[str, str]) -> Path:
    site = tmp_path / "site"
    site.mkdir()
    for name, body in STUBS.items():
        if name in versions or name == "_stubrun":
            (site / f"{name}.py").write_text(body, encoding="utf-8")
    for name, ver in versions.items():
        info = site / f"{name}-{ver}.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {ver}\n")
    return site


def _run(
    tmp_path: Path, spec: str, versions: dict[str, str], **env: str
) -> tuple[RawProbe, list[dict[str, object]]]:
    """The probe ``spec`` run as envbisect runs it, over the stubs; its raw result and
    reports."""
    step = builtin_step(spec)
    work = tmp_path / "work"
    work.mkdir()
    for path in step.support:
        shutil.copy(path, work / path.name)
    site = _site(tmp_path, versions)
    assert step.file is not None
    proc = subprocess.run(
        [sys.executable, "-X", "faulthandler", str(step.file), *step.args],
        cwd=work,
        env={"PYTHONPATH": str(site), "PATH": "/usr/bin:/bin", **env},
        capture_output=True,
        text=True,
        timeout=60,
    )
    raw = RawProbe(
        returncode=proc.returncode,
        timed_out=False,
        seconds=0.0,
        stdout_tail=proc.stdout,
        stderr_tail=proc.stderr,
        step=step.label,
    )
    reports = [
        json.loads(line.split(": ", 1)[1])
        for line in proc.stdout.splitlines()
        if line.startswith("ENVBISECT-REPORT: ")
    ]
    return raw, reports


ALL = {"torch": "2.13.0", "transformers": "4.46.3", "datasets": "3.0.0", "tokenizers": "0.20.0",
       "accelerate": "1.0.1", "peft": "0.13.2"}  # fmt: skip


@pytest.mark.parametrize("trl", ["0.9.6", "0.11.4", "0.12.2", "0.16.1", "0.19.1", "1.16.0"])
@pytest.mark.parametrize("spec", ["sft-step", "dpo-step", "sft-step:lora", "dpo-step:lora"])
def test_trl_probes_pass_with_the_arguments_of_each_era(
    tmp_path: Path, trl: str, spec: str
) -> None:
    env = {"STUB_LORA": "1"} if spec.endswith(":lora") else {}
    raw, reports = _run(tmp_path, spec, {**ALL, "trl": trl}, **env)
    outcome = classify(raw)
    assert outcome.kind is OutcomeKind.PASS, raw.stderr_tail
    (report,) = reports
    assert report["trl"] == trl and report["probe"] == spec
    assert report["losses"] == [3.0, 2.9, 2.8]
    choices = report["choices"]
    assert isinstance(choices, dict) and choices["tokenizer"] == tt.era(trl)["tokenizer"]


def test_a_failure_inside_the_trainer_is_a_fail_with_its_text(tmp_path: Path) -> None:
    raw, reports = _run(tmp_path, "sft-step", {**ALL, "trl": "0.12.2"}, STUB_MODE="raise")
    outcome = classify(raw)
    assert outcome.kind is OutcomeKind.FAIL and reports == []
    assert outcome.signature == "AttributeError: 'Accelerator' object has no attribute 'stub_gone'"


def test_a_non_finite_loss_fails_and_says_so(tmp_path: Path) -> None:
    raw, reports = _run(tmp_path, "dpo-step", {**ALL, "trl": "1.0.0"}, STUB_MODE="nan")
    outcome = classify(raw)
    assert outcome.kind is OutcomeKind.FAIL
    assert outcome.signature.startswith("AssertionError: non-finite DPOTrainer loss in [3.0, nan")
    assert len(reports) == 1  # what was measured is reported before the verdict


def test_trl_before_0_9_and_missing_packages_are_untestable(tmp_path: Path) -> None:
    raw, _ = _run(tmp_path, "sft-step", {**ALL, "trl": "0.8.6"})
    outcome = classify(raw)
    assert outcome.kind is OutcomeKind.UNTESTABLE
    assert outcome.signature == "trl 0.8.6 has no SFTConfig (0.9 and later only)"
    no_peft = {k: v for k, v in ALL.items() if k != "peft"}
    for spec in ("dpo-step:lora", "trainer-step:lora"):
        where = tmp_path / spec.replace(":", "-")  # not a PYTHONPATH separator
        where.mkdir()
        raw, _ = _run(where, spec, {**no_peft, "trl": "0.12.2"})
        outcome = classify(raw)
        assert outcome.kind is OutcomeKind.UNTESTABLE
        assert outcome.signature == "not installed in this environment: peft"
    (tmp_path / "plain").mkdir()  # the run without LoRA needs no peft
    raw, _ = _run(tmp_path / "plain", "dpo-step", {**no_peft, "trl": "0.12.2"})
    assert classify(raw).kind is OutcomeKind.PASS


@pytest.mark.parametrize(
    ("spec", "mode", "kind", "text"),
    [
        ("trainer-step", "pass", OutcomeKind.PASS, ""),
        ("trainer-step:lora", "pass", OutcomeKind.PASS, ""),
        ("trainer-step", "nosave", OutcomeKind.FAIL,
         "AssertionError: Trainer did not save optimizer.pt, scheduler.pt, trainer_state.json"),
        ("trainer-step", "raise", OutcomeKind.FAIL,
         "AttributeError: 'Accelerator' object has no attribute 'stub_gone'"),
        ("trainer-step:resume", "pass", OutcomeKind.PASS, ""),
        ("trainer-step:lora-resume", "pass", OutcomeKind.PASS, ""),
    ],
)  # fmt: skip
def test_trainer_step_outcomes(
    tmp_path: Path, spec: str, mode: str, kind: OutcomeKind, text: str
) -> None:
    raw, reports = _run(tmp_path, spec, ALL, STUB_MODE=mode)
    outcome = classify(raw)
    assert outcome.kind is kind, raw.stderr_tail
    if text:
        assert outcome.signature.startswith(text)
    if kind is OutcomeKind.PASS:
        (report,) = reports
        assert report["accelerate"] == "1.0.1" and report["probe"] == spec
