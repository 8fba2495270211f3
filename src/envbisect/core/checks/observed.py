"""What a report (or this machine) says that the checks read, each fact with the line it is on.

Who does what: ``from_text`` reads a bug report's text: the environment report in it
(core/envreport/read.py: llamafactory-cli env, transformers env, collect_env, pip freeze...)
for the packages, and the rest of the text for what those blocks do not hold: the NVIDIA
driver (collect_env's line, nvidia-smi's header, torch's "driver ... too old (found version
11040)"), the GPUs (a ``GPU type`` line, nvidia-smi's rows, a model named in prose), torch's
CUDA build (its local version, collect_env's ``CUDA used to build PyTorch``, an
``nvidia-cuda-runtime-cu12`` row), the LLaMA-Factory stage (the config's ``stage:``,
``--stage``, a traceback frame under ``train/<stage>/``, an example config's name), a version
written ``name==V`` in prose, a wheel's file name, ``torch.__version__`` printed in a REPL.
``from_machine`` takes what ``envbisect env`` collects here instead. Pure: text or data in.

Facts are as written: what they mean (which CUDA a torch of PyPI was built for, what a
driver supports) is the rules' to decide (core/checks/cudarules.py).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from packaging.utils import canonicalize_name

from envbisect.core.envreport.formats import platform_facts
from envbisect.core.envreport.prose import stack_versions
from envbisect.core.envreport.read import read_report

HERE = 0  # the line of a fact read from this machine, not from a report


@dataclass(frozen=True, slots=True, kw_only=True)
class Said:
    """A fact and where it is said: ``line`` in the report (1-based; ``HERE``: this machine)
    and ``text``, the line as written."""

    value: str
    line: int
    text: str
    how: str = ""  # where a person wrote it: "prose", "pip show", "pip install after the block"

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"line": self.line or None, "text": self.text}
        if self.how:
            out["how"] = self.how
        return out


@dataclass(frozen=True, slots=True, kw_only=True)
class Observed:
    """What one report says (module doc). ``packages``: canonical name -> its version;
    ``sources``: a package installed from a URL or a wheel file named in the text;
    ``torch_cuda``: the CUDA torch's build names (``12.4``), or ``cpu``, ``rocm``, ``xpu``;
    ``wants_gpu``: a line that says CUDA was expected and is not there; ``listed``: the
    packages a tool printed (an environment block, this machine), not a person's prose."""

    origin: str
    formats: tuple[str, ...] = ()
    packages: Mapping[str, Said] = field(default_factory=dict)
    listed: frozenset[str] = frozenset()
    sources: Mapping[str, Said] = field(default_factory=dict)
    python: Said | None = None
    system: str | None = None
    torch_cuda: Said | None = None
    driver: Said | None = None
    driver_cuda: Said | None = None
    gpus: tuple[Said, ...] = ()
    wants_gpu: Said | None = None
    stage: Said | None = None
    bnb_legacy: Said | None = None  # bitsandbytes' own report, as printed before 0.43.0
    lines: tuple[str, ...] = ()

    def version(self, name: str) -> str | None:
        said = self.packages.get(canonicalize_name(name))
        return said.value if said is not None else None

    def find(self, pattern: re.Pattern[str]) -> Iterator[tuple[Said, re.Match[str]]]:
        """Each line of the report ``pattern`` matches, with the match."""
        for number, line in enumerate(self.lines, 1):
            m = pattern.search(line)
            if m is not None:
                yield Said(value=m.group(0), line=number, text=line.strip()), m

    def python_minor(self) -> str | None:
        if self.python is None:
            return None
        m = re.match(r"(\d+)\.(\d+)", self.python.value)
        return f"{m.group(1)}.{m.group(2)}" if m else None


# -- from a report's text -------------------------------------------------------------------

