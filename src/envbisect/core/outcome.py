"""Deciding what a probe did. ``classify`` is the one function that turns a raw probe into an
``Outcome``; ``untestable`` builds the outcome for environments that could not be probed.

The probe exit-code protocol (README):
    0            PASS
    125          UNTESTABLE (as in ``git bisect run``: the repro could not test this point)
    killed by a signal (or a shell's 128+N for SIGSEGV/SIGABRT/SIGBUS/SIGILL/SIGFPE/SIGKILL)
                 CRASH, with the signal's name
    the timeout  TIMEOUT
    anything else FAIL, with the exception type and message when a traceback was printed

A failure's message is kept normalised (``normalise_message``: paths cut to their last part,
addresses, long hex and line numbers blanked), and what identifies it is the names it carries
(``failure_names``: the missing module, attribute, import, key or shared library).
"""

from __future__ import annotations

import re
import signal as _signal
from collections.abc import Sequence
from dataclasses import replace

from envbisect.model import Outcome, OutcomeKind, RawProbe

UNTESTABLE_EXIT = 125
_SHELL_CRASH_SIGNALS = {
    _signal.SIGILL,
    _signal.SIGABRT,
    _signal.SIGBUS,
    _signal.SIGFPE,
    _signal.SIGKILL,
    _signal.SIGSEGV,
}
_UNTESTABLE_LINE = re.compile(r"^ENVBISECT-UNTESTABLE: (.*)$", re.MULTILINE)
_FRAME = re.compile(r'^\s+File "(?P<file>[^"]+)", line (?P<line>\d+) in (?P<func>.+)$')
_EXC_LINE = re.compile(r"^(?P<type>[A-Za-z_][\w.]*)(?::\s?(?P<msg>.*))?$")

# The names a message carries that say *what* is missing. Only these identify a failure:
# the rest of a message holds values (sizes, counts, shapes, timings) that change from one
# environment to the next without it being another bug.
_NAMED = tuple(
    re.compile(p)
    for p in (
        r"No module named '(?P<a>[^']+)'",
        r"cannot import name '(?P<a>[^']+)' from (?:partially initialized module )?'(?P<b>[^']+)'",
        r"cannot import name '(?P<a>[^']+)'",
        r"module '(?P<b>[^']+)' has no attribute '(?P<a>[^']+)'",
        r"(?:type object )?'(?P<b>[^']+)' (?:object )?has no attribute '(?P<a>[^']+)'",
        r"name '(?P<a>[^']+)' is not defined",
        r"(?P<a>[\w.+-]+\.(?:so|dylib|dll)(?:\.[\w.]+)?): cannot open shared object file",
        r"(?P<b>[\w.+-]+\.so(?:\.[\w.]+)?): undefined symbol: (?P<a>\S+)",
        r"undefined symbol: (?P<a>\S+)",
    )
)
_KEY = re.compile(r"^'(?P<a>[^']*)'$")  # KeyError: 'llama' (the missing key)
_PAREN_PATH = re.compile(r"\s*\((?:(?:/|~/|\.{1,2}/|[A-Za-z]:[\\/])[^()]*|unknown location)\)")
# An absolute path (POSIX, home, Windows) up to its last part, which is kept.
_PATH = re.compile(
    r"(?:(?<![\w.])/|~/|\b[A-Za-z]:[\\/])(?:[^\s'\"():,\\/]*[\\/])+(?P<last>[^\s'\"():,]*)"
)
_ADDRESS = re.compile(r"\b0x[0-9a-fA-F]+")
_LONG_HEX = re.compile(r"\b(?=[0-9a-f]*[a-f])(?=[0-9a-f]*\d)[0-9a-f]{8,}\b")
_LINE_NO = re.compile(r"\b(line|lineno) \d+")
_FILE_LINE = re.compile(r"(\.\w{1,8}):\d+\b")


def signal_name(num: int) -> str:
    try:
        return _signal.Signals(num).name
    except ValueError:
        return f"SIG{num}"


