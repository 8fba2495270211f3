"""A bug report in Markdown (a GitHub issue's body): its repro, the error it shows, and what
stops it from being reproduced on this machine.

Who does what: ``read_bug_report`` finds the repro and the error; the environment block is
read by read.py from the same text. ``reported_outcome`` turns the error into the
``Outcome`` that envbisect would have classified had it seen the reporter's run (through
``outcome.classify``, the one function that decides), so that "the same failure" is decided
by ``outcome.same_failure`` as everywhere else. ``obstacles`` names what this machine lacks
for the repro. Pure: text and facts in.

    the repro         the first Python code block (```python, or an untagged block that
                      starts with an import), else a ``llamafactory-cli train CONFIG.yaml``
                      command with the YAML block it refers to (the block whose file name the
                      text gives right above it, else the first YAML block)
    the error         the last Python exception the text shows (a traceback's last line, or
                      an ``XError: ...`` line), or a signal (``Segmentation fault``, faulthandler's
                      ``Fatal Python error``, ``SIGSEGV``...), whichever comes last; never read
                      from the repro's own code
"""

from __future__ import annotations

import re
import signal as _signal
from collections.abc import Callable
from dataclasses import dataclass

from envbisect.core.envreport.report import Segment, segments
from envbisect.core.outcome import classify
from envbisect.model import Outcome, RawProbe

__all__ = ["BugReport", "obstacles", "read_bug_report", "reported_outcome"]

_PY_LANGS = frozenset({"python", "py", "python3", "ipython"})
_YAML_LANGS = frozenset({"yaml", "yml"})
_TRAIN = re.compile(
    r"(?:^|\s)(?:llamafactory-cli|lmf)\s+train\s+(?P<config>[^\s'\"`]+\.ya?ml)\b", re.MULTILINE
)
_CONFIG_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}\.ya?ml$")
_EXCEPTION = re.compile(
    r"^(?:E\s+)?(?P<line>(?:[A-Za-z_][\w]*\.)*[A-Z][\w]*(?:Error|Exception|Interrupt|Exit"
    r"|Warning|Failure)(?::\s?.*)?)\s*$"
)
_TRACEBACK = "Traceback (most recent call last):"
# How reports show a process killed by a signal: the shell's words, faulthandler's, torch's.
_SIGNALS = (
    (
        re.compile(r"Segmentation fault|SIGSEGV|signal 11\b|exit ?code[:= ]+-11\b", re.IGNORECASE),
        _signal.SIGSEGV,
    ),
    (
        re.compile(
            r"\bAborted\b(?: \(core dumped\))?|SIGABRT|Fatal Python error: Aborted", re.IGNORECASE
        ),
        _signal.SIGABRT,
    ),
    (re.compile(r"\bBus error\b|SIGBUS", re.IGNORECASE), _signal.SIGBUS),
    (re.compile(r"\bIllegal instruction\b|SIGILL", re.IGNORECASE), _signal.SIGILL),
    (re.compile(r"\bFloating point exception\b|SIGFPE", re.IGNORECASE), _signal.SIGFPE),
)


@dataclass(frozen=True, slots=True, kw_only=True)
class BugReport:
    """The repro and the error of a report. ``code``: the Python block (``code_line``: its
    first line in the report); ``command``: a ``llamafactory-cli train`` command and
    ``config``/``config_name`` the YAML it reads; ``error``: the text the error was read from
    (a traceback, or the lines of a crash), ``error_line`` where it ends."""

    code: str | None = None
    code_line: int = 0
    command: tuple[str, ...] = ()
    command_line: int = 0
    config: str | None = None
    config_name: str | None = None
    error: str | None = None
    error_line: int = 0
    signal: str | None = None

    @property
    def has_repro(self) -> bool:
        return self.code is not None or bool(self.command)


def read_bug_report(text: str) -> BugReport:
    """The repro and the error of a Markdown report (module doc); fields are empty when the
    report has none."""
    segs = segments(text)
    code = _first_python(segs)
    command: tuple[str, ...] = ()
    config, config_name, command_line = None, None, 0
    if code is None:
        command, config, config_name, command_line = _train_command(segs)
    repro_segs = {id(s) for s in (code, config) if s is not None}
    error, error_line, sig = _last_error([s for s in segs if id(s) not in repro_segs])
    return BugReport(
        code=code.text + "\n" if code is not None else None,
        code_line=code.start if code is not None else 0,
        command=command,
        command_line=command_line,
        config=config.text + "\n" if config is not None else None,
        config_name=config_name,
        error=error,
        error_line=error_line,
        signal=sig,
    )


