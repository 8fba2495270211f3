"""``envbisect check`` on reports as people write them: every reading tested on a real report
of the corpus (tests/data/failures/R-*.md, each quoted from the issue its case cites in
cases-R.toml, with the maintainers' confirmed fix): versions in prose (misspelt names, a name
glued to its version, ``pip show`` pairs), marked as read from prose; a fix that moves
forward (a later LLaMA-Factory that accepts the user's version) before the way back;
bitsandbytes' own report; transformers' unknown model type; config keys a release does not
define; a stated release that contradicts the traceback; several reports at once. Offline:
the data envbisect ships, nothing fetched; the real CLI in a subprocess."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from support.cli import envbisect

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "tests" / "data" / "failures"


def _check(name: str, *more: str) -> tuple[int, dict[str, Any]]:
    (path,) = CORPUS.glob(f"{name}*.md")
    proc = envbisect("check", str(path), "--json", *more, cwd=ROOT)
    assert proc.returncode in (0, 1), proc.stderr
    return proc.returncode, json.loads(proc.stdout)


def _fixes(answer: dict[str, Any]) -> list[list[str]]:
    return [f["fixes"] for f in answer["findings"]]


def test_versions_in_prose_misspelt_and_glued_are_read_and_marked() -> None:
    # hiyouga/LLaMA-Factory#2577: "pytorch2.0+cuda11.8", "trasformers 4.37.2"
    _, answer = _check("R-llamafactory-2577")
    read = answer["read"]
    assert read["packages"]["transformers"] == "4.37.2"
    assert read["packages"]["torch"] == "2.0+cuda11.8" and read["torch_build"] == "11.8"
    assert read["written"] == {"torch": "prose", "transformers": "prose"}
    # hiyouga/LLaMA-Factory#6047: "Name: llamafactory / Version: 0.9.1.dev0" (pip show)
    _, answer = _check("R-llamafactory-6047")
    assert answer["read"]["packages"]["llamafactory"] == "0.9.1.dev0"
    assert answer["read"]["written"]["llamafactory"] == "pip show"


def test_a_later_llamafactory_that_accepts_the_version_is_the_first_fix() -> None:
    # hiyouga/LLaMA-Factory#6047: a 0.9.1.dev0 checkout refuses vllm 0.6.3; 0.9.1 accepts it
    code, answer = _check("R-llamafactory-6047")
    assert code == 1
    assert _fixes(answer) == [
        ["pip install -U 'llamafactory>=0.9.1'", "pip install 'vllm<=0.6.2,>=0.4.3'"]
    ]
    assert "llamafactory 0.9.1 declares vllm 0.6.3 supported" in answer["findings"][0]["message"]


def test_a_fix_moving_a_package_up_goes_as_far_as_llamafactory_asks() -> None:
    # hiyouga/LLaMA-Factory#4623: a checkout (its frames) imports vllm.lora, which vllm has
    # from 0.3.0 on; LLaMA-Factory's releases ask vllm>=0.4.3
    _, answer = _check("R-llamafactory-4623")
    assert _fixes(answer) == [["pip install 'vllm>=0.4.3'"]]


def test_bitsandbytes_own_report_before_0_43_on_windows() -> None:
    # bitsandbytes-foundation/bitsandbytes#1104: the old "BUG REPORT" banner, on Windows
    code, answer = _check("R-bitsandbytes-1104")
    assert code == 1 and answer["read"]["system"] == "Windows"
    assert answer["read"]["torch_build"] == "12.1"  # "PyTorch settings found: CUDA_VERSION=121"
    (finding,) = answer["findings"]
    assert finding["kind"] == "bitsandbytes"
    assert finding["fix"] == "pip install --upgrade 'bitsandbytes>=0.43.0'"


def test_an_unknown_model_type_is_the_module_transformers_lacks() -> None:
    # QwenLM/Qwen1.5#247: KeyError: 'qwen2', no traceback: transformers>=4.37.0
    _, answer = _check("R-qwen-247")
    assert _fixes(answer) == [["pip install 'transformers>=4.37.0'"]]


def test_a_stated_release_that_has_the_name() -> None:
    # QwenLM/Qwen1.5#434: the report says transformers 4.37.2 (which has qwen2) and Python
    # 3.10, the traceback's paths python3.11: another environment ran it, fixed there
    _, answer = _check("R-qwen-434")
    (finding,) = answer["findings"]
    assert finding["fix"] == "pip install 'transformers>=4.37.0'"
    assert "another environment ran it" in finding["message"]
    # huggingface/transformers#26465: transformers 4.33.0 has check_peft_version, the same
    # Python: an install another package overwrote; no version to move
    code, answer = _check("R-transformers-26465")
    assert code == 0 and answer["findings"] == []


def test_config_keys_a_release_does_not_define() -> None:
    # hiyouga/LLaMA-Factory#7677: a 0.9.2.dev0 checkout, keys 0.9.2 defines
    _, answer = _check("R-llamafactory-7677")
    assert _fixes(answer) == [["pip install -U 'llamafactory>=0.9.2'"]]
    # hiyouga/LLaMA-Factory#5328: no version at all, enable_liger_kernel from 0.9.0
    _, answer = _check("R-llamafactory-5328")
    assert _fixes(answer) == [["pip install -U 'llamafactory>=0.9.0'"]]
    # hiyouga/LLaMA-Factory#5843: `split`, a key LLaMA-Factory dropped after 0.8.2 (the
    # maintainer: follow the current example config): no version finding, a note
    code, answer = _check("R-llamafactory-5843")
    assert code == 0 and answer["findings"] == []
    assert answer["notes"] == [
        "llamafactory 0.8.2 is the last release that defines split: the config is older than "
        "the release (renamed or removed since), not a version to move forward to"
    ]


@pytest.mark.parametrize(
    "name",
    ["R-llamafactory-2116", "R-llamafactory-275", "R-vllm-946", "R-yuan2-65"],
)
def test_reports_clean_of_version_trouble_are_no_finding(name: str) -> None:
    code, answer = _check(name)
    assert code == 0 and answer["findings"] == []


def test_several_reports_and_a_folder(tmp_path: Path) -> None:
    for name in ("R-llamafactory-6047", "R-llamafactory-2116", "R-qwen-247"):
        (path,) = CORPUS.glob(f"{name}*.md")
        shutil.copy(path, tmp_path / path.name)
    proc = envbisect("check", str(tmp_path), cwd=ROOT)
    assert proc.returncode == 1, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0].endswith("no finding (names no versions)") and "R-llamafactory-2116" in lines[0]
    assert "1 finding(s): [off-pins] fix: pip install -U 'llamafactory>=0.9.1'" in lines[1]
    assert "1 finding(s): [release-change] fix: pip install 'transformers>=4.37.0'" in lines[2]
    assert lines[-1] == "3 reports: 2 with findings, 1 without"
    # --json: a list, one answer each; a report that cannot be read is said, the rest go on
    proc = envbisect(
        "check", str(tmp_path / "R-llamafactory-2116-dataset-info-path.md"), "nosuch.md", "--json",
        cwd=tmp_path,
    )  # fmt: skip
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    first, second = json.loads(proc.stdout)
    assert first["status"] == "ok" and first["findings"] == []
    assert second["status"] == "error" and "nosuch.md" in second["error"]


def test_a_config_key_a_release_dropped_is_no_forward_fix(tmp_path: Path) -> None:
    """dpo_ftx was LLaMA-Factory's up to a release and renamed since (pref_ftx): a config that
    still says it is older than the release, not one to move forward to."""
    report = tmp_path / "report.md"
    report.write_text(
        "llamafactory 0.9.5\n"
        "ValueError: Some keys are not used by the HfArgumentParser: ['dpo_ftx']\n"
    )
    proc = envbisect("check", str(report), "--json", cwd=tmp_path)
    answer = json.loads(proc.stdout)
    assert proc.returncode == 0 and answer["findings"] == []
    (note,) = answer["notes"]
    assert note.startswith("llamafactory ") and "is the last release that defines dpo_ftx" in note
    # a key no release ever defined: a typo, said
    report.write_text(
        "llamafactory 0.9.5\n"
        "ValueError: Some keys are not used by the HfArgumentParser: ['neat_packign']\n"
    )
    answer = json.loads(envbisect("check", str(report), "--json", cwd=tmp_path).stdout)
    assert answer["findings"] == [] and answer["notes"] == [
        "no release of llamafactory defines neat_packign: a typo in the config, or a key of "
        "another tool"
    ]