_DRIVER = (
    re.compile(r"Nvidia driver version:\s*(\d{3}\.\d+(?:\.\d+)?)", re.IGNORECASE),
    re.compile(r"Driver Version:\s*(\d{3}\.\d+(?:\.\d+)?)"),
    re.compile(r"\bdriver(?: version)?\s*[:=]?\s*(\d{3}\.\d{2,3}(?:\.\d+)?)\b", re.IGNORECASE),
)
_SMI_CUDA = re.compile(r"CUDA Version:\s*(\d+\.\d+)")
_NO_CUDA_AVAILABLE = re.compile(r"^Is CUDA available:\s*False\b", re.IGNORECASE)
_BNB_TORCH = re.compile(r"PyTorch settings found: CUDA_VERSION=(\d+)(\d)\b")
# bitsandbytes' diagnostic before 0.43.0 (its cuda_setup/main.py): the banner, then CUDA SETUP
_BNB_LEGACY = re.compile(r"^=+BUG REPORT=+$")
_TOO_OLD = re.compile(r"driver on your system is too old \(found version (\d{4,5})\)")
_BUILT_FOR = re.compile(r"^CUDA used to build PyTorch:\s*(\S.*?)\s*$", re.IGNORECASE)
_GPU_FIELD = re.compile(
    r"^\s*[-*]?\s*(?:GPU type|GPU models and configuration|GPU \d+|Device)\s*:\s*(?P<gpu>.+?)"
    r"\s*(?:\(UUID[^)]*\))?\s*$",
    re.IGNORECASE,
)
_SMI_ROW = re.compile(
    r"^\|\s+\d+\s+(?P<gpu>(?:NVIDIA|Tesla|Quadro|GeForce|TITAN)[^|]*?)\s+(?:On|Off)\s+\|"
)
_GPU_NAME = re.compile(
    r"(?P<gpu>(?:NVIDIA\s+)?(?:GeForce\s+)?(?:RTX|GTX)\s?\d{3,4}(?:\s?(?:Ti|SUPER|D))?\b"
    r"|(?:NVIDIA|Tesla)\s+[ABHLPTV]\d{1,3}\w*(?:-\w+)*"
    r"|\b(?:A100|A800|H100|H800|H200|H20|V100|B200|GB200|L40S?)\b)"
)
_NO_GPU = re.compile(r"^(?:no cuda|none|n/?a|could not collect|<fill in>)", re.IGNORECASE)
# Lookarounds, not \b: prose in Chinese puts a letter right after a CJK character, which is a
# word character too ("显示cuda is no avaible", "win10下").
_WANTS_GPU = re.compile(
    r"Torch not compiled with CUDA enabled|(?<![A-Za-z])cuda\s+is\s+(?:not|no)\s+ava[a-z]*"
    r"|torch\.cuda\.is_available\(\)\s*(?:returns?|is|==|=)?\s*False",
    re.IGNORECASE,
)
_STAGE_YAML = re.compile(r"^\s*stage\s*:\s*['\"]?(?P<stage>sft|pt|rm|dpo|kto|ppo)\b")
_STAGE_FLAG = re.compile(r"--stage[ =](?P<stage>sft|pt|rm|dpo|kto|ppo)\b")
_STAGE_FRAME = re.compile(
    r"(?:llamafactory|llmtuner)[/\\](?:train|tuner)[/\\](?P<stage>sft|pt|rm|dpo|kto|ppo)[/\\]"
    r"|\brun_(?P<run>sft|pt|rm|dpo|kto|ppo)\("
)
_STAGE_FILE = re.compile(r"_(?P<name>sft|pretrain|reward|dpo|kto|ppo)\.ya?ml\b")
_FILE_STAGES = {"pretrain": "pt", "reward": "rm"}
_PINNED = re.compile(r"(?<![\w.-])(?P<name>[A-Za-z][\w.-]*?)==(?P<version>\d+(?:\.\d+)+[\w.+!-]*)")
_WHEEL = re.compile(
    r"(?P<name>[A-Za-z][\w.]*?)-(?P<version>\d[\w.+!]*?)-(?:py|cp)\d+[\w.]*-[\w.]+-[\w.]+\.whl"
)
_REPL_TORCH = re.compile(r"torch\.__version__\)?\s*\n\s*['\"]?(?P<version>\d+\.\d+[\w.+]*)")
_SUBJECT = re.compile(
    r"\b(?P<name>llama[-_ ]?factory|llmtuner)\b[^\n\d]{0,12}?v?(?P<version>\d+\.\d+\.\d+"
    r"(?:\.dev\d+)?)",
    re.IGNORECASE,
)
_WINDOWS = re.compile(r"(?<![A-Za-z0-9])win(?:10|11|dows)(?![A-Za-z0-9])", re.IGNORECASE)
_COMMENT = re.compile(r"<!--.*?-->", re.DOTALL)


