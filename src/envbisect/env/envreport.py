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
from typing import Any

from packaging.markers import InvalidMarker
from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from envbisect import __version__
from envbisect.core.markers import applies
from envbisect.errors import UsageError

PACKAGES = (
    "torch",
    "transformers",
    "datasets",
    "accelerate",
    "peft",
    "trl",
    "tokenizers",
    "pyarrow",
    "numpy",
    "deepspeed",
    "bitsandbytes",
    "vllm",
    "flash-attn",
    "llamafactory",
)

# Runs inside the reported environment: standard library only, Python 3.8 syntax.
REPORT_SCRIPT = r"""
import json, os, platform, re, subprocess, sys
from importlib import metadata
deep = len(sys.argv) > 1 and sys.argv[1] == "deep"
PACKAGES = __PACKAGES__
def norm(n): return re.sub(r"[-_.]+", "-", n or "").lower()
try:
    libc = os.confstr("CS_GNU_LIBC_VERSION") or ""
except (AttributeError, ValueError, OSError):
    libc = ""
out = {
    "platform": platform.platform(), "system": platform.system(), "machine": platform.machine(),
    "kernel": platform.release(),
    "glibc": libc.split(" ")[1] if libc.startswith("glibc ") else None,
    "python": platform.python_version(), "executable": sys.executable,
    "implementation": sys.implementation.name,
    "markers": {"sys_platform": sys.platform, "platform_system": platform.system(),
                "platform_machine": platform.machine(), "os_name": os.name,
                "python_version": "%d.%d" % sys.version_info[:2],
                "python_full_version": platform.python_version(),
                "implementation_name": sys.implementation.name,
                "platform_python_implementation": platform.python_implementation()},
    "packages": {}, "wheel_tags": {}, "requires": {}, "torch": None, "numpy_abi": None,
    "modules": {},
}
dists, versions = {}, {}
def paths(d):
    # RECORD read as text (d.files makes a path object of each of torch's 20,000 lines: most
    # of this script's time); a quoted path (one with a comma) and no RECORD: d.files.
    record = d.read_text("RECORD")
    if record is None or '"' in record:
        return [str(f) for f in d.files or []]
    return [l.rsplit(",", 2)[0] for l in record.splitlines() if l.count(",") >= 2]
for d in metadata.distributions():
    md = d.metadata  # parsed once: each d.version or d.metadata parses METADATA again
    name = norm(md["Name"])
    if not name or name in dists:
        continue
    dists[name], versions[name] = d, md["Version"]
    tags = [l.split(":", 1)[1].strip() for l in (d.read_text("WHEEL") or "").splitlines()
            if l.startswith("Tag:")]
    if tags:
        out["wheel_tags"][name] = {"version": versions[name], "tags": tags}
    # The top-level modules it installs (RECORD), so a failing frame or a module a message
    # names leads to its distribution (lock's descent).
    files = paths(d)
    if name == "torch":
        torch_files = files
    for f in files:
        parts = f.replace(os.sep, "/").split("/")
        top = parts[0][:-3] if len(parts) == 1 and parts[0].endswith(".py") else parts[0]
        if len(parts) == 1 and not parts[0].endswith(".py"):
            top = parts[0].split(".", 1)[0] if parts[0].endswith((".so", ".pyd")) else ""
        if (top and top.isidentifier() and not top.endswith(("-info", "__pycache__"))
                and top not in out["modules"]):
            out["modules"][top] = name
for p in PACKAGES:
    out["packages"][p] = versions.get(norm(p))
if "llamafactory" in dists:
    out["requires"]["llamafactory"] = list(dists["llamafactory"].requires or [])
out["installed"] = dict(sorted(versions.items()))
if "torch" in dists:
    t = {"version": versions["torch"], "cuda": None, "cudnn": None}
    for f in torch_files:
        if f.replace(os.sep, "/") == "torch/version.py":
            with open(str(dists["torch"].locate_file(f)), encoding="utf-8") as fh:
                text = fh.read()
            m = re.search(r"^cuda\s*(?::\s*\S+)?\s*=\s*['\"]([^'\"]+)['\"]", text, re.M)
            t["cuda"] = m.group(1) if m else None
            m = re.search(r"^hip\s*(?::\s*\S+)?\s*=\s*['\"]([^'\"]+)['\"]", text, re.M)
            t["hip"] = m.group(1) if m else None
    if deep:
        try:
            import torch
            cudnn = torch.backends.cudnn
            t["cudnn"] = cudnn.version() if cudnn.is_available() else None
            t["cuda_available"] = torch.cuda.is_available()
            t["devices"] = [
                {"name": torch.cuda.get_device_name(i),
                 "memory_gib": round(torch.cuda.get_device_properties(i).total_memory / 2**30, 1),
                 "bf16": bool(torch.cuda.is_bf16_supported())}
                for i in range(torch.cuda.device_count())
            ] if torch.cuda.is_available() else []
        except Exception as e:
            t["import_error"] = "%s: %s" % (type(e).__name__, e)
    out["torch"] = t
if deep and "numpy" in dists:
    bad = []
    for name, d in sorted(dists.items()):
        deps = {norm(re.match(r"\s*([A-Za-z0-9._-]*)", r).group(1)) for r in (d.requires or [])}
        if name == "numpy" or "numpy" not in deps:
            continue
        files = [str(f) for f in (d.files or [])]
        if not any(f.endswith((".so", ".pyd")) for f in files):
            continue
        top = (d.read_text("top_level.txt") or "").split()
        top = top or sorted({f.split("/")[0] for f in files if f.endswith("__init__.py")})
        for mod in top[:2]:
            if mod.startswith("_"):
                continue
            try:
                p = subprocess.run([sys.executable, "-I", "-c", "import " + mod],
                                   capture_output=True, text=True, timeout=120)
            except subprocess.TimeoutExpired:
                continue
            err = p.stderr
            if any(m in err for m in ("compiled using NumPy 1.x cannot be run in",
                                      "_ARRAY_API not found", "numpy.dtype size changed")):
                bad.append({"package": name, "version": d.version, "module": mod})
            break
    out["numpy_abi"] = bad
print(json.dumps(out))
""".replace("__PACKAGES__", repr(PACKAGES))


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
