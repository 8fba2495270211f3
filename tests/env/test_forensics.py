"""Native crash sites in processes with threads and C++ frames: a real compiled C++ extension
under real gdb, and gdb's text in each of the forms it prints.

Hermetic: the extension is compiled here with g++ against the running interpreter's headers
and installed from a folder of wheels next to the local index.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest

from envbisect.env.forensics import enrich, function_name, parse_frame, parse_gdb
from envbisect.model import Outcome, OutcomeKind
from envbisect.store import Store
from support.cli import envbisect
from support.index_server import LocalIndex
from support.native import build_cpp_extension_wheel

needs_gdb = pytest.mark.skipif(shutil.which("gdb") is None, reason="gdb is not installed")
needs_gxx = pytest.mark.skipif(shutil.which("g++") is None, reason="g++ is not installed")
LIB = "_crashcpp.cpython-"
KERNEL = "crashcpp::detail::Kernel<float>::operator()"


@pytest.fixture(scope="module")
def cpp_wheels(tmp_path_factory: pytest.TempPathFactory) -> Path:
    wheels = tmp_path_factory.mktemp("cpp-wheels")
    build = tmp_path_factory.mktemp("cpp-build")
    for debug in (True, False):
        build_cpp_extension_wheel(wheels, build, sys.executable, debug=debug)
    return wheels


def probe_crash(
    index: LocalIndex, python: str, tmp_path: Path, wheels: Path, version: str, call: str
) -> tuple[dict[str, object], str]:
    """``envbisect probe`` of ``crashcpp.<call>()``: the JSON outcome and the stored detail."""
    results = tmp_path / "r"
    proc = envbisect(
        "probe", "--index-url", index.url, "--python", python,
        "--results", str(results), "--find-links", str(wheels), "--with", f"crashcpp=={version}",
        "--json", "--", "python", "-c", f"import crashcpp; crashcpp.{call}()",
    )  # fmt: skip
    assert proc.returncode == 4, proc.stderr
    with Store(results) as store:
        (rec,) = list(store.all())
    outcome: dict[str, object] = json.loads(proc.stdout)["outcome"]
    return outcome, rec.outcome.detail


@needs_gdb
@needs_gxx
@pytest.mark.parametrize("version", ["1.0", "2.0"], ids=["with-debug-info", "symbols-only"])
def test_cpp_crash_among_threads_names_the_library_and_function(
    index: LocalIndex, python: str, tmp_path: Path, cpp_wheels: Path, version: str
) -> None:
    out, detail = probe_crash(index, python, tmp_path, cpp_wheels, version, "boom")
    assert out["kind"] == "crash" and out["signal"] == "SIGSEGV"
    assert isinstance(out["library"], str) and out["library"].startswith(LIB)
    assert out["function"] == KERNEL
    signature = str(out["signature"])
    assert signature.startswith(f"SIGSEGV in {LIB}")
    assert f"({KERNEL})" in signature
    # The Python frame is the main thread's, which crashed: the one-liner's <module>.
    assert signature.endswith("at <module> (<string>:1)")
    assert 'crashing thread: 1 "python"' in detail
    assert "crashcpp::(anonymous namespace)::crash_here" in detail


@needs_gdb
@needs_gxx
def test_crash_in_a_thread_other_than_the_main_one(
    index: LocalIndex, python: str, tmp_path: Path, cpp_wheels: Path
) -> None:
    out, detail = probe_crash(index, python, tmp_path, cpp_wheels, "1.0", "boom_in_thread")
    assert out["kind"] == "crash" and out["signal"] == "SIGSEGV"
    assert isinstance(out["library"], str) and out["library"].startswith(LIB)
    # The worker's frames, not thread 1's (which waits in join); and no Python frame, since
    # the worker runs none (the main thread's <module> is not the crash site).
    assert out["signature"] == f"SIGSEGV in {out['library']} ({KERNEL})"
    thread = detail.split("crashing thread: ", 1)[1].split(")", 1)[0]
    assert thread.endswith('"worker"') and not thread.startswith("1 ")
    assert "std::thread" in detail and "t.join" not in detail


# -- gdb's text, as gdb 13 printed it ----------------------------------------------------------

MAIN_THREAD_DEBUG = """\
[Thread debugging using libthread_db enabled]

