"""A real compiled C++ extension that starts threads and crashes inside a templated function
in a namespace, as a numpy/pyarrow/torch process does: several threads alive (an idle pool),
C++ frames with templates, ``operator()`` and an anonymous namespace.

``crashcpp.boom()`` crashes on the main thread; ``crashcpp.boom_in_thread()`` crashes in a
``std::thread`` named "worker" while the main thread waits for it.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from .wheels import build_wheel, extension_target

CRASH_CPP = r"""
#include <Python.h>
#include <pthread.h>
#include <chrono>
#include <thread>

namespace crashcpp {
namespace detail {
struct Ctx { int *data; };
template <typename T> struct Kernel {
  __attribute__((noinline)) void operator()(Ctx *ctx, T value) const {
    ctx->data[0] = static_cast<int>(value);  // ctx->data is NULL: SIGSEGV in this library
  }
};
template <typename T> __attribute__((noinline)) void run_kernel(Ctx *ctx, T value) {
  Kernel<T>{}(ctx, value);
}
}  // namespace detail
namespace {
void idle() {
  pthread_setname_np(pthread_self(), "pool");
  for (;;) std::this_thread::sleep_for(std::chrono::milliseconds(10));
}
void start_pool() {  // like OpenBLAS at import: threads that wait for work
  for (int i = 0; i < 3; ++i) std::thread(idle).detach();
}
__attribute__((noinline)) void crash_here() {
  detail::Ctx ctx{nullptr};
  detail::run_kernel<float>(&ctx, 1.0f);
}
}  // namespace
}  // namespace crashcpp

static PyObject *boom(PyObject *, PyObject *) {
  crashcpp::start_pool();
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  crashcpp::crash_here();
  Py_RETURN_NONE;
}

static PyObject *boom_in_thread(PyObject *, PyObject *) {
  crashcpp::start_pool();
  std::thread t([] {
    pthread_setname_np(pthread_self(), "worker");
    crashcpp::crash_here();
  });
  Py_BEGIN_ALLOW_THREADS
  t.join();
  Py_END_ALLOW_THREADS
  Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"boom", boom, METH_NOARGS, "crash on the main thread"},
    {"boom_in_thread", boom_in_thread, METH_NOARGS, "crash in a worker thread"},
    {nullptr, nullptr, 0, nullptr}};
static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_crashcpp", nullptr, -1, methods};

PyMODINIT_FUNC PyInit__crashcpp(void) { return PyModule_Create(&module); }
"""


def build_cpp_extension_wheel(outdir: Path, workdir: Path, python: str, *, debug: bool) -> Path:
    """The wheel ``crashcpp`` (g++ and the target's headers): 1.0 built with -g, so gdb prints
    its frames as ``at crash.cc:12`` without a library; 2.0 without, so gdb prints them as
    demangled symbols, ``void ns::f<T>(ns::Ctx*, float) () from lib.so``."""
    info = extension_target(python)
    version = "1.0" if debug else "2.0"
    workdir = workdir / version
    workdir.mkdir(parents=True, exist_ok=True)
    src = workdir / "crash.cc"
    src.write_text(CRASH_CPP)
    so = workdir / f"_crashcpp{info['suffix']}"
    flags = ["-g"] if debug else []
    subprocess.run(
        ["g++", "-shared", "-fPIC", "-O1", "-pthread", *flags, f"-I{info['inc']}", str(src),
         "-o", str(so)],
        check=True,
    )  # fmt: skip
    tag = f"{info['tag']}-{info['tag']}-{info['plat']}"
    return build_wheel(
        outdir,
        "crashcpp",
        version,
        {
            f"crashcpp/{so.name}": so.read_bytes(),
            "crashcpp/__init__.py": "from crashcpp._crashcpp import boom, boom_in_thread\n",
        },
        tag=tag,
    )
