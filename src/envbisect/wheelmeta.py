"""Reading a wheel's core metadata out of bytes or local files, with the hashes checked.

Who does what: ``IndexClient`` (index.py) fetches; this module reads what was fetched (a wheel
streamed to a temp file, a PEP 658 metadata file) or what lies on disk (a ``file://`` wheel and
its ``.metadata`` neighbour), and checks it against the hashes the index gave. It makes no
request. A file that does not match is an ``InfrastructureError`` (ref ``metadata-hash-mismatch``
or as the caller says), a wheel without a readable ``.dist-info/METADATA`` one with ref
``bad-wheel``.
"""

from __future__ import annotations

import hashlib
import zipfile
import zlib
from collections.abc import Iterable
from pathlib import Path
from typing import IO
from urllib.parse import urlsplit
from urllib.request import url2pathname

from packaging.utils import canonicalize_name

from .errors import InfrastructureError
from .model import DistFile
from .redact import mask_url


def stream_sha256(fh: IO[bytes]) -> str:
    """sha256 of what is left to read in ``fh``, read a megabyte at a time."""
    h = hashlib.sha256()
    for chunk in iter(lambda: fh.read(1 << 20), b""):
        h.update(chunk)
    return h.hexdigest()


def verified(data: bytes, hashes: Iterable[tuple[str, str]], url: str, ref: str) -> bytes:
    """``data`` if it matches every hash the index gives that hashlib knows, else an error."""
    for algo, want in hashes:
        if algo in hashlib.algorithms_guaranteed and hashlib.new(algo, data).hexdigest() != (
            want.lower()
        ):
            raise InfrastructureError(
                f"{mask_url(url)} does not match the {algo} the index gives for it",
                hint="the index, or a proxy on the way, served a damaged file; "
                "retry, and report it to the index if it persists",
                ref=ref,
            )
    return data


def read_wheel_metadata(fh: IO[bytes], filename: str) -> bytes:
    """The ``<name>-<version>.dist-info/METADATA`` member of a wheel."""
    try:
        with zipfile.ZipFile(fh) as zf:
            names = [
                n for n in zf.namelist() if n.count("/") == 1 and n.endswith(".dist-info/METADATA")
            ]
            if not names:
                raise InfrastructureError(
                    f"{filename} has no .dist-info/METADATA",
                    hint="the wheel is broken; report it to the package's maintainers",
                    ref="bad-wheel",
                )
            # Several dist-info folders would be a broken wheel; prefer the one named like it.
            stem = canonicalize_name(filename.split("-", 1)[0])
            names.sort(key=lambda n: (canonicalize_name(n.split("-", 1)[0]) != stem, n))
            return zf.read(names[0])
    except (
        zipfile.BadZipFile,
        zipfile.LargeZipFile,
        zlib.error,
        EOFError,
        NotImplementedError,
    ) as e:
        raise InfrastructureError(
            f"{filename} is not a readable wheel ({e})",
            hint="the wheel is broken; report it to the package's maintainers",
            ref="bad-wheel",
        ) from e


def local_metadata(f: DistFile) -> bytes:
    """METADATA of a ``file://`` wheel: its ``.metadata`` neighbour, else the wheel itself."""
    path = Path(url2pathname(urlsplit(f.url).path))
    side = path.with_name(path.name + ".metadata")
    try:
        if f.core_metadata is not None and side.is_file():
            return verified(
                side.read_bytes(), f.core_metadata, side.as_uri(), "metadata-hash-mismatch"
            )
        with path.open("rb") as fh:
            return read_wheel_metadata(fh, f.filename)
    except OSError as e:
        raise InfrastructureError(
            f"cannot read {path}: {e.strerror or e}",
            hint="the find-links folder or file index changed while envbisect ran?",
            ref="bad-wheel",
        ) from e
