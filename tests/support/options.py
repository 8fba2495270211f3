"""What the tests of several modes and executors build alike: ``flat_options`` and
``flat_with`` (CommonOptions from the names of its fields, whichever record by concern holds
each), ``common`` (CommonOptions on the tests' index, results and cache in a folder's ``r``
and ``c``), ``devices_repro`` (a repro that
prints its GPUs), ``dateapp_by_date`` (one search by date) and ``bump_matrix`` (a matrix of one
axis: every bumplib version, whose middle crashes)."""

from __future__ import annotations

from dataclasses import fields, replace
from datetime import timedelta
from pathlib import Path
from typing import Any

from envbisect.env.repro import Repro
from envbisect.exec.kinds.ray import RaySettings
from envbisect.model import IndexConfig
from envbisect.modes.bydate import DateOptions
from envbisect.options import CommonOptions, Parallelism, Planning, Probing

from .corpus import EPOCH
from .index_server import LocalIndex

_RECORDS = {
    "planning": {f.name for f in fields(Planning)},
    "probing": {f.name for f in fields(Probing)},
    "parallel": {f.name for f in fields(Parallelism)},
}


# Every name flat_options takes.
FLAT_NAMES = frozenset(
    {
        *(n for names in _RECORDS.values() for n in names),
        *(f.name for f in fields(CommonOptions)),
        "executor",
        "gpus_per_probe",
        "ray_address",
        "slurm",
    }
)


def flat_options(**kw: Any) -> CommonOptions:
    """CommonOptions with ``kw`` by field name (``jobs=2``, ``repro=...``, ``executor="ray"``,
    ``ray_address=...``, ``slurm=SlurmSettings(...)``), each put in its record."""
    return flat_with(CommonOptions(), **kw)


def flat_with(base: CommonOptions, **kw: Any) -> CommonOptions:
    """``base`` with ``kw`` by field name (``flat_options``)."""
    parts: dict[str, dict[str, Any]] = {name: {} for name in _RECORDS}
    execution: dict[str, Any] = {}
    top: dict[str, Any] = {}
    for key, value in kw.items():
        record = next((r for r, names in _RECORDS.items() if key in names), None)
        if record is not None:
            parts[record][key] = value
        elif key == "executor":
            execution["kind"] = value
        elif key == "gpus_per_probe":
            execution["gpus_per_probe"] = value
        elif key == "ray_address":
            execution["settings"] = RaySettings(address=value)
        elif key == "slurm":
            execution["settings"] = value
        else:
            top[key] = value
    return replace(
        base,
        planning=replace(base.planning, **parts["planning"]),
        probing=replace(base.probing, **parts["probing"]),
        parallel=replace(base.parallel, **parts["parallel"]),
        execution=replace(base.execution, **execution),
        **top,
    )


def common(index: LocalIndex, python: str, where: Path, repro: Repro, **kw: Any) -> CommonOptions:
    """CommonOptions for ``repro`` on ``index``, results in ``where/r``, cache in ``where/c``
    (``kw``: any other option)."""
    return flat_options(
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