Thread 1 "python" received signal SIGSEGV, Segmentation fault.
0x00007ffff7478517 in crashcpp::detail::Kernel<float>::operator() (this=this@entry=0x7fffffffe21f, ctx=ctx@entry=0x7fffffffe238, value=value@entry=1) at crash.cc:13
13	    ctx->data[0] = static_cast<int>(value);
ENVBISECT-SYMBOL
crashcpp::detail::Kernel<float>::operator()(crashcpp::detail::Ctx*, float) const + 7 in section .text of /t/_crashcpp.cpython-311-x86_64-linux-gnu.so
ENVBISECT-THREAD
[Current thread is 1 (Thread 0x7ffff7fbeb80 (LWP 12361))]
ENVBISECT-BT
#0  0x00007ffff7478517 in crashcpp::detail::Kernel<float>::operator() (this=this@entry=0x7fffffffe21f, ctx=ctx@entry=0x7fffffffe238, value=value@entry=1) at crash.cc:13
#1  0x00007ffff747852b in crashcpp::detail::run_kernel<float> (ctx=ctx@entry=0x7fffffffe238, value=value@entry=1) at crash.cc:17
#2  0x00007ffff7478492 in crashcpp::(anonymous namespace)::crash_here () at crash.cc:31
#3  boom () at crash.cc:38
#4  0x00007ffff7ba75a2 in cfunction_vectorcall_NOARGS (func=0x7ffff7494720, args=<optimized out>, nargsf=<optimized out>, kwnames=<optimized out>) at Objects/methodobject.c:486
ENVBISECT-FRAMES
crashcpp::detail::Kernel<float>::operator()(crashcpp::detail::Ctx*, float) const + 7 in section .text of /t/_crashcpp.cpython-311-x86_64-linux-gnu.so
void crashcpp::detail::run_kernel<float>(crashcpp::detail::Ctx*, float) + 17 in section .text of /t/_crashcpp.cpython-311-x86_64-linux-gnu.so
boom(_object*, _object*) + 36 in section .text of /t/_crashcpp.cpython-311-x86_64-linux-gnu.so
boom(_object*, _object*) + 36 in section .text of /t/_crashcpp.cpython-311-x86_64-linux-gnu.so
cfunction_vectorcall_NOARGS + 98 in section .text of /p/lib/libpython3.11.so.1.0
ENVBISECT-END
"""  # noqa: E501

WORKER_THREAD_SYMBOLS = """\
Thread 5 "worker" received signal SIGSEGV, Segmentation fault.
[Switching to Thread 0x7ffff59fc6c0 (LWP 13717)]
ENVBISECT-SYMBOL
No symbol matches $pc.
ENVBISECT-THREAD
[Current thread is 5 (Thread 0x7ffff59fc6c0 (LWP 13717))]
ENVBISECT-BT
#0  0x00007ffff7478517 in ?? ()
#1  0x00007ffff747852b in void ns::detail::Kernel<ns::Type>(ns::Ctx*, float) () from /t/libkernels.so.2
#2  0x00007ffff7478469 in std::thread::_State_impl<std::thread::_Invoker<std::tuple<f(_object*, _object*)::{lambda()#1}> > >::_M_run() () from /t/libkernels.so.2
#3  0x00007ffff72d44a3 in ?? () from /lib/x86_64-linux-gnu/libstdc++.so.6
#4  0x00007ffff789e1f5 in start_thread (arg=<optimized out>) at ./nptl/pthread_create.c:442
ENVBISECT-END
"""  # noqa: E501

THREAD_APPLY_ALL = """\
Thread 3 "pt_autograd_0" received signal SIGABRT, Aborted.

