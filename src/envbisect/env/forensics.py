"""Crash forensics: re-run a crashed probe step under gdb for the native backtrace.

faulthandler gives the Python stacks; gdb gives the native side: the signal, the thread that
received it, its native frames, and the shared library that faulted (``libarrow.so``,
``libtorch_cpu.so``, ``libc.so.6``...). ``parse_gdb`` is pure (tested on real gdb output);
``capture`` runs gdb through the same subprocess mechanism as the probes (own group, timeout).

When gdb stops on a signal it selects the thread that received it, so ``bt`` is that thread's
backtrace (not thread 1's); ``thread`` names it, and ``frame apply ... info symbol $pc`` gives
the object file of every frame, for frames that gdb printed without one (``at file.cc:12``).
A pasted ``thread apply all bt`` is read too: the crashing thread's block is the one used.
"""

from __future__ import annotations

import enum
import re
import shutil
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from envbisect.env.runner import run_process
from envbisect.model import Outcome, OutcomeKind


class NativeBacktrace(enum.Enum):
    """When a crash is re-run under gdb for its native frames (``--native-backtrace``)."""

    AUTO = "auto"  # when gdb is installed
    ALWAYS = "always"  # gdb or a usage error
    NEVER = "never"


# "Program received signal SIGSEGV", "Thread 3 "worker" received signal SIGSEGV", and after a
# core: "Program terminated with signal SIGSEGV".
_SIGNAL = re.compile(
    r'(?:Program|Thread (?P<num>\d+)(?: "(?P<name>[^"]*)")?) '
    r"(?:received|terminated with) signal (?P<sig>SIG[A-Z0-9]+)"
)
_CURRENT = re.compile(r"^\[Current thread is (?P<num>\d+) ", re.MULTILINE)
_THREAD_BLOCK = re.compile(r"^Thread (?P<num>\d+) \(.*\):\s*$", re.MULTILINE)
_FRAME_HEAD = re.compile(r"^#(?P<n>\d+)\s+(?:0x[0-9a-fA-F]+ in )?(?P<rest>.*?)\s*$")
_WHERE = re.compile(r"\s+(?P<how>from|at)\s+(?P<what>\S+)$")
_SYMBOL = re.compile(r"^(?P<func>.+?)(?: \+ \d+)? in section \S+(?: of (?P<lib>\S+))?\s*$")
# Operators whose spelling holds brackets or spaces (``operator()``, ``operator<<``,
# ``operator new[]``, ``operator bool``): masked before brackets are counted.
_OPERATOR = re.compile(
    r"(?<!\w)operator(?:\(\)|\[\]|<=>|->\*?|<<=?|>>=?|&&|\|\||\+\+|--|[-+*/%^&|~!=<>,]=?"
    r"|\s+(?:new|delete)(?:\[\])?|\s+(?=[A-Za-z_]))"
)
_QUOTED = re.compile(r"\"(?:[^\"\\]|\\.)*\"|'(?:[^'\\]|\\.)'")
_QUALIFIERS = re.compile(r"(?:\s+\[clone [^\]]*\]|\s+(?:const|volatile|noexcept|&&|&))+$")
_OPEN, _CLOSE = "(<[{", ")>]}"


@dataclass(frozen=True, slots=True, kw_only=True)
class NativeTrace:
    signal: str | None
    library: str | None  # basename of the shared object that faulted, e.g. "libc.so.6"
    frames: tuple[str, ...]  # native function names of the crashing thread, innermost first
    text: str  # the backtrace as gdb printed it
    thread: str | None = None  # the thread that received the signal, e.g. '3 "worker"'
    # The innermost named function in the faulting library itself: None when that library's
    # frames are all "??" (a stripped wheel); never a function of another binary further out.
    function: str | None = None


def gdb_path() -> str | None:
    return shutil.which("gdb")


