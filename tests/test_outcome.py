"""Real subprocesses that crash, hang, raise and exit 125, classified by outcome.classify."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from envbisect.core.outcome import classify, same_failure
from envbisect.env.runner import run_process
from envbisect.model import OutcomeKind, RawProbe

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


def test_timeout_kills_the_whole_process_group(tmp_path: Path) -> None:
    marker = tmp_path / "grandchild-alive"
    grandchild = tmp_path / "grandchild.py"
    grandchild.write_text(
        f"import pathlib, time\nwhile True:\n    pathlib.Path({str(marker)!r}).touch()\n"
        "    time.sleep(0.1)\n"
    )
    code = (
        "import subprocess, sys, time\n"
        f"subprocess.Popen([sys.executable, {str(grandchild)!r}])\n"
        "time.sleep(1000)\n"
    )
    raw = run_py(tmp_path, code, timeout=1.5)
    assert raw.timed_out
    marker.unlink(missing_ok=True)
    time.sleep(0.5)
    assert not marker.exists(), "a grandchild outlived the probe's timeout"


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
    proc = subprocess.Popen([sys.executable, str(driver)], cwd=tmp_path)
    for _ in range(100):
        if marker.exists() and marker.read_text():
            break
        time.sleep(0.1)
    child = int(marker.read_text())
    proc.send_signal(signal.SIGINT)
    assert proc.wait(timeout=20) == 42
    time.sleep(0.2)
    with pytest.raises(ProcessLookupError):
        os.kill(child, 0)