def from_text(text: str, *, origin: str) -> Observed | None:
    """What ``text`` says (module doc); None when it names no package, torch build, driver or
    GPU at all (no report to check)."""
    # GitHub does not show HTML comments (issue templates' guidance): blanked, lines kept.
    text = _COMMENT.sub(lambda m: "\n" * m.group(0).count("\n"), text)
    lines = tuple(text.splitlines())
    env = read_report(text)
    packages: dict[str, Said] = {}
    sources: dict[str, Said] = {}
    for row in env.rows if env is not None else ():
        if not row.key or row.key in packages:
            continue
        written = _line(lines, row.line)
        if row.url is not None:
            sources[row.key] = Said(value=row.url, line=row.line, text=written)
            wheel = _WHEEL.search(row.url)
            if wheel is not None and not row.version:
                packages[row.key] = Said(value=wheel["version"], line=row.line, text=written)
        if row.version:
            packages[row.key] = Said(value=row.version, line=row.line, text=written)
    listed = frozenset(packages)
    _from_prose(lines, packages, sources)
    _as_written(text, lines, packages, max((r.line for r in env.rows), default=0) if env else 0)
    facts = Observed(
        origin=origin,
        formats=env.formats if env is not None else (),
        packages=packages,
        listed=listed,
        sources=sources,
        python=_python(lines, env.python if env is not None else None),
        system=_system(lines, env.system if env is not None else None),
        torch_cuda=_torch_cuda(lines, packages, env.torch_cuda if env is not None else None),
        driver=_first(lines, _DRIVER),
        driver_cuda=_driver_cuda(lines),
        gpus=_gpus(lines),
        wants_gpu=_first_said(lines, _WANTS_GPU),
        stage=_stage(lines),
        bnb_legacy=_first_said(lines, _BNB_LEGACY) if "CUDA SETUP" in text.upper() else None,
        lines=lines,
    )
    if not (packages or facts.torch_cuda or facts.driver or facts.gpus or facts.bnb_legacy):
        return None
    return facts


def _line(lines: tuple[str, ...], number: int) -> str:
    return lines[number - 1].strip() if 0 < number <= len(lines) else ""


def _from_prose(
    lines: tuple[str, ...], packages: dict[str, Said], sources: dict[str, Said]
) -> None:
    """Versions the environment blocks do not hold: ``name==V`` anywhere (an error's "found
    trl==0.24.0" included), a wheel's file name (a ``pip install URL`` line), torch's version
    printed in a REPL, a LLaMA-Factory release named in prose."""
    for number, line in enumerate(lines, 1):
        for m in _WHEEL.finditer(line):
            key = canonicalize_name(m["name"])
            # The whole word the file name ends: its URL where the line gives one.
            start = max(line.rfind(c, 0, m.start()) for c in " `'\"(") + 1
            where = line[start : m.end()]
            sources.setdefault(key, Said(value=where, line=number, text=line.strip()))
            packages.setdefault(
                key, Said(value=m["version"], line=number, text=line.strip(), how="prose")
            )
        for m in _PINNED.finditer(line):
            key = canonicalize_name(m["name"])
            version = m["version"].rstrip(".")  # "found trl==0.24.0." ends a sentence
            packages.setdefault(
                key, Said(value=version, line=number, text=line.strip(), how="prose")
            )
    text = "\n".join(lines)
    repl = _REPL_TORCH.search(text)
    if repl is not None and "torch" not in packages:
        number = text.count("\n", 0, repl.start("version")) + 1
        packages["torch"] = Said(
            value=repl["version"], line=number, text=_line(lines, number), how="prose"
        )
    if "llamafactory" not in packages and "llmtuner" not in packages:
        for number, line in enumerate(lines, 1):
            s = _SUBJECT.search(line)
            if s is not None:
                subject = "llmtuner" if s["name"].lower() == "llmtuner" else "llamafactory"
                packages[subject] = Said(
                    value=s["version"], line=number, text=line.strip(), how="prose"
                )
                break


