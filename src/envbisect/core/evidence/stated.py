"""What a failure's text states besides the traceback: the version of one distribution (the
ones a traceback implicates, asked one at a time, through core/envreport/prose.py's grammar,
the one ``check`` reads prose with), the Python, the C library and the CUDA toolkit. Pure.
"""

from __future__ import annotations

import re

from envbisect.core.envreport.prose import find_version


def stated_version(text: str, dist: str, tops: tuple[str, ...] = ()) -> str | None:
    """The version of ``dist`` the text states, or None (core/envreport/prose.py's grammar)."""
    found = find_version(text, dist, tops)
    return found.version if found is not None else None


_PYTHON = re.compile(
    r"(?<![\w/\\-])(?:python|py|cpython)(?:\s*version)?\s*[:=]{0,2}\s*v?(3)\.(\d{1,2})(?:\.\d+)?\b",
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
