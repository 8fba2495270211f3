"""llamafactory-train[:STAGE]: a real LLaMA-Factory training run, a few LoRA steps, offline.

STAGE is one of sft (the default), pt, rm, dpo, kto, ppo. Everything it needs is made here, in
the working directory: a word-level tokenizer (built with ``tokenizers`` from the generated
data, saved as a PreTrainedTokenizerFast), a tiny randomly initialised Llama saved with
``save_pretrained``, the stage's dataset with its ``dataset_info.json``, and the training
arguments. Nothing is downloaded (HF_HUB_OFFLINE=1).

Releases 0.6 to 0.9 (the package was ``llmtuner`` up to 0.7.1): ``llamafactory-cli train
ARGS.yaml`` where the release installs that command (0.7.1 onward), else ``run_exp(args)`` in
a child Python (``<pkg>.train.tuner``, what the old ``src/train_bash.py`` called). The
arguments are ones every release accepts. Each stage gets its data: pt plain text, sft
alpaca, rm and dpo pairwise (``"ranking": true``; before 0.8.0 the pair was ``output: [chosen,
rejected]``, from 0.8.0 ``chosen`` and ``rejected`` columns), kto ``kto_tag`` rows, ppo the
alpaca prompts and a reward model: a LoRA rm run first, then ppo with ``reward_model_type:
lora`` on its adapter. A release without the stage (kto before 0.8.0) is untestable.

Passes when every run exits 0, its trainer log has a finite loss for every logged step (and a
finite reward for ppo), and the LoRA adapter was saved. A crash of a training process (a
child of this script) is re-raised here with the same signal, so envbisect sees a crash, not
an exit code. DISABLE_VERSION_CHECK=1: LLaMA-Factory refuses to start outside its own checked
ranges, and a bisection goes outside them on purpose (PPO's own trl check, in 0.9.4 and
later, is not behind that switch: it fails, as it does for users). One device:
CUDA_VISIBLE_DEVICES is set to the first GPU unless the caller set it (several would make the
CLI start torchrun).
"""

import importlib.util
import json
import math
import os
import re
import shutil
import signal
import subprocess
import sys
import time

from _common import report, require, untestable

STAGES = ("sft", "pt", "rm", "dpo", "kto", "ppo")
STAGE = sys.argv[1] if len(sys.argv) > 1 and sys.argv[1] else "sft"
if STAGE not in STAGES:  # envbisect checks first; this is for a hand-run script
    sys.stderr.write("usage: llamafactory-train[:" + "|".join(STAGES) + "]\n")
    sys.exit(2)

PKG = next((p for p in ("llamafactory", "llmtuner") if importlib.util.find_spec(p)), None)
if PKG is None:
    untestable("not installed in this environment: llamafactory (nor llmtuner)")
require("transformers", "tokenizers", "torch")

from importlib.metadata import version

import tokenizers
import torch
import transformers

PKG_DIR = importlib.util.find_spec(PKG).submodule_search_locations[0]
RELEASE = version(PKG)
MAJOR_MINOR = tuple(int(x) for x in re.findall(r"\d+", RELEASE)[:2])
for needed in ("rm", "ppo") if STAGE == "ppo" else (STAGE,):  # ppo's reward model: rm first
    if not os.path.isdir(os.path.join(PKG_DIR, "train", needed)):
        untestable(f"{PKG} {RELEASE} has no {needed} stage")

WORK = os.getcwd()
MODEL = os.path.join(WORK, "tiny-llama")
DATA = os.path.join(WORK, "data")
STEPS = 3
PPO_STEPS = 2

# -- data --------------------------------------------------------------------------------------
WORDS = ["red", "green", "blue", "small", "large", "quick", "slow", "bright", "dark", "round"]
alpaca, pairs, kto, text = [], [], [], []
for i in range(24):
    a, b = WORDS[i % len(WORDS)], WORDS[(i * 5 + 3) % len(WORDS)]
    prompt = {"instruction": f"describe the {a} box", "input": f"it is {b}" if i % 2 else ""}
    good, bad = f"the box is {a} and {b}", f"no {b} here"
    alpaca.append({**prompt, "output": good})
    kto.append({**prompt, "output": good if i % 2 else bad, "kto_tag": bool(i % 2)})
    if MAJOR_MINOR < (0, 8):  # one column of two answers, the better first
        pairs.append({**prompt, "output": [good, bad]})
    else:
        pairs.append({**prompt, "chosen": good, "rejected": bad})
    text.append({"text": f"the {a} box is {b} and the {b} box is {a} , quick and slow ."})