def _as_written(
    text: str, lines: tuple[str, ...], packages: dict[str, Said], block_end: int
) -> None:
    """The stack's versions as people write them (core/envreport/prose.py), where no block
    holds them, marked as read from prose; a ``pip install X==V`` after the environment block
    is the version the failure ran with: it replaces the block's, and says so."""
    for name, found in stack_versions(text).items():
        number = text.count("\n", 0, found.at) + 1
        said = Said(value=found.version, line=number, text=_line(lines, number), how=found.how)
        have = packages.get(name)
        if have is None:
            if name == "llmtuner" or ("llmtuner" in packages and name == "llamafactory"):
                continue
            packages[name] = (
                said if found.how != "pip install" else replace(said, how="pip install")
            )
        elif found.how == "pip install" and number > block_end and have.value != found.version:
            packages[name] = replace(said, how="pip install after the block")


def _first(lines: tuple[str, ...], patterns: tuple[re.Pattern[str], ...]) -> Said | None:
    """The first group of the first pattern that matches a line (patterns in order of trust)."""
    for pattern in patterns:
        for number, line in enumerate(lines, 1):
            m = pattern.search(line)
            if m is not None:
                return Said(value=m.group(1), line=number, text=line.strip())
    return None


def _first_said(lines: tuple[str, ...], pattern: re.Pattern[str]) -> Said | None:
    for number, line in enumerate(lines, 1):
        m = pattern.search(line)
        if m is not None:
            return Said(value=m.group(0), line=number, text=line.strip())
    return None


def _python(lines: tuple[str, ...], python: str | None) -> Said | None:
    if python is None:
        return None
    for number, line in enumerate(lines, 1):
        if "python" in line.lower() and python in line:
            return Said(value=python, line=number, text=line.strip())
    return Said(value=python, line=0, text=f"Python {python}")


def _system(lines: tuple[str, ...], system: str | None) -> str | None:
    if system is not None:
        return system
    for line in lines:
        if _WINDOWS.search(line):
            return "Windows"
        found, _ = platform_facts(line)
        if found is not None:
            return found
    return None


def _torch_cuda(
    lines: tuple[str, ...], packages: Mapping[str, Said], conda_cuda: str | None
) -> Said | None:
    """The build torch's report names (module doc), never inferred from its version alone."""
    torch = packages.get("torch")
    if torch is not None and "+" in torch.value:
        local = torch.value.split("+", 1)[1]
        m = re.fullmatch(r"cu(\d+)(\d)|cuda(\d+)\.(\d)", local)  # +cu118, or +cuda11.8 written
        if m:
            major, minor = (m.group(1), m.group(2)) if m.group(1) else (m.group(3), m.group(4))
            return Said(value=f"{major}.{minor}", line=torch.line, text=torch.text)
        for kind in ("cpu", "rocm", "xpu"):
            if local.startswith(kind):
                return Said(value=kind, line=torch.line, text=torch.text)
    for number, line in enumerate(lines, 1):
        m = _BUILT_FOR.match(line.strip())
        if m is None:
            continue
        value = m.group(1)
        cuda = re.match(r"\d+\.\d+", value)
        if cuda:
            return Said(value=cuda.group(0), line=number, text=line.strip())
        if value.lower() == "none":
            return Said(value="cpu", line=number, text=line.strip())
        # collect_env could not ask torch's build, and torch says no CUDA while the report
        # lists GPUs: a CPU build on a machine with GPUs
        unavailable = any(_NO_CUDA_AVAILABLE.match(x.strip()) for x in lines)
        if value.lower().startswith("could not collect") and unavailable and _gpus(lines):
            return Said(value="cpu", line=number, text=line.strip())
    for number, line in enumerate(lines, 1):
        m = _BNB_TORCH.search(line)  # bitsandbytes' own report: "CUDA_VERSION=121"
        if m is not None:
            return Said(value=f"{m.group(1)}.{m.group(2)}", line=number, text=line.strip())
    if conda_cuda is not None and torch is not None:
        return Said(value=conda_cuda, line=torch.line, text=torch.text)
    for name, said in packages.items():
        m = re.fullmatch(r"nvidia-cuda-runtime-cu(\d+)", name)
        cuda = re.match(r"(\d+)\.(\d+)", said.value)
        if m and cuda:
            return Said(value=f"{cuda.group(1)}.{cuda.group(2)}", line=said.line, text=said.text)
    return None