def classify(raw: RawProbe) -> Outcome:
    """Decide PASS / FAIL / CRASH / TIMEOUT / UNTESTABLE for one raw probe."""
    rc = raw.returncode
    if raw.timed_out:
        return Outcome(
            kind=OutcomeKind.TIMEOUT,
            signature="timeout",
            detail=_faulthandler_block(raw.stderr_tail) or _last_lines(raw.stderr_tail, 40),
            step=raw.step,
        )
    if rc == 0:
        return Outcome(kind=OutcomeKind.PASS, exit_code=0, step=raw.step)
    if rc == UNTESTABLE_EXIT:
        m = _UNTESTABLE_LINE.search(raw.stderr_tail)
        return Outcome(
            kind=OutcomeKind.UNTESTABLE,
            exit_code=rc,
            signature=m.group(1).strip() if m else "probe exited 125",
            detail=_last_lines(raw.stderr_tail, 20),
            step=raw.step,
        )
    if rc is not None and rc < 0:
        return replace(_crash(signal_name(-rc), None, raw.stderr_tail), step=raw.step)
    if rc is not None and rc > 128 and (rc - 128) in _SHELL_CRASH_SIGNALS:
        return replace(_crash(signal_name(rc - 128), rc, raw.stderr_tail), step=raw.step)
    exc_type, message, tb = _last_exception(raw.stderr_tail)
    if exc_type is not None:
        normal = normalise_message(message or "")
        sig = exc_type if not normal else f"{exc_type}: {_shorten(normal)}"
    else:
        sig = f"exit {rc}"
    return Outcome(
        kind=OutcomeKind.FAIL,
        exit_code=rc,
        signature=sig,
        exception=exc_type,
        detail=tb or _last_lines(raw.stderr_tail, 20),
        step=raw.step,
    )


def untestable(reason: str, detail: str = "") -> Outcome:
    """The outcome of an environment that could not be built or probed. Never bad."""
    return Outcome(kind=OutcomeKind.UNTESTABLE, signature=reason, detail=detail)


def failed(o: Outcome) -> bool:
    """A failure of the repro: a fail, a crash or a timeout (not a pass, not untestable)."""
    return o.kind not in (OutcomeKind.PASS, OutcomeKind.UNTESTABLE)


def representative(runs: Sequence[Outcome]) -> Outcome:
    """The outcome that speaks for several runs in one environment (``--repeat``): the first
    failure, if any run failed (a crash in any run marks it); else the first pass; else the
    first run."""
    return next(
        (o for o in runs if failed(o)),
        next((o for o in runs if o.kind is OutcomeKind.PASS), runs[0]),
    )


def same_failure(a: Outcome, b: Outcome) -> bool:
    """Whether two failing outcomes are "the same failure" for bisection purposes.

    Same kind, and: for a crash the same signal (and the same faulting library when gdb named
    both); for a failure the same exception type and the same names in its normalised message
    (``cannot import name 'A'`` is not ``cannot import name 'B'``), or the same exit code when
    neither printed a traceback. Paths, addresses, line numbers and free-form values in a
    message may differ: they change from one environment to the next.

    The names are read from the signature, so outcomes stored before messages were
    normalised compare the same way (``failure_names`` finds the same names in the raw
    message and in its normalised form): resuming or reusing an older store needs no new
    probe policy.
    """
    if a.kind is not b.kind:
        return False
    if a.kind is OutcomeKind.CRASH:
        # A crash in another library is another crash; unknown libraries do not decide.
        if a.library and b.library and a.library != b.library:
            return False
        return a.signal == b.signal
    if a.kind is OutcomeKind.FAIL:
        if a.exception or b.exception:
            return a.exception == b.exception and _names(a) == _names(b)
        return a.exit_code == b.exit_code
    return True