def _first_python(segs: list[Segment]) -> Segment | None:
    for seg in segs:
        if seg.lang in _PY_LANGS:
            return seg
    for seg in segs:
        if seg.lang in ("", "text") and _looks_like_python(seg):
            return seg
    return None


def _looks_like_python(seg: Segment) -> bool:
    if _TRACEBACK in seg.text:
        return False
    first = next((ln.strip() for ln in seg.lines if ln.strip() and not ln.startswith("#")), "")
    return bool(re.match(r"(?:import\s+\w|from\s+[\w.]+\s+import\s)", first))


def _train_command(
    segs: list[Segment],
) -> tuple[tuple[str, ...], Segment | None, str | None, int]:
    for seg in segs:
        if seg.lang in _YAML_LANGS:
            continue
        for number, line in seg.numbered():
            m = _TRAIN.search(line)
            if m is None:
                continue
            name = m["config"].replace("\\", "/").rsplit("/", 1)[-1]
            if not _CONFIG_NAME.match(name):
                continue  # never a path of ours: a plain file name or nothing
            return ("llamafactory-cli", "train", name), _yaml_for(segs, name), name, number
    return (), None, None, 0


def _yaml_for(segs: list[Segment], name: str) -> Segment | None:
    """The YAML block the text names ``name`` right above, else the first YAML block."""
    yamls = [i for i, s in enumerate(segs) if s.lang in _YAML_LANGS]
    for i in yamls:
        if i > 0 and name in "\n".join(segs[i - 1].lines[-3:]):
            return segs[i]
    return segs[yamls[0]] if yamls else None


def _last_error(segs: list[Segment]) -> tuple[str | None, int, str | None]:
    """(the error's text, its last line, the signal's name for a crash) of the last error."""
    best: tuple[int, str, str | None] | None = None
    for seg in segs:
        lines = list(seg.numbered())
        for i, (number, line) in enumerate(lines):
            stripped = line.strip()
            m = _EXCEPTION.match(stripped)
            if m is not None and _not_prose(m["line"]):
                start = _traceback_start(lines, i)
                text = "\n".join(ln for _, ln in lines[start : i + 1])
                best = (number, text, None)
                continue
            for pattern, sig in _SIGNALS:
                if pattern.search(stripped):
                    start = max(0, i - 40)
                    crash = "\n".join(ln for _, ln in lines[start : min(len(lines), i + 40)])
                    best = (number, crash, sig.name)
                    break
    if best is None:
        return None, 0, None
    return best[1], best[0], best[2]


def _not_prose(line: str) -> bool:
    """An exception line, not a sentence that starts with a class name and a colon."""
    head = line.split(":", 1)[0]
    return " " not in head


def _traceback_start(lines: list[tuple[int, str]], end: int) -> int:
    """Where the traceback that ends at ``end`` starts: its header, or (pasted without one)
    the first of the indented frame lines right above the exception line."""
    j = end
    while j > 0:
        prev = lines[j - 1][1]
        if prev.strip() == _TRACEBACK:
            return j - 1
        if not prev.strip() or not prev.startswith((" ", "\t")):
            break
        j -= 1
    return j


def reported_outcome(report: BugReport) -> Outcome | None:
    """The reporter's failure as envbisect would have classified it; None without an error."""
    if report.error is None:
        return None
    if report.signal is not None:
        signum = _signal.Signals[report.signal].value
        return classify(
            RawProbe(returncode=-signum, timed_out=False, seconds=0.0, stderr_tail=report.error)
        )
    text = report.error
    if _TRACEBACK not in text:
        text = f"{_TRACEBACK}\n{text}"
    return classify(
        RawProbe(returncode=1, timed_out=False, seconds=0.0, stderr_tail=_dedent_traceback(text))
    )


def _dedent_traceback(text: str) -> str:
    """A pasted traceback with its common indentation removed (classify reads the exception
    line as the first unindented line after the frames)."""
    lines = text.splitlines()
    start = next(i for i, ln in enumerate(lines) if ln.strip() == _TRACEBACK)
    indent = len(lines[start]) - len(lines[start].lstrip())
    return "\n".join(ln[indent:] if ln[:indent].isspace() else ln for ln in lines[start:])


# -- what this machine lacks ----------------------------------------------------------------

