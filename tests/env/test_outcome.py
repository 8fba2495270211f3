"""Real subprocesses that crash, hang, raise and exit 125, classified by outcome.classify."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from envbisect.core.outcome import (
    classify,
    failure_names,
    function_identity,
    library_identity,
    normalise_message,
    same_failure,
)
from envbisect.env.runner import run_process
from envbisect.model import Outcome, OutcomeKind, RawProbe
from support.cli import default_signals

ENV = {**os.environ, "PYTHONFAULTHANDLER": "1"}


def run_py(tmp_path: Path, code: str, timeout: float = 20.0) -> RawProbe:
    script = tmp_path / "probe.py"
    script.write_text(code)
    return run_process(
        [sys.executable, "-X", "faulthandler", str(script)],
        cwd=tmp_path,
        env=ENV,
        timeout=timeout,
        stop_signal=signal.SIGABRT,
        grace=3.0,
    )


def test_pass(tmp_path: Path) -> None:
    raw = run_py(tmp_path, "print('hello')\n")
    assert classify(raw).kind is OutcomeKind.PASS
    assert raw.stdout_tail.strip() == "hello"


def test_segfault_is_a_crash_with_signal_and_frame(tmp_path: Path) -> None:
    raw = run_py(tmp_path, "import ctypes\ndef boom():\n    ctypes.string_at(0)\nboom()\n")
    out = classify(raw)
    assert out.kind is OutcomeKind.CRASH
    assert out.signal == "SIGSEGV"
    assert out.signature.startswith("SIGSEGV in string_at (ctypes/__init__.py:")
    assert "Fatal Python error: Segmentation fault" in out.detail
    assert 'probe.py", line 3 in boom' in out.detail


def test_abort_is_a_crash(tmp_path: Path) -> None:
    out = classify(run_py(tmp_path, "import os\nos.abort()\n"))
    assert (out.kind, out.signal) == (OutcomeKind.CRASH, "SIGABRT")


def test_exception_gives_type_and_message(tmp_path: Path) -> None:
    out = classify(run_py(tmp_path, "import json\njson.loads('{')\n"))
    assert out.kind is OutcomeKind.FAIL and out.exit_code == 1
    assert out.exception == "json.decoder.JSONDecodeError"
    assert out.signature.startswith("json.decoder.JSONDecodeError: Expecting property name")


def test_chained_exception_reports_the_last(tmp_path: Path) -> None:
    code = "try:\n    {}['k']\nexcept KeyError as e:\n    raise RuntimeError('wrapped') from e\n"
    out = classify(run_py(tmp_path, code))
    assert out.signature == "RuntimeError: wrapped"


def test_plain_exit_code_without_traceback(tmp_path: Path) -> None:
    out = classify(run_py(tmp_path, "import sys\nsys.exit(3)\n"))
    assert (out.kind, out.signature, out.exit_code) == (OutcomeKind.FAIL, "exit 3", 3)


def test_exit_125_is_untestable(tmp_path: Path) -> None:
    out = classify(run_py(tmp_path, "import sys\nsys.exit(125)\n"))
    assert out.kind is OutcomeKind.UNTESTABLE


def test_shell_reported_segfault_is_a_crash(tmp_path: Path) -> None:
    # A shell running the crashing program exits 128+11 instead of dying by the signal.
    script = tmp_path / "c.py"
    script.write_text("import ctypes\nctypes.string_at(0)\n")
    raw = run_process(
        ["sh", "-c", f"{sys.executable} {script}; exit $?"], cwd=tmp_path, env=ENV, timeout=20
    )
    assert raw.returncode == 139
    out = classify(raw)
    assert (out.kind, out.signal, out.exit_code) == (OutcomeKind.CRASH, "SIGSEGV", 139)


def test_deadlock_is_a_timeout_with_every_threads_stack(tmp_path: Path) -> None:
    # Two threads take two locks in opposite orders: a real deadlock, no sleep involved.
    code = (
        "import threading, time\n"
        "a, b = threading.Lock(), threading.Lock()\n"
        "def worker():\n"
        "    with b:\n"
        "        time.sleep(0.2)\n"
        "        with a:\n"
        "            pass\n"
        "t = threading.Thread(target=worker)\n"
        "def main_locks():\n"
        "    with a:\n"
        "        t.start()\n"
        "        time.sleep(0.2)\n"
        "        with b:\n"
        "            pass\n"
        "main_locks()\n"
    )
    raw = run_py(tmp_path, code, timeout=2.0)
    out = classify(raw)
    assert out.kind is OutcomeKind.TIMEOUT
    assert "in worker" in out.detail and "in main_locks" in out.detail


@pytest.mark.slow
def test_timeout_kills_the_whole_process_group(tmp_path: Path) -> None:
    pidfile = tmp_path / "grandchild.pid"
    grandchild = tmp_path / "grandchild.py"
    grandchild.write_text(
        "import os, sys, time\n"
        "open(sys.argv[1] + '.tmp', 'w').write(str(os.getpid()))\n"
        "os.rename(sys.argv[1] + '.tmp', sys.argv[1])\n"
        "time.sleep(1000)\n"
    )
    # 3 s: time for two interpreters to start, even on a loaded machine (checked below).
    code = (
        "import subprocess, sys, time\n"
        f"subprocess.Popen([sys.executable, {str(grandchild)!r}, {str(pidfile)!r}])\n"
        "time.sleep(1000)\n"
    )
    raw = run_py(tmp_path, code, timeout=3.0)
    assert raw.timed_out
    assert pidfile.exists(), "the grandchild never started: the test proves nothing"
    assert gone(int(pidfile.read_text())), "a grandchild outlived the probe's timeout"


def test_output_is_capped_to_its_tail(tmp_path: Path) -> None:
    raw = run_py(tmp_path, "import sys\nsys.stdout.write('x' * 200000 + '\\nEND\\n')\n")
    assert len(raw.stdout_tail) < 40000
    assert raw.stdout_tail.rstrip().endswith("END")
    assert "bytes cut" in raw.stdout_tail


def test_same_failure_compares_kind_signal_and_type() -> None:
    segv = classify(RawProbe(returncode=-11, timed_out=False, seconds=0))
    abrt = classify(RawProbe(returncode=-6, timed_out=False, seconds=0))
    assert same_failure(segv, segv) and not same_failure(segv, abrt)
    a = classify(
        RawProbe(
            returncode=1,
            timed_out=False,
            seconds=0,
            stderr_tail="Traceback (most recent call last):\nValueError: x\n",
        )
    )
    b = classify(
        RawProbe(
            returncode=1,
            timed_out=False,
            seconds=0,
            stderr_tail="Traceback (most recent call last):\nValueError: y\n",
        )
    )
    c = classify(
        RawProbe(
            returncode=1,
            timed_out=False,
            seconds=0,
            stderr_tail="Traceback (most recent call last):\nTypeError: x\n",
        )
    )
    assert same_failure(a, b) and not same_failure(a, c)


@pytest.mark.skipif(sys.platform != "linux", reason="process groups as on Linux")
def test_ctrl_c_in_the_parent_kills_the_group(tmp_path: Path) -> None:
    # The parent (a real Python running run_process) gets SIGINT while the child hangs.
    marker = tmp_path / "child.pid"
    child_py = tmp_path / "child.py"
    child_py.write_text(
        f"import os, pathlib, time\npathlib.Path({str(marker)!r}).write_text(str(os.getpid()))\n"
        "time.sleep(1000)\n"
    )
    driver = tmp_path / "driver.py"
    driver.write_text(
        "import os, sys\n"
        "from pathlib import Path\n"
        "from envbisect.env.runner import run_process\n"
        "try:\n"
        f"    run_process([sys.executable, {str(child_py)!r}], cwd=Path('.'),\n"
        "                env=dict(os.environ), timeout=100)\n"
        "except KeyboardInterrupt:\n"
        "    sys.exit(42)\n"
    )
    # SIGINT at its default in the driver: ignored, as in a shell's background job, it would
    # be inherited, and the driver would never see the Ctrl-C.
    proc = subprocess.Popen([sys.executable, str(driver)], cwd=tmp_path,
                            preexec_fn=default_signals)  # fmt: skip
    deadline = time.monotonic() + 60
    while not (marker.exists() and marker.read_text()) and time.monotonic() < deadline:
        time.sleep(0.05)
    child = int(marker.read_text())
    proc.send_signal(signal.SIGINT)
    assert proc.wait(timeout=20) == 42
    assert gone(child), "the child outlived Ctrl-C in its parent"


def gone(pid: int, timeout: float = 10.0) -> bool:
    """``pid`` is gone (or a zombie, killed and not yet reaped) within ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            with open(f"/proc/{pid}/stat", "rb") as fh:
                if fh.read().rsplit(b")", 1)[-1].split()[0] == b"Z":
                    return True
        except OSError:
            return True
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)


