"""What of envbisect's own environment reaches code run in a candidate environment.

A probe tests the candidate environment, not the shell envbisect was started from. CPython
reads dozens of variables that change what a program does (``PYTHONOPTIMIZE`` strips every
``assert``, so a repro of ``assert False`` passes) or where it imports from (``PYTHONPATH``
puts a folder before the environment's site-packages). None of them is in the environment's id
or the repro's, so an outcome made with one set would be stored and reused as if it were not.
``scrub`` removes them; the user passes one on purpose with ``--env NAME=VALUE`` (then it is
part of the repro's identity, ``Repro.repro_id``, and named in report.md).

Every variable of CPython's "Environment variables" section (up to 3.15's documentation) is
decided here, in ``DROPPED`` (with why) or ``KEPT`` (with why), and envbisect sets some itself
(``SET_FOR_PROBES``). The rule: drop what changes what runs, what it imports, how it decodes
text, or what the classifier and gdb read (stderr, native frames); keep what only changes where
bytecode is cached, what the REPL does (no probe has one), or what a traceback's carets show.
Variables of libraries (``HF_HOME``, ``OMP_NUM_THREADS``, ``CUDA_*``), the locale and
``LD_LIBRARY_PATH`` are the machine's, as the driver is: they reach the probe as they are.
"""

from __future__ import annotations

from collections.abc import Mapping

DROPPED: dict[str, str] = {
    # -- what runs --------------------------------------------------------------------------
    "PYTHONOPTIMIZE": "-O: strips assert statements and `if __debug__:` blocks",
    "PYTHONINSPECT": "-i: a REPL after the script; sys.exit(125) then exits 1 (untestable lost)",
    "PYTHONSTARTUP": "runs a file of the user's at interactive start (3.13: with PYTHONINSPECT)",
    "PYTHON_PRESITE": "debug builds: imports a module of the user's before site",
    "PYTHONBREAKPOINT": "what breakpoint() calls: any callable of the user's, or nothing",
    "PYTHONWARNINGS": "-W: warning filters; 'error' turns every warning into an exception",
    "PYTHONDEVMODE": "-X dev: extra runtime checks, warnings shown, asyncio debug mode",
    "PYTHONASYNCIODEBUG": "asyncio debug mode: raises on some calls that normally pass",
    "PYTHONWARNDEFAULTENCODING": "EncodingWarning on open() without encoding (an error under "
    "a test runner's filterwarnings=error)",
    "PYTHON_CONTEXT_AWARE_WARNINGS": "3.14: how catch_warnings keeps its filters",
    "PYTHONHASHSEED": "fixes str/bytes hash order: a hash-order bug always or never shows, "
    "and --repeat sees the same order every run",
    "PYTHONINTMAXSTRDIGITS": "int/str conversion limit: int('9' * 5000) raises or not",
    "PYTHON_CPU_COUNT": "3.13: what os.cpu_count() says (worker counts, num_proc defaults)",
    "PYTHON_GIL": "3.13 free-threaded builds: the GIL on or off (which races can happen)",
    "PYTHON_THREAD_INHERIT_CONTEXT": "3.14: whether threads start with the caller's context",
    "PYTHON_JIT": "3.13: the experimental JIT on or off (another execution engine)",
    "PYTHON_TLBC": "3.14 free-threaded builds: thread-local bytecode",
    "PYTHON_LAZY_IMPORTS": "3.15: imports run when first used, so an import error moves or "
    "vanishes",
    "PYTHONMALLOC": "another allocator or debug hooks: a use-after-free crashes or not",
    "PYTHON_PYMALLOC_HUGEPAGES": "3.15: pymalloc arenas on huge pages (memory use, OOM)",
    "PYTHONTRACEMALLOC": "traces every allocation: several times slower, more memory "
    "(a timeout or an OOM kill instead of the outcome)",
    # -- what it imports, and which interpreter -------------------------------------------------
    "PYTHONPATH": "folders before the environment's site-packages: shadows its packages",
    "PYTHONHOME": "another standard library",
    "PYTHONPLATLIBDIR": "another platlib folder of the standard library",
    "PYTHONSAFEPATH": "-P: the script's folder is not on sys.path (the built-in probes import "
    "_common from theirs)",
    "PYTHONUSERBASE": "another user site (envbisect turns the user site off: PYTHONNOUSERSITE)",
    "PYTHONNOUSERSITE": "set to 1 by envbisect (no user site-packages); --env overrides it",
    "PYTHONCASEOK": "Windows and macOS: imports ignore case",
    "PYTHON_FROZEN_MODULES": "3.13: the frozen standard modules or their .py files",
    "PYTHONEXECUTABLE": "macOS: another sys.executable (what subprocesses start)",
    "__PYVENV_LAUNCHER__": "macOS: another sys.executable, as PYTHONEXECUTABLE",
    "_PYTHON_SYSCONFIGDATA_NAME": "cross builds: another sysconfig data module",
    "_PYTHON_SYSCONFIGDATA_PATH": "cross builds: where that module is looked up",
    "_PYTHON_HOST_PLATFORM": "cross builds: another platform in sysconfig (wheel tags)",
    "_PYTHON_PROJECT_BASE": "cross builds: another build tree in sysconfig",
    "VIRTUAL_ENV": "names the user's environment; envbisect sets it to the candidate's",
    "CONDA_PREFIX": "names the user's conda environment; libraries look for CUDA and other "
    "native libraries there",
    # -- how text is decoded --------------------------------------------------------------------
    "PYTHONIOENCODING": "stdin/stdout/stderr encoding: printing non-ASCII raises or not",
    "PYTHONUTF8": "UTF-8 mode: open()'s default encoding and the filesystem encoding",
    "PYTHONCOERCECLOCALE": "C-locale coercion to UTF-8: the same encodings",
    "PYTHONLEGACYWINDOWSFSENCODING": "Windows: the filesystem encoding",
    "PYTHONLEGACYWINDOWSSTDIO": "Windows: the console encoding",
    # -- what envbisect reads back (stderr's traceback, gdb's native frames) --------------------
    "PYTHONVERBOSE": "-v: an import trace on stderr around the traceback the classifier reads",
    "PYTHONDEBUG": "-d, debug builds: parser output on stderr",
    "PYTHONPROFILEIMPORTTIME": "-X importtime: a line per import on stderr",
    "PYTHONMALLOCSTATS": "allocator statistics on stderr",
    "PYTHONTHREADDEBUG": "old debug builds: threading output on stderr",
    "PYTHONDUMPREFS": "trace-refs builds: every live object on stderr at exit",
    "PYTHONDUMPREFSFILE": "trace-refs builds: the same, into a file",
    "PYTHON_COLORS": "3.13: colour in tracebacks; envbisect sets 0 (it reads them as text)",
    "PYTHONPERFSUPPORT": "perf trampolines: extra native frames in gdb's backtrace",
    "PYTHON_PERF_JIT_SUPPORT": "the same, with DWARF information",
    # PYTHONFAULTHANDLER and PYTHONUNBUFFERED are set by envbisect (SET_FOR_PROBES).
}

