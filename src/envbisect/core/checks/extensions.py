"""The compiled extensions people pair with torch by hand: bitsandbytes and flash-attn.

bitsandbytes  from 0.43.0 it loads the binary named after torch's CUDA
              (``libbitsandbytes_cuda124.so``, ``.dll`` on Windows): a torch built for a
              CUDA newer than every binary of the release fails to load it. Windows
              binaries are on PyPI from 0.43.0 only. Which binaries each release carries
              is read from its wheels (bench/make_check_data.py), not remembered.
flash-attn    its wheels are built per torch major.minor, CUDA major and C++ ABI
              (``flash_attn-2.7.4.post1+cu12torch2.6cxx11abiFALSE-...whl``), and a build
              from source is tied to the torch it was built against: another torch gives
              ``flash_attn_2_cuda...so: undefined symbol``. FlashAttention-2 runs on
              Ampere or newer GPUs only (compute capability 8.0).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from packaging.version import InvalidVersion, Version

from envbisect.core.checks.cudarules import Build, gpu_arch, torch_build
from envbisect.core.checks.finding import Finding, Kind, command, evidence
from envbisect.core.checks.observed import Observed, Said

BNB_SOURCE = "https://huggingface.co/docs/bitsandbytes/main/en/installation"
# From this release bitsandbytes picks its binary by torch's CUDA (before, by the CUDA
# runtime it found on the system: a report does not say which that was).
BNB_BY_TORCH = Version("0.43.0")
FA_SOURCE = "https://github.com/Dao-AILab/flash-attention#installation-and-features"
_UNDEFINED = re.compile(r"flash_attn[\w.-]*\.so: undefined symbol")
_FA_WHEEL = re.compile(r"\+cu(?P<cuda>\d+)torch(?P<torch>\d+\.\d+)cxx11abi(?P<abi>TRUE|FALSE)")
_FA_AMPERE = re.compile(r"FlashAttention only supports Ampere GPUs or newer")
_FA_USED = re.compile(
    r"flash_attn\s*[:=]\s*['\"]?fa2\b|--flash_attn[ =]fa2\b"
    r"|attn_implementation\s*=\s*['\"]flash_attention_2['\"]|use_flash_attention_2\s*=\s*True"
)


def extension_rules(
    obs: Observed, bitsandbytes: Mapping[str, Mapping[str, Sequence[str]]]
) -> list[Finding]:
    build = torch_build(obs)
    return [*_bitsandbytes(obs, build, bitsandbytes), *_flash_attn(obs, build)]


# -- bitsandbytes ---------------------------------------------------------------------------


def _bitsandbytes(
    obs: Observed, build: Build | None, data: Mapping[str, Mapping[str, Sequence[str]]]
) -> list[Finding]:
    said = obs.packages.get("bitsandbytes")
    version = _ver(said.value) if said else None
    if said is None and obs.bnb_legacy is not None and obs.system == "Windows":
        return _legacy_on_windows(obs, obs.bnb_legacy, data)
    if said is None or version is None:
        return []
    system = obs.system or "Linux"
    public = version.public
    known = data.get(public)
    cuda = build.version if build is not None else None
    if known is None:
        return []
    binaries = [Version(c) for c in known.get(system, ())]
    source = obs.sources.get("bitsandbytes")
    if system == "Windows" and not binaries:
        first = _first(data, system, cuda)
        where = f" (this one is installed from {source.value})" if source else ""
        message = (
            f"bitsandbytes {said.value} has no Windows binary on PyPI{where}: PyPI's "
            f"bitsandbytes carries Windows binaries from {_first(data, system, None)} on"
        )
    elif cuda is not None and version >= BNB_BY_TORCH and binaries and cuda > max(binaries):
        first = _first(data, system, cuda)
        message = (
            f"bitsandbytes {said.value} has binaries for CUDA {binaries[0]} to "
            f"{max(binaries)} on {system}; torch is built for CUDA {cuda}, so bitsandbytes "
            f"finds no libbitsandbytes_cuda{str(cuda).replace('.', '')} to load"
        )
    else:
        return []
    if first is None:
        return []
    torch = obs.version("torch")
    verify_words = ["envbisect", "probe", "--with", f"bitsandbytes=={first}"]
    if torch and build is not None and build.version is not None:
        verify_words += ["--with", f"torch=={torch.split('+', 1)[0]}"]
        verify_words += ["--torch-backend", "cu" + build.cuda.replace(".", "")]
    return [
        Finding(
            kind=Kind.BITSANDBYTES,
            severity="error",
            package="bitsandbytes",
            message=f"{message}: install bitsandbytes {first} or later",
            evidence=evidence(said, source, build.said if build is not None else None),
            fix=command("pip", "install", "--upgrade", f"bitsandbytes>={first}"),
            verify=command(*verify_words, "--", "python", "-m", "bitsandbytes"),
            source=BNB_SOURCE,
        )
    ]


_LEGACY_PROOF = ("envbisect", "probe", "--with")
_BNB_MAIN = ("--", "python", "-m", "bitsandbytes")


def _legacy_on_windows(
    obs: Observed, banner: Said, data: Mapping[str, Mapping[str, Sequence[str]]]
) -> list[Finding]:
    """bitsandbytes' report in the format of the releases before 0.43.0, on Windows: those
    carry no Windows binary (the report names no version: its format says which releases)."""
    first = _first(data, "Windows", None)
    if first is None:
        return []
    return [
        Finding(
            kind=Kind.BITSANDBYTES,
            severity="error",
            package="bitsandbytes",
            message="the report's python -m bitsandbytes output is the format of bitsandbytes "
            f"before 0.43.0, on Windows: PyPI's bitsandbytes carries Windows binaries from "
            f"{first} on: install bitsandbytes {first} or later",
            evidence=evidence(banner),
            fix=command("pip", "install", "--upgrade", f"bitsandbytes>={first}"),
            verify=command(*_LEGACY_PROOF, f"bitsandbytes=={first}", *_BNB_MAIN),
            source=BNB_SOURCE,
        )
    ]


def _first(
    data: Mapping[str, Mapping[str, Sequence[str]]], system: str, cuda: Version | None
) -> str | None:
    """The first release with a binary on ``system`` (for ``cuda``, where given)."""
    for v in sorted(data, key=Version):
        binaries = [Version(c) for c in data[v].get(system, ())]
        fits = binaries and (cuda is None or cuda <= max(binaries))
        if fits and (cuda is None or Version(v) >= BNB_BY_TORCH):
            return v
    return None


# -- flash-attn -----------------------------------------------------------------------------


def _flash_attn(obs: Observed, build: Build | None) -> list[Finding]:
    said = obs.packages.get("flash-attn")
    torch = obs.packages.get("torch")
    version = said.value.split("+", 1)[0] if said else None
    pin = f"flash-attn=={version}" if version else "flash-attn"
    rebuild = command(
        "pip", "install", "--no-build-isolation", "--no-cache-dir", "--force-reinstall", pin
    )
    out: list[Finding] = []
    undefined = next(obs.find(_UNDEFINED), None)
    wheel = _wheel_build(obs)
    if undefined is not None:
        torch_said = f" {torch.value}" if torch else ""
        out.append(
            Finding(
                kind=Kind.FLASH_ATTN,
                severity="error",
                package="flash-attn",
                message=f"flash-attn's compiled extension does not match the installed "
                f"torch{torch_said} (undefined symbol): it was built for another torch "
                "(flash-attn builds are made per torch major.minor, CUDA major and C++ ABI); "
                "rebuild it against this torch",
                evidence=evidence(undefined[0], said, torch, wheel[0] if wheel else None),
                fix=rebuild,
                source=FA_SOURCE,
            )
        )
    elif wheel is not None and torch is not None:
        line, m = wheel
        minor = ".".join(torch.value.split("+", 1)[0].split(".")[:2])
        cuda = build.version if build is not None else None
        wrong = []
        if m["torch"] != minor:
            wrong.append(f"torch {m['torch']} (the report has {minor})")
        if cuda is not None and m["cuda"][:2] != str(cuda.major):
            wrong.append(f"CUDA {m['cuda'][:2]} (torch is built for CUDA {cuda})")
        if wrong:
            out.append(
                Finding(
                    kind=Kind.FLASH_ATTN,
                    severity="error",
                    package="flash-attn",
                    message=f"the flash-attn wheel installed is built for {' and '.join(wrong)}:"
                    " its extension fails to load (undefined symbol); install the build for "
                    "this torch",
                    evidence=evidence(line, torch),
                    fix=rebuild,
                    source=FA_SOURCE,
                )
            )
    out += _older_gpu(obs, said)
    return out


def _wheel_build(obs: Observed) -> tuple[Said, re.Match[str]] | None:
    """The flash-attn wheel the report names (its URL or file name), with its build tag."""
    source = obs.sources.get("flash-attn")
    said = obs.packages.get("flash-attn")
    for s in (source, said):
        if s is not None:
            m = _FA_WHEEL.search(s.value) or _FA_WHEEL.search(s.text)
            if m is not None:
                return s, m
    return None


def _older_gpu(obs: Observed, said: Said | None) -> list[Finding]:
    """FlashAttention-2 asked for (or failing so) on a GPU older than Ampere."""
    failed = next(obs.find(_FA_AMPERE), None)
    used = next(obs.find(_FA_USED), None)
    if said is None and failed is None:
        return []
    major = (said.value.split(".")[0] if said else "2") == "2"
    old = [g for g in obs.gpus if (cc := gpu_arch(g.value)) is not None and float(cc) < 8.0]
    if not (major and old and (failed or used)):
        return []
    gpu = old[0]
    return [
        Finding(
            kind=Kind.FLASH_ATTN,
            severity="error",
            package="flash-attn",
            message=f"{gpu.value} is compute capability {gpu_arch(gpu.value)}; FlashAttention-2 "
            "runs on Ampere (8.0) or newer only: use PyTorch's SDPA instead (LLaMA-Factory: "
            "flash_attn: sdpa; transformers: attn_implementation='sdpa')",
            evidence=evidence(gpu, said, failed[0] if failed else None, used[0] if used else None),
            fix=command("pip", "uninstall", "--yes", "flash-attn"),
            source=FA_SOURCE,
        )
    ]


def _ver(text: str) -> Version | None:
    try:
        return Version(text)
    except InvalidVersion:
        return None
