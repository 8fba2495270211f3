"""sft-step[:lora]: a few steps of trl's SFTTrainer on a tiny Llama made on the spot, on CPU.

Everything is made here (``_tinytrain``): a word-level tokenizer, a two-layer Llama (saved, then
loaded from its folder), sixteen rows of plain text (``"text"``); nothing is downloaded. The run
is what a user of the installed trl writes for it (``_tinytrain.era``, read from the release's
number):
- ``SFTConfig`` (every release from 0.9, the oldest this probe takes), with
  ``dataset_text_field="text"`` and the longest sequence as ``max_seq_length`` before 0.16,
  ``max_length`` from 0.16 (0.16 deprecated the old name, 0.20 removed it);
- the tokenizer as ``tokenizer=`` before 0.12, ``processing_class=`` from 0.12;
- ``:lora``: ``peft_config=LoraConfig(...)`` (peft must be installed; untestable if not) and
  the adapter saved instead of the whole model.
Three optimizer steps, ``logging_steps=1``, then ``trainer.save_model()``. Passes when three
finite losses were logged and the model (or the adapter) was saved. A release older than 0.9
(no SFTConfig) is untestable: its API is another probe's.
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
    untestable(f"trl {TRL} has no SFTConfig (0.9 and later only)")

import datasets
import torch
import transformers
import trl
from _tinytrain import lora_config, tiny_checkpoint

names = era(TRL)
rows = texts()
tokenizer, model = tiny_checkpoint(rows, os.path.join(os.getcwd(), "tiny-llama"))
data = datasets.Dataset.from_list([{"text": r["text"]} for r in rows])
out = os.path.join(os.getcwd(), "out-sft")
config = trl.SFTConfig(
    **common_args(out), dataset_text_field="text", packing=False, **{names["sft_length"]: 64}
)
extra = {"peft_config": lora_config()} if LORA else {}
trainer = trl.SFTTrainer(
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
    probe="sft-step" + (":lora" if LORA else ""),
    trl=TRL,
    transformers=transformers.__version__,
    torch=torch.__version__,
    choices=names,
    losses=[round(x, 4) for x in losses],
)
why = problem("SFTTrainer", losses, STEPS, missing(out, *wanted))
if why is not None:
    raise AssertionError(why)
print(f"sft-step: trl {TRL}, {len(losses)} steps, losses {losses}")
