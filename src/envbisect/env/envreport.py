"""The environment report (what ``llamafactory-cli env`` gives, and more) and its checks.

``REPORT_SCRIPT`` runs with the interpreter being reported on and prints one JSON object:
platform, kernel, glibc, Python, the versions of the ML packages people ask about, every
installed wheel's platform tags, torch's build (CUDA, cuDNN) and, in ``deep`` mode, what torch
sees of the GPUs and which compiled packages fail against the installed NumPy. nvidia-smi is
read by envbisect itself (``read_nvidia_smi``), once per machine.

``checks(report)`` is pure: a report in, a list of problems out, each with a fix. The tests
feed it synthetic reports.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from packaging.markers import InvalidMarker
from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from envbisect import __version__
from envbisect.core.markers import applies
from envbisect.env.probes import _envreport as _script
from envbisect.errors import UsageError

# Runs inside the reported environment (python -I -c REPORT_SCRIPT quick|deep): the file's text.
REPORT_SCRIPT = Path(_script.__file__).read_text(encoding="utf-8")
PACKAGES = _script.PACKAGES


def collect(python: str, *, deep: bool, timeout: float = 300.0) -> dict[str, Any]:
    """The report for the interpreter ``python`` (raises UsageError when it cannot run)."""
    from envbisect.env.interp import run_python_json

    report: dict[str, Any] = run_python_json(
        python,
        REPORT_SCRIPT,
        "deep" if deep else "quick",
        timeout=timeout,
        doing="reporting on its environment",
    )
    report["envbisect"] = __version__
    return report


class Pending:
    """A quick report started now and read later (``result``): a probe's environment is
    reported on while its repro runs, not after it. Its process is a helper of runner.py's
    (its own group, killed by Ctrl-C); ``result`` or ``cancel`` ends it."""

    def __init__(self, python: str) -> None:
        from envbisect.env.runner import Started

        self.python = python
        argv = [python, "-I", "-c", REPORT_SCRIPT, "quick"]
        try:
            self._started: Started | None = Started(argv, env=os.environ)
        except OSError:
            self._started = None  # said by result(), as collect() says it

    def result(self, timeout: float = 60.0) -> dict[str, Any] | None:
        """The report; None where the interpreter could not run it (as collect's UsageError)."""
        from envbisect.env.interp import python_json

        if self._started is None:
            return None
        try:
            proc = self._started.wait(timeout)
            report: dict[str, Any] = python_json(proc, self.python, "reporting on its environment")
        except (UsageError, subprocess.TimeoutExpired, ValueError):
            return None
        report["envbisect"] = __version__
        return report

    def cancel(self) -> None:
        if self._started is not None:
            self._started.kill()


def read_venv(python: Path) -> dict[str, Any] | None:
    """The quick report of a plain CPython virtualenv of this machine, read from its files in
    this process (no interpreter started: a second one cost each probe 50 ms of a core), or
    None where only its interpreter can say (then ``Pending``).

    What the report script would print there: this machine's platform, the environment's
    Python from its ``pyvenv.cfg`` (``version_info``, ``implementation``, as uv writes them),
    and the distributions of its one site-packages folder, read as the script's
    importlib.metadata finds them (distinfo.py). None for an environment that sees more than
    that folder (system site-packages, a ``.pth`` line that adds a folder: an editable
    install), is not CPython's, or holds what only importlib.metadata reads.
    """
    import platform
    import sys

    from envbisect.env import distinfo

    root = python.parent.parent
    try:
        lines = (root / "pyvenv.cfg").read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError):
        return None
    cfg = dict((k.strip().lower(), v.strip()) for k, _, v in (ln.partition("=") for ln in lines))
    full = cfg.get("version_info", "")
    if (
        cfg.get("implementation", "").lower() != "cpython"
        or cfg.get("include-system-site-packages", "false").lower() != "false"
        or not re.fullmatch(r"3\.\d+\.\d+", full)
        or platform.python_implementation() != "CPython"
        or sys.platform != "linux"  # the layout below, and the machine facts, are Linux's
    ):
        return None
    sites = list(root.glob("lib/python3*/site-packages"))
    if len(sites) != 1 or not python.exists() or _adds_paths(sites[0]):
        return None
    short = ".".join(full.split(".")[:2])
    # The script is untyped (Python 3.8, any interpreter): its two functions, as typed here.
    out: dict[str, Any] = _script.interpreter()  # type: ignore[no-untyped-call]
    out.update(python=full, executable=str(python), implementation="cpython")
    out["markers"].update(
        python_version=short,
        python_full_version=full,
        implementation_name="cpython",
        platform_python_implementation="CPython",
    )
    try:  # importlib.metadata's reading, without its imports (distinfo.py)
        _script.walk(out, distinfo.distributions(sites[0]))  # type: ignore[no-untyped-call]
    except Exception:  # what packages wrote there is untrusted, or not plain (NotPlain): ask
        return None  # the interpreter, whose own failure the report survives (Pending.result)
    out["envbisect"] = __version__
    return out