KEPT: dict[str, str] = {
    "PYTHONDONTWRITEBYTECODE": "no .pyc written: the same code runs",
    "PYTHONPYCACHEPREFIX": "where .pyc files go; each is checked against its source as usual",
    "PYTHONNODEBUGRANGES": "no column carets in tracebacks; the classifier reads the exception "
    "line and the frames, not the carets",
    "PYTHON_BASIC_REPL": "the REPL only (a probe has none: PYTHONINSPECT is dropped)",
    "PYTHON_BASIC_COMPLETER": "the REPL only",
    "PYTHON_HISTORY": "the REPL only",
    "PYTHON_DISABLE_REMOTE_DEBUG": "3.14: refuses a debugger attaching; the program runs the same",
    "PYTHON_PATHCONFIG_WARNINGS": "3.15: warnings about a broken path configuration only",
}

# Set by envbisect for every probe, after the scrub; --env overrides any of them.
SET_FOR_PROBES: dict[str, str] = {
    "PYTHONFAULTHANDLER": "1",  # every thread's stack on a fatal signal and at the timeout
    "PYTHONNOUSERSITE": "1",  # the user's ~/.local site-packages is not the environment's
    "PYTHONUNBUFFERED": "1",  # output written before a crash is not lost in a buffer
    "PYTHON_COLORS": "0",  # plain tracebacks even when FORCE_COLOR is set (CI), 3.13+
}


def scrub(environ: Mapping[str, str]) -> dict[str, str]:
    """``environ`` without the variables of ``DROPPED``."""
    return {k: v for k, v in environ.items() if k not in DROPPED}


def held_back(environ: Mapping[str, str], passed: Mapping[str, str]) -> list[str]:
    """The interpreter variables set in ``environ`` that the scrub keeps from probes and
    ``--env`` does not pass: what the user is told, so that a repro that needed one is not a
    mystery. Not VIRTUAL_ENV and the like (an activated venv is the usual case, not a choice),
    nor a value envbisect sets anyway."""
    return sorted(
        name
        for name, value in environ.items()
        if name in DROPPED
        and name.startswith(("PYTHON", "_PYTHON"))
        and name not in passed
        and SET_FOR_PROBES.get(name) != value
    )
