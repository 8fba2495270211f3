"""Deciding what a probe did. ``classify`` is the one function that turns a raw probe into an
``Outcome``; ``untestable`` builds the outcome for environments that could not be probed.

The probe exit-code protocol (docs/reference/probe-protocol.md):
    0            PASS
    125          UNTESTABLE (as in ``git bisect run``: the repro could not test this point)
    killed by a signal (or a shell's 128+N for SIGSEGV/SIGABRT/SIGBUS/SIGILL/SIGFPE/SIGKILL)
                 CRASH, with the signal's name
    the timeout  TIMEOUT
    anything else FAIL, with the exception type and message when a traceback was printed

A failure's message is kept normalised (``normalise_message``: paths cut to their last part,
addresses, long hex and line numbers blanked), and what identifies it is the names it carries
(``failure_names``: the missing module, attribute, import, key or shared library). A crash is
identified by its signal, the library it faulted in without the release in its file name
(``library_identity``: ``libarrow.so.1500`` is ``libarrow.so.1200``) and the function, as gdb
printed it, without addresses, offsets or gcc's clone suffixes (``function_identity``).
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
# A library's file name: the shared-object suffix and any version after it; a CPython
# extension's tag (EXT_SUFFIX: cpython-311-x86_64-linux-gnu, abi3, cp311-win_amd64, pypy39-pp73-
# ...); the 8-hex hash auditwheel/delocate (and a longer one delvewheel) put in a vendored
# copy's name; a release at the end of the stem (after a dot, or a dash that follows a letter).
_LIB_SUFFIX = re.compile(r"\.(?:so|pyd|dll|dylib)(?:\.[\w.-]*)?$", re.IGNORECASE)
_EXT_TAG = re.compile(r"\.(?:cpython|cp\d|pypy|graalpy|abi3)[\w.-]*$")
_REPAIR_HASH = re.compile(r"-(?=[0-9a-f]*\d)[0-9a-f]{8}(?:[0-9a-f]{24})?(?=\.|$)")
_LIB_RELEASE = re.compile(
    r"(?:\.|(?<=[A-Za-z_])-)v?\d+(?:\.\d+)*(?:[._-]?(?:dev|rc|post|alpha|beta|a|b)\d*)?$"
)
# A function's clones and offsets: gdb prints C++ clones demangled ("f() [clone .isra.0]") and
# C ones raw ("f.isra.0"; gdb 13 drops the number: "f.constprop").
_FUNC_CLONE = re.compile(r"\s*\[clone [^\]]*\]")
_FUNC_OFFSET = re.compile(r"\s*\+\s*(?:0x[0-9a-fA-F]+|\d+)\b")
_FUNC_AT = re.compile(r"^\s*0x[0-9a-fA-F]+\s+in\s+")
# glibc's CPU variants of one function (x86-64 and aarch64 multiarch); only reserved "__" names
# (the C library's own), so that no function of a project is cut.
_IFUNC_VARIANT = re.compile(
    r"^(?P<base>__[A-Za-z0-9_]+?)_(?:sse2|ssse3|sse4_[12]|avx2?|avx512\w*|evex\w*|erms|sve"
    r"|asimd|generic|thunderx2?|falkor|a64fx|mops|nosimd)(?:_\w+)?$"
)
_FUNC_SUFFIX = re.compile(
    r"\.(?:isra|constprop|part|cold|hot|lto_priv|llvm|localalias|clone|specialized)(?:\.\d+)?$"
)
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

    Same kind, and: for a crash the same signal, the same faulting library when gdb named both
    (by ``library_identity``: another release of a library is the same library) and the same
    function when gdb named both (by ``function_identity``: clones and offsets aside); for a
    failure the same exception type and the same names in its normalised message (``cannot
    import name 'A'`` is not ``cannot import name 'B'``), or the same exit code when neither
    printed a traceback. Paths, addresses, line numbers and free-form values in a
    message may differ: they change from one environment to the next.

    The names are read from the signature, so outcomes stored before messages were
    normalised compare the same way (``failure_names`` finds the same names in the raw
    message and in its normalised form): resuming or reusing an older store needs no new
    probe policy. Crashes stored before the function was kept have none: for them the
    function does not decide, as before.
    """
    if a.kind is not b.kind:
        return False
    if a.kind is OutcomeKind.CRASH:
        # A crash in another library, or in another function of it, is another crash; an
        # unknown library or function (no gdb, a stripped "??") does not decide.
        if a.library and b.library and library_identity(a.library) != library_identity(b.library):
            return False
        fa, fb = function_identity(a.function), function_identity(b.function)
        if fa and fb and fa != fb:
            return False
        return a.signal == b.signal
    if a.kind is OutcomeKind.FAIL:
        if a.exception or b.exception:
            return a.exception == b.exception and _names(a) == _names(b)
        return a.exit_code == b.exit_code
    return True


