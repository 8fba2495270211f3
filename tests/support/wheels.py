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
) -> Path:
    """Write ``{name}-{version}-{tag}.whl`` into ``outdir`` and return its path."""
    dist = name.replace("-", "_")
    info = f"{dist}-{version}.dist-info"
    meta = ["Metadata-Version: 2.1", f"Name: {name}", f"Version: {version}"]
    if requires_python:
        meta.append(f"Requires-Python: {requires_python}")
    meta += [f"Requires-Dist: {r}" for r in requires]
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
