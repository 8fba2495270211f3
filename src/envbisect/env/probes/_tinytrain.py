"""Shared by the training probes (sft-step, dpo-step, trainer-step); copied next to them.

Three parts, the first two pure (standard library only, tested in envbisect's own tests):
- the release eras: which name a user of a release writes for the same thing (``era``);
- the verdict on a finished run: its logged losses and what it saved (``problem``);
- the tiny world every run trains in, made on the spot, nothing downloaded: a word-level
  tokenizer (``tokenizers``, wrapped as a PreTrainedTokenizerFast) and a randomly initialised
  Llama of two layers, saved and loaded back as a user loads a model (``tiny_checkpoint``:
  torch and transformers imported only when it is called).
"""

import math
import os
import re

WORDS = ["red", "green", "blue", "small", "large", "quick", "slow", "bright", "dark", "round"]
SPECIAL = ["<unk>", "<pad>", "<s>", "</s>"]
STEPS = 3  # optimizer steps of every run; logging_steps=1: one logged loss each

# The eras of trl's API that a probe's arguments depend on: (first release, what changed).
# A user of a release writes what its documentation shows, so the probe does too; the
# thresholds are read from the wheels (trl 0.9.6 ... 1.16.0: sft_config.py, the trainers'
# __init__).
#   0.12  SFTTrainer/DPOTrainer take ``processing_class=``; ``tokenizer=`` before (trl 0.12
#         follows transformers 4.46's Trainer; 0.14 removed ``tokenizer=``)
#   0.16  SFTConfig's ``max_length``; ``max_seq_length`` before (deprecated in 0.16, removed
#         in 0.20)
TRL_ERAS = (
    ((0, 12), "processing_class"),
    ((0, 16), "max_length"),
)


def release(text):
    """``"0.12.2"`` -> ``(0, 12, 2)``; a local or pre-release part is dropped (``4.57.0.dev0``,
    ``2.13.0+cpu``): the era of a release is its numbers."""
    nums = re.findall(r"\d+", text.split("+", 1)[0])[:3]
    return tuple(int(n) for n in nums) + (0,) * (3 - len(nums))


def era(trl_version):
    """The names a user of ``trl_version`` writes: ``tokenizer`` (the trainer's keyword for
    the tokenizer) and ``sft_length`` (SFTConfig's field for the longest sequence)."""
    v = release(trl_version)[:2]
    return {
        "tokenizer": "processing_class" if v >= (0, 12) else "tokenizer",
        "sft_length": "max_length" if v >= (0, 16) else "max_seq_length",
    }


def losses_of(log_history):
    """The training losses a Trainer logged, one per logging step (``loss``; the summary at
    the end, ``train_loss``, is not a step)."""
    return [float(e["loss"]) for e in log_history if "loss" in e]


def problem(what, losses, steps, saved):
    """Why a finished run does not pass, or None. ``saved``: the files it had to write that
    are missing (an empty list: all there)."""
    if len(losses) != steps:
        return f"{what} logged {len(losses)} losses for {steps} steps (logging_steps=1): {losses}"
    if not all(math.isfinite(x) for x in losses):
        return f"non-finite {what} loss in {losses}"
    if saved:
        return f"{what} did not save " + ", ".join(saved)
    return None


def missing(folder, *alternatives):
    """Which of the wanted files are not in ``folder``: each wanted is a tuple of names, any
    one of which will do (``("model.safetensors", "pytorch_model.bin")``)."""
    present = set(os.listdir(folder)) if os.path.isdir(folder) else set()
    return [" or ".join(names) for names in alternatives if not present & set(names)]


def texts():
    """Rows of plain text, prompts and preference pairs on one small vocabulary."""
    rows = []
    for i in range(16):
        a, b = WORDS[i % len(WORDS)], WORDS[(i * 3 + 1) % len(WORDS)]
        rows.append(
            {
                "text": f"the {a} box is {b} and the {b} box is {a} .",
                "prompt": f"describe the {a} box :",
                "chosen": f" the box is {a} and {b} .",
                "rejected": f" no {b} here .",
            }
        )
    return rows


def tiny_tokenizer(rows):
    """A word-level fast tokenizer over the rows' words, with pad, bos, eos and unk."""
    import tokenizers
    import transformers

    vocab = {tok: i for i, tok in enumerate(SPECIAL)}
    for row in rows:
        for value in row.values():
            for word in value.split():
                vocab.setdefault(word, len(vocab))
    core = tokenizers.Tokenizer(tokenizers.models.WordLevel(vocab=vocab, unk_token="<unk>"))
    core.pre_tokenizer = tokenizers.pre_tokenizers.WhitespaceSplit()
    return transformers.PreTrainedTokenizerFast(
        tokenizer_object=core,
        unk_token="<unk>",
        pad_token="<pad>",
        bos_token="<s>",
        eos_token="</s>",
        model_max_length=128,
    )


def tiny_llama(tokenizer):
    """A randomly initialised two-layer Llama for ``tokenizer``, float32, seeded."""
    import torch
    import transformers

    torch.manual_seed(0)
    config = transformers.LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=4,
        max_position_embeddings=128,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
    )
    return transformers.LlamaForCausalLM(config)


def tiny_checkpoint(rows, folder):
    """The tiny tokenizer and model saved in ``folder``, then loaded back from it, as a user
    loads a model (``from_pretrained``): the model knows its path, which trl's trainers read
    (trl 1.x's DPOTrainer builds its reference model from ``config._name_or_path``)."""
    import transformers

    tiny_tokenizer(rows).save_pretrained(folder)
    tokenizer = transformers.AutoTokenizer.from_pretrained(folder)
    tiny_llama(tokenizer).save_pretrained(folder)
    return tokenizer, transformers.AutoModelForCausalLM.from_pretrained(folder)


def lora_config():
    """The LoRA adapter every ``:lora`` run trains (peft)."""
    import peft

    return peft.LoraConfig(
        r=4,
        lora_alpha=8,
        lora_dropout=0.0,
        target_modules=["q_proj", "v_proj"],
        task_type="CAUSAL_LM",
    )


def common_args(out):
    """Training arguments every release from transformers 4.40 on accepts, as keywords.

    ``bf16=False`` as a CPU user writes it: trl's configs from 1.0 default to bf16, which
    TrainingArguments refuses without a GPU that has it (the same float32 everywhere)."""
    return {
        "bf16": False,
        "output_dir": out,
        "max_steps": STEPS,
        "per_device_train_batch_size": 2,
        "gradient_accumulation_steps": 1,
        "learning_rate": 1e-3,
        "lr_scheduler_type": "constant",
        "logging_steps": 1,
        "save_strategy": "no",
        "report_to": "none",
        "seed": 0,
        "dataloader_num_workers": 0,
    }