# -- failure identity: the names a message carries, not its paths or addresses ----------------


def _import_error(tmp_path: Path, where: str, name: str) -> RawProbe:
    """A real ImportError: a package at ``tmp_path/where`` lacks ``name``."""
    pkg = tmp_path / where / "lib" / "x"
    pkg.mkdir(parents=True, exist_ok=True)
    (pkg / "__init__.py").write_text("A = 1\n")
    return run_process(
        [sys.executable, "-c", f"from x import {name}"],
        cwd=tmp_path,
        env={**ENV, "PYTHONPATH": str(pkg.parent)},
        timeout=20,
    )


def test_import_errors_of_different_names_are_different_failures(tmp_path: Path) -> None:
    a = classify(_import_error(tmp_path, "env1", "B"))
    b = classify(_import_error(tmp_path, "env1", "C"))
    assert a.signature == "ImportError: cannot import name 'B' from 'x'"
    assert b.signature == "ImportError: cannot import name 'C' from 'x'"
    assert not same_failure(a, b)


def test_the_same_error_with_other_paths_or_addresses_is_one(tmp_path: Path) -> None:
    here = classify(_import_error(tmp_path, "env-one", "B"))
    there = classify(_import_error(tmp_path, "somewhere/else/env-two", "B"))
    assert (here.kind, here.exception) == (OutcomeKind.FAIL, "ImportError")
    assert here.signature == there.signature and same_failure(here, there)
    code = (
        "class Handle: pass\nh = Handle()\nraise RuntimeError(f'{h!r} closed (/tmp/{id(h):x})')\n"
    )
    first, second = (classify(run_py(tmp_path, code)) for _ in range(2))
    assert "0x" in first.detail and first.signature == second.signature
    assert first.signature == "RuntimeError: <__main__.Handle object at 0x…> closed"
    assert same_failure(first, second)


