"""What the tests of several modes and executors build alike: ``common`` (CommonOptions on the
tests' index, results and cache in a folder's ``r`` and ``c``), ``devices_repro`` (a repro that
prints its GPUs), ``dateapp_by_date`` (one search by date) and ``bump_matrix`` (a matrix of one
axis: every bumplib version, whose middle crashes)."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

from envbisect.env.repro import Repro
from envbisect.model import IndexConfig
from envbisect.modes.bydate import DateOptions
from envbisect.options import CommonOptions

from .corpus import EPOCH
from .index_server import LocalIndex


def common(index: LocalIndex, python: str, where: Path, repro: Repro, **kw: Any) -> CommonOptions:
    """CommonOptions for ``repro`` on ``index``, results in ``where/r``, cache in ``where/c``
    (``kw``: any other option)."""
    return CommonOptions(
        repro=repro,
        indexes=IndexConfig(index_url=index.url),
        python=python,
        results=where / "r",
        cache_dir=where / "c",
        **kw,
    )


def devices_repro(where: Path) -> Repro:
    """A repro (``where/gpu.py``) that imports crashy and prints the GPUs it was given:
    ``devices=`` and its CUDA_VISIBLE_DEVICES."""
    script = where / "gpu.py"
    script.write_text("import os, crashy\nprint('devices=' + os.environ['CUDA_VISIBLE_DEVICES'])\n")
    return Repro.from_file(str(script), where)


def dateapp_by_date(common: CommonOptions) -> DateOptions:
    """The search by date with dateapp 1.0.0: the index as it stood on the corpus' day 2
    (good) and day 45 (bad)."""
    return DateOptions(
        good=(EPOCH + timedelta(days=2)).isoformat(),
        bad=(EPOCH + timedelta(days=45)).isoformat(),
        with_reqs=("dateapp==1.0.0",),
        common=common,
    )


def bump_matrix(
    index: LocalIndex, python: str, where: Path, repro: str = "bump.py", sleep: int = 0
) -> Path:
    """A matrix over every bumplib version, written to ``where`` (named as ``repro``, with
    ``.toml`` for ``.py``) with its repro ``where/REPRO``: it imports bumplib and calls its
    ``run()``, after ``sleep`` seconds where given."""
    waits = f"import time, bumplib\ntime.sleep({sleep})\n" if sleep else "import bumplib\n"
    (where / repro).write_text(f"{waits}bumplib.run()\n")
    path = (where / repro).with_suffix(".toml")
    path.write_text(
        f'[matrix]\npython = ["{python}"]\nindex_url = "{index.url}"\nrepro = "{repro}"\n'
        '[[axis]]\npackage = "bumplib"\n'
    )
    return path
