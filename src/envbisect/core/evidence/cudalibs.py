"""CUDA libraries by name: which toolkit a library's soname belongs to, which ``nvidia-*``
distribution ships it, and whether a release's binaries fit the toolkit a report names.

``libcudart.so.11.0: cannot open shared object file`` says the loader looked for CUDA 11's
runtime; a release whose binaries link ``libcudart.so.12`` was built for CUDA 12. The major
of most toolkit libraries is the toolkit's (cudart, cublas, cublasLt, cusparse, nvrtc,
nvJitLink, cupti, npp); cufft's is one behind (cufft 10 is CUDA 11's, 11 is CUDA 12's);
curand's and cusolver's do not tell (curand 10 ships with CUDA 11 and 12), nor does cuDNN's
or NCCL's, which are not the toolkit's: for those only the exact name counts. Pure.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name

_SONAME = re.compile(r"^(?P<stem>lib[\w+-]+?)\.so(?P<numbers>(?:\.\d+)*)$")

# library stem -> what to add to its soname's major for the toolkit's major (None: untold)
_TOOLKIT_OFFSET: dict[str, int] = {
    "libcudart": 0,
    "libcublas": 0,
    "libcublasLt": 0,
    "libcusparse": 0,
    "libnvrtc": 0,
    "libnvrtc-builtins": 0,
    "libnvJitLink": 0,
    "libcupti": 0,
    "libnppc": 0,
    "libnppial": 0,
    "libnppig": 0,
    "libnvjpeg": 0,
    "libcufft": 1,
    "libcufftw": 1,
}

# library stem -> the stem of the nvidia-* distribution that ships it (its name ends -cuNN)
NVIDIA_DIST: dict[str, str] = {
    "libcudart": "nvidia-cuda-runtime",
    "libcublas": "nvidia-cublas",
    "libcublasLt": "nvidia-cublas",
    "libcusparse": "nvidia-cusparse",
    "libcusparseLt": "nvidia-cusparselt",
    "libcufft": "nvidia-cufft",
    "libcurand": "nvidia-curand",
    "libcusolver": "nvidia-cusolver",
    "libnvrtc": "nvidia-cuda-nvrtc",
    "libnvJitLink": "nvidia-nvjitlink",
    "libcupti": "nvidia-cuda-cupti",
    "libnvToolsExt": "nvidia-nvtx",
    "libcudnn": "nvidia-cudnn",
    "libnccl": "nvidia-nccl",
    "libcufile": "nvidia-cufile",
}


def split(soname: str) -> tuple[str, tuple[int, ...]] | None:
    """``("libcudart", (11, 0))`` for ``libcudart.so.11.0``; None for what is not a soname."""
    m = _SONAME.match(soname)
    if m is None:
        return None
    numbers = tuple(int(n) for n in m.group("numbers").split(".") if n)
    return m.group("stem"), numbers


def toolkit_of(soname: str) -> int | None:
    """The CUDA toolkit's major the library belongs to (12 for ``libcublas.so.12``), None
    where its name does not tell (cuDNN, NCCL, curand, a library of no toolkit)."""
    parts = split(soname)
    if parts is None or not parts[1] or parts[0] not in _TOOLKIT_OFFSET:
        return None
    return parts[1][0] + _TOOLKIT_OFFSET[parts[0]]


def is_cuda(soname: str) -> bool:
    parts = split(soname)
    return parts is not None and parts[0] in NVIDIA_DIST


def fits(needs: Iterable[str], missing: str, toolkit: int | None, *, newer: bool = False) -> bool:
    """Whether a release whose binaries link ``needs`` (every shared object's, together) loads
    where ``missing`` was not found and the toolkit is ``toolkit`` (its major, or None where
    the report does not say): with a toolkit and a toolkit library missing, every toolkit
    library linked must be that toolkit's, or one of them where the release ships a binary per
    toolkit (bitsandbytes' ``libbitsandbytes_cudaNNN.so``). With none said, the machine is
    taken to lack that toolkit and the newer ones (a package moves to a new CUDA before the
    machines that run it do): every toolkit library linked must be of an older one; or, with
    ``newer``, the machine has a newer toolkit than the one missing (an old release on a new
    machine): every one linked must be newer. A library of no toolkit (cuDNN, NCCL): the
    release must not link the missing name itself."""
    linked = set(needs)
    wanted = toolkit_of(missing)
    if wanted is None:
        return missing not in linked
    majors = {t for s in linked if (t := toolkit_of(s)) is not None}
    if toolkit is not None:
        return not majors or toolkit in majors
    if newer:
        return not majors or min(majors) > wanted
    return not majors or max(majors) < wanted


def nvidia_dist_for(missing: str, requirements: Iterable[str]) -> tuple[str, str] | None:
    """The requirement (``nvidia-cuda-runtime-cu12``, ``==12.1.105``: its marker dropped) among a
    release's ``Requires-Dist`` that ships ``missing``, where the release brings its CUDA
    libraries as ``nvidia-*`` wheels (torch does); None where none does."""
    parts = split(missing)
    if parts is None or parts[0] not in NVIDIA_DIST:
        return None
    stem = NVIDIA_DIST[parts[0]]
    for text in requirements:
        try:
            req = Requirement(text)
        except InvalidRequirement:
            continue
        m = re.match(r"^(nvidia-[\w-]+?)-cu(\d+)$", canonicalize_name(req.name))
        if m is None or m.group(1) != stem:
            continue
        major = toolkit_of(missing)
        if major is not None and int(m.group(2)) != major:
            continue
        return canonicalize_name(req.name), str(req.specifier)
    return None
