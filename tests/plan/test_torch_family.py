"""torch, torchvision and torchaudio from one build (issue 38): torchvision X requires
``torch==V``, which any build of V meets (PEP 440 ignores the local label), but each build of
torchvision works only with the torch of its own label. The tests' index has PyPI's builds
(no label) and PyTorch's ``+cpu`` and ``+cu121`` ones (tests/support/corpus.py); the CPU
folder is read as a --find-links folder, as a user's folder of CPU wheels is. The PyTorch host
itself cannot be reached from here: its layout is served locally."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

from envbisect.core.plan import Plan, PlanTarget, Unresolvable
from envbisect.core.resolve import plan
from envbisect.env.interp import locate
from envbisect.env.uv import Uv, find_uv
from envbisect.index.client import IndexClient
from envbisect.index.source import IndexMetadataSource
from envbisect.model import IndexConfig
from support.index_server import LocalIndex


def cpu_folder(index: LocalIndex) -> Path:
    return index.variants["cpu"][0].path.parent


def planned(index: LocalIndex, python: str, reqs: list[str], folder: Path) -> Plan | Unresolvable:
    target = locate(Uv(binary=find_uv(), offline=False), python, None)[1]
    cfg = IndexConfig(index_url=index.url, find_links=(str(folder),))
    with IndexClient(cfg) as client:
        return plan(
            [Requirement(r) for r in reqs],
            IndexMetadataSource(client, target),
            PlanTarget(markers=target.marker_environment(), python_version=target.python_version),
        )


def pair(got: Plan) -> tuple[Version, Version]:
    """The torch and the torchvision a plan takes."""
    return got.pins[canonicalize_name("torch")], got.pins[canonicalize_name("torchvision")]


def test_a_cpu_torch_takes_the_cpu_torchvision(index: LocalIndex, python: str) -> None:
    got = planned(index, python, ["torch==2.2.0", "torchvision"], cpu_folder(index))
    assert isinstance(got, Plan), got
    assert pair(got) == (
        Version("2.2.0+cpu"),
        Version("0.17.0+cpu"),
    )


def test_a_cpu_torch_never_takes_pypis_torchvision(
    index: LocalIndex, python: str, tmp_path: Path
) -> None:
    """Only torch's CPU build in the folder: PyPI's torchvision 0.17.0 (built for PyPI's
    torch) would import and fail; with torch==2.2.0+cpu there is no torchvision to pair."""
    folder = tmp_path / "wheels"
    folder.mkdir()
    for f in cpu_folder(index).glob("torch-*.whl"):
        shutil.copy(f, folder)
    got = planned(index, python, ["torch==2.2.0+cpu", "torchvision"], folder)
    assert isinstance(got, Unresolvable), got
    assert "torchvision" in got.reason and "2.2.0+cpu" in got.reason
    # Unpinned to a build, the planner pairs PyPI's torch with PyPI's torchvision instead.
    got = planned(index, python, ["torch==2.2.0", "torchvision"], folder)
    assert isinstance(got, Plan), got
    assert pair(got) == (
        Version("2.2.0"),
        Version("0.17.0"),
    )
    assert got.exact == {"torch"}
    assert "torch===2.2.0" in got.requirements()


def test_pypis_torch_takes_pypis_torchvision_and_uv_installs_that_build(
    index: LocalIndex, python: str, tmp_path: Path
) -> None:
    """torch===2.2.0 (PyPI's build) with the CPU folder at hand: torchvision's CPU build
    would be newer by its label, and wrong; PyPI's is planned, and ``===`` makes uv install
    the build planned, not the labelled one the folder offers."""
    folder = cpu_folder(index)
    got = planned(index, python, ["torch===2.2.0", "torchvision"], folder)
    assert isinstance(got, Plan), got
    assert pair(got) == (
        Version("2.2.0"),
        Version("0.17.0"),
    )
    uv = find_uv()
    env = Uv(binary=uv, offline=False).env()
    venv = tmp_path / "venv"
    subprocess.run([uv, "venv", "-q", "--python", python, str(venv)], check=True, env=env)
    subprocess.run(
        [uv, "pip", "install", "-q", "--no-config", "--python", str(venv / "bin" / "python"),
         "--index-url", index.url, "--find-links", str(folder), *got.requirements()],
        check=True, env=env,
    )  # fmt: skip
    out = subprocess.run(
        [str(venv / "bin" / "python"), "-c", "import torch, torchvision; "
         "print(torch.__version__, torchvision.__version__)"],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    assert out.stdout.split() == ["2.2.0", "0.17.0"]


@pytest.mark.parametrize("label", ["cpu", "cu121"])
def test_each_variant_pairs_with_its_own(index: LocalIndex, python: str, label: str) -> None:
    folder = index.variants[label][0].path.parent
    got = planned(index, python, [f"torch==2.1.0+{label}", "torchvision"], folder)
    assert isinstance(got, Plan), got
    assert got.pins[canonicalize_name("torchvision")] == Version(f"0.16.0+{label}")


def test_a_lock_writes_the_twinned_torch_exactly_and_reads_it_back(tmp_path: Path) -> None:
    """requirements.txt: ``torch===2.2.0`` where a ``+cpu`` twin is at hand (uv and pip take
    ``===`` with --require-hashes), and envbisect reads its own lock back as a lock."""
    from envbisect.core.lockfile import LockEntry, requirements_lock
    from envbisect.core.pins.sources import parse_requirements
    from envbisect.model import DistFile

    f = DistFile(filename="torch-2.2.0-py3-none-any.whl", url="https://x/t.whl",
                 hashes=(("sha256", "a" * 64),))  # fmt: skip
    text = requirements_lock(
        [LockEntry(name="torch", version="2.2.0", index=None, files=(f,), exact=True),
         LockEntry(name="six", version="1.16.0", index=None, files=(f,))],
        header=["test"],
    )  # fmt: skip
    assert "torch===2.2.0 \\" in text and "six==1.16.0 \\" in text
    pins = parse_requirements(text, origin="lock.txt")
    assert pins.is_lock
    assert {p.name: str(p.exact_version) for p in pins.requirements} == {
        "torch": "2.2.0",
        "six": "1.16.0",
    }
