"""A compiled package that ships a shared library named after its release, as pyarrow does
(``libarrow.so.1500`` in 15.0.0, ``libarrow.so.1600`` in 16.0.0): the bug lives in that
library, so every broken release crashes in the same function of a library whose soname
differs from release to release.

Each release of ``<project>`` is a wheel holding ``lib<project>.so.<M>00`` (gcc, its own
soname) and the extension module ``_<project>.<EXT_SUFFIX>`` linked against it with RPATH
``$ORIGIN`` (so the loader finds the library beside it, as auditwheel-repaired wheels do).
``<project>.run()`` calls into the library. A broken release reads through a NULL table in
``<project>_kernel``; releases built with -O2 name that function ``<project>_kernel.constprop.0``
(gcc's clone of it for a constant argument), as optimised release builds do, so the function
as gdb prints it differs by a clone suffix only.
"""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path

from .index_server import IndexFile, LocalIndex
from .wheels import build_wheel, extension_target

EPOCH = datetime(2024, 1, 1, tzinfo=timezone.utc)

LIB_C = r"""
static int storage[8] = {1, 2, 3, 4, 5, 6, 7, 8};
/* volatile: the compiler cannot see that a broken release's table is NULL */
int *volatile %(p)s_table = %(table)s;
const char %(p)s_version[] = "%(version)s";

__attribute__((noinline)) static int %(p)s_kernel(const int *table, int i, int scale) {
  return table[i] * scale; /* SIGSEGV when the table is NULL */
}

__attribute__((noinline)) static int %(p)s_other(const int *table, int i, int scale) {
  return table[i + 1] * scale; /* another bug, in another function of the same library */
}

int %(p)s_compute(int i) {
  return %(other)s ? %(p)s_other(%(p)s_table, i, 5) : %(p)s_kernel(%(p)s_table, i, 3);
}
"""

EXT_C = r"""
#include <Python.h>
int %(p)s_compute(int i);

static PyObject *compute(PyObject *self, PyObject *args) {
    return PyLong_FromLong(%(p)s_compute(1));
}

static PyMethodDef methods[] = {{"compute", compute, METH_NOARGS, "call the library"},
                                {NULL, NULL, 0, NULL}};
static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_%(p)s", NULL, -1, methods};

PyMODINIT_FUNC PyInit__%(p)s(void) { return PyModule_Create(&module); }
"""


@dataclass(frozen=True)
class Release:
    major: int
    broken: bool  # crashes in <project>_kernel
    optimised: bool = False  # -O2: the function is <project>_kernel.constprop.0
    other: bool = False  # crashes in <project>_other instead (another bug)

    @property
    def version(self) -> str:
        return f"{self.major}.0.0"

    @property
    def soname(self) -> str:
        return f"{self.major}00"


def build_release(outdir: Path, workdir: Path, python: str, project: str, release: Release) -> Path:
    """The wheel of one release: its versioned library and the extension linked to it."""
    info = extension_target(python)
    work = workdir / project / release.version
    work.mkdir(parents=True, exist_ok=True)
    values = {
        "p": project,
        "version": release.version,
        "table": "0" if release.broken or release.other else "storage",
        "other": int(release.other),
    }
    lib = f"lib{project}.so.{release.soname}"
    (work / "lib.c").write_text(LIB_C % values)
    (work / "ext.c").write_text(EXT_C % values)
    level = "-O2" if release.optimised else "-O0"
    subprocess.run(
        ["gcc", "-shared", "-fPIC", level, f"-Wl,-soname,{lib}", str(work / "lib.c"),
         "-o", str(work / lib)],
        check=True,
    )  # fmt: skip
    ext = f"_{project}{info['suffix']}"
    subprocess.run(
        ["gcc", "-shared", "-fPIC", "-O0", f"-I{info['inc']}", str(work / "ext.c"),
         str(work / lib), "-Wl,-rpath,$ORIGIN", "-o", str(work / ext)],
        check=True,
    )  # fmt: skip
    init = (
        f"__version__ = {release.version!r}\n"
        f"from {project}._{project} import compute\n\n"
        "def run():\n    return compute()\n"
    )
    tag = f"{info['tag']}-{info['tag']}-{info['plat']}"
    return build_wheel(
        outdir,
        project,
        release.version,
        {
            f"{project}/{lib}": (work / lib).read_bytes(),
            f"{project}/{ext}": (work / ext).read_bytes(),
            f"{project}/__init__.py": init,
        },
        tag=tag,
    )


def build_soname_index(root: Path, python: str, families: dict[str, list[Release]]) -> LocalIndex:
    """A local index serving each family's releases, one day apart, oldest first."""
    wheels, work = root / "wheels", root / "build"
    wheels.mkdir(parents=True, exist_ok=True)
    index = LocalIndex()
    for project, releases in families.items():
        for i, release in enumerate(releases):
            path = build_release(wheels, work, python, project, release)
            index.add(IndexFile(project=project, path=path, upload_time=EPOCH + timedelta(days=i)))
    return index.start()


def _never(major: int) -> bool:
    return False


def family(
    majors: range, broken: Callable[[int], bool], *, other: Callable[[int], bool] = _never
) -> list[Release]:
    """Releases ``M.0.0`` for M in ``majors``; odd majors built with -O2 (the clone suffix)."""
    return [
        Release(major=m, broken=broken(m) and not other(m), optimised=m % 2 == 1, other=other(m))
        for m in majors
    ]
