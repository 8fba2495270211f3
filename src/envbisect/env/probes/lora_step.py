"""lora-step: a few LoRA optimizer steps on a tiny randomly initialised Llama (no download).

Passes when the loss is finite and decreases, the LoRA weights changed and the base weights
did not. CUDA when available (bf16 when supported), else CPU in float32.
"""

import math
import time

from _common import report, require

require("torch", "transformers", "peft")

import peft
import torch
import transformers

torch.manual_seed(0)
config = transformers.LlamaConfig(
    vocab_size=256,
    hidden_size=64,
    intermediate_size=128,
    num_hidden_layers=2,
    num_attention_heads=4,
    num_key_value_heads=4,
    max_position_embeddings=64,
)
model = transformers.LlamaForCausalLM(config)
device = "cuda" if torch.cuda.is_available() else "cpu"
dtype = torch.bfloat16 if device == "cuda" and torch.cuda.is_bf16_supported() else torch.float32
model = model.to(device=device, dtype=dtype)
lora = peft.LoraConfig(
    r=8, lora_alpha=16, lora_dropout=0.0, target_modules=["q_proj", "v_proj"], task_type="CAUSAL_LM"
)
model = peft.get_peft_model(model, lora)


def named(fragment):
    return {n: p.detach().clone() for n, p in model.named_parameters() if fragment in n}


base_before = named("base_layer.weight")
lora_before = named("lora_B")
if not (base_before and lora_before):
    raise AssertionError("peft did not wrap q_proj/v_proj with LoRA layers")
trainable = [p for p in model.parameters() if p.requires_grad]
optimizer = torch.optim.AdamW(trainable, lr=1e-2)
generator = torch.Generator().manual_seed(0)
batch = torch.randint(0, config.vocab_size, (4, 32), generator=generator).to(device)

losses = []
if device == "cuda":
    torch.cuda.synchronize()
start = time.perf_counter()
for _ in range(8):
    out = model(input_ids=batch, labels=batch)
    out.loss.backward()
    optimizer.step()
    optimizer.zero_grad()
    losses.append(float(out.loss.detach().float().cpu()))
if device == "cuda":
    torch.cuda.synchronize()
step_seconds = (time.perf_counter() - start) / len(losses)

if not all(math.isfinite(x) for x in losses):
    raise AssertionError("non-finite loss: %r" % losses)
if not losses[-1] < losses[0]:
    raise AssertionError("loss did not decrease: %r" % losses)
after = dict(model.named_parameters())
if all(torch.equal(lora_before[n], after[n].detach()) for n in lora_before):
    raise AssertionError("LoRA weights did not change")
if not all(torch.equal(base_before[n], after[n].detach()) for n in base_before):
    raise AssertionError("base weights changed: LoRA should freeze them")
report(
    probe="lora-step",
    device=device if device == "cpu" else torch.cuda.get_device_name(0),
    dtype=str(dtype).replace("torch.", ""),
    torch=torch.__version__,
    cuda_build=torch.version.cuda,
    transformers=transformers.__version__,
    peft=peft.__version__,
    step_seconds=round(step_seconds, 4),
    loss_first=round(losses[0], 4),
    loss_last=round(losses[-1], 4),
)
