"""torch's build against the machine: the driver, the GPU, a CPU-only build where a GPU is
named. The tables are documented facts, each with its source; the rules read them.

    cpu-torch    torch is a CPU-only build and the report names an NVIDIA GPU, or says CUDA
                 is not available
    cuda-driver  torch's CUDA build needs a newer driver than the report's (NVIDIA's minor
                 version compatibility: any CUDA 12.x build runs on a driver >= 525.60.13)
    gpu-arch     torch's build has no kernels for the GPU's architecture (an H100 with a CUDA
                 11.7 build, an RTX 5090 with anything older than a CUDA 12.8 build)

Each fix names a torch build that runs there: the report's torch version from PyTorch's
index for a CUDA variant the driver and the GPU support (the newest one that fits), or the
nearest torch release that has such a variant.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from packaging.version import InvalidVersion, Version

from envbisect.core.checks.finding import Finding, Kind, command, evidence
from envbisect.core.checks.observed import Observed, Said

# NVIDIA's CUDA minor version compatibility: a build with any CUDA of a major release runs
# (PTX JIT aside) on a driver of at least this version, Linux then Windows.
# https://docs.nvidia.com/deploy/cuda-compatibility/minor-version-compatibility.html
MINOR_COMPAT = {
    11: ("450.80.02", "452.39"),
    12: ("525.60.13", "527.41"),
    13: ("580", "580"),
}
MINOR_COMPAT_SOURCE = (
    "https://docs.nvidia.com/deploy/cuda-compatibility/minor-version-compatibility.html"
)
# The Linux x86_64 driver each CUDA toolkit's GA release ships with: a driver at least this
# new supports that CUDA fully (CUDA Toolkit Release Notes, "CUDA Toolkit and Corresponding
# Driver Versions"). Newest first.
TOOLKIT_DRIVERS = (
    ("13.0", "580.65.06"),
    ("12.9", "575.51.03"),
    ("12.8", "570.26"),
    ("12.6", "560.28.03"),
    ("12.5", "555.42.02"),
    ("12.4", "550.54.14"),
    ("12.3", "545.23.06"),
    ("12.2", "535.54.03"),
    ("12.1", "530.30.02"),
    ("12.0", "525.60.13"),
    ("11.8", "520.61.05"),
    ("11.7", "515.43.04"),
    ("11.6", "510.39.01"),
    ("11.5", "495.29.05"),
    ("11.4", "470.42.01"),
    ("11.3", "465.19.01"),
    ("11.2", "460.27.03"),
    ("11.1", "455.23"),
    ("11.0", "450.36.06"),
    ("10.2", "440.33"),
)
# PyTorch's CUDA builds per release (https://pytorch.org/get-started/previous-versions/):
# the one PyPI's Linux x86_64 wheel is built for, then every variant on PyTorch's index.
TORCH_CUDA = {
    "1.13": ("11.7", ("11.6", "11.7")),
    "2.0": ("11.7", ("11.7", "11.8")),
    "2.1": ("12.1", ("11.8", "12.1")),
    "2.2": ("12.1", ("11.8", "12.1")),
    "2.3": ("12.1", ("11.8", "12.1")),
    "2.4": ("12.1", ("11.8", "12.1", "12.4")),
    "2.5": ("12.4", ("11.8", "12.1", "12.4")),
    "2.6": ("12.4", ("11.8", "12.4", "12.6")),
    "2.7": ("12.6", ("11.8", "12.6", "12.8")),
    "2.8": ("12.8", ("12.6", "12.8", "12.9")),
    "2.9": ("12.8", ("12.6", "12.8", "13.0")),
}
TORCH_INDEX = "https://download.pytorch.org/whl/"
# Compute capability by GPU name (https://developer.nvidia.com/cuda-gpus), most specific first.
GPU_ARCH = (
    (re.compile(r"RTX\s?50\d\d|RTX PRO \d+ Blackwell|Blackwell"), "12.0"),
    (re.compile(r"\bG?B[12]00\b"), "10.0"),
    (re.compile(r"\bH(?:100|200|800|20)\b|GH200"), "9.0"),
    (re.compile(r"RTX\s?40\d\d|\bL4\b|\bL40S?\b|RTX \d000 Ada|Ada Generation"), "8.9"),
    (re.compile(r"\bA(?:100|800|30)\b"), "8.0"),
    (re.compile(r"RTX\s?30\d\d|\bA(?:10G?|40|16|2|[456]000)\b"), "8.6"),
    (re.compile(r"RTX\s?20\d\d|\bT4\b|GTX\s?16\d\d|TITAN RTX|Quadro RTX"), "7.5"),
    (re.compile(r"\bV100\b|TITAN V\b"), "7.0"),
    (re.compile(r"\bP100\b"), "6.0"),
    (re.compile(r"GTX\s?10\d\d|\bP40\b|\bP4\b|TITAN Xp?\b"), "6.1"),
)
GPU_ARCH_SOURCE = "https://developer.nvidia.com/cuda-gpus"
# The oldest CUDA whose torch builds carry kernels for a compute capability's major version
# (a build runs a newer minor of the same major: sm_86 code runs on sm_89). PyTorch's CUDA
# 11.8 builds added sm_90 (Hopper), its CUDA 12.8 builds sm_100 and sm_120 (Blackwell).
ARCH_NEEDS = {9: "11.8", 10: "12.8", 12: "12.8"}
_PTX = re.compile(r"PTX was compiled with an unsupported toolchain|unsupported PTX version")
# What proves a CUDA torch runs here: a tensor on the GPU (an import alone does not touch it).
_ON_GPU = "import torch; torch.zeros(1).cuda()"


@dataclass(frozen=True, slots=True, kw_only=True)
class Build:
    """torch's build: ``cuda`` (``12.4``, ``cpu``, ``rocm``, ``xpu``), where it is said,
    and why it is taken to be so where the report does not say it (``inferred``)."""

    cuda: str
    said: Said
    inferred: str = ""

    @property
    def version(self) -> Version | None:
        return _ver(self.cuda) if self.cuda[:1].isdigit() else None


def torch_build(obs: Observed) -> Build | None:
    """torch's build: as the report says it, else as PyPI builds the version it lists (its
    Linux wheel for one CUDA, its Windows wheel for none)."""
    torch = obs.packages.get("torch")
    if obs.torch_cuda is not None:
        return Build(cuda=obs.torch_cuda.value, said=obs.torch_cuda)
    if torch is None or "torch" not in obs.listed or "+" in torch.value:
        return None
    minor = _minor(torch.value)
    if obs.system == "Windows":
        return Build(
            cuda="cpu",
            said=torch,
            inferred="PyPI's torch for Windows is the CPU-only build (CUDA builds are on "
            "PyTorch's own index)",
        )
    if obs.system == "Linux" and minor in TORCH_CUDA:
        cuda = TORCH_CUDA[minor][0]
        return Build(
            cuda=cuda,
            said=torch,
            inferred=f"PyPI's Linux wheel of torch {minor} is built for CUDA {cuda}",
        )
    return None


def cuda_rules(obs: Observed) -> list[Finding]:
    build = torch_build(obs)
    if build is None:
        return []
    return [*_cpu_torch(obs, build), *_driver(obs, build), *_arch(obs, build)]


# -- cpu-torch ------------------------------------------------------------------------------


def _cpu_torch(obs: Observed, build: Build) -> list[Finding]:
    if build.cuda != "cpu":
        return []
    nvidia = [g for g in obs.gpus if gpu_arch(g.value) is not None]
    if not nvidia and obs.wants_gpu is None:
        return []
    version = _public(obs.version("torch") or "")
    why = f" ({build.inferred})" if build.inferred else ""
    if nvidia:
        said = f"the report names a GPU ({nvidia[0].value})"
    else:
        said = f"the report expects CUDA ({obs.wants_gpu.value if obs.wants_gpu else ''!r})"
    torch, variant = _pick(version, _runnable(obs))
    return [
        Finding(
            kind=Kind.CPU_TORCH,
            severity="error",
            package="torch",
            message=f"torch {obs.version('torch')} is a CPU-only build{why}, and {said}: "
            f"torch cannot use the GPU; install a CUDA build ({_cu(variant)})",
            evidence=evidence(build.said, obs.packages.get("torch"), *nvidia[:1], obs.wants_gpu),
            fix=_install(torch, variant),
            verify=_verify(torch, variant),
            source="https://pytorch.org/get-started/locally/",
        )
    ]


# -- cuda-driver ----------------------------------------------------------------------------


def _driver(obs: Observed, build: Build) -> list[Finding]:
    cuda = build.version
    if cuda is None:
        return []
    driver = _ver(obs.driver.value) if obs.driver else None
    supported = driver_cuda(obs)
    windows = obs.system == "Windows"
    needed = MINOR_COMPAT.get(cuda.major)
    too_old = False
    if driver is not None and needed is not None:
        too_old = driver < Version(needed[1 if windows else 0])
    elif supported is not None:
        too_old = supported.major < cuda.major
    if not too_old:
        if supported is not None and supported < cuda and any(obs.find(_PTX)):
            return [_ptx(obs, build, supported)]
        return []
    version = _public(obs.version("torch") or "")
    torch, variant = _pick(version, _runnable(obs))
    limit = f" (supports CUDA {supported} at most)" if supported is not None else ""
    minimum = f"NVIDIA driver >= {needed[1 if windows else 0]}" if needed else "a newer driver"
    where = f" ({build.inferred})" if build.inferred else ""
    return [
        Finding(
            kind=Kind.CUDA_DRIVER,
            severity="error",
            package="torch",
            message=f"torch {obs.version('torch')} is built for CUDA {build.cuda}{where}; a CUDA "
            f"{cuda.major}.x build needs {minimum} (minor version compatibility), and the "
            f"driver here is {obs.driver.value if obs.driver else 'older'}{limit}: install "
            f"torch built for CUDA {variant} ({_cu(variant)}), or upgrade the driver",
            evidence=evidence(build.said, obs.driver, obs.driver_cuda),
            fix=_install(torch, variant),
            verify=_verify(torch, variant),
            source=MINOR_COMPAT_SOURCE,
        )
    ]


def _ptx(obs: Observed, build: Build, supported: Version) -> Finding:
    ptx = next(obs.find(_PTX))[0]
    version = _public(obs.version("torch") or "")
    torch, variant = _pick(version, _runnable(obs, full=True))
    return Finding(
        kind=Kind.CUDA_DRIVER,
        severity="error",
        package="torch",
        message=f"torch is built for CUDA {build.cuda}, newer than the driver's CUDA "
        f"{supported}: minor version compatibility runs its kernels but not PTX compiled by "
        f"the newer toolchain, which the report shows failing",
        evidence=evidence(build.said, obs.driver, obs.driver_cuda, ptx),
        fix=_install(torch, variant),
        verify=_verify(torch, variant),
        source=MINOR_COMPAT_SOURCE,
    )


def driver_cuda(obs: Observed) -> Version | None:
    """The newest CUDA the report's driver supports fully: nvidia-smi's (or torch's) word
    for it, else the driver's version looked up in the toolkit table (Linux numbering)."""
    if obs.driver_cuda is not None:
        return _ver(obs.driver_cuda.value)
    driver = _ver(obs.driver.value) if obs.driver else None
    if driver is None or obs.system == "Windows":
        return None
    for cuda, needed in TOOLKIT_DRIVERS:
        if driver >= Version(needed):
            return Version(cuda)
    return None


# -- gpu-arch -------------------------------------------------------------------------------


def _arch(obs: Observed, build: Build) -> list[Finding]:
    cuda = build.version
    if cuda is None:
        return []
    for gpu in obs.gpus:
        cc = gpu_arch(gpu.value)
        if cc is None:
            continue
        need = ARCH_NEEDS.get(int(cc.split(".")[0]))
        if need is None or cuda >= Version(need):
            continue
        version = _public(obs.version("torch") or "")
        newer = [v for v in _runnable(obs) if Version(v) >= Version(need)]
        torch, variant = _pick(version, newer)
        return [
            Finding(
                kind=Kind.GPU_ARCH,
                severity="error",
                package="torch",
                message=f"{gpu.value} is compute capability {cc} (sm_{cc.replace('.', '')}); "
                f"torch's CUDA {build.cuda} build has no kernels for it (CUDA {need} builds "
                f"and later have): install torch built for CUDA {variant} ({_cu(variant)})",
                evidence=evidence(gpu, build.said),
                fix=_install(torch, variant),
                verify=_verify(torch, variant),
                source=GPU_ARCH_SOURCE,
            )
        ]
    return []


def gpu_arch(name: str) -> str | None:
    """The compute capability of an NVIDIA GPU by its name; None if unknown."""
    for pattern, cc in GPU_ARCH:
        if pattern.search(name):
            return cc
    return None


# -- the torch to install ---------------------------------------------------------------------


def _runnable(obs: Observed, *, full: bool = False) -> list[str]:
    """Every CUDA variant (oldest first) the report's driver runs: all where it does not say
    its driver; with ``full``, only those it supports without minor version compatibility."""
    variants = sorted({v for _, vs in TORCH_CUDA.values() for v in vs}, key=Version)
    driver = _ver(obs.driver.value) if obs.driver else None
    supported = driver_cuda(obs)
    windows = obs.system == "Windows"
    out = []
    for v in variants:
        cuda = Version(v)
        if full or driver is None:
            ok = supported is None or cuda <= supported
        else:
            needed = MINOR_COMPAT.get(cuda.major)
            ok = needed is not None and driver >= Version(needed[1 if windows else 0])
        if ok:
            out.append(v)
    return out


def _pick(version: str, runnable: list[str]) -> tuple[str, str]:
    """(the torch to install, its CUDA variant): the report's version where PyTorch built it
    for a runnable variant (its newest such); else the nearest release that has one, the
    oldest newer one first (the least change for the rest of the environment), else the
    newest older one; a release newer than the table keeps its version."""
    minor = _minor(version)
    newest = max(TORCH_CUDA, key=Version)
    if minor in TORCH_CUDA:
        fits = [v for v in TORCH_CUDA[minor][1] if v in runnable]
        if fits:
            return version, fits[-1]
    elif minor and Version(minor) > Version(newest) and runnable:
        return version, runnable[-1]
    here = Version(minor) if minor else Version(newest)
    releases = sorted(TORCH_CUDA, key=Version)
    newer = [m for m in releases if Version(m) > here]
    older = [m for m in reversed(releases) if Version(m) < here]
    for m in (*newer, *older):
        fits = [v for v in TORCH_CUDA[m][1] if v in runnable]
        if fits:
            return f"{m}.*", fits[-1]
    # Nothing runs on this driver: the build PyPI makes of the version (the message says to
    # upgrade the driver).
    m = minor if minor in TORCH_CUDA else newest
    return version or f"{m}.*", TORCH_CUDA[m][0]


def _cu(variant: str) -> str:
    return "cu" + variant.replace(".", "")


def _install(torch: str, variant: str) -> str:
    index = TORCH_INDEX + _cu(variant)
    return command("pip", "install", "--force-reinstall", f"torch=={torch}", "--index-url", index)


def _verify(torch: str, variant: str) -> str:
    build = ("--with", f"torch=={torch}", "--torch-backend", _cu(variant))
    return command("envbisect", "probe", *build, "--", "python", "-c", _ON_GPU)


def _ver(text: str) -> Version | None:
    try:
        return Version(text)
    except InvalidVersion:
        return None


def _public(version: str) -> str:
    return version.split("+", 1)[0]


def _minor(version: str) -> str:
    m = re.match(r"(\d+)\.(\d+)", version)
    return f"{m.group(1)}.{m.group(2)}" if m else ""
