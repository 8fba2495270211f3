"""``envbisect check``: real bug reports (LLaMA-Factory's and transformers' issues, quoted in
tests/data/reports/check/ with the other pasted reports, each naming its issue) and one
made-up report per rule the real ones do not reach (tests/data/reports/check/synthetic/),
each finding checked exactly: its kind, severity, package, the report's lines it rests on,
its fix and the command that proves it; every fix parsed (envbisect's by envbisect's own
parser, install lines as pip reads them); the exit codes, ``--json``, a bad input as a clean
usage error, and no connection opened (as tests/index/test_offline.py checks: every proxy
variable at a listener that records any attempt; and an audit hook that refuses any socket).
The real CLI runs in a subprocess. How long check takes is measured by bench/bench_check.py,
never asserted here.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from packaging.requirements import Requirement

from envbisect import source_url
from envbisect.cli.parser import build_parser
from envbisect.core.checks.published import table_of
from support.cli import CLI, assert_clean_error, envbisect
from support.listener import PROXIES, Listener

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data" / "reports" / "check"
# file -> every finding: (kind, severity, package, evidence lines, fix, the command proving it)
Expected = list[tuple[str, str, str, list[int], str, str | None]]
REAL: dict[str, Expected] = {
    # PPO refuses the trl the release declares: its trainer's own require_version, which
    # DISABLE_VERSION_CHECK does not skip; the stage read from the traceback.
    "lf-10757-ppo-trl.md": [
        ("off-pins", "error", "trl", [8, 20, 30, 36], "pip install 'trl<=0.9.6,>=0.8.6'",
         "envbisect lock --pins llamafactory==0.9.5 --override 'trl<=0.9.6,>=0.8.6' "
         "--probe llamafactory-train:ppo"),
    ],
    # Windows, `pip install -e ".[torch,metrics]"`: PyPI's CPU torch; "cuda is no avaible".
    "lf-7666-cpu-torch.md": [
        ("cpu-torch", "error", "torch", [4, 15],
         "pip install --force-reinstall torch==2.6.0 --index-url "
         "https://download.pytorch.org/whl/cu126",
         "envbisect probe --with torch==2.6.0 --torch-backend cu126 -- python -c "
         "'import torch; torch.zeros(1).cuda()'"),
    ],
    # A development checkout between 0.8.1 and 0.8.2: both releases' vllm extra need 0.4.3.
    "lf-4322-vllm-extra.md": [
        ("off-pins", "warning", "vllm", [4, 16], "pip install 'vllm>=0.4.3'",
         "envbisect lock --pins llamafactory==0.8.2 --extras vllm --python 3.10 "
         "--probe llamafactory"),
    ],
    "lf-4648-flash-attn.md": [
        ("flash-attn", "error", "flash-attn", [2, 5],
         "pip install --no-build-isolation --no-cache-dir --force-reinstall flash-attn", None),
    ],
    # transformers' maintainers answered: install the official bitsandbytes (Windows from 0.43).
    "tf-33110-bnb-windows.md": [
        ("bitsandbytes", "error", "bitsandbytes", [11, 22],
         "pip install --upgrade 'bitsandbytes>=0.43.0'",
         "envbisect probe --with bitsandbytes==0.43.0 --with torch==2.4.0 --torch-backend cu118 "
         "-- python -m bitsandbytes"),
    ],
    # transformers 4.6.1 is older than the shipped data: the error's own check is the evidence.
    "tf-11799-tokenizers.md": [
        ("off-pins", "error", "tokenizers", [24], "pip install 'tokenizers<0.11,>=0.10.1'",
         "envbisect lock --with transformers==4.6.1 --python 3.8 --probe import:transformers"),
    ],
    # Qwen2.5-VL's transformers under 0.9.1 (PyPI's release nearest the reporter's 0.9.2.dev0)
    # with DISABLE_VERSION_CHECK=1: the release's own check, skipped; repro builds it and
    # reproduces "cannot import name 'LlamaFlashAttention2'" (docs/how-to/bug-reports.md).
    # The traceback too: the API history envbisect ships says transformers 4.48.0 removed
    # LlamaFlashAttention2 (brought by 4.34.0), offline.
    "lf-6809-off-pins-0.9.1.md": [
        # the maintainer's answer: update LLaMA-Factory (0.9.2 accepts 4.48.2); back second
        ("off-pins", "error", "transformers", [9, 13],
         "pip install -U 'llamafactory>=0.9.2'",
         "envbisect lock --pins llamafactory==0.9.2 --python 3.11 --with transformers==4.48.2 "
         "--probe llamafactory"),
        # read from the wheels: forward first here too (0.9.2 declares 4.48.2 supported)
        ("release-change", "error", "transformers", [32],
         "pip install -U 'llamafactory>=0.9.2'",
         "envbisect why {path} --prove"),
    ],
    # A checkout between 0.9.3 and 0.9.4 whose versions 0.9.3 allows: nothing to say.
    "lf-8598-dev-checkout.md": [],
    # Windows, the rm stage, bitsandbytes 0.45.3 has a CUDA 12.6 binary: nothing to say (the
    # failure is a pickling error none of the rules is about).
    "lf-7232-windows-rm.md": [],
}  # fmt: skip
SYNTHETIC: dict[str, Expected] = {
    "driver-470-cu124.md": [
        ("cuda-driver", "error", "torch", [3, 14],
         "pip install --force-reinstall torch==2.4.0 --index-url "
         "https://download.pytorch.org/whl/cu118",
         "envbisect probe --with torch==2.4.0 --torch-backend cu118 -- python -c "
         "'import torch; torch.zeros(1).cuda()'"),
    ],
    "cpu-torch-rtx4090.md": [
        ("cpu-torch", "error", "torch", [2, 12],
         "pip install --force-reinstall torch==2.5.1 --index-url "
         "https://download.pytorch.org/whl/cu124",
         "envbisect probe --with torch==2.5.1 --torch-backend cu124 -- python -c "
         "'import torch; torch.zeros(1).cuda()'"),
    ],
    "rtx5090-cu124.md": [
        ("gpu-arch", "error", "torch", [5, 11],
         "pip install --force-reinstall 'torch==2.7.*' --index-url "
         "https://download.pytorch.org/whl/cu128",
         "envbisect probe --with 'torch==2.7.*' --torch-backend cu128 -- python -c "
         "'import torch; torch.zeros(1).cuda()'"),
    ],
    "bnb-044-cu126.md": [
        ("bitsandbytes", "error", "bitsandbytes", [5, 6],
         "pip install --upgrade 'bitsandbytes>=0.45.0'",
         "envbisect probe --with bitsandbytes==0.45.0 --with torch==2.6.0 --torch-backend cu126 "
         "-- python -m bitsandbytes"),
    ],
    "flash-attn-wheel.md": [
        ("flash-attn", "error", "flash-attn", [3, 4],
         "pip install --no-build-isolation --no-cache-dir --force-reinstall flash-attn==2.5.8",
         None),
    ],
    "flash-attn-turing.md": [
        ("flash-attn", "error", "flash-attn", [11, 15, 19, 23], "pip uninstall --yes flash-attn",
         None),
    ],
    "transformers5-peft017.md": [
        ("published-failure", "error", "peft", [3, 5], "pip install peft==0.18.0",
         "envbisect probe --with transformers==5.0.0 --with peft==0.18.0 "
         "--probe trainer-step:lora"),
    ],
}  # fmt: skip
CASES = {**REAL, **{f"synthetic/{k}": v for k, v in SYNTHETIC.items()}}


def check(*args: str, **kw: Any) -> tuple[subprocess.CompletedProcess[str], dict[str, Any]]:
    proc = envbisect("check", *args, "--json", **kw)
    return proc, json.loads(proc.stdout) if proc.stdout.strip() else {}


def _rows(found: dict[str, Any]) -> Expected:
    return [
        (f["kind"], f["severity"], f["package"], [e["line"] for e in f["evidence"]], f["fix"],
         f["verify"])
        for f in found["findings"]
    ]  # fmt: skip


# One run of the CLI per report, shared by the tests that read its answer.
@pytest.fixture(scope="module")
def answers() -> dict[str, tuple[int, dict[str, Any]]]:
    out = {}
    for name in CASES:
        proc, data = check(str(DATA / name), cwd=ROOT)
        assert "Traceback" not in proc.stderr, proc.stderr
        out[name] = (proc.returncode, data)
    return out


@pytest.mark.parametrize("name", sorted(CASES))
def test_each_report_gets_exactly_its_findings(
    name: str, answers: dict[str, tuple[int, dict[str, Any]]]
) -> None:
    code, data = answers[name]
    where = str(DATA / name)  # a why command names the report as it was given
    expected = [(*row[:5], row[5].format(path=where) if row[5] else None) for row in CASES[name]]
    assert _rows(data) == expected
    assert code == (1 if CASES[name] else 0)
    assert data["status"] == ("findings" if CASES[name] else "ok")


def test_the_real_reports_are_from_real_issues() -> None:
    """Six reports at least with findings, each naming its LLaMA-Factory or transformers
    issue on its first line; the synthetic ones say that they are."""
    with_findings = [n for n, found in REAL.items() if found]
    assert len(with_findings) >= 6
    for name in REAL:
        first = (DATA / name).read_text(encoding="utf-8").splitlines()[0]
        assert "github.com/hiyouga/LlamaFactory/issues/" in first or (
            "github.com/huggingface/transformers/issues/" in first
        ), name
    assert sorted(p.name for p in DATA.glob("*.md")) == sorted(REAL)
    for path in (DATA / "synthetic").glob("*.md"):
        assert path.read_text(encoding="utf-8").startswith("<!-- synthetic:"), path.name
    assert sorted(p.name for p in (DATA / "synthetic").glob("*.md")) == sorted(SYNTHETIC)


def _pip_parses(line: str) -> None:
    """An install line as pip reads it: pip install|uninstall, known options, requirements."""
    words = shlex.split(line)
    assert words[:1] == ["pip"] and words[1] in ("install", "uninstall"), line
    takes_value = {"--index-url"}
    flags = {
        "-U",
        "--upgrade",
        "--force-reinstall",
        "--no-build-isolation",
        "--no-cache-dir",
        "--yes",
    }
    rest = iter(words[2:])
    reqs = []
    for word in rest:
        if word in takes_value:
            assert next(rest).startswith("https://"), line
        elif word.startswith("-"):
            assert word in flags, (word, line)
        else:
            reqs.append(Requirement(word))  # raises on anything pip would not read
    assert reqs, line


def _envbisect_parses(line: str) -> None:
    argv = shlex.split(line)[1:]
    if "--" in argv:  # what follows -- is the command the probe runs (cli/main.py)
        argv = argv[: argv.index("--")]
    args, unknown = build_parser().parse_known_args(argv)
    assert unknown == [] and args.command in ("lock", "run", "repro", "probe", "why"), line


def test_every_fix_is_a_command_line_that_parses(
    answers: dict[str, tuple[int, dict[str, Any]]],
) -> None:
    seen = 0
    for _, data in answers.values():
        for f in data["findings"]:
            for line in (f["fix"], f["verify"]):
                if line is None:
                    continue
                if line.startswith("envbisect "):
                    _envbisect_parses(line)
                else:
                    _pip_parses(line)
                seen += 1
    assert seen >= 20


def test_json_says_what_was_read_and_the_data(
    answers: dict[str, tuple[int, dict[str, Any]]],
) -> None:
    _, data = answers["lf-10757-ppo-trl.md"]
    assert set(data) == {"status", "report", "read", "findings", "measured", "notes", "data"}
    read = data["read"]
    assert read["stage"] == "ppo"
    assert read["packages"]["llamafactory"] == "0.9.5" and read["packages"]["trl"] == "0.24.0"
    f = data["findings"][0]
    assert set(f) == {"kind", "severity", "package", "message", "evidence", "fix", "fixes",
                      "verify", "source"}  # fmt: skip
    assert f["fixes"][0] == f["fix"]
    assert f["evidence"][1] == {
        "line": 20,
        "text": "[rank0]: ImportError: trl>=0.8.6,<=0.9.6 is required for a normal functioning "
        "of this module, but found trl==0.24.0.",
    }
    assert "DISABLE_VERSION_CHECK=1 does not skip" in f["message"]
    assert f["source"] == "llamafactory 0.9.5: train/ppo/trainer.py:CustomPPOTrainer.__init__"
    assert "transformers-peft" in data["data"]["tables"] and data["data"]["written"]
    _, cuda = answers["synthetic/driver-470-cu124.md"]
    assert cuda["read"]["driver"] == "470.82.01" and cuda["read"]["torch_build"] == "12.4"


def test_text_lists_each_finding_with_its_lines_fix_and_proof() -> None:
    proc = envbisect("check", str(DATA / "tf-33110-bnb-windows.md"), cwd=ROOT)
    assert proc.returncode == 1, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0].startswith("envbisect check: ") and "Windows" in lines[0]
    assert lines[1].startswith("error [bitsandbytes] bitsandbytes 0.41.2.post2 has no Windows")
    assert "  line 22: `python -m pip install https://github.com/jllllll/" in proc.stdout
    assert "  fix: pip install --upgrade 'bitsandbytes>=0.43.0'" in lines
    assert lines[-1] == "1 finding"
    assert "\x1b[" not in proc.stdout  # plain text: nothing for NO_COLOR to turn off


def test_stdin_is_read_as_a_report() -> None:
    text = (DATA / "synthetic" / "driver-470-cu124.md").read_text(encoding="utf-8")
    proc, data = check("-", input=text, cwd=ROOT)
    assert proc.returncode == 1 and data["report"] == "<stdin>"
    assert [f["kind"] for f in data["findings"]] == ["cuda-driver"]


def test_bad_input_is_a_clean_usage_error(tmp_path: Path) -> None:
    assert_clean_error(envbisect("check", cwd=tmp_path), 2, "no report to check", "[check-what]")
    both = envbisect("check", "x.md", "--here", cwd=tmp_path)
    assert_clean_error(both, 2, "not both")
    assert_clean_error(envbisect("check", "missing.md", cwd=tmp_path), 2, "cannot read", "missing")
    (tmp_path / "bin.md").write_bytes(b"\x00\x01\x02binary\x00\xff")
    assert_clean_error(envbisect("check", "bin.md", cwd=tmp_path), 2, "not a text file")
    # a report that names no versions is no finding (exit 0), said with a hint: not an error
    (tmp_path / "empty.md").write_text("It crashes, please help.\n")
    vague = envbisect("check", "empty.md", cwd=tmp_path)
    assert vague.returncode == 0 and "no finding" in vague.stdout
    assert "the report names no versions" in vague.stderr and "hint: paste" in vague.stderr
    with_json = envbisect("check", "missing.md", "--json", cwd=tmp_path)
    assert json.loads(with_json.stdout)["error"]["ref"] == "check-report"


def test_a_table_at_hand_counts(tmp_path: Path) -> None:
    """--results DIR: a table published there (not shipped) is read at check time."""
    table = {
        "matrix": {"name": "trl-peft", "axes": ["trl", "peft"], "probes": ["import:trl"],
                   "measured": "2026-12-01T00:00:00+00:00"},
        "cells": [
            {"versions": {"trl": "0.9.6", "peft": "0.12.0"}, "state": "measured",
             "kind": "fail", "signature": "ImportError: boom"},
            {"versions": {"trl": "0.9.6", "peft": "0.13.0"}, "state": "measured", "kind": "pass"},
        ],
    }  # fmt: skip
    (tmp_path / "results" / "trl-peft").mkdir(parents=True)
    (tmp_path / "results" / "trl-peft" / "results.json").write_text(json.dumps(table))
    (tmp_path / "r.md").write_text("```\ntrl==0.9.6\npeft==0.12.0\n```\n")
    proc, data = check("r.md", cwd=tmp_path)
    assert proc.returncode == 1, proc.stderr
    assert _rows(data) == [
        ("published-failure", "error", "peft", [2, 3], "pip install peft==0.13.0",
         "envbisect probe --with trl==0.9.6 --with peft==0.13.0 --probe import:trl"),
    ]  # fmt: skip
    elsewhere, data = check(str(tmp_path / "r.md"), "--results", str(tmp_path / "none"))
    assert elsewhere.returncode == 0 and "trl-peft" not in data["data"]["tables"]


def test_an_inferred_cell_of_a_searched_table_counts_and_says_so(tmp_path: Path) -> None:
    """A searched row publishes inferred cells (between measured cells that agree): check
    reads them, says they are inferred, and proposes a measured passing cell as the fix."""
    table = {
        "matrix": {"name": "trl-tf", "axes": ["trl", "transformers"],
                   "probes": ["sft-step", "dpo-step"], "measured": "2026-12-06T00:00:00+00:00"},
        "cells": [
            {"versions": {"trl": "0.11.4", "transformers": "4.45.2"}, "state": "measured",
             "kind": "pass"},
            {"versions": {"trl": "0.11.4", "transformers": "4.46.3"}, "state": "measured",
             "kind": "fail", "signature": "AttributeError: 'generator' object has no attribute"},
            {"versions": {"trl": "0.11.4", "transformers": "4.47.1"}, "state": "inferred",
             "kind": "fail", "signature": "AttributeError: 'generator' object has no attribute",
             "inferred_from": "{}"},
            {"versions": {"trl": "0.11.4", "transformers": "4.48.3"}, "state": "measured",
             "kind": "fail", "signature": "AttributeError: 'generator' object has no attribute"},
            {"versions": {"trl": "0.11.4", "transformers": "4.44.2"}, "state": "inferred",
             "kind": "pass", "inferred_from": "{}"},
        ],
    }  # fmt: skip
    (tmp_path / "results" / "trl-tf").mkdir(parents=True)
    (tmp_path / "results" / "trl-tf" / "results.json").write_text(json.dumps(table))
    (tmp_path / "r.md").write_text("```\ntrl==0.11.4\ntransformers==4.47.1\n```\n")
    proc, data = check("r.md", cwd=tmp_path)
    assert proc.returncode == 1, proc.stderr
    (f,) = [f for f in data["findings"] if "table trl-tf " in f["message"]]
    assert "failing (inferred: between measured cells of its row" in f["message"]
    assert f["fix"] == "pip install transformers==4.45.2"  # measured, not the inferred 4.44.2
    (tmp_path / "ok.md").write_text("```\ntrl==0.11.4\ntransformers==4.44.2\n```\n")
    _, data = check("ok.md", cwd=tmp_path)
    assert not [f for f in data["findings"] if "table trl-tf " in f["message"]]
    assert any("passing (inferred" in said for said in data["measured"])
    read = table_of(table, "trl-tf")
    assert [c.get("inferred", False) for c in read["cells"]] == [False, False, True, False, True]


def test_a_training_step_failure_of_trl_is_a_note_for_a_llamafactory_report(
    tmp_path: Path,
) -> None:
    """trl-transformers measured trl 0.9.6's DPOTrainer failing with transformers 4.46 and
    later; LLaMA-Factory's own trainers override what broke, so a LLaMA-Factory report with
    that pair gets a note, not a finding; without LLaMA-Factory it is a finding. An import
    failure counts either way (peft 0.17.1 cannot import with transformers 5)."""
    pair = "trl==0.9.6\ntransformers==4.49.0\n"
    (tmp_path / "lf.txt").write_text("llamafactory==0.9.2\n" + pair)
    proc, data = check("lf.txt", cwd=tmp_path)
    assert not [f for f in data["findings"] if f["kind"] == "published-failure"], proc.stdout
    assert any(
        "LLaMA-Factory's" in said and "trl-transformers" in said for said in data["measured"]
    )
    (tmp_path / "plain.txt").write_text(pair)
    _, data = check("plain.txt", cwd=tmp_path)
    (f,) = [f for f in data["findings"] if f["kind"] == "published-failure"]
    assert "'generator' object has no attribute 'generate'" in f["message"]
    assert f["fix"] == "pip install transformers==4.45.2"
    (tmp_path / "imp.txt").write_text("llamafactory==0.9.4\npeft==0.17.1\ntransformers==5.0.0\n")
    _, data = check("imp.txt", cwd=tmp_path)
    (f,) = [f for f in data["findings"] if "table transformers-peft " in f["message"]]
    assert "HybridCache" in f["message"] and f["fix"] == "pip install peft==0.18.0"


def test_the_shipped_tables_are_the_published_ones() -> None:
    """checkdb.json's tables are results/'s, as bench/make_check_data.py --published writes
    them: re-run it after publishing."""
    shipped = json.loads((ROOT / "src/envbisect/data/checkdb.json").read_text(encoding="utf-8"))
    published = [
        table_of(json.loads(p.read_text(encoding="utf-8")), p.parent.name)
        for p in sorted((ROOT / "results").glob("*/results.json"))
    ]
    assert shipped["published"] == published
    lf = shipped["releases"]["llamafactory"]
    assert {c["stage"] for c in lf["0.9.5"]["checks"]} == {None, "ppo"}
    assert set(shipped["releases"]["llmtuner"]) >= {"0.6.0", "0.6.1", "0.6.2", "0.6.3"}


def test_here_checks_this_machine() -> None:
    proc, data = check("--here", cwd=ROOT)
    assert proc.returncode in (0, 1), proc.stderr
    assert data["report"].startswith("this machine (") and data["read"]["python"]
    assert data["read"]["packages"]["packaging"]


# -- no connection -------------------------------------------------------------------------------


# The CLI with an audit hook that refuses every socket operation, and reports which heavy
# modules it loaded.
GUARDED = """
import sys
def refuse(event, args):
    if event.startswith("socket.") and event != "socket.__new__":
        raise RuntimeError(f"check opened a connection: {event} {args!r}")