ALPACA = {"prompt": "instruction", "query": "input", "response": "output"}
PAIRS = {"ranking": True}
if MAJOR_MINOR >= (0, 8):  # the pair's columns have no default names
    PAIRS["columns"] = {
        "prompt": "instruction",
        "query": "input",
        "chosen": "chosen",
        "rejected": "rejected",
    }
DATASETS = {  # stage -> (name, rows, dataset_info attributes)
    "sft": ("tiny_alpaca", alpaca, {}),
    "ppo": ("tiny_alpaca", alpaca, {}),
    "pt": ("tiny_text", text, {"columns": {"prompt": "text"}}),
    "rm": ("tiny_pairs", pairs, PAIRS),
    "dpo": ("tiny_pairs", pairs, PAIRS),
    "kto": ("tiny_kto", kto, {"columns": {**ALPACA, "kto_tag": "kto_tag"}}),
}
os.makedirs(DATA, exist_ok=True)
info = {}
for name, rows, attrs in DATASETS.values():
    with open(os.path.join(DATA, name + ".json"), "w", encoding="utf-8") as fh:
        json.dump(rows, fh)
    info[name] = {"file_name": name + ".json", **attrs}
with open(os.path.join(DATA, "dataset_info.json"), "w", encoding="utf-8") as fh:
    json.dump(info, fh)

# -- tokenizer ---------------------------------------------------------------------------------
SPECIAL = ["<unk>", "<pad>", "<s>", "</s>"]
vocab = {tok: i for i, tok in enumerate(SPECIAL)}
words = ["Human:", "Assistant:", ".", ",", ":", "?", "!"]  # the default template's words
for row in alpaca + kto + text:
    for value in row.values():
        if isinstance(value, str):
            words += value.split()
for word in words:
    vocab.setdefault(word, len(vocab))
core = tokenizers.Tokenizer(tokenizers.models.WordLevel(vocab=vocab, unk_token="<unk>"))
core.pre_tokenizer = tokenizers.pre_tokenizers.WhitespaceSplit()
tokenizer = transformers.PreTrainedTokenizerFast(
    tokenizer_object=core, unk_token="<unk>", pad_token="<pad>", bos_token="<s>", eos_token="</s>"
)
shutil.rmtree(MODEL, ignore_errors=True)
tokenizer.save_pretrained(MODEL)

# -- model -------------------------------------------------------------------------------------
torch.manual_seed(0)
config = transformers.LlamaConfig(
    vocab_size=len(vocab),
    hidden_size=64,
    intermediate_size=128,
    num_hidden_layers=2,
    num_attention_heads=4,
    num_key_value_heads=4,
    max_position_embeddings=128,
    bos_token_id=vocab["<s>"],
    eos_token_id=vocab["</s>"],
    pad_token_id=vocab["<pad>"],
)
transformers.LlamaForCausalLM(config).save_pretrained(MODEL, safe_serialization=True)

# -- training ----------------------------------------------------------------------------------
BASE = {
    "model_name_or_path": MODEL,
    "do_train": True,
    "finetuning_type": "lora",
    "lora_target": "q_proj,v_proj",
    "lora_rank": 4,
    "dataset_dir": DATA,
    "template": "default",
    "cutoff_len": 64,
    "overwrite_cache": True,
    "preprocessing_num_workers": 1,
    "dataloader_num_workers": 0,
    "overwrite_output_dir": True,
    "logging_steps": 1,
    "save_strategy": "no",
    "per_device_train_batch_size": 4,
    "gradient_accumulation_steps": 1,
    "learning_rate": 1e-3,
    "max_steps": STEPS,
    "lr_scheduler_type": "constant",
    "report_to": "none",
    "seed": 0,
}
CLI = os.path.join(os.path.dirname(sys.executable), "llamafactory-cli")
if not os.path.exists(CLI):
    CLI = shutil.which("llamafactory-cli")
ENV = dict(os.environ, DISABLE_VERSION_CHECK="1", HF_HUB_OFFLINE="1", WANDB_DISABLED="true")
ENV.pop("FORCE_TORCHRUN", None)
if torch.cuda.is_available() and "CUDA_VISIBLE_DEVICES" not in ENV:
    ENV["CUDA_VISIBLE_DEVICES"] = "0"
# 0.6.x and 0.7.0 have no CLI: run_exp with the same arguments, as src/train_bash.py did.
RUN_EXP = (
    "import json, sys\n"
    f"from {PKG}.train.tuner import run_exp\n"
    "with open(sys.argv[1], encoding='utf-8') as fh:\n"
    "    run_exp(json.load(fh))\n"
)