Thread 3 (Thread 0x7fffe1bff6c0 (LWP 22) "pt_autograd_0"):
#0  __pthread_kill_implementation (threadid=<optimized out>, signo=signo@entry=6, no_tid=no_tid@entry=0) at ./nptl/pthread_kill.c:44
#1  0x00007ffff7831f32 in raise () from /lib/x86_64-linux-gnu/libc.so.6
#2  0x00007ffff781c472 in abort () from /lib/x86_64-linux-gnu/libc.so.6
#3  0x00007fffe9a1b2c3 in torch::autograd::(anonymous namespace)::Engine::thread_main(std::shared_ptr<torch::autograd::GraphTask> const&) () from /v/torch/lib/libtorch_cpu.so

Thread 1 (Thread 0x7ffff7fbeb80 (LWP 20) "python"):
#0  0x00007ffff7891f16 in __futex_abstimed_wait_common () from /lib/x86_64-linux-gnu/libc.so.6
#1  0x00007ffff7c508e4 in PyEval_EvalCode () from /p/lib/libpython3.11.so.1.0
"""  # noqa: E501


def test_parse_a_main_thread_crash_among_threads() -> None:
    trace = parse_gdb(MAIN_THREAD_DEBUG)
    assert (trace.signal, trace.thread) == ("SIGSEGV", '1 "python"')
    assert trace.library == "_crashcpp.cpython-311-x86_64-linux-gnu.so"
    assert trace.frames == (
        "crashcpp::detail::Kernel<float>::operator()",
        "crashcpp::detail::run_kernel<float>",
        "crashcpp::(anonymous namespace)::crash_here",
        "boom",
        "cfunction_vectorcall_NOARGS",
    )


def test_parse_a_worker_crash_whose_pc_has_no_symbol() -> None:
    # Frame 0 has no library and no symbol: the innermost frame that has one decides.
    trace = parse_gdb(WORKER_THREAD_SYMBOLS)
    assert (trace.signal, trace.thread) == ("SIGSEGV", '5 "worker"')
    assert trace.library == "libkernels.so.2"
    assert trace.frames[:2] == ("??", "ns::detail::Kernel<ns::Type>")
    assert trace.frames[2].endswith("::_M_run")


def test_parse_thread_apply_all_takes_the_crashing_thread() -> None:
    trace = parse_gdb(THREAD_APPLY_ALL)
    assert (trace.signal, trace.thread) == ("SIGABRT", '3 "pt_autograd_0"')
    assert trace.frames == (
        "__pthread_kill_implementation",
        "raise",
        "abort",
        "torch::autograd::(anonymous namespace)::Engine::thread_main",
    )
    assert trace.library == "libc.so.6"  # frame 0 has none ("at file.c:44"); frame 1 has
    assert "__futex_abstimed_wait_common" not in trace.text


STRIPPED = """\
Thread 1 "python" received signal SIGILL, Illegal instruction.
ENVBISECT-BT
#0  0x00007fffe1b2c3d4 in ?? () from /v/abess/pybind_cabess.cpython-38-x86_64-linux-gnu.so
#1  0x00007fffe1b2a111 in ?? () from /v/abess/pybind_cabess.cpython-38-x86_64-linux-gnu.so
#2  0x00000000004c7d8e in cfunction_call_varargs (func=0x7ffff, args=0x7fff) at Objects/call.c:743
#3  0x00000000004e11c2 in _PyEval_EvalFrameDefault () at Python/ceval.c:3500
"""


def test_a_stripped_library_is_not_named_after_its_caller() -> None:
    """abess 0.4.7's wheel is stripped: its frames are "??"; the interpreter function further
    out is in another binary and must not be reported as the faulting function."""
    trace = parse_gdb(STRIPPED)
    assert trace.library == "pybind_cabess.cpython-38-x86_64-linux-gnu.so"
    assert trace.function is None
    crash = Outcome(kind=OutcomeKind.CRASH, signal="SIGILL", signature="SIGILL")
    assert enrich(crash, trace).signature == (
        "SIGILL in pybind_cabess.cpython-38-x86_64-linux-gnu.so"
    )
    assert enrich(crash, trace).function is None  # a stripped library: it does not decide
    named = parse_gdb(MAIN_THREAD_DEBUG)
    assert named.function == "crashcpp::detail::Kernel<float>::operator()"


def test_enrich_keeps_the_library_and_function_as_gdb_printed_them() -> None:
    """The fields same_failure compares, and the signature people read: the real soname."""
    crash = Outcome(kind=OutcomeKind.CRASH, signal="SIGSEGV", signature="SIGSEGV")
    out = enrich(crash, parse_gdb(WORKER_THREAD_SYMBOLS))
    assert (out.library, out.function) == ("libkernels.so.2", "ns::detail::Kernel<ns::Type>")
    assert out.signature == "SIGSEGV in libkernels.so.2 (ns::detail::Kernel<ns::Type>)"
    assert out.to_dict()["function"] == "ns::detail::Kernel<ns::Type>"


def test_parse_program_received_signal_still_works() -> None:
    text = "Program received signal SIGBUS, Bus error.\nENVBISECT-BT\n#0  f () from /x/liba.so\n"
    trace = parse_gdb(text)
    assert (trace.signal, trace.thread, trace.library, trace.frames) == (
        "SIGBUS",
        None,
        "liba.so",
        ("f",),
    )


@pytest.mark.parametrize(
    ("line", "function", "library"),
    [
        ("#0  0x1 in void ns::detail::Kernel<ns::Type>(ns::Ctx*, ...) () from /x/libk.so",
         "ns::detail::Kernel<ns::Type>", "libk.so"),
        ("#1  0x1 in ns::(anonymous namespace)::run(int) () from /x/libk.so",
         "ns::(anonymous namespace)::run", "libk.so"),
        ("#2  0x1 in ns::Foo<int>::operator()(ns::Ctx*) const () from /x/libk.so",
         "ns::Foo<int>::operator()", "libk.so"),
        ("#3  ns::Foo<int>::operator() (this=0x1, n=<optimized out>) at foo.cc:12",
         "ns::Foo<int>::operator()", None),
        ("#4  0x1 in ns::operator<<(std::ostream&, ns::T const&) () from /x/liba.so",
         "ns::operator<<", "liba.so"),
        ("#5  0x1 in ns::Foo::operator bool() const () from /x/liba.so",
         "ns::Foo::operator bool", "liba.so"),
        ("#6  0x00007ffff72d44a3 in ?? () from /lib/x86_64-linux-gnu/libstdc++.so.6",
         "??", "libstdc++.so.6"),
        ("#7  0x00007ffff7478517 in ?? ()", "??", None),
        ("#8  <signal handler called>", "<signal handler called>", None),
        ('#9  0x1 in PyRun_StringFlags (str=0x1 "f(\\")at x", start=257) at Python/run.c:1601',
         "PyRun_StringFlags", None),
        ("#10 0x1 in std::vector<int, std::allocator<int> > ns::make<int>(unsigned long) () "
         "from /x/liba.so", "ns::make<int>", "liba.so"),
    ],
)  # fmt: skip
def test_parse_cpp_frames(line: str, function: str, library: str | None) -> None:
    parsed = parse_frame(line)
    assert parsed is not None and parsed[:2] == (function, library)


def test_function_name_of_a_symbol() -> None:
    assert function_name("void ns::f<int>(int) [clone .cold]") == "ns::f<int>"
    assert function_name("ns::apply_operator()") == "ns::apply_operator"
