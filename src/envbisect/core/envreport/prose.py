"""Versions as people write them in a report's prose, outside any tool's environment block.

``trl version 0.11.3``, ``- transformers: 4.45.2``, ``peft==0.4.0``, ``deepspeed-0.14.4``,
``pytorch2.0`` glued, ``Name: x`` / ``Version: y`` from ``pip show``, a title that says
``with vllm 0.6.3``, and ``pip install x==y`` after the block (the version the failure really
ran with: the last such command wins). People also misspell the stack's names
(``transformer``, ``deepseed``, ``bitsandbyte``, ``flash attention``): ``SPOKEN`` maps what
they write to the distribution. One grammar for both readers: ``find_version`` for one
distribution a traceback implicates (core/evidence/stated.py), ``stack_versions`` for the
stack's distributions a report may name (core/checks/observed.py). Pure.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from packaging.utils import canonicalize_name

# What people write for a distribution, besides its own name and its import name: other
# names, and the misspellings seen in real reports.
SPOKEN: dict[str, tuple[str, ...]] = {
    "torch": ("pytorch", "torch"),
    "transformers": ("transformer", "trasformers", "tranformers", "transfomers", "transformes"),
    "huggingface-hub": ("huggingface_hub", "huggingface-hub", "hf_hub", "hf-hub"),
    "llamafactory": ("llama-factory", "llama_factory", "llama factory", "llamafactory"),
    "scikit-learn": ("sklearn",),
    "pillow": ("PIL",),
    "pyyaml": ("yaml",),
    "flash-attn": (
        "flash_attn",
        "flash-attention",
        "flash_attention",
        "flash attention",
        "flashattention",
        "flash-attn2",
    ),
    "deepspeed": ("deepseed", "deep-speed", "deep_speed", "deepspeeed"),
    "bitsandbytes": ("bitsandbyte", "bitsandbyes", "bitandbytes"),
    "tokenizers": ("tokenizer",),
}

# The distributions a report of the training stack names, read wherever the text says them.
STACK = (
    "llamafactory",
    "transformers",
    "torch",
    "datasets",
    "accelerate",
    "peft",
    "trl",
    "deepspeed",
    "bitsandbytes",
    "flash-attn",
    "vllm",
    "tokenizers",
    "huggingface-hub",
    "safetensors",
    "pyarrow",
    "numpy",
    "xformers",
    "gradio",
    "triton",
    "torchvision",
    "unsloth",
    "liger-kernel",
    "sentence-transformers",
    "diffusers",
    "auto-gptq",
    "autoawq",
    "optimum",
)

_VERSION = r"v?(?P<v>\d+\.\d+(?:\.\d+)*(?:(?:a|b|rc|\.post|\.dev|post|dev)\d+)*(?:\+[\w.]+)?)"


@dataclass(frozen=True, slots=True, kw_only=True)
class Found:
    """A version and where: ``at`` the offset of the match in the text, ``how`` the way it was
    written (``pip install``: a command that installed it, the last one; ``pip show``;
    ``prose``)."""

    version: str
    at: int
    how: str


def _names(dist: str, tops: tuple[str, ...]) -> list[str]:
    canon = canonicalize_name(dist)
    out = {canon, canon.replace("-", "_"), canon.replace("-", ""), *tops, *SPOKEN.get(canon, ())}
    return sorted(out, key=len, reverse=True)


def find_version(text: str, dist: str, tops: tuple[str, ...] = ()) -> Found | None:
    """The version of ``dist`` the text states, or None (see the module's docstring)."""
    alt = "|".join(re.escape(n).replace(r"\ ", r"[ ]") for n in _names(dist, tops))
    name = rf"(?<![\w/\\.-])(?:{alt})(?![A-Za-z_/\\])"  # a digit may follow: pytorch2.0
    installs = list(
        re.finditer(
            rf"(?:pip3?|uv\s+pip)\s+install\b[^\n]*?{name}\s*==\s*{_VERSION}", text, re.IGNORECASE
        )
    )
    if installs:
        return Found(version=installs[-1].group("v"), at=installs[-1].start("v"), how="pip install")
    show = re.search(
        rf"^\s*Name:\s*{name}\s*$\n(?:.*\n)?\s*Version:\s*{_VERSION}",
        text,
        re.IGNORECASE | re.MULTILINE,
    )
    if show:
        return Found(version=show.group("v"), at=show.start("v"), how="pip show")
    every = list(
        re.finditer(
            rf"{name}(?:\s*(?:==|=|:|\s)\s*(?:versions?\s*(?:is\s*)?:?\s*)?|\s+versions?\s*"
            rf"(?:is\s*)?:?\s*|-|(?=v?\d)){_VERSION}(?![\w])",
            text,
            re.IGNORECASE,
        )
    )
    if not every:
        return None
    said = every[0]
    # the same release said again with its build (a title's "torch 2.5.1", then "2.5.1+cu124")
    fuller = [m for m in every[1:] if m.group("v").startswith(said.group("v") + "+")]
    said = fuller[0] if fuller else said
    return Found(version=said.group("v"), at=said.start("v"), how="prose")


def stack_versions(text: str) -> dict[str, Found]:
    """Every distribution of ``STACK`` whose version the text states, by canonical name."""
    out: dict[str, Found] = {}
    for dist in STACK:
        found = find_version(text, dist)
        if found is not None:
            out[dist] = found
    return out