def train(stage, out, **extra):
    """One training run of ``stage`` into ``out``: what it logged and saved, and how long."""
    args = {**BASE, "stage": stage, "dataset": DATASETS[stage][0], "output_dir": out, **extra}
    path = os.path.join(WORK, f"train_{stage}")
    if CLI is not None:
        # YAML, as LLaMA-Factory's own examples pass them (0.9.5's read_args calls json.load
        # on a Path for a .json file). Every value is a JSON scalar: YAML reads the same.
        with open(path + ".yaml", "w", encoding="utf-8") as fh:
            fh.writelines(f"{key}: {json.dumps(value)}\n" for key, value in args.items())
        argv, what = [CLI, "train", path + ".yaml"], "llamafactory-cli train"
    else:
        with open(path + ".json", "w", encoding="utf-8") as fh:
            json.dump(args, fh)
        argv, what = [sys.executable, "-c", RUN_EXP, path + ".json"], "run_exp"
    RUNS.append({"stage": stage, "runner": what})
    sys.stdout.flush()
    start = time.perf_counter()
    proc = subprocess.run(argv, env=ENV)
    RUNS[-1]["seconds"] = round(time.perf_counter() - start, 2)
    if proc.returncode < 0:  # the trainer died by a signal: die by the same one
        sys.stderr.write(f"{what} ({stage}) died by signal {-proc.returncode}\n")
        sys.stderr.flush()
        signal.signal(-proc.returncode, signal.SIG_DFL)
        os.kill(os.getpid(), -proc.returncode)
    if proc.returncode != 0:  # no traceback of ours: the trainer's is the failure
        raise SystemExit(f"RuntimeError: {what} ({stage}) exited {proc.returncode}")
    log_path = os.path.join(out, "trainer_log.jsonl")
    if not os.path.exists(log_path):
        raise RuntimeError(f"{what} ({stage}) wrote no trainer_log.jsonl")
    with open(log_path, encoding="utf-8") as fh:
        logs = [json.loads(line) for line in fh if line.strip()]
    # Before 0.8 every entry has every key, null where it does not apply (the last is the
    # end of training, with a null loss).
    RUNS[-1]["losses"] = [round(e["loss"], 4) for e in logs if e.get("loss") is not None]
    if stage == "ppo":  # the reward model's score of each step's generations
        RUNS[-1]["rewards"] = [round(e["reward"], 4) for e in logs if e.get("reward") is not None]
    RUNS[-1]["adapter_saved"] = os.path.exists(os.path.join(out, "adapter_config.json"))


def problem(run, steps):
    """Why a finished run does not pass, or None."""
    stage, losses = run["stage"], run["losses"]
    if not losses:
        return f"the {stage} trainer logged no loss"
    if not all(math.isfinite(x) for x in losses):
        return f"non-finite {stage} loss in {losses}"
    rewards = run.get("rewards")
    if rewards is not None and (len(rewards) != steps or not all(map(math.isfinite, rewards))):
        return f"ppo logged rewards {rewards} for {steps} steps"
    if not run["adapter_saved"]:
        return f"no LoRA adapter was saved by {stage}"
    return None


RUNS = []


def report_runs():
    """The report of every run so far: also when one failed (ppo's rm passed, say)."""
    last = RUNS[-1]
    report(
        probe="llamafactory-train",
        stage=STAGE,
        package=PKG,
        llamafactory=RELEASE,
        runner=last["runner"],
        device="cuda" if torch.cuda.is_available() else "cpu",
        torch=torch.__version__,
        torch_cuda=torch.version.cuda,
        steps=len(last.get("losses", [])),
        losses=last.get("losses", []),
        adapter_saved=last.get("adapter_saved", False),
        seconds=round(sum(run.get("seconds", 0.0) for run in RUNS), 2),
        runs=RUNS,
    )


try:
    if STAGE == "ppo":
        REWARD = os.path.join(WORK, "out-rm")
        train("rm", REWARD)
        if problem(RUNS[-1], STEPS) is None:
            # A short generation: the prompts are a few words, the tiny model's context 128.
            train(
                "ppo",
                os.path.join(WORK, "out"),
                reward_model=REWARD,
                reward_model_type="lora",
                max_new_tokens=8,
                max_steps=PPO_STEPS,
            )
    else:
        train(STAGE, os.path.join(WORK, "out"))
finally:
    if RUNS:
        report_runs()
for run in RUNS:
    why = problem(run, PPO_STEPS if run["stage"] == "ppo" else STEPS)
    if why is not None:
        raise AssertionError(why)
losses = RUNS[-1]["losses"]
seconds = sum(run["seconds"] for run in RUNS)
print(f"llamafactory-train:{STAGE}: {len(losses)} steps, losses {losses}, {seconds:.1f} s")