def _adds_paths(site: Path) -> bool:
    """A ``.pth`` file of ``site`` puts another folder on the path (site.py's rule: a line
    that is neither a comment nor an ``import`` and names a folder that exists)."""
    for pth in site.glob("*.pth"):
        try:
            text = pth.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return True
        for line in text.splitlines():
            line = line.strip()
            if not line or line.startswith(("#", "import ", "import\t")):
                continue
            if (site / line).is_dir():
                return True
    return False


def read_nvidia_smi() -> dict[str, Any] | None:
    """Driver version, the highest CUDA it supports, and GPUs; None without nvidia-smi."""
    smi = shutil.which("nvidia-smi")
    if smi is None:
        return None
    try:
        head = subprocess.run([smi], capture_output=True, text=True, timeout=30).stdout
        gpus = subprocess.run(
            [smi, "--query-gpu=name,memory.total", "--format=csv,noheader,nounits"],
            capture_output=True,
            text=True,
            timeout=30,
        ).stdout
    except (OSError, subprocess.TimeoutExpired):
        return None
    return parse_nvidia_smi(head, gpus)


def has_gpu() -> bool:
    """Whether nvidia-smi lists a GPU on this machine (a CUDA repro can run here)."""
    return bool((read_nvidia_smi() or {}).get("gpus"))


def parse_nvidia_smi(head: str, gpus_csv: str) -> dict[str, Any]:
    driver = re.search(r"Driver Version:\s*([\d.]+)", head)
    cuda = re.search(r"CUDA Version:\s*([\d.]+)", head)
    gpus = []
    for line in gpus_csv.strip().splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) >= 2:
            try:
                mem = round(float(parts[1]) / 1024, 1)
            except ValueError:
                mem = None
            gpus.append({"name": parts[0], "memory_gib": mem})
    return {
        "driver": driver.group(1) if driver else None,
        "cuda": cuda.group(1) if cuda else None,
        "gpus": gpus,
    }


# -- checks -----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class Check:
    ref: str
    severity: str  # "error" (will break) or "warning" (may break)
    message: str
    fix: str

    def to_dict(self) -> dict[str, str]:
        return {
            "ref": self.ref,
            "severity": self.severity,
            "message": self.message,
            "fix": self.fix,
        }


def checks(report: Mapping[str, Any]) -> list[Check]:
    """Problems in a report, each with a fix. Pure."""
    out: list[Check] = []
    out += _check_cuda(report)
    out += _check_glibc(report)
    out += _check_llamafactory(report)
    out += _check_numpy_abi(report)
    return out


def _ver(text: object) -> Version | None:
    try:
        return Version(str(text)) if text else None
    except InvalidVersion:
        return None


def _check_cuda(report: Mapping[str, Any]) -> list[Check]:
    torch = report.get("torch") or {}
    nvidia = report.get("nvidia") or {}
    build, driver = _ver(torch.get("cuda")), _ver(nvidia.get("cuda"))
    if build is None or driver is None:
        return []
    if build.major > driver.major:
        return [
            Check(
                ref="cuda-build-newer-than-driver",
                severity="error",
                message=f"torch {torch.get('version')} is built for CUDA {build}, the driver "
                f"({nvidia.get('driver')}) supports CUDA {driver} at most",
                fix=f"install a torch built for CUDA {driver.major}.x or older (e.g. "
                f"--torch-backend cu{driver.major}{min(driver.minor, 8)}), "
                "or upgrade the NVIDIA driver",
            )
        ]
    if build > driver:
        return [
            Check(
                ref="cuda-build-newer-than-driver",
                severity="warning",
                message=f"torch is built for CUDA {build}, the driver supports CUDA {driver}: "
                "it runs through CUDA minor-version compatibility, but kernels JIT-compiled "
                "from PTX fail",
                fix=f"use a torch built for CUDA {driver} or older, or upgrade the NVIDIA driver",
            )
        ]
    return []


