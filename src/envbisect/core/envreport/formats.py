"""Each format of environment report, read from one piece of text (a ``Segment``).

One reader per format, each recognising lines only its format prints, each returning an
``EnvReport`` or None, labelled with its format's name: the ``- Key: value`` reports and
collect_env (and the facts of the machine they state), conda list, the three layouts of pip
list, pip freeze. core/envreport/registry.py declares each format (its name, its reader,
whether it lists every package) and the order they are tried in; core/envreport/read.py
merges what they read.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import replace

from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from envbisect.core.envreport.report import EnvReport, Row, Segment

# -- facts of the machine ------------------------------------------------------------------

_SYSTEMS = (
    (
        "Linux",
        re.compile(
            r"\blinux\b|ubuntu|debian|centos|fedora|red hat|rocky|alma|arch linux", re.IGNORECASE
        ),
    ),
    ("Darwin", re.compile(r"\bmacos\b|\bdarwin\b|\bmac os\b|os x", re.IGNORECASE)),
    ("Windows", re.compile(r"\bwindows\b|\bwin(?:32|64)\b|\bmingw|\bcygwin", re.IGNORECASE)),
)
_MACHINES = re.compile(r"(x86_64|amd64|aarch64|arm64|armv7l|ppc64le|s390x|i686)", re.IGNORECASE)


def platform_facts(text: str) -> tuple[str | None, str | None]:
    """(system, machine) of a platform string such as Python's ``platform.platform()``."""
    system = next((name for name, pattern in _SYSTEMS if pattern.search(text)), None)
    m = _MACHINES.search(text)
    return system, (m.group(1) if m else None)


def _python_version(value: str) -> str | None:
    m = re.match(r"\s*(\d+\.\d+(?:\.\d+)?)", value)
    return m.group(1) if m else None


# -- llamafactory-cli env, transformers env, accelerate env ---------------------------------

_FIELD = re.compile(r"^ ?[-*]\s+(?P<key>[^:]{1,80}?)\s*:\s*(?P<value>.*?)\s*$")
_VERSION_KEY = re.compile(r"^(?P<name>.+?)\s+version\b(?P<rest>.*)$", re.IGNORECASE)
# "- X version: V" keys that name no Python package.
_NOT_PACKAGES = frozenset(
    {
        "python",
        "cuda",
        "cudnn",
        "cann",
        "driver",
        "nvidia-driver",
        "gcc",
        "clang",
        "cmake",
        "libc",
        "rocm",
        "hip-runtime",
        "miopen-runtime",
        "cuda-runtime",
        "os",
        "kernel",
        "jax-backend",
        "npu",
        "xpu",
        "hpu",
        "mlu",
        "musa",
    }
)
# The names these reports use for packages whose distribution is called otherwise.
_FIELD_NAMES = {"pytorch": "torch", "huggingface-hub": "huggingface-hub", "jaxlib": "jaxlib"}
_SUBJECTS = {
    "llamafactory": "llamafactory-cli env",
    "transformers": "transformers env",
    "accelerate": "accelerate env",
}
_ABSENT = re.compile(
    r"^(?:not installed|not found|n/?a|none|<fill in>|could not collect|unknown|-)\b",
    re.IGNORECASE,
)
_GPU_SAID = re.compile(r"\((?:GPU|CUDA|True|ROCm|ROCM)\)", re.IGNORECASE)