def normalise_message(message: str) -> str:
    """An exception message without what changes between environments: paths cut to their
    last part, memory addresses and long hex blanked, line numbers removed. Idempotent."""
    text = _PAREN_PATH.sub("", message)
    text = _PATH.sub(lambda m: m["last"], text)
    text = _ADDRESS.sub("0x…", text)
    text = _LONG_HEX.sub("…", text)
    text = _LINE_NO.sub(r"\1 …", text)
    text = _FILE_LINE.sub(r"\1", text)
    return " ".join(text.split())


def failure_names(exception: str | None, message: str) -> tuple[str, ...]:
    """The names a failure's message carries: the missing module, the import and where from,
    the attribute and its owner, the undefined name, the missing key, the shared library that
    would not load or the symbol it lacks. () for a message that names nothing. Read from
    the normalised message, so a raw message and its normalised form give the same names."""
    message = normalise_message(message)
    names: list[str] = []
    for pattern in _NAMED:
        for m in pattern.finditer(message):
            names += [v for v in (m.groupdict().get("b"), m["a"]) if v and v not in names]
        if names:
            break  # the most specific form that matched
    if not names and exception and exception.rsplit(".", 1)[-1] == "KeyError":
        key = _KEY.match(message.strip())
        if key:
            names.append(key["a"])
    return tuple(names)


def _names(o: Outcome) -> tuple[str, ...]:
    prefix = f"{o.exception}:"
    message = o.signature[len(prefix) :] if o.signature.startswith(prefix) else ""
    return failure_names(o.exception, message)


def _crash(sig: str, exit_code: int | None, stderr: str) -> Outcome:
    block = _faulthandler_block(stderr)
    frame = _innermost_frame(block)
    signature = f"{sig} in {frame}" if frame else sig
    return Outcome(
        kind=OutcomeKind.CRASH,
        signal=sig,
        exit_code=exit_code,
        signature=signature,
        detail=block or _last_lines(stderr, 20),
    )


def _faulthandler_block(stderr: str) -> str:
    """From faulthandler's "Fatal Python error" line to the end of its thread dumps."""
    idx = stderr.rfind("Fatal Python error")
    if idx < 0:
        idx = stderr.find("Thread 0x")
        if idx < 0:
            idx = stderr.find("Current thread 0x")
        if idx < 0:
            return ""
    return _last_lines(stderr[idx:], 80)


def _innermost_frame(block: str) -> str | None:
    """The innermost frame of the thread that crashed, as ``func (dir/file.py:line)``.

    faulthandler marks the crashing thread "Current thread"; a crash in a thread that runs no
    Python (a C++ worker) has no such block, and another thread's frame is not its site."""
    lines = block.splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith("Current thread")), None)
    if start is None:
        return None
    for line in lines[start + 1 :]:
        if not line.strip() or line.startswith("Thread 0x"):
            break  # the end of the crashing thread's stack
        m = _FRAME.match(line)
        if m:
            return f"{m['func'].strip()} ({_short_path(m['file'])}:{m['line']})"
    return None


def _short_path(path: str) -> str:
    # The last two components: environment-specific prefixes would make every crash unique.
    parts = path.replace("\\", "/").split("/")
    return "/".join(parts[-2:])


def _last_exception(stderr: str) -> tuple[str | None, str | None, str]:
    idx = stderr.rfind("Traceback (most recent call last):")
    if idx < 0:
        return None, None, ""
    block = stderr[idx:]
    lines = block.splitlines()
    # The exception line is the first unindented line after the frames.
    for line in lines[1:]:
        if not line or line.startswith((" ", "\t")):
            continue
        m = _EXC_LINE.match(line)
        if m:
            return m["type"], (m["msg"] or "").strip() or None, _last_lines(block, 40)
        break
    return None, None, _last_lines(block, 40)


def _shorten(text: str, limit: int = 160) -> str:
    text = text.strip()
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _last_lines(text: str, n: int) -> str:
    lines = text.rstrip().splitlines()
    return "\n".join(lines[-n:])