_CUDA_CODE = re.compile(
    r"\.cuda\(|\.to\(\s*['\"]cuda|device\s*=\s*['\"]cuda|device_map\s*=\s*['\"]cuda"
    r"|torch\.cuda\.(?!is_available)\w+\(|['\"]cuda:\d['\"]"
)
_CUDA_CONFIG = re.compile(
    r"^\s*(?:deepspeed|quantization_bit|flash_attn|infer_backend)\s*:\s*"
    r"(?!\s*(?:null|none|false|disabled|auto|sdpa|eager|huggingface)\b)\S",
    re.MULTILINE | re.IGNORECASE,
)
_CUDA_ERROR = re.compile(r"\bCUDA\b|\bcuDNN\b|\bNCCL\b|\bcublas\b", re.IGNORECASE)
_HUB_ID = r"['\"](?P<id>[A-Za-z0-9][\w.-]*(?:/[\w.-]+)?)['\"]"
_HUB_CALLS = (
    re.compile(
        r"(?:from_pretrained|hf_hub_download|snapshot_download|load_dataset)\s*\(\s*"
        r"(?:(?:repo_id|path|pretrained_model_name_or_path)\s*=\s*)?" + _HUB_ID
    ),
    re.compile(r"pipeline\s*\([^)]*?\bmodel\s*=\s*" + _HUB_ID),
)
# load_dataset's own loaders: they read local files, nothing is downloaded.
_LOADERS = frozenset(
    {
        "json",
        "csv",
        "parquet",
        "text",
        "arrow",
        "pandas",
        "imagefolder",
        "audiofolder",
        "videofolder",
        "webdataset",
        "generator",
        "sql",
    }
)
_HUB_CONFIG = re.compile(r"^\s*model_name_or_path\s*:\s*['\"]?(?P<id>[^\s'\"#]+)", re.MULTILINE)
_DATA_CONFIG = re.compile(r"^\s*dataset_dir\s*:\s*['\"]?(?P<dir>[^\s'\"#]+)", re.MULTILINE)
_DATASETS_CONFIG = re.compile(r"^\s*dataset\s*:\s*(?P<names>[^#\n]+)", re.MULTILINE)


def obstacles(
    report: BugReport,
    *,
    report_system: str | None,
    system: str,
    gpu: bool,
    allow_download: bool,
    exists: Callable[[str], bool],
) -> list[str]:
    """What stops the repro here, one line each (empty: nothing): the report's OS is not this
    one, the repro needs a CUDA GPU and there is none, the repro downloads a model or a data
    set from the Hub (unless ``allow_download``), or a LLaMA-Factory config reads data sets
    from a folder that is not here. ``exists(path)``: whether a path exists where the repro
    will run from."""
    found: list[str] = []
    if report_system and report_system != system:
        found.append(f"the report is from {report_system} and this machine runs {system}")
    if not gpu:
        m = _CUDA_CODE.search(report.code or "") or _CUDA_CONFIG.search(report.config or "")
        if m is not None:
            found.append(
                f"the repro needs a CUDA GPU ({m.group(0).strip()!r}); this machine has none"
            )
        elif report.error and report.signal is None and _CUDA_ERROR.search(_last(report.error)):
            found.append("the reported error is CUDA's; this machine has no GPU")
    if not allow_download:
        hub = _hub_download(report, exists)
        if hub is not None:
            found.append(f"the repro downloads {hub!r} from the Hugging Face Hub")
    if report.config is not None:
        folder = _DATA_CONFIG.search(report.config)
        wanted = folder["dir"] if folder else "data"
        names = _DATASETS_CONFIG.search(report.config)
        if names and not exists(wanted):
            found.append(
                f"the config reads the data sets {names['names'].strip()} from "
                f"{wanted}/ (LLaMA-Factory's folder), which is not here"
            )
    return found


def _hub_download(report: BugReport, exists: Callable[[str], bool]) -> str | None:
    """The first model or data set the repro takes from the Hub, not from a local path."""
    found = [m for p in _HUB_CALLS for m in p.finditer(report.code or "")]
    found += list(_HUB_CONFIG.finditer(report.config or ""))
    for m in sorted(found, key=lambda m: m.start()):
        ident = m["id"]
        if ident not in _LOADERS and not _local(ident) and not exists(ident):
            return ident
    return None


def _local(ident: str) -> bool:
    return ident.startswith(("/", "./", "../", "~")) or ident.endswith(
        (".json", ".jsonl", ".csv", ".parquet")
    )


def _last(text: str) -> str:
    return (text.strip().splitlines() or [""])[-1]