def fields(seg: Segment) -> EnvReport | None:
    rows: list[Row] = []
    left: list[str] = []
    facts: dict[str, str] = {}
    subject = None
    for number, line in seg.numbered():
        m = _FIELD.match(line)
        if m is None:
            continue
        key, value = m["key"].replace("`", "").strip(), m["value"]
        low = key.lower()
        if low == "platform":
            facts.setdefault("platform", value)
        elif low == "python version":
            got = _python_version(value)
            if got:
                facts.setdefault("python", got)
        elif low == "git commit":
            if re.fullmatch(r"[0-9a-f]{7,40}", value):
                facts.setdefault("commit", value)
        elif low in ("gpu type", "gpu models and configuration"):
            if _says_gpu(value):
                facts["gpu"] = value  # its name says more than the "(GPU)" of torch's line
        else:
            vm = _VERSION_KEY.match(key)
            if vm is None:
                continue
            word = vm["name"].strip()
            if not re.fullmatch(_NAME, word):
                continue  # several words ("CUDA runtime", "GPU driver"): no package's label
            said = canonicalize_name(word)
            if said in _NOT_PACKAGES or not value or _ABSENT.match(value):
                continue
            name = _FIELD_NAMES.get(said, str(said))
            version = value.split()[0]
            if not _is_version(version):
                left.append(f"line {number}: {key}: {value} (not a version)")
                continue
            if name == "torch" and _GPU_SAID.search(value):
                facts.setdefault("gpu", "yes")
            if not rows and name in _SUBJECTS:
                subject = name
            rows.append(Row(name=name, version=version, line=number, kind="field"))
    if len(rows) < 2 and not ("python" in facts or "platform" in facts):
        return None
    system, machine = platform_facts(facts.get("platform", ""))
    label = _SUBJECTS.get(subject or "", "an environment list (- X version: V)")
    return EnvReport(
        formats=(label,) if rows else (),  # facts alone (a Platform line) name no format
        rows=tuple(rows),
        python=facts.get("python"),
        platform=facts.get("platform"),
        system=system,
        machine=machine,
        gpu=facts.get("gpu"),
        commit=facts.get("commit"),
        subject=subject,
        left_out=tuple(left),
    )


# -- python -m torch.utils.collect_env --------------------------------------------------------

_CE_FIELD = re.compile(r"^(?P<key>[A-Za-z][A-Za-z0-9 _/()-]{1,60}):\s*(?P<value>.*?)\s*$")
_CE_MARKS = (
    "is debug build",
    "versions of relevant libraries",
    "python platform",
    "cuda used to build pytorch",
    "is cuda available",
)
_CE_ROW = re.compile(r"^\[(?P<kind>pip3?|conda)\]\s+(?P<rest>.+?)\s*$")


def collect_env(seg: Segment) -> EnvReport | None:
    facts: dict[str, str] = {}
    rows: list[Row] = []
    left: list[str] = []
    marks = 0
    for number, line in seg.numbered():
        row = _CE_ROW.match(line)
        if row is not None:
            rest = row["rest"]
            if rest.lower().startswith("could not collect"):
                continue
            got = freeze_row(rest, number) if row["kind"] != "conda" else None
            if row["kind"] == "conda":
                got = _conda_row(rest, number, left)
            if got is not None:
                rows.append(got)
            continue
        m = _CE_FIELD.match(line)
        if m is None:
            continue
        key, value = m["key"].strip().lower(), m["value"]
        marks += key in _CE_MARKS
        if key == "pytorch version" and value and not _ABSENT.match(value):
            version = value.split()[0]
            if _is_version(version):
                rows.insert(0, Row(name="torch", version=version, line=number, kind="field"))
        elif key == "python version":
            got_py = _python_version(value)
            if got_py:
                facts.setdefault("python", got_py)
        elif key == "python platform":
            facts["platform"] = value
        elif key == "os":
            facts.setdefault("os", value)
        elif key == "cuda used to build pytorch" and re.match(r"\d+\.\d+", value):
            facts["torch_cuda"] = value
        elif key == "is cuda available" and value.lower() == "true":
            facts.setdefault("gpu", "yes")
        elif key == "gpu models and configuration" and _says_gpu(value):
            facts["gpu"] = value
    if marks == 0 or (marks < 2 and not any(r.name == "torch" for r in rows)):
        return None
    system, machine = platform_facts(facts.get("platform") or facts.get("os", ""))
    return EnvReport(
        formats=("torch collect_env",),
        rows=tuple(r for r in rows if r.key not in CONDA_TORCH_PARTS),
        python=facts.get("python"),
        platform=facts.get("platform") or facts.get("os"),
        system=system,
        machine=machine,
        torch_cuda=facts.get("torch_cuda") or _conda_torch_cuda(rows),
        gpu=facts.get("gpu"),
        subject="torch",
        left_out=tuple(left),
    )


def _says_gpu(value: str) -> bool:
    return bool(value) and not _ABSENT.match(value) and "no cuda" not in value.lower()


