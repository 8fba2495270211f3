"""An environment report's rows as pins, and what its facts mean for this machine.

Who does what: ``report_pins`` maps each row of an ``EnvReport`` (core/envreport/report.py) to a
pin, and says how wherever it is not the version as written (``ReportFacts``,
core/envreport/facts.py);
``python_request``, ``torch_backend`` and ``platform_note`` decide what the report's Python,
torch build and platform mean here, from facts of this machine passed in. Pure: the caller
reads the text, asks the index which versions exist and looks for a GPU.

How a version is mapped (never silently dropped):
    1.2.3                  exactly (``==``)
    2.7.1+cu126            its public version (``==2.7.1``); for torch, torchvision, torchaudio
                           the variant (``cu126``) picks PyTorch's index (``torch_backend``)
    1.0+mybuild            its public version, with a note: a local build is on no index
    0.9.4.dev0, 1.0rc1     kept when the index has it; else the nearest release below it,
                           with a warning (``<V`` when the index was not asked); a git commit
                           the report names (``Git commit:``, a ``git+URL@commit`` row) is
                           recorded with the package's repository, and not used yet
    name @ URL, -e URL     the name, unpinned, with a warning (and the commit, for a VCS URL)
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from packaging.requirements import Requirement
from packaging.version import InvalidVersion, Version

from envbisect.core.envreport.facts import Mapped, ReportedCommit, ReportFacts
from envbisect.core.envreport.report import EnvReport, Row
from envbisect.core.names import TORCH_PACKAGES, is_project_name
from envbisect.core.pins.sources import Pin, PinSet

# Canonical name -> every version the index has; None where it could not be asked.
Releases = Callable[[str], Sequence[Version] | None]

_VARIANT = re.compile(r"^(cpu|cu\d{3}|rocm\d+(?:\.\d+)*|xpu)$")
# Where a project's commits live, for the packages whose reports name a commit.
REPOSITORIES = {
    "llamafactory": "https://github.com/hiyouga/LLaMA-Factory",
    "transformers": "https://github.com/huggingface/transformers",
    "accelerate": "https://github.com/huggingface/accelerate",
    "peft": "https://github.com/huggingface/peft",
    "trl": "https://github.com/huggingface/trl",
    "datasets": "https://github.com/huggingface/datasets",
    "diffusers": "https://github.com/huggingface/diffusers",
    "torch": "https://github.com/pytorch/pytorch",
}
_VCS = re.compile(r"^git\+(?P<repo>[^@#]+?)(?:\.git)?@(?P<rev>[0-9a-fA-F]{7,40})(?:[#&].*)?$")


def report_pins(report: EnvReport, *, origin: str, releases: Releases | None = None) -> PinSet:
    """The report's rows as exact pins where they can be, each mapping said (module doc).

    ``releases(name)`` is asked only for the versions that are no release (dev and pre)."""
    pins: list[Pin] = []
    mapped: list[Mapped] = []
    commits: dict[str, ReportedCommit] = {}
    variant = torch_variant(report)
    for row in report.rows:
        if not row.key or not is_project_name(row.name):
            why = (
                "an editable install that names no package: left out"
                if not row.key
                else "not a project name: left out"
            )
            mapped.append(
                Mapped(
                    name=row.key or "?",
                    reported=row.url or row.version,
                    used=None,
                    line=row.line,
                    why=why,
                )
            )
            continue
        text, why, commit, warn = _map_row(row, report, releases)
        if commit is not None and row.key not in commits:
            commits[row.key] = commit
        where = f"{origin}:{row.line}"
        pins.append(Pin(requirement=Requirement(text), origin=where, text=text))
        if why:
            reported = row.version or (row.url or "")
            mapped.append(
                Mapped(
                    name=row.key, reported=reported, used=text, why=why, line=row.line, warning=warn
                )
            )
    facts = ReportFacts(
        report=report,
        origin=origin,
        variant=variant,
        mapped=tuple(mapped),
        commits=tuple(commits.values()),
    )
    return PinSet(
        source=origin,
        requirements=tuple(pins),
        is_lock=bool(pins) and all(p.exact_version is not None for p in pins),
        skipped=tuple(report.left_out),
        report=facts,
    )


def _map_row(
    row: Row, report: EnvReport, releases: Releases | None
) -> tuple[str, str, ReportedCommit | None, bool]:
    """(requirement text, why it differs from the row or "", a commit the row names, whether
    that difference deserves a warning: all but a torch build's variant do)."""
    name = row.key
    if row.url is not None:
        vcs = _VCS.match(row.url)
        commit = (
            ReportedCommit(package=name, commit=vcs["rev"], repository=vcs["repo"]) if vcs else None
        )
        if row.version:  # pip freeze named the editable's version in a comment
            text, why, _, _ = _map_row(
                Row(name=row.name, version=row.version, line=row.line), report, releases
            )
            return text, why or "installed from a URL: its version as pip named it", commit, True
        return name, "installed from a URL, no version: the newest release", commit, True
    try:
        version = Version(row.version)
    except InvalidVersion:
        return name, f"{row.version!r} is not a PEP 440 version: the newest release", None, True
    why = ""
    if version.local is not None:
        public, local = Version(version.public), version.local
        if name in TORCH_PACKAGES and _VARIANT.match(local):
            return f"{name}=={public}", f"the {local} build: public version {public}", None, False
        version, why = public, f"a local build (+{local}): its public version {public}"
    if not version.is_prerelease:  # dev releases are pre-releases too
        return f"{name}=={version}", why, None, bool(why)
    commit = None
    if report.commit and name == report.subject:
        commit = ReportedCommit(
            package=name, commit=report.commit, repository=REPOSITORIES.get(name)
        )
    known = releases(name) if releases is not None else None
    if known is not None and version in known:
        return f"{name}=={version}", why, commit, bool(why)
    kind = "a development version" if version.is_devrelease else "a pre-release"
    if known is None:
        return f"{name}<{version}", f"{kind}: the nearest release below it", commit, True
    below = [v for v in known if not v.is_prerelease and v < version]
    if not below:
        return name, f"{kind}, and the index has no release below it: the newest", commit, True
    nearest = max(below)
    why = f"{kind}, not on the index: {nearest}, the nearest release below it"
    return f"{name}=={nearest}", why, commit, True


def torch_variant(report: EnvReport) -> str | None:
    """The build of torch the report names: its local label, else the CUDA it was built for."""
    for row in report.rows:
        if row.key in TORCH_PACKAGES and "+" in row.version:
            local = row.version.split("+", 1)[1]
            if _VARIANT.match(local):
                return local
    cuda = report.torch_cuda
    if cuda == "cpu":
        return "cpu"
    if cuda and any(r.key == "torch" for r in report.rows):
        m = re.match(r"(\d+)\.(\d)", cuda)
        if m:
            return f"cu{m.group(1)}{m.group(2)}"
    return None


# -- what the facts mean here ------------------------------------------------------------------


def python_request(facts: ReportFacts) -> str | None:
    """The interpreter to ask uv for: the report's major.minor (any patch release will do:
    wheels are built per minor version)."""
    if not facts.python:
        return None
    m = re.match(r"(\d+)\.(\d+)", facts.python)
    return f"{m.group(1)}.{m.group(2)}" if m else None


def torch_backend(variant: str | None, *, driver_cuda: str | None) -> tuple[str | None, str]:
    """PyTorch's index variant for the report's torch build on this machine, and why.

    ``driver_cuda``: the newest CUDA this machine's driver supports (nvidia-smi), None without
    a GPU. A CUDA build maps to the same CUDA where the driver supports it, to the newest one
    it does support where not, to the CPU build without a GPU; a ROCm or XPU build without a
    GPU, to the CPU build. (None, ""): the report names no build."""
    if variant is None:
        return None, ""
    if variant == "cpu":
        return "cpu", "torch: the report's CPU build (PyTorch's cpu index)"
    if variant.startswith("cu"):
        wanted = Version(f"{variant[2:-1]}.{variant[-1]}")
        if driver_cuda is None:
            return "cpu", (
                f"torch: the report's build is for CUDA {wanted} ({variant}); this "
                "machine has no GPU: the CPU build (PyTorch's cpu index)"
            )
        try:
            supported = Version(driver_cuda)
        except InvalidVersion:
            supported = wanted
        if wanted <= supported:
            return (
                variant,
                f"torch: the report's {variant} build (this driver supports CUDA {driver_cuda})",
            )
        best = _newest_supported(supported)
        if best is None:
            return "cpu", (
                f"torch: the report's build is for CUDA {wanted}; this driver "
                f"supports CUDA {driver_cuda} only: the CPU build"
            )
        return best, (
            f"torch: the report's build is for CUDA {wanted}; this driver supports "
            f"CUDA {driver_cuda}: the {best} build"
        )
    if driver_cuda is None:
        return "cpu", f"torch: the report's {variant} build; no GPU here: the CPU build"
    return variant, f"torch: the report's {variant} build"


_CUDA_VARIANTS = ("cu118", "cu121", "cu124", "cu126", "cu128", "cu129", "cu130")


def _newest_supported(supported: Version) -> str | None:
    best = None
    for v in _CUDA_VARIANTS:
        if Version(f"{v[2:-1]}.{v[-1]}") <= supported:
            best = v
    return best


_SAME_MACHINE = {"amd64": "x86_64", "x64": "x86_64", "arm64": "aarch64"}


def platform_note(facts: ReportFacts, *, system: str, machine: str) -> str | None:
    """A line saying the report is from another OS or architecture than ``system``/``machine``
    (``platform.system()``, ``platform.machine()`` of this one); None when it is the same or
    the report does not say."""
    r = facts.report
    theirs = r.platform or " ".join(x for x in (r.system, r.machine) if x)
    here = f"{system} {machine}"
    if r.system and r.system != system:
        return (
            f"{facts.origin}: the report is from {r.system} ({theirs}); this machine is "
            f"{here}: its pins are used as they are, some may not install here"
        )
    mine, yours = _SAME_MACHINE.get(machine.lower(), machine.lower()), (r.machine or "").lower()
    if yours and _SAME_MACHINE.get(yours, yours) != mine:
        return (
            f"{facts.origin}: the report is from a {r.machine} machine ({theirs}); this one "
            f"is {here}: its pins are used as they are, some may not install here"
        )
    return None
