"""llamafactory-train: a real ``llamafactory-cli train`` run, a few LoRA SFT steps, offline.

Everything it needs is made here, in the working directory: a word-level tokenizer (built with
``tokenizers`` from the generated data, saved as a PreTrainedTokenizerFast), a tiny randomly
initialised Llama saved with ``save_pretrained``, an alpaca-shaped dataset with its
``dataset_info.json``, and the training arguments. Nothing is downloaded (HF_HUB_OFFLINE=1).

Passes when the CLI exits 0, its trainer log has a finite loss for every logged step, and the
LoRA adapter was saved. A crash of the training process (it is a child of this script) is
re-raised here with the same signal, so envbisect sees a crash, not an exit code.
DISABLE_VERSION_CHECK=1: LLaMA-Factory refuses to start outside its own checked ranges, and a
bisection goes outside them on purpose. One device: CUDA_VISIBLE_DEVICES is set to the first
GPU unless the caller set it (several would make the CLI start torchrun).
"""

import json
import math
import os
import shutil
import signal
import subprocess
import sys
import time

from _common import report, require

require("llamafactory", "transformers", "tokenizers", "torch")

from importlib.metadata import version

import tokenizers
import torch
import transformers

WORK = os.getcwd()
MODEL = os.path.join(WORK, "tiny-llama")
DATA = os.path.join(WORK, "data")
OUT = os.path.join(WORK, "out")
STEPS = 3

# -- data --------------------------------------------------------------------------------------
WORDS = ["red", "green", "blue", "small", "large", "quick", "slow", "bright", "dark", "round"]
rows = []
for i in range(24):
    a, b = WORDS[i % len(WORDS)], WORDS[(i * 5 + 3) % len(WORDS)]
    rows.append(
        {
            "instruction": f"describe the {a} box",
            "input": f"it is {b}" if i % 2 else "",
            "output": f"the box is {a} and {b}",
        }
    )
os.makedirs(DATA, exist_ok=True)
with open(os.path.join(DATA, "tiny_alpaca.json"), "w", encoding="utf-8") as fh:
    json.dump(rows, fh)
with open(os.path.join(DATA, "dataset_info.json"), "w", encoding="utf-8") as fh:
    json.dump({"tiny_alpaca": {"file_name": "tiny_alpaca.json"}}, fh)

# -- tokenizer ---------------------------------------------------------------------------------
SPECIAL = ["<unk>", "<pad>", "<s>", "</s>"]
vocab = {tok: i for i, tok in enumerate(SPECIAL)}
words = ["Human:", "Assistant:", ".", ",", ":", "?", "!"]  # the default template's words
for row in rows:
    for text in (row["instruction"], row["input"], row["output"]):
        words += text.split()
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
args = {
    "model_name_or_path": MODEL,
    "stage": "sft",
    "do_train": True,
    "finetuning_type": "lora",
    "lora_target": "q_proj,v_proj",
    "lora_rank": 4,
    "dataset": "tiny_alpaca",
    "dataset_dir": DATA,
    "template": "default",
    "cutoff_len": 64,
    "overwrite_cache": True,
    "preprocessing_num_workers": 1,
    "dataloader_num_workers": 0,
    "output_dir": OUT,
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
# YAML, as LLaMA-Factory's own examples pass them (0.9.5's read_args calls json.load on a
# Path for a .json file, so a JSON file fails there before training starts). Every value is
# a JSON scalar, which YAML reads as the same value.
ARGS = os.path.join(WORK, "train_args.yaml")
with open(ARGS, "w", encoding="utf-8") as fh:
    fh.writelines(f"{key}: {json.dumps(value)}\n" for key, value in args.items())

cli = os.path.join(os.path.dirname(sys.executable), "llamafactory-cli")
if not os.path.exists(cli):
    cli = shutil.which("llamafactory-cli")
if cli is None:
    from _common import untestable

    untestable("llamafactory is installed but its llamafactory-cli command is not")
env = dict(os.environ, DISABLE_VERSION_CHECK="1", HF_HUB_OFFLINE="1", WANDB_DISABLED="true")
env.pop("FORCE_TORCHRUN", None)
if torch.cuda.is_available() and "CUDA_VISIBLE_DEVICES" not in env:
    env["CUDA_VISIBLE_DEVICES"] = "0"
sys.stdout.flush()
start = time.perf_counter()
proc = subprocess.run([cli, "train", ARGS], env=env)
seconds = time.perf_counter() - start
if proc.returncode < 0:  # the trainer died by a signal: die by the same one
    sys.stderr.write(f"llamafactory-cli train died by signal {-proc.returncode}\n")
    sys.stderr.flush()
    signal.signal(-proc.returncode, signal.SIG_DFL)
    os.kill(os.getpid(), -proc.returncode)
if proc.returncode != 0:
    raise SystemExit(f"RuntimeError: llamafactory-cli train exited {proc.returncode}")

log_path = os.path.join(OUT, "trainer_log.jsonl")
if not os.path.exists(log_path):
    raise SystemExit("RuntimeError: llamafactory-cli train wrote no trainer_log.jsonl")
with open(log_path, encoding="utf-8") as fh:
    logs = [json.loads(line) for line in fh if line.strip()]
losses = [entry["loss"] for entry in logs if "loss" in entry]
saved = os.path.exists(os.path.join(OUT, "adapter_config.json"))
report(
    probe="llamafactory-train",
    llamafactory=version("llamafactory"),
    device="cuda" if torch.cuda.is_available() else "cpu",
    torch=torch.__version__,
    torch_cuda=torch.version.cuda,
    steps=len(losses),
    losses=[round(x, 4) for x in losses],
    adapter_saved=saved,
    seconds=round(seconds, 2),
)
if not losses:
    raise SystemExit("AssertionError: the trainer logged no loss")
if not all(math.isfinite(x) for x in losses):
    raise SystemExit(f"AssertionError: non-finite loss in {losses}")
if not saved:
    raise SystemExit("AssertionError: no LoRA adapter was saved")
print(f"llamafactory-train: {len(losses)} steps, losses {losses}, {seconds:.1f} s")
