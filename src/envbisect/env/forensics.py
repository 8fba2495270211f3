"""Crash forensics: re-run a crashed probe step under gdb for the native backtrace.

faulthandler gives the Python stacks; gdb gives the native side: the signal, the top native
frames, and the shared library that faulted (``libarrow.so``, ``libtorch_cpu.so``,
``libc.so.6``...). ``parse_gdb`` is pure (tested on real gdb output); ``capture`` runs gdb
through the same subprocess mechanism as the probes (own group, timeout).
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from envbisect.env.runner import run_process
from envbisect.model import Outcome, OutcomeKind

_SIGNAL = re.compile(r"Program (?:received|terminated with) signal (SIG[A-Z0-9]+)")
_FRAME = re.compile(
    r"^#(?P<n>\d+)\s+(?:0x[0-9a-f]+ in )?(?P<func>[^\s(]+)\s*\(.*?\)"
    r"(?:\s+(?:from (?P<lib>\S+)|at (?P<src>\S+)))?\s*$"
)
_SYMBOL = re.compile(r"^(?P<func>\S+)(?: \+ \d+)? in section \S+(?: of (?P<lib>\S+))?\s*$")


@dataclass(frozen=True, slots=True, kw_only=True)
class NativeTrace:
    signal: str | None
    library: str | None  # basename of the shared object that faulted, e.g. "libc.so.6"
    frames: tuple[str, ...]  # top native function names, innermost first
    text: str  # the backtrace as gdb printed it


def gdb_path() -> str | None:
    return shutil.which("gdb")


def gdb_command(gdb: str, argv: Sequence[str]) -> list[str]:
    return [
        gdb,
        "-nx",
        "-batch",
        "-ex", "set pagination off",
        "-ex", "set confirm off",
        "-ex", "set print thread-events off",
        "-ex", "handle SIGPIPE nostop noprint pass",
        "-ex", "run",
        "-ex", "echo ENVBISECT-SYMBOL\\n",
        "-ex", "info symbol $pc",
        "-ex", "echo ENVBISECT-BT\\n",
        "-ex", "bt 30",
        "-ex", "kill",
        "--args",
        *argv,
    ]  # fmt: skip


def capture(
    argv: Sequence[str],
    *,
    cwd: Path,
    env: Mapping[str, str],
    timeout: float,
    gdb: str,
) -> NativeTrace | None:
    """Run ``argv`` under gdb; None when it did not crash this time (a flaky crash)."""
    raw = run_process(gdb_command(gdb, argv), cwd=cwd, env=env, timeout=timeout)
    trace = parse_gdb(raw.stdout_tail + "\n" + raw.stderr_tail)
    return trace if trace.signal else None


def parse_gdb(text: str) -> NativeTrace:
    sig_m = _SIGNAL.search(text)
    signal = sig_m.group(1) if sig_m else None
    library: str | None = None
    sym_block = _section(text, "ENVBISECT-SYMBOL", "ENVBISECT-BT")
    for line in sym_block.splitlines():
        m = _SYMBOL.match(line.strip())
        if m:
            library = _base(m["lib"]) if m["lib"] else "the python executable"
            break
    bt = _section(text, "ENVBISECT-BT", None)
    frames: list[str] = []
    lines = []
    for line in bt.splitlines():
        if not line.startswith("#"):
            continue
        lines.append(line.rstrip())
        m = _FRAME.match(line.strip())
        if m:
            frames.append(m["func"])
            if library is None and m["n"] == "0" and m["lib"]:
                library = _base(m["lib"])
    return NativeTrace(signal=signal, library=library, frames=tuple(frames), text="\n".join(lines))


def enrich(outcome: Outcome, trace: NativeTrace) -> Outcome:
    """The crash outcome with the faulting library and native frames in its signature."""
    if outcome.kind is not OutcomeKind.CRASH:
        return outcome
    native = trace.library or "?"
    top = next((f for f in trace.frames if f != "??"), None)
    where = f"{native} ({top})" if top else native
    python_frame = ""
    if " in " in outcome.signature:
        python_frame = " at " + outcome.signature.split(" in ", 1)[1]
    signal = outcome.signal or trace.signal or "SIG?"
    return replace(
        outcome,
        signature=f"{signal} in {where}{python_frame}",
        library=trace.library,
        native_frames=trace.frames[:8],
        detail=outcome.detail + "\n\nnative backtrace (gdb):\n" + trace.text,
    )


def _section(text: str, start: str, end: str | None) -> str:
    i = text.find(start)
    if i < 0:
        return ""
    j = text.find(end, i) if end else -1
    return text[i + len(start) : j if j >= 0 else len(text)]


def _base(path: str) -> str:
    return path.rsplit("/", 1)[-1]