def _driver_cuda(lines: tuple[str, ...]) -> Said | None:
    said = _first(lines, (_SMI_CUDA,))
    if said is not None:
        return said
    for number, line in enumerate(lines, 1):
        m = _TOO_OLD.search(line)
        if m is not None:
            code = int(m.group(1))  # torch's cudaDriverGetVersion: 11040 is CUDA 11.4
            return Said(value=f"{code // 1000}.{code % 1000 // 10}", line=number, text=line.strip())
    return None


def _gpus(lines: tuple[str, ...]) -> tuple[Said, ...]:
    found: dict[str, Said] = {}
    for number, line in enumerate(lines, 1):
        m = _GPU_FIELD.match(line) or _SMI_ROW.match(line)
        names = [m["gpu"]] if m is not None else [g["gpu"] for g in _GPU_NAME.finditer(line)]
        for name in names:
            name = re.sub(r"^GPU \d+:\s*", "", name.strip())
            if name and not _NO_GPU.match(name) and _GPU_NAME.search(name):
                found.setdefault(name, Said(value=name, line=number, text=line.strip()))
    return tuple(found.values())


def _stage(lines: tuple[str, ...]) -> Said | None:
    """The LLaMA-Factory stage: the config's, then a flag's, a traceback's, a config's name."""
    for pattern in (_STAGE_YAML, _STAGE_FLAG, _STAGE_FRAME, _STAGE_FILE):
        for number, line in enumerate(lines, 1):
            m = pattern.search(line)
            if m is None:
                continue
            groups = {k: v for k, v in m.groupdict().items() if v}
            value = groups.get("stage") or groups.get("run") or groups.get("name", "")
            return Said(value=_FILE_STAGES.get(value, value), line=number, text=line.strip())
    return None


# -- from this machine ------------------------------------------------------------------------


def from_machine(
    report: Mapping[str, Any], nvidia: Mapping[str, Any] | None, *, origin: str
) -> Observed:
    """What ``envbisect env`` collected here (env/envreport.py ``collect``, quick) and what
    nvidia-smi said, as a report's facts (each on line ``HERE``)."""
    installed = report.get("installed") or {}
    packages: dict[str, Said] = {
        canonicalize_name(k): Said(value=str(v), line=HERE, text=f"{k} {v} (installed)")
        for k, v in installed.items()
        if v
    }
    torch = report.get("torch") or {}
    torch_cuda = None
    if torch:
        build = "rocm" if torch.get("hip") else (torch.get("cuda") or "cpu")
        torch_cuda = Said(
            value=str(build),
            line=HERE,
            text=f"torch {torch.get('version')} (built for {'CUDA ' if build[0].isdigit() else ''}"
            f"{build})",
        )
    smi = nvidia or {}
    driver = smi.get("driver")
    cuda = smi.get("cuda")
    python = report.get("python")
    return Observed(
        origin=origin,
        formats=("this machine",),
        packages=packages,
        listed=frozenset(packages),
        python=Said(value=str(python), line=HERE, text=f"Python {python}") if python else None,
        system=report.get("system"),
        torch_cuda=torch_cuda,
        driver=Said(value=str(driver), line=HERE, text=f"NVIDIA driver {driver} (nvidia-smi)")
        if driver
        else None,
        driver_cuda=Said(value=str(cuda), line=HERE, text=f"nvidia-smi: CUDA Version {cuda}")
        if cuda
        else None,
        gpus=tuple(
            Said(value=str(g["name"]), line=HERE, text=f"GPU: {g['name']} (nvidia-smi)")
            for g in smi.get("gpus") or []
        ),
    )
