"""The real-world suite's LLaMA-Factory cases (issue 38): a known-good lock for a release of
LLaMA-Factory itself, on CPython 3.11 with the CPU build of torch 2.13.0 from a folder of
wheels (``{wheels}``: ENVBISECT_TORCH_WHEELS, or pip's find-links folder), PyPI for the rest.

Each is what a user types: the release pinned, torch pinned to pick the CPU build, and a repro
that imports the release and its ``run_exp`` (``llmtuner`` before 0.8, ``llamafactory`` from
it). Each answer was verified by hand with plain uv: ``uv pip install --require-hashes -r``
the lock (plus the wheel folder), the repro run and passing; then each constraint's first bad
release installed in its place (``--no-deps``), the repro run and failing as stated.
"""

from __future__ import annotations

from realworld_cases import Case, Held, fail

R_PY = """\
try:
    import llamafactory as lf
    from llamafactory.train.tuner import run_exp
except ModuleNotFoundError as e:
    if e.name != "llamafactory":
        raise
    import llmtuner as lf
    from llmtuner.train.tuner import run_exp
print(lf.__name__, getattr(lf, "__version__", "?"), run_exp.__name__)
"""

ENDS = (
    "the release's own pins: the release and torch==2.13.0 (which only picks the CPU build: it"
    " does not move the start), no --good-date"
)


def args(release: str) -> tuple[str, ...]:
    return ("--with", release, "--with", "torch==2.13.0", "--find-links", "{wheels}",
            "--repro", "{r.py}")  # fmt: skip


PYARROW_NUMPY = fail("ImportError: pyarrow requires NumPy 2.0 or newer, found 1.26.4")
FLASH_ATTENTION = fail(
    "ImportError: cannot import name 'LlamaFlashAttention2' from"
    " 'transformers.models.llama.modeling_llama'"
)
ADAMW_TRAIN = fail("AttributeError: 'AdamW' object has no attribute 'train'")
LOGPROBS = fail("ImportError: cannot import name 'logprobs_from_logits' from 'trl.core'")

