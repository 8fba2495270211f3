"""The planner and uv must agree: the same requirements, the same index, the same target.

For each case the in-process planner (policy ``latest``, uv's default) and
``uv pip compile`` resolve against the real local index; both must agree on whether a
solution exists and, when it does, on every pinned version.
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

from envbisect.core.plan import Plan, PlanTarget, Policy
from envbisect.core.resolve import plan
from envbisect.env.interp import locate
from envbisect.env.uv import Uv, find_uv
from envbisect.env.uvplan import UvFallback
from envbisect.index.client import IndexClient
from envbisect.index.source import IndexMetadataSource
from envbisect.model import IndexConfig
from support.index_server import LocalIndex

CASES = [
    ["crashy==1.10.0"],
    ["crashy==1.5.0"],
    ["crashy"],
    ["crashy==1.10.0", "helperlib<2"],
    ["crashy<1.9", "helperlib>=2"],
    ["gappy"],
    ["gappy==1.4.0"],
    ["py99"],
    ["py99==1.1.0"],
    ["raisy>=1.3,!=1.7.0", "fixy<1.4"],
    ["helperlib", "mixed>1.2,<1.5"],
]


@contextmanager
def planning(
    index: LocalIndex, python: str
) -> Iterator[tuple[IndexMetadataSource, PlanTarget, UvFallback]]:
    """What the planner plans with here: the local index's metadata, this interpreter as the
    target, and uv as the fallback (used where ``plan`` is given it)."""
    target = locate(Uv(binary=find_uv(), offline=False), python, None)[1]
    ptarget = PlanTarget(markers=target.marker_environment(), python_version=target.python_version)
    cfg = IndexConfig(index_url=index.url)
    fallback = UvFallback(uv=Uv(binary=find_uv(), offline=False), python=python, indexes=cfg)
    with IndexClient(cfg) as client:
        yield IndexMetadataSource(client, target), ptarget, fallback


def uv_compile(index: LocalIndex, python: str, reqs: list[str]) -> dict[str, str] | None:
    proc = subprocess.run(
        [find_uv(), "pip", "compile", "--no-config", "-q", "--python", python, "--index-url",
         index.url, "--only-binary", ":all:", "--no-header", "--no-annotate", "-"],
        input="\n".join(reqs) + "\n", capture_output=True, text=True,
        env=Uv(binary=find_uv(), offline=False).env(),
    )  # fmt: skip
    if proc.returncode != 0:
        assert "No solution found" in proc.stderr or "not found" in proc.stderr, proc.stderr
        return None
    pins = {}
    for line in proc.stdout.splitlines():
        m = re.match(r"^([A-Za-z0-9._-]+)==(\S+)", line.strip())
        if m:
            pins[m.group(1).lower()] = m.group(2)
    return pins


@pytest.mark.parametrize("reqs", CASES, ids=[" ".join(c) for c in CASES])
def test_planner_agrees_with_uv(index: LocalIndex, python: str, reqs: list[str]) -> None:
    with planning(index, python) as (source, ptarget, _):
        result = plan([Requirement(r) for r in reqs], source, ptarget, policy=Policy.LATEST)
    expected = uv_compile(index, python, reqs)
    if expected is None:
        assert not isinstance(result, Plan), f"uv finds no solution, the planner found {result}"
        assert result.reason
    else:
        assert isinstance(result, Plan), f"uv resolves {expected}; planner: {result.reason}"
        assert {k: str(v) for k, v in result.pins.items()} == expected


@pytest.mark.parametrize("reqs", CASES, ids=[" ".join(c) for c in CASES])
def test_uv_fallback_gives_the_same_answer(index: LocalIndex, python: str, reqs: list[str]) -> None:
    """With no rounds allowed, every question goes to uv (the fallback), which must answer
    as resolvelib does, through the same Plan/Unresolvable shapes."""
    with planning(index, python) as (source, ptarget, fallback):
        direct = plan([Requirement(r) for r in reqs], source, ptarget)
        via_uv = plan([Requirement(r) for r in reqs], source, ptarget, fallback=fallback,
                      max_rounds=0)  # fmt: skip
    assert type(direct) is type(via_uv)
    if isinstance(direct, Plan) and isinstance(via_uv, Plan):
        assert via_uv.pins == direct.pins
        assert via_uv.visited == (("uv", "pip compile"),)


def test_uv_fallback_keeps_the_baseline(index: LocalIndex, python: str) -> None:
    with planning(index, python) as (source, ptarget, fallback):
        result = plan([Requirement("crashy<1.9"), Requirement("raisy")], source, ptarget,
                      policy=Policy.BASELINE,
                      baseline={"raisy": Version("1.2.0"), "helperlib": Version("1.0.0")},
                      fallback=fallback, max_rounds=0)  # fmt: skip
    assert isinstance(result, Plan)
    assert str(result.pins[canonicalize_name("raisy")]) == "1.2.0"  # kept, though 1.7.0 exists
    assert ("crashy", None, Version("1.8.0")) in result.moved