def test_failure_names_of_common_messages() -> None:
    cases = {
        "No module named 'torch._C'": ("torch._C",),
        "cannot import name 'A' from 'x' (/v/lib/python3.11/site-packages/x/__init__.py)": (
            "x",
            "A",
        ),
        "module 'numpy' has no attribute 'float'": ("numpy", "float"),
        "'NoneType' object has no attribute 'shape'": ("NoneType", "shape"),
        "name 'np' is not defined": ("np",),
        "libcudart.so.12: cannot open shared object file: No such file or directory": (
            "libcudart.so.12",
        ),
        "/v/torch/lib/libtorch_cpu.so: undefined symbol: _ZN3c104cuda9SetDeviceEi": (
            "libtorch_cpu.so",
            "_ZN3c104cuda9SetDeviceEi",
        ),
        "CUDA out of memory. Tried to allocate 2.00 GiB": (),
    }
    for message, names in cases.items():
        assert failure_names("ImportError", message) == names, message
        assert failure_names("ImportError", normalise_message(message)) == names
    assert failure_names("KeyError", "'llama'") == ("llama",)
    text = 'File "/a/b/c.py", line 12: at 0xdeadbeef sha 3fa9c0d1e2b4 (/x/y.py) C:\\u\\v.py:3'
    assert normalise_message(text) == 'File "c.py", line …: at 0x… sha … v.py'
    assert normalise_message(normalise_message(text)) == normalise_message(text)


def test_an_outcome_stored_before_normalising_compares_with_a_new_one() -> None:
    # Stored records keep the raw message in their signature (as envbisect wrote them before
    # messages were normalised); the names read from it are the same.
    old = Outcome(
        kind=OutcomeKind.FAIL,
        exit_code=1,
        exception="ImportError",
        signature="ImportError: cannot import name 'A' from 'x' (/old/env/x/__init__.py)",
    )
    new = classify(
        RawProbe(
            returncode=1,
            timed_out=False,
            seconds=0,
            stderr_tail="Traceback (most recent call last):\nImportError: cannot import name 'A' "
            "from 'x' (/new/env/site-packages/x/__init__.py)\n",
        )
    )
    assert new.signature == "ImportError: cannot import name 'A' from 'x'"
    assert same_failure(old, new) and same_failure(new, old)
    other = Outcome(
        kind=OutcomeKind.FAIL, exit_code=1, exception="ImportError",
        signature="ImportError: cannot import name 'B' from 'x' (/old/x/__init__.py)",
    )  # fmt: skip
    assert not same_failure(other, new)


