"""What the tests that use PyPI and this machine's CPU torch share: the wheel folder (pip's
find-links here, or ENVBISECT_TORCH_WHEELS) and whether PyPI answers."""

from __future__ import annotations

import os
from pathlib import Path

import httpx

WHEELS = Path(os.environ.get("ENVBISECT_TORCH_WHEELS", "/opt/wheels"))


def pypi_reachable() -> bool:
    try:
        return httpx.head("https://pypi.org/simple/pip/", timeout=10).status_code < 500
    except httpx.HTTPError:
        return False