# -- conda list -----------------------------------------------------------------------------

_CONDA_HEADER = re.compile(r"^#\s*(?:packages in environment at\b|Name\s+Version\s+Build)")
# conda's names for packages whose PyPI distribution is called otherwise.
CONDA_NAMES = {
    "pytorch": "torch",
    "py-xgboost": "xgboost",
    "pytorch-lightning": "pytorch-lightning",
    "tensorflow-base": "tensorflow",
}
# Conda packages that are parts of torch's build, not distributions of their own.
CONDA_TORCH_PARTS = frozenset({"pytorch-cuda", "pytorch-mutex", "cudatoolkit", "cuda-toolkit"})
CONDA_CUDA = re.compile(r"cuda_?(\d+)\.?(\d)")


def conda_list(seg: Segment) -> EnvReport | None:
    if not any(_CONDA_HEADER.match(line) for line in seg.lines):
        return None
    rows: list[Row] = []
    left: list[str] = []
    for number, line in seg.numbered():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        got = _conda_row(line.strip(), number, left)
        if got is not None:
            rows.append(got)
    python = next((r.version for r in rows if r.key == "python"), None)
    torch_cuda = _conda_torch_cuda(rows)
    return EnvReport(
        formats=("conda list",),
        rows=tuple(r for r in rows if r.key != "python" and r.key not in CONDA_TORCH_PARTS),
        python=python,
        torch_cuda=torch_cuda,
        left_out=tuple(left),
    )


def _conda_row(text: str, number: int, left: list[str]) -> Row | None:
    """A row ``name version build [channel]``: pip's (channel pypi), a conda build of a Python
    package (a build string that names Python: ``py310h...``, ``pyhd8ed1ab_0``), or a conda
    package that is no Python distribution (set aside, with why)."""
    parts = text.split()
    if len(parts) < 2 or not _is_version_like(parts[1]):
        return None
    name, version = parts[0], parts[1]
    build = parts[2] if len(parts) > 2 else ""
    channel = parts[3] if len(parts) > 3 else ""
    key = canonicalize_name(name)
    if channel == "pypi" or build.startswith("pypi_"):
        return Row(name=name, version=version, line=number, kind="pip")
    if key == "python" or key in CONDA_TORCH_PARTS:
        return Row(name=key, version=version, line=number, kind="conda", build=build)
    if re.search(r"(?:^|_)py(?:\d|h|_|$)", build) or key in CONDA_NAMES:
        return Row(
            name=CONDA_NAMES.get(key, key), version=version, line=number, kind="conda", build=build
        )
    left.append(f"line {number}: {name} {version} (a conda package, no Python distribution)")
    return None


def _conda_torch_cuda(rows: Sequence[Row]) -> str | None:
    for r in rows:
        if r.key in ("pytorch-cuda", "cudatoolkit", "cuda-toolkit") and re.match(
            r"\d+\.\d+", r.version
        ):
            return ".".join(r.version.split(".")[:2])
        if r.key == "torch" and r.kind == "conda":
            m = CONDA_CUDA.search(r.build)
            if m:
                return f"{m.group(1)}.{m.group(2)}"
            if "cpu" in r.build:
                return "cpu"
    return None


# -- pip list -----------------------------------------------------------------------------

_COLUMNS_HEADER = re.compile(r"^\s*Package\s+Version(?:\s+.*)?$")
_RULE = re.compile(r"^\s*-{2,}(?:\s+-{2,})+\s*$")
_LEGACY = re.compile(r"^(?P<name>[A-Za-z0-9][A-Za-z0-9._-]*)\s+\((?P<version>[^,()\s]+)(?:,.*)?\)$")


def pip_columns(seg: Segment) -> EnvReport | None:
    rows: list[Row] = []
    lines = list(seg.numbered())
    for i, (_, line) in enumerate(lines[:-1]):
        if not (_COLUMNS_HEADER.match(line) and _RULE.match(lines[i + 1][1])):
            continue
        for number, row in lines[i + 2 :]:
            parts = row.split()
            if len(parts) < 2 or not _is_version_like(parts[1]):
                break
            rows.append(Row(name=parts[0], version=parts[1], line=number))
        break
    return EnvReport(formats=("pip list",), rows=tuple(rows)) if rows else None