def library_identity(name: str) -> str:
    """The name of a shared library without where it lies and which release it is: what
    tells "the same library" in two environments.

    Dropped: the folder (``/env/lib/libfoo.so.1`` is ``libfoo.so.1``); the shared-object
    suffix and any version after it (``libarrow.so.1500``, ``libprotobuf.so.3.21.12.0``,
    ``libicuuc.so.72``, ``libfoo.so`` all keep only their stem: ``libarrow``...); a CPython
    extension module's interpreter and platform tag (``_foo.cpython-311-x86_64-linux-gnu.so``
    and ``_foo.abi3.so`` are ``_foo``, still unlike ``_bar``); the hash auditwheel and
    delocate add to a vendored copy (``libgfortran-040039e1.so.5.0.0`` is ``libgfortran``);
    a release set off at the end of the stem by a dot or by a dash after a letter
    (``libfoo-1.2.so`` and ``libLLVM-17.so`` as libtool's ``-release`` names them,
    ``libfoo.1.2.dylib``).

    Kept: digits that are part of the name itself, which name another build rather than
    another release of one: ``libboost_python39.so.1.75.0`` is ``libboost_python39`` (Boost
    built for Python 3.9: a build for 3.10 is another library, though within one search the
    interpreter, and so the tag, is the same), ``libQt5Core``, ``libpython3`` (of
    ``libpython3.11.so.1.0``: its minor version is dropped like any dotted release),
    ``ld-linux-x86-64`` (the dash there follows a digit). Pure and idempotent; a name with no
    library form in it comes back as its last path part (``the python executable``).
    """
    base = name.replace("\\", "/").rsplit("/", 1)[-1].strip()
    stem = base
    while True:  # to a fixed point: what one pass leaves may end in another release
        shorter = _LIB_RELEASE.sub(
            "", _REPAIR_HASH.sub("", _EXT_TAG.sub("", _LIB_SUFFIX.sub("", stem)))
        )
        if shorter == stem or not shorter:
            return stem
        stem = shorter


def function_identity(name: str | None) -> str | None:
    """A native function's name as gdb printed it, without what changes between two builds
    of the same code: addresses (``0x7f...``), offsets (``+ 7``, ``+0x1c``) and the clones
    gcc and clang make of it (``[clone .isra.0]``, ``.constprop.0``, ``.part.1``, ``.cold``,
    ``.lto_priv.0``, ``.llvm.1234``); and the CPU variant the C library picked for this
    machine (its ifunc variants: ``__strlen_evex`` on one node is ``__strlen_avx2`` on
    another, ``__memmove_avx_unaligned_erms``: all ``__strlen``, ``__memmove``), so that
    one bug is one failure on every kind of node of a cluster. None for no name: missing,
    ``??`` (a stripped library) or gdb's ``<signal handler called>``. Idempotent."""
    if not name:
        return None
    text = name
    while True:  # to a fixed point: clones of clones (".constprop.0.isra.0", ".part.0.cold")
        shorter = _FUNC_AT.sub("", _FUNC_OFFSET.sub("", _FUNC_CLONE.sub("", text)))
        shorter = " ".join(_FUNC_SUFFIX.sub("", _ADDRESS.sub("", shorter)).split())
        if shorter == text:
            break
        text = shorter
    text = _IFUNC_VARIANT.sub(r"\g<base>", text)
    return None if text in ("", "??", "<signal handler called>") else text


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
