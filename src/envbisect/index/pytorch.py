"""PyTorch's wheel indexes: one folder per variant (``cpu``, ``cu118``, ``cu121``...), local
version labels (``2.1.0+cu121``), no upload times.

Who does what: ``variant_url`` names the folder; ``resolve_backend`` turns ``auto`` into a
variant from what nvidia-smi says the driver supports; ``fill_upload_times`` borrows PyPI's
upload time for the same public version (the PyTorch index publishes none). The index client
routes the torch packages (``TORCH_PACKAGES``) to the variant folder only, as uv's
``--torch-backend`` does; the materializer passes uv ``--torch-backend`` for the official host
and the folder as a first-consulted index for a mirror.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import replace
from datetime import datetime

from packaging.version import Version

from envbisect.core.candidates import file_version
from envbisect.model import DistFile

OFFICIAL = "https://download.pytorch.org/whl"
# CUDA variants, oldest first: ``auto`` picks the newest the driver supports.
CUDA_VARIANTS = ("cu118", "cu121", "cu124", "cu126", "cu128", "cu129", "cu130")
_VARIANT = re.compile(r"^(cpu|cu\d{3}|rocm\d+(\.\d+)*|xpu)$")


def valid_backend(name: str) -> bool:
    return name == "auto" or bool(_VARIANT.match(name))


def variant_url(backend: str, base: str = OFFICIAL) -> str:
    return f"{base.rstrip('/')}/{backend}"


def is_official(url: str) -> bool:
    return url.startswith(OFFICIAL + "/")


def resolve_backend(backend: str, driver_cuda: str | None) -> str:
    """``auto`` -> the newest CUDA variant the driver supports, or ``cpu`` without one."""
    if backend != "auto":
        return backend
    if not driver_cuda:
        return "cpu"
    try:
        supported = Version(driver_cuda)
    except ValueError:
        return "cpu"
    best = "cpu"
    for v in CUDA_VARIANTS:
        cuda = Version(f"{v[2:-1]}.{v[-1]}")
        if cuda <= supported:
            best = v
    return best


def fill_upload_times(
    torch_files: Iterable[DistFile], pypi_files: Iterable[DistFile]
) -> list[DistFile]:
    """Torch-index files with the upload time PyPI gives the same public version."""
    when: dict[Version, datetime] = {}
    for f in pypi_files:
        v = file_version(f.filename)
        if v is not None and f.upload_time is not None:
            public = Version(v.public)
            if public not in when or f.upload_time < when[public]:
                when[public] = f.upload_time
    out = []
    for f in torch_files:
        v = file_version(f.filename)
        if f.upload_time is None and v is not None and Version(v.public) in when:
            f = replace(f, upload_time=when[Version(v.public)])
        out.append(f)
    return out
