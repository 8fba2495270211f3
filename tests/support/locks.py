"""What the lock tests share: a repro that imports an app and calls its ``run()``, lock's
options on the tests' index, and the pins a written requirements lock holds."""

from __future__ import annotations

from pathlib import Path

from envbisect.env.repro import Repro
from envbisect.model import IndexConfig
from envbisect.modes.lock.solve import LockOptions

from .index_server import LocalIndex
from .options import flat_options


def repro(folder: Path, app: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"repro_{app}.py"
    path.write_text(f"import {app}\n{app}.run()\nprint('{app} ok')\n")
    return path


def options(index: LocalIndex, python: str, tmp: Path, app: str, **kw: object) -> LockOptions:
    common = flat_options(
        repro=Repro.build(origin=tmp, repro_file=str(repro(tmp, app))),
        indexes=IndexConfig(index_url=index.url),
        python=python,
        results=tmp / "results",
        cache_dir=tmp / "cache",
    )
    return LockOptions(common=common, **kw)  # type: ignore[arg-type]


def locked(path: str | None) -> dict[str, str]:
    """``name -> version`` of each package a requirements lock pins."""
    assert path is not None
    out = {}
    for line in Path(path).read_text().splitlines():
        if "==" in line and not line.startswith(("#", " ", "-")):
            name, version = line.split(" ")[0].split("==")
            out[name] = version
    return out
