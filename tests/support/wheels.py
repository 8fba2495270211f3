"""Build real wheels and sdists for the tests' local index (no build backend needed).

A wheel is a zip with a ``.dist-info`` folder (METADATA, WHEEL, RECORD): everything uv and pip
need to install it. The sdists carry a setup.py that fails loudly: building one means a
stranger's code ran, which envbisect must not do unless asked.
"""

from __future__ import annotations

import base64
import hashlib
import io
import tarfile
import zipfile
from collections.abc import Iterable, Mapping
from pathlib import Path


def _record_hash(data: bytes) -> str:
    digest = hashlib.sha256(data).digest()
    return "sha256=" + base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


def build_wheel(
    outdir: Path,
    name: str,
    version: str,
    files: Mapping[str, str | bytes],
    *,
    requires: Iterable[str] = (),
    requires_python: str | None = None,
    tag: str = "py3-none-any",
    headers: Iterable[str] = (),
) -> Path:
    """Write ``{name}-{version}-{tag}.whl`` into ``outdir`` and return its path (``headers``:
    more METADATA lines, such as ``Project-URL: Source, https://...``)."""
    dist = name.replace("-", "_")
    info = f"{dist}-{version}.dist-info"
    meta = ["Metadata-Version: 2.1", f"Name: {name}", f"Version: {version}"]
    if requires_python:
        meta.append(f"Requires-Python: {requires_python}")
    meta += [f"Requires-Dist: {r}" for r in requires]
    meta += list(headers)
    contents: dict[str, bytes] = {
        path: data.encode() if isinstance(data, str) else data for path, data in files.items()
    }
    contents[f"{info}/METADATA"] = ("\n".join(meta) + "\n\n").encode()
    contents[f"{info}/WHEEL"] = (
        "Wheel-Version: 1.0\nGenerator: envbisect-tests\nRoot-Is-Purelib: true\n"
        + "".join(f"Tag: {t}\n" for t in _expand(tag))
    ).encode()
    record = [f"{p},{_record_hash(d)},{len(d)}" for p, d in contents.items()]
    record.append(f"{info}/RECORD,,")
    contents[f"{info}/RECORD"] = ("\n".join(record) + "\n").encode()
    path = outdir / f"{dist}-{version}-{tag}.whl"
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for p, d in contents.items():
            zf.writestr(zipfile.ZipInfo(p, date_time=(2020, 1, 1, 0, 0, 0)), d)
    return path


def _expand(tag: str) -> list[str]:
    py, abi, plat = tag.split("-")
    return [f"{a}-{b}-{c}" for a in py.split(".") for b in abi.split(".") for c in plat.split(".")]


def build_sdist(outdir: Path, name: str, version: str) -> Path:
    """An sdist whose setup.py fails: building it would run a stranger's code."""
    dist = name.replace("-", "_")
    root = f"{dist}-{version}"
    files = {
        f"{root}/PKG-INFO": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n",
        f"{root}/setup.py": "raise SystemExit('envbisect tests: this sdist must never be built')\n",
    }
    path = outdir / f"{root}.tar.gz"
    with tarfile.open(path, "w:gz") as tf:
        for p, text in files.items():
            data = text.encode()
            ti = tarfile.TarInfo(p)
            ti.size = len(data)
            ti.mtime = 1577836800
            tf.addfile(ti, io.BytesIO(data))
    return path


CRASH_C = r"""
#include <Python.h>

static PyObject *boom(PyObject *self, PyObject *args) {
    volatile int *p = NULL;
    *p = 42; /* SIGSEGV inside this extension module */
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {{"boom", boom, METH_NOARGS, "crash"}, {NULL, NULL, 0, NULL}};
static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_crashext", NULL, -1, methods};

PyMODINIT_FUNC PyInit__crashext(void) { return PyModule_Create(&module); }
"""