def gdb_command(gdb: str, argv: Sequence[str]) -> list[str]:
    return [
        gdb,
        "-nx",
        "-batch",
        "-ex",
        "set pagination off",
        "-ex",
        "set width 0",
        "-ex",
        "set confirm off",
        "-ex",
        "set print thread-events off",
        "-ex",
        "handle SIGPIPE nostop noprint pass",
        "-ex",
        "run",
        "-ex",
        "echo ENVBISECT-SYMBOL\\n",
        "-ex",
        "info symbol $pc",
        "-ex",
        "echo ENVBISECT-THREAD\\n",
        "-ex",
        "thread",
        "-ex",
        "echo ENVBISECT-BT\\n",
        "-ex",
        "bt 30",
        "-ex",
        "echo ENVBISECT-FRAMES\\n",
        "-ex",
        "frame apply 30 -q -s info symbol $pc",
        "-ex",
        "echo ENVBISECT-END\\n",
        "-ex",
        "kill",
        "--args",
        *argv,
    ]


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
    """The crashing thread's signal, frames and faulting library from gdb's output.

    The library is that of the innermost frame that has one: ``info symbol $pc`` for frame
    0, else each frame's ``from LIB`` or its ``info symbol`` line; a frame in the main program
    (``info symbol`` names no object) counts as "the python executable".
    """
    head = text.split("ENVBISECT-SYMBOL", 1)[0]
    signals = list(_SIGNAL.finditer(head)) or list(_SIGNAL.finditer(text))
    sig_m = signals[-1] if signals else None
    signal = sig_m["sig"] if sig_m else None
    number = sig_m["num"] if sig_m else None
    current = _CURRENT.search(_section(text, "ENVBISECT-THREAD", "ENVBISECT-BT"))
    if current:
        number = current["num"]
    thread = None
    if number:
        name = sig_m["name"] if sig_m and sig_m["num"] == number else None
        thread = f'{number} "{name}"' if name else number
    bt = _thread_block(_section(text, "ENVBISECT-BT", "ENVBISECT-FRAMES") or text, number)
    names: list[str] = []
    libs: list[str | None] = []
    lines: list[str] = []
    for line in bt.splitlines():
        if not line.startswith("#"):
            continue
        parsed = parse_frame(line)
        if parsed is None:
            continue
        if names and parsed[2] == 0:
            break  # the next thread's frames
        lines.append(line.rstrip())
        names.append(parsed[0])
        libs.append(parsed[1])
    symbols = [_symbol_lib(s) for s in _lines(_section(text, "ENVBISECT-FRAMES", "ENVBISECT-END"))]
    if len(symbols) == len(libs):  # one line per frame: gdb named each frame's object file
        libs = [lib or sym for lib, sym in zip(libs, symbols, strict=True)]
    at_pc = _lines(_section(text, "ENVBISECT-SYMBOL", "ENVBISECT-"))
    pc = next((_symbol_lib(s) for s in at_pc if _SYMBOL.match(s.strip())), None)
    if pc is not None:
        libs = [pc, *libs[1:]] if libs else [pc]
    library = next((lib for lib in libs if lib), None)
    return NativeTrace(
        signal=signal,
        library=library,
        frames=tuple(names),
        text="\n".join(lines),
        thread=thread,
        function=_faulting_function(names, libs, library),
    )


_UNNAMED = ("??", "<signal handler called>")


def _faulting_function(names: list[str], libs: list[str | None], library: str | None) -> str | None:
    """The innermost named frame in the faulting library. A frame gdb printed without an
    object file counts only before that library's own frames (it is the crash site then);
    after them it is further out, in another binary: a stripped library's "??" frames are not
    named after the interpreter function that called them."""
    if library is None:
        return None
    seen = False
    for name, lib in zip(names, libs, strict=True):
        if lib is not None:
            if lib != library:
                return None
            seen = True
        if name in _UNNAMED:
            continue
        if lib is None and seen:
            return None
        return name
    return None


def parse_frame(line: str) -> tuple[str, str | None, int] | None:
    """(function, library basename or None, frame number) of one ``#N ...`` backtrace line.

    The function is the name without its return type, parameter list or gdb's argument list:
    ``void ns::detail::Kernel<ns::Type>(ns::Ctx*, float) () from /x.so`` gives
    ``ns::detail::Kernel<ns::Type>``; ``ns::(anonymous namespace)::f``, ``X<T>::operator()``
    and ``??`` stay as they are.
    """
    m = _FRAME_HEAD.match(line.strip())
    if m is None:
        return None
    rest, lib = m["rest"], None
    where = _WHERE.search(rest)
    if where and rest[: where.start()].rstrip().endswith(")"):
        rest = rest[: where.start()]
        if where["how"] == "from":
            lib = _base(where["what"])
    rest = _strip_group(rest.rstrip())  # gdb's argument list: "(this=0x1, n=2)" or "()"
    return function_name(rest), lib, int(m["n"])


