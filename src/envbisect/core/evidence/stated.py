"""The version of one distribution as a person writes it in a report's prose.

The environment block readers (core/envreport/) read what tools print; people also write
``trl version 0.11.3``, ``- transformers: 4.45.2``, ``pytorch2.0``, ``peft==0.4.0`` in a
sentence, ``Name: x`` / ``Version: y`` from ``pip show``, and ``pip install x==y`` after the
block (the version the failure really ran with: the last such command wins). Asked for one
distribution at a time (the ones a traceback implicates), so a version is only read next to
a name that is asked about. Pure.
"""

from __future__ import annotations

import re

from packaging.utils import canonicalize_name

# Names people write for a distribution, besides its own and its import name.
SPOKEN: dict[str, tuple[str, ...]] = {
    "torch": ("pytorch",),
    "huggingface-hub": ("huggingface_hub", "huggingface-hub", "hf_hub", "hub"),
    "llamafactory": ("llama-factory", "llama_factory", "llamafactory"),
    "scikit-learn": ("sklearn",),
    "pillow": ("PIL",),
    "pyyaml": ("yaml",),
    "flash-attn": ("flash_attn", "flash-attention", "flash_attention"),
}

_VERSION = r"v?(?P<v>\d+\.\d+(?:\.\d+)*(?:(?:a|b|rc|\.post|\.dev|post|dev)\d+)*(?:\+[\w.]+)?)"


def _names(dist: str, tops: tuple[str, ...]) -> list[str]:
    canon = canonicalize_name(dist)
    out = {canon, canon.replace("-", "_"), canon.replace("-", ""), *tops, *SPOKEN.get(canon, ())}
    return sorted(out, key=len, reverse=True)


def stated_version(text: str, dist: str, tops: tuple[str, ...] = ()) -> str | None:
    """The version of ``dist`` the text states, or None (see the module's docstring)."""
    alt = "|".join(re.escape(n) for n in _names(dist, tops))
    name = rf"(?<![\w/\\.-])(?:{alt})(?![\w/\\])"
    installs = list(
        re.finditer(rf"pip3?\s+install\b[^\n]*?{name}\s*==\s*{_VERSION}", text, re.IGNORECASE)
    )
    if installs:
        return installs[-1].group("v")
    show = re.search(
        rf"^\s*Name:\s*{name}\s*$\n(?:.*\n)?\s*Version:\s*{_VERSION}",
        text,
        re.IGNORECASE | re.MULTILINE,
    )
    if show:
        return show.group("v")
    said = re.search(
        rf"{name}(?:\s*(?:==|=|:|\s)\s*(?:versions?\s*(?:is\s*)?:?\s*)?|\s+versions?\s*(?:is\s*)?:?\s*"
        rf"|-|(?=v?\d)){_VERSION}(?![\w])",
        text,
        re.IGNORECASE,
    )
    return said.group("v") if said else None


_PYTHON = re.compile(
    r"(?<![\w/\\-])(?:python|py|cpython)(?:\s*version)?\s*[:=]?\s*v?(3)\.(\d{1,2})(?:\.\d+)?\b",
    re.IGNORECASE,
)


def stated_python(text: str) -> str | None:
    """``3.7`` for ``Python 3.7.6``, ``- python: 3.10.11``, ``Python version: 3.11``."""
    m = _PYTHON.search(text)
    return f"{m.group(1)}.{m.group(2)}" if m else None


_GLIBC = re.compile(
    r"(?:with-glibc|glibc[ _-]?(?:version)?[:= ]*|GNU libc\)?\s*|ldd \(GNU libc\)\s*)"
    r"(?P<v>2\.\d{1,2})\b",
    re.IGNORECASE,
)


def stated_glibc(text: str) -> tuple[int, int] | None:
    """The C library the report's machine has (``Linux-5.15...-with-glibc2.31``, ``ldd (GNU
    libc) 2.28``, ``glibc 2.17``); None where it says none."""
    m = _GLIBC.search(text)
    if not m:
        return None
    major, minor = m.group("v").split(".")
    return int(major), int(minor)


_NVCC = re.compile(r"Cuda compilation tools, release (\d{1,2})\.(\d)", re.IGNORECASE)
_CU_TAG = re.compile(r"\+cu(\d{2})(\d)\b")
_CUDA_SAID = re.compile(
    r"(?<![\w/\\.-])cuda(?:[ _-]?(?:toolkit|version|runtime|used to build pytorch))?"
    r"\s*(?:is\s*)?[:=]?\s*v?(\d{1,2})\.(\d)(?!\d)",
    re.IGNORECASE,
)


def stated_cuda(text: str) -> tuple[int, int] | None:
    """The CUDA toolkit the report's environment uses: nvcc's release, else torch's build
    (``+cu118``), else ``CUDA 12.1`` / ``cuda12.4`` / ``CUDA version: 11.8`` in prose, else
    nvidia-smi's ``CUDA Version`` (the newest the driver runs, the weakest of the four)."""
    m = _NVCC.search(text) or _CU_TAG.search(text)
    if m is None:
        said = [
            x
            for line in text.splitlines()
            if "Driver Version" not in line
            for x in [_CUDA_SAID.search(line)]
            if x is not None
        ]
        m = said[0] if said else _CUDA_SAID.search(text)
    return (int(m.group(1)), int(m.group(2))) if m else None
