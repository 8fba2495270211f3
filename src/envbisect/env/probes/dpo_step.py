"""dpo-step[:lora]: a few steps of trl's DPOTrainer on a tiny Llama made on the spot, on CPU.

Everything is made here (``_tinytrain``): a word-level tokenizer, a two-layer Llama (saved, then
loaded from its folder), sixteen preference rows (``prompt``, ``chosen``, ``rejected`` as plain
strings, the format every release from 0.9 reads); nothing is downloaded. The run is what a user
of the installed trl writes for it (``_tinytrain.era``, read from the release's number):
- ``DPOConfig(beta=0.1, max_length=64)`` (fields of every release from 0.9);
- the tokenizer as ``tokenizer=`` before 0.12, ``processing_class=`` from 0.12;
- no ``ref_model``: the trainer makes its own reference copy of the model; ``:lora``:
  ``peft_config=LoraConfig(...)`` instead (peft must be installed; untestable if not), so the
  reference is the model with its adapter disabled, and the adapter is what is saved.
Three optimizer steps, ``logging_steps=1``, then ``trainer.save_model()``. Passes when three
finite losses were logged and the model (or the adapter) was saved. A release older than 0.9
(no DPOConfig in the form used here) is untestable.
"""

import os
import sys

from _common import report, require, untestable
from _tinytrain import STEPS, common_args, era, losses_of, missing, problem, release, texts

LORA = len(sys.argv) > 1 and sys.argv[1] == "lora"
require("torch", "transformers", "trl", "datasets", "tokenizers", *(("peft",) if LORA else ()))

from importlib.metadata import version

TRL = version("trl")
if release(TRL) < (0, 9, 0):
    untestable(f"trl {TRL}: this probe takes releases from 0.9 (DPOConfig)")

import datasets
import torch
import transformers
import trl
from _tinytrain import lora_config, tiny_checkpoint

names = era(TRL)
rows = texts()
tokenizer, model = tiny_checkpoint(rows, os.path.join(os.getcwd(), "tiny-llama"))
data = datasets.Dataset.from_list(
    [{k: r[k] for k in ("prompt", "chosen", "rejected")} for r in rows]
)
out = os.path.join(os.getcwd(), "out-dpo")
config = trl.DPOConfig(**common_args(out), beta=0.1, max_length=64)
extra = {"peft_config": lora_config()} if LORA else {}
trainer = trl.DPOTrainer(
    model=model, args=config, train_dataset=data, **{names["tokenizer"]: tokenizer}, **extra
)
trainer.train()
trainer.save_model(out)
losses = losses_of(trainer.state.log_history)
wanted = (
    (("adapter_model.safetensors", "adapter_model.bin"),)
    if LORA
    else (("model.safetensors", "pytorch_model.bin"),)
)
report(
    probe="dpo-step" + (":lora" if LORA else ""),
    trl=TRL,
    transformers=transformers.__version__,
    torch=torch.__version__,
    choices={"tokenizer": names["tokenizer"]},
    losses=[round(x, 4) for x in losses],
)
why = problem("DPOTrainer", losses, STEPS, missing(out, *wanted))
if why is not None:
    raise AssertionError(why)
print(f"dpo-step: trl {TRL}, {len(losses)} steps, losses {losses}")