def function_name(text: str) -> str:
    """A demangled symbol without its return type and parameter list."""
    name = _QUALIFIERS.sub("", text.strip())
    name = _strip_group(name)
    name = _QUALIFIERS.sub("", name)
    masked = _mask(name)
    depth, cut = 0, 0
    for i, ch in enumerate(masked):
        if ch in _OPEN:
            depth += 1
        elif ch in _CLOSE:
            depth = max(0, depth - 1)
        elif ch == " " and depth == 0:
            cut = i + 1  # after the return type ("void ns::f<int>" -> "ns::f<int>")
    return name[cut:] or text.strip()


def enrich(outcome: Outcome, trace: NativeTrace) -> Outcome:
    """The crash outcome with the faulting library and function in its signature (as gdb
    printed them: the real soname) and in its ``library`` and ``function`` fields, which
    ``outcome.same_failure`` compares, and its native frames."""
    if outcome.kind is not OutcomeKind.CRASH:
        return outcome
    native = trace.library or "?"
    top = (
        trace.function
        if trace.library
        else next((f for f in trace.frames if f not in _UNNAMED), None)
    )
    where = f"{native} ({top})" if top else native
    python_frame = ""
    if " in " in outcome.signature:
        python_frame = " at " + outcome.signature.split(" in ", 1)[1]
    signal = outcome.signal or trace.signal or "SIG?"
    thread = f" (crashing thread: {trace.thread})" if trace.thread else ""
    return replace(
        outcome,
        signature=f"{signal} in {where}{python_frame}",
        library=trace.library,
        function=trace.function,
        native_frames=trace.frames[:8],
        detail=outcome.detail + f"\n\nnative backtrace (gdb){thread}:\n" + trace.text,
    )


def _strip_group(text: str) -> str:
    """``text`` without a trailing balanced ``(...)`` (a parameter or argument list)."""
    masked = _mask(text)
    if not masked.endswith(")"):
        return text
    depth = 0
    for i in range(len(masked) - 1, -1, -1):
        ch = masked[i]
        if ch == ")":
            depth += 1
        elif ch == "(":
            depth -= 1
            if depth == 0:
                return text[:i].rstrip() if text[:i].strip() else text
    return text


def _mask(text: str) -> str:
    """``text`` with quoted strings and operator spellings blanked out (same length), so that
    brackets and spaces in them are not counted."""

    def blank(m: re.Match[str]) -> str:
        return re.sub(r"[\s()<>\[\]{}\"',]", "_", m.group(0))

    return _OPERATOR.sub(blank, _QUOTED.sub(blank, text))


def _thread_block(bt: str, number: str | None) -> str:
    """From ``thread apply all bt`` output, the block of thread ``number`` (else all of it)."""
    blocks = list(_THREAD_BLOCK.finditer(bt))
    if not blocks:
        return bt
    for k, m in enumerate(blocks):
        if number is None or m["num"] == number:
            end = blocks[k + 1].start() if k + 1 < len(blocks) else len(bt)
            return bt[m.end() : end]
    return bt[blocks[0].end() : blocks[1].start() if len(blocks) > 1 else len(bt)]


def _symbol_lib(line: str) -> str | None:
    m = _SYMBOL.match(line.strip())
    if not m:
        return None
    return _base(m["lib"]) if m["lib"] else "the python executable"


def _lines(block: str) -> list[str]:
    return [line for line in block.splitlines() if line.strip()]


def _section(text: str, start: str, end: str | None) -> str:
    i = text.find(start)
    if i < 0:
        return ""
    i += len(start)
    j = text.find(end, i) if end else -1
    return text[i : j if j >= 0 else len(text)]


def _base(path: str) -> str:
    return path.rsplit("/", 1)[-1]
