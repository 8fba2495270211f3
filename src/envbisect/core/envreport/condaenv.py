"""conda's ``env export`` and the ``environment.yml`` people write, read into rows.

```
name: llama
channels:
  - pytorch
dependencies:
  - python=3.10.13=h955ad1f_0
  - pytorch=2.1.0=py3.10_cuda12.1_cudnn8.9.2_0
  - pip:
    - transformers==4.36.2
```

Recognised by a ``dependencies:`` key with a ``channels:`` or ``name:`` key, or a ``- pip:``
list, beside it (a training config is YAML too, and has none of them). A conda dependency is
``name=version[=build]``: a Python distribution where its build names Python (``py310h...``)
or conda names a PyPI distribution otherwise (``pytorch`` is torch), or, written by hand
without a build, any name but the C libraries and CUDA parts (their CUDA is torch's build).
The ``pip:`` list's rows are pip's. Pure: a segment in, rows out.
"""

from __future__ import annotations

import re

from envbisect.core.envreport.formats import CONDA_CUDA, CONDA_NAMES, CONDA_TORCH_PARTS
from envbisect.core.envreport.report import EnvReport, Row, Segment

_DEPENDENCIES = re.compile(r"^dependencies:\s*$")
_BESIDE = re.compile(r"^(?:channels|name|prefix):")
_PIP_LIST = re.compile(r"^\s*-\s+pip:\s*$")
_CONDA_DEP = re.compile(
    r"^\s*-\s+(?:[\w.-]+::)?(?P<name>[A-Za-z0-9][\w.-]*)\s*=\s*(?P<version>\d[^=\s]*)"
    r"(?:=(?P<build>\S+))?\s*$"
)
_PIP_DEP = re.compile(r"^\s*-\s+(?P<name>[A-Za-z0-9][\w.-]*)\s*==\s*(?P<version>\d[^\s;#]*)")
_NOT_PYTHON = re.compile(r"^(?:lib|_|ca-certificates|openssl|ncurses|readline|tk|xz|zlib|bzip2)")


def conda_env(seg: Segment) -> EnvReport | None:
    lines = list(seg.numbered())
    if not any(_DEPENDENCIES.match(x) for _, x in lines):
        return None
    if not any(_BESIDE.match(x) or _PIP_LIST.match(x) for _, x in lines):
        return None
    rows: list[Row] = []
    left: list[str] = []
    pip_indent: int | None = None
    python = torch_cuda = None
    for number, line in lines:
        if _PIP_LIST.match(line):
            pip_indent = len(line) - len(line.lstrip())
            continue
        indent = len(line) - len(line.lstrip())
        if pip_indent is not None and line.strip() and indent <= pip_indent:
            pip_indent = None  # the pip: list ended
        if pip_indent is not None:
            m = _PIP_DEP.match(line)
            if m:
                rows.append(Row(name=m["name"], version=m["version"], line=number, kind="pip"))
            continue
        m = _CONDA_DEP.match(line)
        if m is None:
            continue
        name, version, build = m["name"].lower(), m["version"], m["build"] or ""
        if name == "python":
            python = version
            continue
        if name in CONDA_TORCH_PARTS:
            torch_cuda = torch_cuda or ".".join(version.split(".")[:2])
            continue
        builds_python = bool(re.search(r"(?:^|_)py(?:\d|h|_|$)", build))
        if builds_python or name in CONDA_NAMES or (not build and not _NOT_PYTHON.match(name)):
            key = CONDA_NAMES.get(name, name)
            rows.append(Row(name=key, version=version, line=number, kind="conda", build=build))
            cuda = CONDA_CUDA.search(build) if key == "torch" else None
            if cuda:
                torch_cuda = f"{cuda.group(1)}.{cuda.group(2)}"
            elif key == "torch" and "cpu" in build:
                torch_cuda = "cpu"
        else:
            left.append(
                f"line {number}: {name} {version} (a conda package, no Python distribution)"
            )
    if not rows:
        return None
    return EnvReport(
        formats=("conda env export",),
        rows=tuple(rows),
        python=python,
        torch_cuda=torch_cuda,
        left_out=tuple(left),
    )