# -- native crash identity: the library without its release, the function without its clones --


@pytest.mark.parametrize(
    ("name", "identity"),
    [
        ("libarrow.so.1500", "libarrow"),
        ("libarrow.so.1200", "libarrow"),
        ("/venv/lib/python3.11/site-packages/pyarrow/libarrow.so.1600", "libarrow"),
        ("libfoo-1.2.so", "libfoo"),
        ("libfoo-1.3.so", "libfoo"),
        ("libfoo.so.1.2.3", "libfoo"),
        ("libfoo.so", "libfoo"),
        ("libfoo.1.2.dylib", "libfoo"),
        ("C:\\env\\Lib\\foo-1.2.dll", "foo"),
        ("libprotobuf.so.3.21.12.0", "libprotobuf"),
        ("libicuuc.so.72", "libicuuc"),
        ("libLLVM-17.so", "libLLVM"),
        ("libglib-2.0.so.0", "libglib"),
        ("libnvrtc-builtins.so.12.1", "libnvrtc-builtins"),
        ("libcudnn_ops_infer.so.8", "libcudnn_ops_infer"),
        ("libstdc++.so.6", "libstdc++"),
        ("libc.so.6", "libc"),
        # The dash follows a digit: part of the name, not a release.
        ("ld-linux-x86-64.so.2", "ld-linux-x86-64"),
        # Digits glued to the name name another build (Boost for Python 3.9), not a release.
        ("libboost_python39.so.1.75.0", "libboost_python39"),
        ("libboost_python310.so.1.82.0", "libboost_python310"),
        ("libpython3.11.so.1.0", "libpython3"),
        # Vendored copies renamed by auditwheel with a hash of their content.
        ("libgfortran-040039e1.so.5.0.0", "libgfortran"),
        ("libopenblas64_p-r0-15028c96.3.21.so", "libopenblas64_p-r0"),
        ("libopenblas64_p-r0-2f7c42d4.3.26.dev.so", "libopenblas64_p-r0"),
        # Extension modules: the interpreter's tag goes, the module's name stays.
        ("_foo.cpython-311-x86_64-linux-gnu.so", "_foo"),
        ("_foo.cpython-312-aarch64-linux-gnu.so", "_foo"),
        ("_foo.abi3.so", "_foo"),
        ("_foo.cp311-win_amd64.pyd", "_foo"),
        ("_foo.pypy39-pp73-x86_64-linux-gnu.so", "_foo"),
        ("_bar.cpython-311-x86_64-linux-gnu.so", "_bar"),
        ("the python executable", "the python executable"),
    ],
)  # fmt: skip
def test_library_identity(name: str, identity: str) -> None:
    assert library_identity(name) == identity
    assert library_identity(identity) == identity


_STEM = st.from_regex(r"lib[a-z_]{1,12}", fullmatch=True)
_RELEASE = st.lists(st.integers(0, 3000), min_size=1, max_size=4).map(
    lambda parts: ".".join(map(str, parts))
)
_FOLDER = st.lists(st.from_regex(r"[A-Za-z0-9_.-]{1,8}", fullmatch=True), max_size=4).map(
    lambda parts: "".join(f"/{p}" for p in parts)
)


@given(_STEM, _RELEASE, _RELEASE, _FOLDER, _FOLDER)
def test_library_identity_drops_the_release_and_the_folder(
    stem: str, one: str, two: str, here: str, there: str
) -> None:
    for name in (f"{here}/{stem}.so.{one}", f"{there}/{stem}-{two}.so", f"{stem}.so"):
        assert library_identity(name) == stem  # so two different stems stay apart


@given(st.text())
def test_library_identity_is_idempotent(name: str) -> None:
    assert library_identity(library_identity(name)) == library_identity(name)