CASES: tuple[Case, ...] = (
    Case(
        name="lock-llmtuner-063",
        kind="LLaMA-Factory 0.6 (llmtuner), coupled transformers and trl, lock",
        mode="lock",
        package="transformers",
        truth="<4.48.0",
        failure=FLASH_ATTENTION,
        python="3.11",
        args=args("llmtuner==0.6.3"),
        repro=(),
        files={"r.py": R_PY},
        source="https://github.com/hiyouga/LLaMA-Factory/releases/tag/v0.6.3",
        verified="the lock (transformers 4.47.1, trl 0.13.0) installs with hashes required and"
        " imports llmtuner 0.6.3 and run_exp; transformers 4.48.0 in its place:"
        " LlamaFlashAttention2; trl 0.14.0: logprobs_from_logits. trl's newest requires"
        " transformers>=4.56.2: transformers is held back with trl (coupled)",
        ends=ENDS,
        held=(
            Held(package="transformers", specifier="<4.48.0", failure=FLASH_ATTENTION),
            Held(package="trl", specifier="<0.14.0", failure=LOGPROBS),
        ),
        cost="torch 2.13.0+cpu from the wheel folder; about 2 GiB of uv cache",
    ),
    Case(
        name="lock-llamafactory-083",
        kind="a LLaMA-Factory release of mid-2024, three failures hiding each other, lock",
        mode="lock",
        package="transformers",
        truth="<4.48.0",
        failure=FLASH_ATTENTION,
        python="3.11",
        args=args("llamafactory==0.8.3"),
        repro=(),
        files={"r.py": R_PY},
        source="https://github.com/hiyouga/LLaMA-Factory/releases/tag/v0.8.3",
        verified="the lock (transformers 4.47.1, trl 0.13.0, pyarrow 25.0.1, numpy 1.26.4)"
        " installs with hashes required and imports llamafactory 0.8.3 and run_exp; in its"
        " place transformers 4.48.0: LlamaFlashAttention2; pyarrow 26.0.0: NumPy 2; trl"
        " 0.14.0: logprobs_from_logits. trl's newest requires transformers>=4.56.2 (coupled)",
        ends=ENDS,
        held=(
            Held(package="transformers", specifier="<4.48.0", failure=FLASH_ATTENTION),
            Held(package="pyarrow", specifier="<26.0.0", failure=PYARROW_NUMPY),
            Held(package="trl", specifier="<0.14.0", failure=LOGPROBS),
        ),
        cost="torch 2.13.0+cpu from the wheel folder; about 2 GiB of uv cache",
    ),
    Case(
        name="lock-llamafactory-090",
        kind="a LLaMA-Factory release of 2024 with today's torch, lock",
        mode="lock",
        package="pyarrow",
        truth="<26.0.0",
        failure=PYARROW_NUMPY,
        python="3.11",
        args=args("llamafactory==0.9.0"),
        repro=(),
        files={"r.py": R_PY},
        source="https://github.com/hiyouga/LLaMA-Factory/releases/tag/v0.9.0",
        verified="the lock (pyarrow 25.0.1, numpy 1.26.4, datasets 2.21.0, transformers 4.45.0)"
        " installs with hashes required and imports llamafactory 0.9.0 and run_exp; pyarrow"
        " 26.0.0 in its place: pyarrow requires NumPy 2.0 (llamafactory 0.9.0 caps numpy<2)",
        ends=ENDS,
        cost="torch 2.13.0+cpu from the wheel folder; about 2 GiB of uv cache",
    ),
    Case(
        name="lock-llamafactory-095",
        kind="LLaMA-Factory 0.9.5 with torchvision, a CPU torch at hand, lock",
        mode="lock",
        package="torch",
        truth="",
        failure=fail("RuntimeError: operator torchvision::nms does not exist"),
        python="3.11",
        args=args("llamafactory==0.9.5"),
        repro=(),
        files={"r.py": R_PY},
        source="https://github.com/hiyouga/LLaMA-Factory/releases/tag/v0.9.5",
        verified="nothing held back: the newest environment passes with PyPI's torch 2.13.0"
        " and torchvision 0.28.0 (one build; written torch===2.13.0 so that the folder's"
        " 2.13.0+cpu is not taken), installs with hashes required, imports llamafactory 0.9.5"
        " and runs torchvision.ops.nms; the CPU torch with PyPI's torchvision fails at import"
        " (operator torchvision::nms does not exist). No CPU torchvision is reachable here",
        ends=ENDS,
        cost="torch 2.13.0 (a CUDA build) from PyPI; about 4 GiB of uv cache",
    ),
    Case(
        name="lock-llamafactory-090-ppo",
        kind="LLaMA-Factory 0.9.0's PPO stage on CPU (a reward model, then PPO), lock",
        mode="lock",
        package="transformers",
        truth="<4.45.0",
        failure=ADAMW_TRAIN,
        python="3.11",
        args=(
            "--with",
            "llamafactory==0.9.0",
            "--with",
            "torch==2.13.0",
            "--find-links",
            "{wheels}",
            "--probe",
            "llamafactory-train:ppo",
            "--strategy",
            "descent",
        ),
        repro=(),
        source="https://github.com/hiyouga/LLaMA-Factory/releases/tag/v0.9.0",
        verified="the lock (transformers 4.44.2, tokenizers 0.19.1, trl 0.9.6, pyarrow 25.0.1)"
        " installs with hashes required and runs the probe's reward-model LoRA and 2 PPO steps;"
        " transformers 4.45.0 with tokenizers 0.20.3 in its place: 'AdamW' object has no"
        " attribute 'train' (the release's trainers against transformers 4.45's optimizer)",
        ends=ENDS,
        held=(
            Held(package="pyarrow", specifier="<26.0.0", failure=PYARROW_NUMPY),
            Held(package="transformers", specifier="<4.45.0", failure=ADAMW_TRAIN),
        ),
        cost="torch 2.13.0+cpu from the wheel folder; each probe trains a reward model and PPO",
    ),
)