def build_c_extension_wheel(outdir: Path, workdir: Path, python: str) -> Path:
    """A real compiled CPython extension (gcc + the target's headers) that segfaults in C.

    Returns the wheel ``crashext-1.0`` whose ``crashext.boom()`` crashes inside
    ``_crashext.<ext suffix>``, not in libc or ctypes.
    """
    import subprocess

    info = extension_target(python)
    workdir.mkdir(parents=True, exist_ok=True)
    src = workdir / "crash.c"
    src.write_text(CRASH_C)
    so = workdir / f"_crashext{info['suffix']}"
    subprocess.run(
        ["gcc", "-shared", "-fPIC", "-O0", "-g", f"-I{info['inc']}", str(src), "-o", str(so)],
        check=True,
    )
    tag = f"{info['tag']}-{info['tag']}-{info['plat']}"
    return build_wheel(
        outdir,
        "crashext",
        "1.0",
        {
            f"crashext/{so.name}": so.read_bytes(),
            "crashext/__init__.py": "from crashext._crashext import boom\n",
        },
        tag=tag,
    )


def extension_target(python: str) -> dict[str, str]:
    """What building a CPython extension for ``python`` needs: its include folder, extension
    suffix, interpreter tag and platform tag (read off that interpreter)."""
    import json
    import subprocess

    out: dict[str, str] = json.loads(
        subprocess.run(
            [python, "-c", "import json, sysconfig, sys; print(json.dumps({"
             "'inc': sysconfig.get_paths()['include'], "
             "'suffix': sysconfig.get_config_var('EXT_SUFFIX'), "
             "'tag': 'cp%d%d' % sys.version_info[:2], "
             "'plat': sysconfig.get_platform().replace('-', '_').replace('.', '_')}))"],
            capture_output=True, text=True, check=True,
        ).stdout
    )  # fmt: skip
    return out


def _elf(
    strings: bytes, kind: int, body: bytes, info: int, entsize: int, padding: int = 0
) -> bytes:
    """A 64-bit little-endian ELF shared object: its header, a string table, one section of
    ``kind`` (linked to the strings) holding ``body``, ``padding`` bytes of code-like filler,
    and the section headers at the end (null, strings, that section)."""
    import struct

    str_at = 64
    body_at = str_at + len(strings)
    sh_at = body_at + len(body) + padding
    header = (
        b"\x7fELF\x02\x01\x01"
        + b"\0" * 9
        + struct.pack("<HHIQQQIHHHHHH", 3, 62, 1, 0, 0, sh_at, 0, 64, 0, 0, 64, 3, 0)
    )
    sections = b"\0" * 64
    sections += struct.pack("<IIQQQQIIQQ", 0, 3, 0, 0, str_at, len(strings), 0, 0, 1, 0)
    sections += struct.pack("<IIQQQQIIQQ", 0, kind, 0, 0, body_at, len(body), 1, info, 8, entsize)
    filler = bytes(range(256)) * (padding // 256) + b"\x90" * (padding % 256)
    return header + strings + body + filler + sections


def elf_needing(*versions: str) -> bytes:
    """The smallest 64-bit ELF shared object whose version needs name ``GLIBC_<v>`` for each
    of ``versions`` (what ``objdump -T`` shows of a real one): a header, a string table and a
    ``.gnu.version_r`` section, for wheels whose binaries ask more than their tag claims."""
    import struct

    strings = b"\0libc.so.6\0"
    names = []
    for v in versions:
        names.append(len(strings))
        strings += f"GLIBC_{v}".encode() + b"\0"
    aux = b"".join(
        struct.pack("<IHHII", 0, 0, 2 + i, name, 16 if i + 1 < len(names) else 0)
        for i, name in enumerate(names)
    )
    verneed = struct.pack("<HHIII", 1, len(names), 1, 16, 0) + aux
    return _elf(strings, 0x6FFFFFFE, verneed, info=1, entsize=0)


def elf_linking(*libraries: str, padding: int = 0) -> bytes:
    """The smallest 64-bit ELF shared object whose dynamic section links ``libraries``
    (``DT_NEEDED``, what ``readelf -d`` shows of a real one): a header, the dynamic string
    table, the dynamic section, ``padding`` bytes of code-like filler (a shared object too
    large to read whole, judged by its first bytes), and the section headers at the end."""
    import struct

    strings = b"\0"
    offsets = []
    for lib in libraries:
        offsets.append(len(strings))
        strings += lib.encode() + b"\0"
    dynamic = b"".join(struct.pack("<qQ", 1, o) for o in offsets) + struct.pack("<qQ", 0, 0)
    return _elf(strings, 6, dynamic, info=0, entsize=16, padding=padding)