sys.addaudithook(refuse)
from envbisect.cli.main import main
code = main(sys.argv[1:])
heavy = ("httpx", "torch", "resolvelib", "envbisect.index.client")
loaded = sorted(m for m in heavy if m in sys.modules)
print("LOADED", loaded, file=sys.stderr)
sys.exit(code)
"""


@pytest.mark.parametrize(
    "args", [["lf-10757-ppo-trl.md"], ["synthetic/transformers5-peft017.md"], ["--here"]]
)
def test_check_opens_no_connection(args: list[str], listener: Listener) -> None:
    env = {k: v for k, v in os.environ.items() if k not in (*PROXIES, "NO_PROXY", "no_proxy")}
    env.update(dict.fromkeys(PROXIES, listener.url))
    argv = ["check", *(str(DATA / a) if a.endswith(".md") else a for a in args), "--json"]
    proc = subprocess.run(
        [sys.executable, "-c", GUARDED, *argv], capture_output=True, text=True, env=env,
        cwd=ROOT, timeout=120,
    )  # fmt: skip
    assert proc.returncode in (0, 1), proc.stderr
    assert "check opened a connection" not in proc.stderr
    assert "LOADED []" in proc.stderr  # no index client, no torch, no resolver imported
    assert listener.seen == []
    assert json.loads(proc.stdout)["status"] in ("ok", "findings")
    assert CLI[0] == sys.executable  # the same interpreter as every other CLI test


def test_this_machine_is_read_as_env_collects_it() -> None:
    """--here's facts as envbisect env collects them (env/envreport.py) on a GPU machine:
    the same rules, each piece of evidence said to be from here (line 0)."""
    from envbisect.cli.commands.check import shipped
    from envbisect.core.checks.diagnosis import CheckData, diagnose
    from envbisect.core.checks.observed import from_machine

    report = {
        "python": "3.11.7",
        "system": "Linux",
        "installed": {"torch": "2.4.0+cu124", "bitsandbytes": "0.44.1", "numpy": "1.26.4"},
        "torch": {"version": "2.4.0+cu124", "cuda": "12.4", "hip": None},
    }
    nvidia = {"driver": "470.82.01", "cuda": "11.4", "gpus": [{"name": "Tesla V100-SXM2-32GB"}]}
    found = diagnose(from_machine(report, nvidia, origin="here"), CheckData.from_dict(shipped()))
    assert [(f.kind.value, f.package) for f in found.findings] == [("cuda-driver", "torch")]
    (f,) = found.findings
    assert [e.line for e in f.evidence] == [0, 0, 0]
    assert "driver here is 470.82.01 (supports CUDA 11.4 at most)" in f.message
    assert f.fix == (
        "pip install --force-reinstall torch==2.4.0 --index-url "
        "https://download.pytorch.org/whl/cu118"
    )
    text = "\n".join(found.lines())
    assert "  here: NVIDIA driver 470.82.01 (nvidia-smi)" in text


def test_a_combination_the_table_measured_says_its_date_and_the_lock_to_use(
    tmp_path: Path,
) -> None:
    """A failing cell names when it was measured and the lockfile of the passing cell its fix
    moves to; a passing cell is said too (no finding, exit 0), with its own lockfile; a cell
    outside the pins says so."""
    lock = "locks/py3.11/llamafactory-0.9.2__transformers-4.49.0.txt"
    table = {
        "matrix": {"name": "lf-tf", "axes": ["llamafactory", "transformers"],
                   "probes": ["llamafactory"], "measured": "2026-12-05T00:00:00+00:00"},
        "cells": [
            {"python": "3.11", "versions": {"llamafactory": "0.9.2", "transformers": "5.0.0"},
             "state": "measured", "kind": "fail", "measured_at": "2026-12-05T12:30:00+00:00",
             "signature": "ImportError: cannot import name 'AutoModelForVision2Seq'",
             "outside": "transformers 5.0.0 is outside llamafactory 0.9.2's pins"},
            {"python": "3.11", "versions": {"llamafactory": "0.9.2", "transformers": "4.49.0"},
             "state": "measured", "kind": "pass", "measured_at": "2026-12-05T12:31:00+00:00",
             "lock": lock},
        ],
    }  # fmt: skip
    (tmp_path / "results" / "lf-tf").mkdir(parents=True)
    (tmp_path / "results" / "lf-tf" / "results.json").write_text(json.dumps(table))
    (tmp_path / "bad.md").write_text("```\nllamafactory==0.9.2\ntransformers==5.0.0\n```\n")
    proc, data = check("bad.md", cwd=tmp_path)
    assert proc.returncode == 1, proc.stderr
    # (the shipped LLaMA-Factory table may say its own word on these versions: lf-tf's only)
    (f,) = [f for f in data["findings"] if "table lf-tf" in f["message"]]
    assert "measured 2026-12-05" in f["message"] and "outside the pins" in f["message"]
    assert f"its lock: results/lf-tf/{lock}" in f["message"]
    assert f["fix"] == "pip install transformers==4.49.0"
    (tmp_path / "good.md").write_text("```\nllamafactory==0.9.2\ntransformers==4.49.0\n```\n")
    proc, data = check("good.md", cwd=tmp_path)
    assert not [f for f in data["findings"] if "table lf-tf" in f["message"]]
    (said,) = [m for m in data["measured"] if "table lf-tf" in m]
    assert "passing" in said and f"results/lf-tf/{lock}" in said and "Python 3.11" in said
    text = envbisect("check", "good.md", cwd=tmp_path).stdout
    assert any(line.startswith("measured: the published table lf-tf") for line in text.splitlines())


def test_a_publish_in_the_checkout_refreshes_what_check_ships(tmp_path: Path) -> None:
    """modes/living/checkdata.py: the tables' part of checkdb.json is rewritten from the
    checkout's own results/ (the rest kept); a results/ elsewhere leaves it alone."""
    from envbisect.modes.living import checkdata

    root = tmp_path / "checkout"
    shipped = root / "src" / "envbisect" / "data" / "checkdb.json"
    shipped.parent.mkdir(parents=True)
    (root / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    shipped.write_text(json.dumps({"schema": 1, "releases": {"a": 1}, "published": []}))
    table = {"matrix": {"name": "t", "axes": ["a", "b"], "probes": ["p"]},
             "cells": [{"python": "3.11", "versions": {"a": "1", "b": "2"},
                        "state": "measured", "kind": "pass", "lock": "locks/x.txt"}]}  # fmt: skip
    (root / "results" / "t").mkdir(parents=True)
    (root / "results" / "t" / "results.json").write_text(json.dumps(table))
    elsewhere = tmp_path / "results"
    elsewhere.mkdir()
    assert checkdata.refresh(elsewhere, shipped) == []
    assert checkdata.refresh(root / "results", shipped) == [shipped]
    db = json.loads(shipped.read_text())
    assert db["releases"] == {"a": 1} and [t["table"] for t in db["published"]] == ["t"]
    assert db["published"][0]["cells"][0]["lock"] == "locks/x.txt"
    assert checkdata.refresh(root / "results", shipped) == []  # the same: nothing written


def test_the_shipped_llamafactory_table_names_its_measured_cells(tmp_path: Path) -> None:
    """What ships (no results/ at hand): llamafactory 0.9.1 with transformers 4.48.3 was
    measured failing, past the release's cap; the fix is the passing cell next to it, with its
    lockfile; 0.9.2 with 4.52.4 was measured passing, said without a finding of its own."""
    (tmp_path / "bad.md").write_text("```\nllamafactory==0.9.1\ntransformers==4.48.3\n```\n")
    proc, data = check("bad.md", cwd=tmp_path)
    assert proc.returncode == 1, proc.stderr
    (f,) = [f for f in data["findings"] if f["kind"] == "published-failure"]
    assert "table llamafactory-transformers" in f["message"]
    assert "LlamaFlashAttention2" in f["message"] and "outside the pins" in f["message"]
    assert f["fix"] == "pip install transformers==4.47.1"
    lock = (
        "results/llamafactory-transformers/locks/py3.11/llamafactory-0.9.1__transformers-4.47.1.txt"
    )
    # cited where a user opens it: the published URL of a file this repository holds
    assert f"its lock: {source_url()}/blob/main/{lock}" in f["message"] and (ROOT / lock).is_file()
    (tmp_path / "good.md").write_text("```\nllamafactory==0.9.2\ntransformers==4.52.4\n```\n")
    _, data = check("good.md", cwd=tmp_path)
    assert not [f for f in data["findings"] if f["kind"] == "published-failure"]
    (said,) = data["measured"]
    assert "llamafactory 0.9.2 with transformers 4.52.4 passing" in said


def test_what_check_cites_is_there_to_open_where_the_user_runs_it(tmp_path: Path) -> None:
    """It cited results/.../locks/...txt and results/.../results.json, paths that exist only in
    envbisect's own checkout: every path a finding names is a URL, or a file at hand."""
    (tmp_path / "bad.md").write_text("```\nllamafactory==0.9.1\ntransformers==4.48.3\n```\n")
    proc = envbisect("check", "bad.md", cwd=tmp_path)
    assert proc.returncode == 1, proc.stderr
    cited = re.findall(r"(?:its lock|source): (\S+?)\)?$", proc.stdout, flags=re.M)
    cited = [c for c in cited if "/" in c]  # a path or a URL, not "the report's error"
    assert len(cited) >= 2, proc.stdout
    for where in cited:
        if where.startswith("https://"):
            if where.startswith(f"{source_url()}/blob/main/"):  # published from this repository
                assert (ROOT / where.removeprefix(f"{source_url()}/blob/main/")).is_file(), where
            continue
        assert (tmp_path / where).exists(), f"{where}: not there to open"