def pip_legacy(seg: Segment) -> EnvReport | None:
    rows: list[Row] = []
    for number, line in seg.numbered():
        if not line.strip():
            continue
        m = _LEGACY.match(line.strip())
        if m is None:
            return None
        rows.append(Row(name=m["name"], version=m["version"], line=number))
    return EnvReport(formats=("pip list (legacy layout)",), rows=tuple(rows)) if rows else None


def pip_json(seg: Segment) -> EnvReport | None:
    text = seg.text.strip()
    if not text.startswith("[{"):
        return None
    try:
        data = json.loads(text)
    except ValueError:
        return None
    if not isinstance(data, list):
        return None
    rows = [
        Row(name=str(d["name"]), version=str(d["version"]), line=seg.start)
        for d in data
        if isinstance(d, dict) and isinstance(d.get("name"), str) and "version" in d
    ]
    return EnvReport(formats=("pip list (json)",), rows=tuple(rows)) if rows else None


# -- pip freeze, uv pip freeze -----------------------------------------------------------------

_NAME = r"[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?"
_PINNED = re.compile(rf"^(?P<name>{_NAME})(?:\[[^\]]*\])?\s*===?\s*(?P<version>[^\s;#]+)$")
_DIRECT = re.compile(rf"^(?P<name>{_NAME})(?:\[[^\]]*\])?\s*@\s*(?P<url>\S+)$")
_EDITABLE = re.compile(r"^(?:-e|--editable)\s+(?P<url>\S+)$")
# pip freeze's comment above an editable install it cannot name a repository for.
_EDITABLE_NOTE = re.compile(
    rf"^#\s*Editable\b.*\((?P<name>{_NAME})==(?P<version>[^\s)]+)\)\s*$", re.IGNORECASE
)
_PROMPT = re.compile(r"^(?:\([^)]*\)\s*)?[$%>]\s")
_EGG = re.compile(r"[#&]egg=(?P<name>[A-Za-z0-9._-]+)")


def freeze_row(text: str, number: int) -> Row | None:
    line = text.strip()
    m = _PINNED.match(line)
    if m is not None:
        return Row(name=m["name"], version=m["version"], line=number)
    m = _DIRECT.match(line)
    if m is not None:
        return Row(name=m["name"], version="", line=number, url=m["url"])
    m = _EDITABLE.match(line)
    if m is not None:
        egg = _EGG.search(m["url"])
        return Row(name=egg["name"] if egg else "", version="", line=number, url=m["url"])
    return None


def freeze(seg: Segment) -> EnvReport | None:
    """Freeze rows: every row of a segment that holds nothing else (a fenced block, a whole
    file; pip's comments aside), else each run of at least two consecutive rows (in prose, or
    after a ``$ pip freeze`` line)."""
    runs: list[list[Row]] = [[]]
    other = False
    noted: dict[int, Row] = {}
    for number, line in seg.numbered():
        stripped = line.strip()
        note = _EDITABLE_NOTE.match(stripped)
        if note is not None:
            noted[number + 1] = Row(name=note["name"], version=note["version"], line=number)
            continue
        if not stripped or stripped.startswith("#") or _PROMPT.match(stripped):
            continue  # a shell's prompt line ("$ pip freeze") is the command, not its output
        got = freeze_row(stripped, number)
        if got is not None and got.url and not got.name and number in noted:
            got = replace(noted[number], url=got.url)
        if got is None:
            other = True
            runs.append([])
        else:
            runs[-1].append(got)
    rows = [r for run in runs for r in run if not other or len(run) >= 2]
    return EnvReport(formats=("pip freeze",), rows=tuple(rows)) if rows else None


# -- helpers -----------------------------------------------------------------------------------


def _is_version(text: str) -> bool:
    try:
        Version(text)
    except InvalidVersion:
        return False
    return True


def _is_version_like(text: str) -> bool:
    """A version as conda and pip list print them (conda's may not be PEP 440: ``1.1.1w``)."""
    return bool(re.match(r"^v?\d[\w.+!-]*$", text))