@pytest.mark.parametrize(
    ("printed", "identity"),
    [
        ("sofix_kernel", "sofix_kernel"),
        ("sofix_kernel.constprop", "sofix_kernel"),  # gdb 13 prints gcc's clone so
        ("sofix_kernel.constprop.0", "sofix_kernel"),
        ("f.isra.0", "f"),
        ("f.part.1", "f"),
        ("f.cold", "f"),
        ("f.part.0.cold", "f"),
        ("f.lto_priv.0", "f"),
        ("f.llvm.1234567890", "f"),
        ("ns::Kernel<float>::operator() [clone .isra.0]", "ns::Kernel<float>::operator()"),
        ("ns::f<int> [clone .constprop.0] [clone .cold]", "ns::f<int>"),
        ("0x00007ffff7478517 in arrow::compute::Exec", "arrow::compute::Exec"),
        ("arrow::compute::Exec + 7", "arrow::compute::Exec"),
        ("arrow::compute::Exec+0x1c", "arrow::compute::Exec"),
        ("ns::(anonymous namespace)::crash_here", "ns::(anonymous namespace)::crash_here"),
        # glibc's variants for the CPU it runs on: one function on every node.
        ("__strlen_evex", "__strlen"),
        ("__strlen_avx2", "__strlen"),
        ("__memmove_avx_unaligned_erms", "__memmove"),
        ("__memcpy_ssse3_back", "__memcpy"),
        ("__strcasecmp_l_sse2", "__strcasecmp_l"),
        ("__memcpy_generic", "__memcpy"),
        ("my_avx2_kernel", "my_avx2_kernel"),  # a project's own name is never cut
        ("??", None),
        ("<signal handler called>", None),
        ("", None),
        (None, None),
    ],
)  # fmt: skip
def test_function_identity(printed: str | None, identity: str | None) -> None:
    assert function_identity(printed) == identity
    assert function_identity(identity) == identity


_FUNCTION = st.from_regex(r"[a-z][a-z0-9_]{0,10}(::[a-z_][a-z0-9_]{0,10}){0,2}", fullmatch=True)
_CLONE = st.sampled_from(
    ["", ".isra.0", ".constprop.1", ".part.2", ".cold", ".constprop", " [clone .isra.0]"]
)


@given(_FUNCTION, _CLONE, st.integers(0, 5000), st.booleans())
def test_function_identity_drops_clones_and_offsets(
    name: str, clone: str, offset: int, address: bool
) -> None:
    printed = ("0x7ffff7a1b2c3 in " if address else "") + name + clone + f" + {offset}"
    assert function_identity(printed) == name  # so two different names stay apart


@given(st.text())
def test_function_identity_is_idempotent(printed: str) -> None:
    once = function_identity(printed)
    assert function_identity(once) == once


def crash(library: str | None, function: str | None, signal: str = "SIGSEGV") -> Outcome:
    """A crash as forensics.enrich leaves it: the signature as gdb saw it."""
    where = f"{library} ({function})" if function else str(library)
    return Outcome(
        kind=OutcomeKind.CRASH,
        signal=signal,
        signature=f"{signal} in {where}",
        library=library,
        function=function,
    )


def test_the_same_native_crash_in_another_release_of_its_library() -> None:
    reference = crash("libarrow.so.1500", "arrow::compute::Exec")
    for other in (
        crash("libarrow.so.1200", "arrow::compute::Exec"),
        crash("/other/env/pyarrow/libarrow.so.1300", "arrow::compute::Exec"),
        crash("libarrow.so.1600", "arrow::compute::Exec [clone .isra.0]"),
        crash("libarrow.so.1700", "0x00007ffff7478517 in arrow::compute::Exec + 12"),
        crash("libarrow.so.1800", "arrow::compute::Exec.constprop.0"),
        crash("libarrow.so.1900", "??"),  # stripped: the function does not decide
        crash("libarrow.so.2000", None),  # stored before the function was kept
        crash(None, None),  # no gdb: only the signal decides
    ):
        assert same_failure(reference, other) and same_failure(other, reference), other
    assert reference.signature == "SIGSEGV in libarrow.so.1500 (arrow::compute::Exec)"


def test_another_function_library_or_signal_is_another_crash() -> None:
    reference = crash("libarrow.so.1500", "arrow::compute::Exec")
    for other in (
        crash("libarrow.so.1500", "arrow::compute::Filter"),
        crash("libarrow.so.1200", "arrow::compute::Exec<int>"),
        crash("libparquet.so.1500", "arrow::compute::Exec"),
        crash("libarrow.so.1500", "arrow::compute::Exec", signal="SIGABRT"),
    ):
        assert not same_failure(reference, other) and not same_failure(other, reference), other
    ext = crash("_foo.cpython-311-x86_64-linux-gnu.so", "run")
    assert same_failure(ext, crash("_foo.cpython-312-x86_64-linux-gnu.so", "run"))
    assert not same_failure(ext, crash("_bar.cpython-311-x86_64-linux-gnu.so", "run"))