def _check_glibc(report: Mapping[str, Any]) -> list[Check]:
    glibc = _ver(report.get("glibc"))
    if glibc is None:
        return []
    out = []
    for name, info in sorted((report.get("wheel_tags") or {}).items()):
        needed = None
        for tag in info.get("tags", []):
            m = re.search(r"manylinux_(\d+)_(\d+)_", tag)
            if m:
                v = Version(f"{m.group(1)}.{m.group(2)}")
                needed = v if needed is None or v < needed else needed
        if needed is not None and needed > glibc:
            out.append(
                Check(
                    ref="glibc-too-old",
                    severity="error",
                    message=f"{name} {info.get('version')} is a manylinux_{needed.major}_"
                    f"{needed.minor} wheel; this system has glibc {glibc}",
                    fix=f"install a {name} release with a wheel for glibc {glibc} or older, "
                    "or run on a newer system",
                )
            )
    return out


def _check_llamafactory(report: Mapping[str, Any]) -> list[Check]:
    reqs = (report.get("requires") or {}).get("llamafactory")
    if not reqs:
        return []
    installed = {canonicalize_name(k): v for k, v in (report.get("installed") or {}).items()}
    env = dict(report.get("markers") or {})
    env["extra"] = ""
    out = []
    for text in reqs:
        try:
            req = Requirement(text)
            if req.marker is not None and not applies(req.marker, env):
                continue
        except (InvalidRequirement, InvalidMarker):
            continue
        have = installed.get(canonicalize_name(req.name))
        if have is None or not req.specifier:
            continue
        v = _ver(have)
        if v is not None and not req.specifier.contains(v, prereleases=True):
            out.append(
                Check(
                    ref="outside-llamafactory-pins",
                    severity="warning",
                    message=f"{req.name} {have} is outside LLaMA-Factory's pins ({req.specifier})",
                    fix=f"pip install '{req.name}{req.specifier}' (or find the version that works "
                    "with envbisect run; DISABLE_VERSION_CHECK=1 only silences the check)",
                )
            )
    return out


def _check_numpy_abi(report: Mapping[str, Any]) -> list[Check]:
    numpy = _ver((report.get("packages") or {}).get("numpy"))
    bad = report.get("numpy_abi") or []
    if numpy is None or numpy.major < 2 or not bad:
        return []
    names = ", ".join(f"{b['package']} {b['version']}" for b in bad)
    return [
        Check(
            ref="numpy2-abi",
            severity="error",
            message=f"numpy {numpy} is installed, and {names} (built against NumPy 1.x) "
            "fail to import with it",
            fix="pip install 'numpy<2', or upgrade those packages to releases built for NumPy 2",
        )
    ]


def render(report: Mapping[str, Any], found: list[Check]) -> str:
    """The report as text for people (stdout of ``envbisect env``)."""
    lines = [
        f"- `envbisect` version: {report.get('envbisect')}",
        f"- Platform: {report.get('platform')}",
        f"- Kernel: {report.get('kernel')}",
        f"- glibc: {report.get('glibc') or 'not glibc'}",
        f"- Python: {report.get('python')} ({report.get('executable')})",
    ]
    torch = report.get("torch")
    if torch:
        build = f"CUDA {torch['cuda']}" if torch.get("cuda") else "CPU-only build"
        if torch.get("hip"):
            build = f"ROCm {torch['hip']}"
        cudnn = f", cuDNN {torch['cudnn']}" if torch.get("cudnn") else ""
        lines.append(f"- PyTorch: {torch.get('version')} ({build}{cudnn})")
        if "cuda_available" in torch:
            lines.append(f"- torch.cuda.is_available(): {torch['cuda_available']}")
        for d in torch.get("devices") or []:
            lines.append(f"- GPU: {d['name']} ({d['memory_gib']} GiB, bf16: {d['bf16']})")
        if torch.get("import_error"):
            lines.append(f"- torch import failed: {torch['import_error']}")
    nvidia = report.get("nvidia")
    if nvidia:
        lines.append(
            f"- NVIDIA driver: {nvidia.get('driver')} (supports CUDA {nvidia.get('cuda')})"
        )
        if not torch:
            for g in nvidia.get("gpus") or []:
                lines.append(f"- GPU: {g['name']} ({g['memory_gib']} GiB)")
    else:
        lines.append("- NVIDIA driver: none found (no nvidia-smi)")
    for name, version in (report.get("packages") or {}).items():
        if version and name not in ("torch",):
            lines.append(f"- {name}: {version}")
    lines.append("")
    if not found:
        lines.append("checks: no problems found")
    for c in found:
        lines.append(f"{c.severity}: {c.message}")
        lines.append(f"  fix: {c.fix}")
    return "\n".join(lines) + "\n"
