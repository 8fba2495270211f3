"""Versions as people write them (core/envreport/prose.py), one line each as seen in real
reports of the corpus (tests/data/failures/R-*.md cite their issues): the forms, the
misspellings, the last ``pip install`` winning, a build said after the bare version."""

from __future__ import annotations

import pytest

from envbisect.core.envreport.prose import find_version, stack_versions


@pytest.mark.parametrize(
    ("text", "dist", "version", "how"),
    [
        ("- transformers: 4.45.2", "transformers", "4.45.2", "prose"),
        ("trl version 0.11.3", "trl", "0.11.3", "prose"),
        ("deepspeed-0.14.4, peft-0.13.2", "peft", "0.13.2", "prose"),
        ("pytorch2.0+cuda11.8", "torch", "2.0+cuda11.8", "prose"),  # LLaMA-Factory#2577
        ("vllm0.8.1 报错", "vllm", "0.8.1", "prose"),  # LLaMA-Factory#7428
        ("trasformers 4.37.2", "transformers", "4.37.2", "prose"),  # LLaMA-Factory#2577
        ("I use deepseed 0.15.1", "deepspeed", "0.15.1", "prose"),
        ("bitsandbyte 0.44.1", "bitsandbytes", "0.44.1", "prose"),
        ("flash attention 2.6.3", "flash-attn", "2.6.3", "prose"),
        ("Name: llamafactory\nVersion: 0.9.1.dev0", "llamafactory", "0.9.1.dev0", "pip show"),
        (
            "transformers==4.45.0\n...\npip install transformers==4.46.0\nuv pip install "
            "transformers==4.46.1",
            "transformers",
            "4.46.1",
            "pip install",
        ),
        ("# fails with torch 2.5.1\n\ntorch 2.5.1+cu124", "torch", "2.5.1+cu124", "prose"),
    ],
)
def test_a_version_as_written(text: str, dist: str, version: str, how: str) -> None:
    found = find_version(text, dist)
    assert found is not None and (found.version, found.how) == (version, how)


def test_names_that_only_look_alike_are_not_read() -> None:
    assert find_version("torchvision 0.16.0", "torch") is None
    assert find_version("transformer_engine 1.2", "transformers") is None
    assert find_version("pytorch-lightning 2.0.1", "torch") is None
    assert find_version("transformers 4 is great", "transformers") is None


def test_the_stacks_versions_from_one_sentence() -> None:
    text = "I use transformer 4.46.0, peft-0.13.2, pytorch2.4.0 and llama-factory 0.9.1"
    got = {k: v.version for k, v in stack_versions(text).items()}
    assert got == {
        "transformers": "4.46.0",
        "peft": "0.13.2",
        "torch": "2.4.0",
        "llamafactory": "0.9.1",
    }
