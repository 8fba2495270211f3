"""PyTorch-style variant indexes, served locally the way download.pytorch.org lays them out
(the real host cannot be reached from here, so the tests mock it with the same layout:
/whl/<variant>/<project>/, HTML only, local versions, no upload times)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from conftest import RecordingProgress
from envbisect.cli.optionset import parsed
from envbisect.cli.readflags import common_options
from envbisect.core.results.parts import Status
from envbisect.env import envreport
from envbisect.env.repro import Repro
from envbisect.index.client import IndexClient
from envbisect.index.pytorch import resolve_backend, variant_url
from envbisect.model import IndexConfig
from envbisect.modes.run import RunOptions, run_bisect
from envbisect.modes.session import Session
from envbisect.options import TorchChoice
from support.cli import envbisect
from support.index_server import LocalIndex
from support.options import flat_options


def test_torch_packages_come_from_the_variant_folder_with_pypi_upload_times(
    index: LocalIndex, tmp_path: Path
) -> None:
    cfg = IndexConfig(index_url=index.url, torch_index=variant_url("cu121", f"{index.base}/whl"))
    with IndexClient(cfg, cache_dir=tmp_path / "c") as client:
        torch = client.project_files("torch")
        other = client.project_files("crashy")
    names = sorted(f.filename for f in torch.files)
    assert names == [
        "torch-2.1.0+cu121-py3-none-any.whl",
        "torch-2.2.0+cu121-py3-none-any.whl",
        "torch-2.3.0+cu121-py3-none-any.whl",
    ]
    # The PyTorch index has no upload times: PyPI's for the same public version are used.
    assert all(f.upload_time is not None for f in torch.files)
    assert {f.upload_time.month for f in torch.files if f.upload_time} == {1, 3, 4}
    assert other.source == index.url  # everything else still comes from the main index


def test_run_keeps_torchvision_paired_and_finds_the_bad_torch(
    index: LocalIndex, python: str, tmp_path: Path
) -> None:
    check = tmp_path / "check.py"
    check.write_text(
        "import torch, torchvision\n"
        "from torch import version\n"
        "assert version.cuda == '12.1', version.cuda\n"
        "pair = {'2.1.0': '0.16.0', '2.2.0': '0.17.0', '2.3.0': '0.18.0'}\n"
        "assert torchvision.__version__.split('+')[0] == pair[torch.__version__.split('+')[0]]\n"
        "torch.run()\n"
    )
    res = run_bisect(
        RunOptions(
            package="torch",
            good="2.1.0",  # a public version finds its one local variant
            with_reqs=("torchvision",),
            rest="latest",
            common=flat_options(
                repro=Repro.build(origin=tmp_path, repro_file=str(check)),
                indexes=IndexConfig(
                    index_url=index.url, torch_index=variant_url("cu121", f"{index.base}/whl")
                ),
                python=python,
                results=tmp_path / "r",
                cache_dir=tmp_path / "c",
            ),
        )
    )
    assert (res.status, res.first_new, res.last_old) == (Status.FOUND, "2.3.0+cu121", "2.2.0+cu121")
    bad = res.row("2.3.0+cu121")
    assert bad is not None and "illegal memory access" in bad.outcome.signature
    installed = {d.name: d.version for d in bad.installed}
    assert installed == {"torch": "2.3.0+cu121", "torchvision": "0.18.0+cu121"}


@pytest.mark.slow
def test_unreachable_pytorch_index_says_so(python: str, tmp_path: Path) -> None:
    proc = envbisect(
        "versions", "torch", "--python", python,
        "--torch-backend", "cu121", "--torch-index-url", "http://127.0.0.1:9/whl",
        "--cache-dir", str(tmp_path / "c"),
    )  # fmt: skip
    assert proc.returncode == 3
    assert "error: cannot reach the PyTorch index http://127.0.0.1:9/whl/cu121 for torch" in (
        proc.stderr
    )
    assert "hint: " in proc.stderr and "Traceback" not in proc.stderr


def test_versions_lists_local_variants(index: LocalIndex, python: str, tmp_path: Path) -> None:
    proc = envbisect(
        "versions", "torch", "--python", python,
        "--index-url", index.url, "--torch-backend", "cpu", "--torch-index-url",
        f"{index.base}/whl", "--cache-dir", str(tmp_path / "c"), "--json",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    rows = json.loads(proc.stdout)["candidates"]
    assert [r["version"] for r in rows] == ["2.1.0+cpu", "2.2.0+cpu", "2.3.0+cpu"]
    assert all(r["upload_time"] for r in rows)


def test_auto_backend_follows_the_driver() -> None:
    assert resolve_backend("auto", None) == "cpu"
    assert resolve_backend("auto", "12.2") == "cu121"
    assert resolve_backend("auto", "12.4") == "cu124"
    assert resolve_backend("auto", "11.7") == "cpu"
    assert resolve_backend("auto", "13.0") == "cu130"
    assert resolve_backend("cu118", "12.4") == "cu118"


def test_auto_backend_is_chosen_by_the_session_not_while_options_are_read(
    monkeypatch: pytest.MonkeyPatch, recorder: RecordingProgress
) -> None:
    """``--torch-backend auto`` asks nvidia-smi when the indexes are first needed, once, and
    says its choice through the reporter (so ``-q`` and the live display hold). The GPU is
    stood in for (``read_nvidia_smi`` patched: this machine has none)."""
    asked: list[str] = []

    def smi() -> dict[str, Any]:
        asked.append("nvidia-smi")
        return {"driver": "550.54", "cuda": "12.4", "gpus": [{"name": "H100", "memory_gib": 80}]}

    monkeypatch.setattr(envreport, "read_nvidia_smi", smi)
    args = parsed(
        ["versions", "torch", "--torch-backend", "auto", "--no-config",
         "--torch-index-url", "http://127.0.0.1:9/whl"]
    )  # fmt: skip
    opts = common_options(args, command="envbisect versions torch")
    assert asked == []  # reading the options asked no device
    assert opts.planning.indexes.torch_index is None
    assert opts.planning.torch_auto == TorchChoice(mirror="http://127.0.0.1:9/whl")
    session = Session(opts, recorder)
    assert asked == []  # nor did opening the session
    assert session.opts is opts  # the options as given: reading them asks nothing
    assert asked == []
    assert session.indexes().torch_index == "http://127.0.0.1:9/whl/cu124"
    assert session.indexes().torch_index == "http://127.0.0.1:9/whl/cu124"
    assert asked == ["nvidia-smi"]  # once
    assert recorder.messages == ["envbisect: --torch-backend auto chose cu124"]


def test_a_named_backend_asks_no_device(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(envreport, "read_nvidia_smi", lambda: pytest.fail("nvidia-smi ran"))
    args = parsed(["versions", "torch", "--torch-backend", "cu121"])
    opts = common_options(args, command="envbisect versions torch")
    assert opts.planning.torch_auto is None
    assert opts.planning.indexes.torch_index == variant_url("cu121")
    assert Session(opts).opts is opts
