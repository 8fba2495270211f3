"""trainer-step[:MODE]: transformers' Trainer (over accelerate) on a tiny Llama, on CPU.

What accelerate does under a Trainer: the Accelerator the Trainer makes, gradient accumulation,
the optimizer and scheduler steps, the logging path (``logging_steps=1``), a checkpoint (model,
optimizer, scheduler, RNG and trainer state) and the final save. Everything is made here
(``_tinytrain``): a word-level tokenizer, a two-layer Llama (saved, then loaded from its
folder), sixteen rows already tokenised (``input_ids``, ``attention_mask``, ``labels``, padded
to one length, so the default collator stacks them); nothing is downloaded, no ``datasets``
needed.

The arguments are ones every transformers from 4.40 accepts under the same names
(``_tinytrain.common_args`` plus ``gradient_accumulation_steps=2``, ``save_strategy="steps"``,
``save_steps=2``); the Trainer is given no tokenizer (so neither ``tokenizer=`` nor 4.46's
``processing_class=`` is written): nothing here differs between releases.
- (default): three steps, a checkpoint at step 2, ``trainer.save_model()``;
- ``:resume``: two steps and their checkpoint, then a new Trainer on the model loaded afresh,
  resumed from it (``resume_from_checkpoint``: the weights, and accelerate's load of the
  optimizer, scheduler and RNG states) to step 4;
- ``:lora``: the model wrapped by peft (``get_peft_model``; untestable without peft), three
  steps, the adapter saved;
- ``:lora-resume``: ``:resume`` with the model wrapped by peft: the checkpoint holds the
  adapter, and the resumed run loads it into a fresh wrapped model (transformers' Trainer
  asks peft to load it).
Passes when every step logged a finite loss and every file named above was written.
"""

import os
import sys

from _common import report, require
from _tinytrain import STEPS, common_args, losses_of, missing, problem, texts

MODE = sys.argv[1] if len(sys.argv) > 1 and sys.argv[1] else "save"
LORA, RESUME = MODE in ("lora", "lora-resume"), MODE in ("resume", "lora-resume")
require("torch", "transformers", "accelerate", "tokenizers", *(("peft",) if LORA else ()))

from importlib.metadata import version

import torch
import transformers
from _tinytrain import lora_config, tiny_checkpoint

ACCELERATE = version("accelerate")
rows = texts()
FOLDER = os.path.join(os.getcwd(), "tiny-llama")
tokenizer, model = tiny_checkpoint(rows, FOLDER)


def fresh(base):
    """The model a run trains: the tiny Llama, wrapped by peft for the LoRA modes."""
    if not LORA:
        return base
    import peft

    return peft.get_peft_model(base, lora_config())


LENGTH = 16
data = []
for row in rows:
    ids = tokenizer(row["text"])["input_ids"][:LENGTH]
    pad = LENGTH - len(ids)
    data.append(
        {
            "input_ids": torch.tensor(ids + [tokenizer.pad_token_id] * pad),
            "attention_mask": torch.tensor([1] * len(ids) + [0] * pad),
            "labels": torch.tensor(ids + [-100] * pad),
        }
    )
out = os.path.join(os.getcwd(), "out-trainer")
CHECKPOINT = ("optimizer.pt",), ("scheduler.pt",), ("trainer_state.json",)
MODEL_FILES = ("model.safetensors", "pytorch_model.bin")
ADAPTER_FILES = ("adapter_model.safetensors", "adapter_model.bin")


FILES = ADAPTER_FILES if LORA else MODEL_FILES


def trainer(net, steps):
    args = dict(
        common_args(out),
        gradient_accumulation_steps=2,
        save_strategy="steps",
        save_steps=2,
        max_steps=steps,
    )
    return transformers.Trainer(
        model=net, args=transformers.TrainingArguments(**args), train_dataset=data
    )


if RESUME:
    trainer(fresh(model), 2).train()
    saved = missing(os.path.join(out, "checkpoint-2"), FILES, *CHECKPOINT)
    # A new process would start from the base model again: so does the second run.
    second = trainer(fresh(transformers.AutoModelForCausalLM.from_pretrained(FOLDER)), 4)
    second.train(resume_from_checkpoint=os.path.join(out, "checkpoint-2"))
    losses, steps = losses_of(second.state.log_history), 4
    if second.state.global_step != 4:
        saved.append(f"(resumed to step {second.state.global_step}, not 4)")
else:
    run = trainer(fresh(model), STEPS)
    run.train()
    run.save_model(out)
    losses, steps = losses_of(run.state.log_history), STEPS
    saved = missing(os.path.join(out, "checkpoint-2"), *CHECKPOINT) + missing(out, FILES)
report(
    probe="trainer-step" + ("" if MODE == "save" else ":" + MODE),
    accelerate=ACCELERATE,
    transformers=transformers.__version__,
    torch=torch.__version__,
    losses=[round(x, 4) for x in losses],
)
why = problem("Trainer", losses, steps, saved)
if why is not None:
    raise AssertionError(why)
print(f"trainer-step:{MODE}: accelerate {ACCELERATE}, {len(losses)} logged losses {losses}")
