"""Nothing from envbisect's own shell silently changes what a probe tests.

Interpreter variables (PYTHONOPTIMIZE strips asserts, PYTHONPATH shadows packages...) are
scrubbed from every probe (env/scrub.py); ``--env NAME=VALUE`` passes one on purpose, and then
it is part of the repro's identity (stored outcomes are kept apart) and named in report.md.
The end-to-end tests build real uv environments from the local index.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
from datetime import datetime, timezone
from pathlib import Path

import pytest

from conftest import RecordingProgress
from envbisect.cli import optionset
from envbisect.cli.readflags import probe_env
from envbisect.core.results.parts import Status
from envbisect.core.results.search import RunResult
from envbisect.core.runreport import report_markdown
from envbisect.env.repro import Repro
from envbisect.env.scrub import DROPPED, KEPT, SET_FOR_PROBES, held_back, scrub
from envbisect.env.uv import BuiltEnv, Uv
from envbisect.errors import UsageError
from envbisect.model import IndexConfig
from envbisect.modes.run import RunOptions, run_bisect
from envbisect.redact import mask_env, mask_env_args
from envbisect.store import Store
from support.index_server import LocalIndex
from support.options import flat_options

# -- the policy -------------------------------------------------------------------------------


@pytest.mark.skipif(sys.version_info < (3, 11), reason="--help-env is new in Python 3.11")
def test_every_variable_the_interpreter_names_is_decided() -> None:
    """A variable of this interpreter's ``--help-env`` that is neither dropped nor kept (nor
    set by envbisect) would reach probes undecided: a new Python's variables fail here."""
    text = subprocess.run([sys.executable, "--help-env"], capture_output=True, text=True).stdout
    named = set(re.findall(r"^(_?PYTHON\w*)", text, re.MULTILINE))
    assert {"PYTHONOPTIMIZE", "PYTHONPATH", "PYTHONWARNINGS"} <= named  # it was read
    assert named - DROPPED.keys() - KEPT.keys() - SET_FOR_PROBES.keys() == set()
    assert DROPPED.keys() & KEPT.keys() == set()


def built(tmp_path: Path) -> BuiltEnv:
    """An environment's paths; environment() reads nothing from them."""
    env = tmp_path / "env"
    return BuiltEnv(path=env, python=env / "bin" / "python", bin_dir=env / "bin",
                    installed=(), seconds=0.0)  # fmt: skip


def test_a_step_sees_none_of_the_dropped_variables(tmp_path: Path) -> None:
    script = tmp_path / "repro.py"
    script.write_text("pass\n")
    repro = Repro.build(origin=tmp_path, repro_file=str(script), probes=["import:six"])
    shell = {name: "1" for name in (*DROPPED, *KEPT)}
    shell |= {"PATH": "/usr/bin", "HOME": "/home/u", "HF_HOME": "/data/hf", "LANG": "C.UTF-8"}
    env = built(tmp_path)
    for step in repro.steps:  # a built-in probe and a repro file: the same scrub
        out = repro.environment(env, shell, step)
        assert [n for n in DROPPED if n in out and n not in SET_FOR_PROBES] == ["VIRTUAL_ENV"]
        assert out["VIRTUAL_ENV"] == str(env.path)  # the candidate's, not the shell's
        assert {n: out[n] for n in SET_FOR_PROBES} == SET_FOR_PROBES
        assert {n: out[n] for n in KEPT} == {n: "1" for n in KEPT}  # kept as the shell had them
        assert (out["HOME"], out["HF_HOME"], out["LANG"]) == ("/home/u", "/data/hf", "C.UTF-8")
        assert out["PATH"] == os.pathsep.join([str(env.bin_dir), "/usr/bin"])


def test_env_flag_values_are_set_last(tmp_path: Path) -> None:
    repro = Repro.build(
        origin=tmp_path,
        command=["python", "-c", "pass"],
        extra_env={"DISABLE_VERSION_CHECK": "1"},
        user_env={"PYTHONOPTIMIZE": "1", "PYTHONNOUSERSITE": "", "DISABLE_VERSION_CHECK": "0"},
    )
    out = repro.environment(
        built(tmp_path), {"PYTHONOPTIMIZE": "2", "PYTHONPATH": "/x"}, repro.steps[0]
    )
    assert out["PYTHONOPTIMIZE"] == "1"  # the flag's value, not the shell's
    assert out["PYTHONNOUSERSITE"] == ""  # envbisect's own setting, overridden on purpose
    assert out["DISABLE_VERSION_CHECK"] == "0"
    assert "PYTHONPATH" not in out


def test_env_flag_is_part_of_the_repro_identity(tmp_path: Path) -> None:
    def rid(**env: str) -> str:
        return Repro.build(origin=tmp_path, command=["true"], user_env=env).repro_id

    assert rid() == rid()
    assert rid(PYTHONOPTIMIZE="1") == rid(PYTHONOPTIMIZE="1")
    assert len({rid(), rid(PYTHONOPTIMIZE="1"), rid(PYTHONOPTIMIZE="2")}) == 3


def test_the_user_is_told_what_is_held_back() -> None:
    shell = {"PYTHONPATH": "/x", "PYTHONWARNINGS": "error", "PYTHONNOUSERSITE": "1",
             "VIRTUAL_ENV": "/venv", "PYTHONDONTWRITEBYTECODE": "1", "HOME": "/h"}  # fmt: skip
    # PYTHONNOUSERSITE=1 is what envbisect sets anyway; VIRTUAL_ENV is an activated venv.
    assert held_back(shell, {}) == ["PYTHONPATH", "PYTHONWARNINGS"]
    assert held_back(shell, {"PYTHONWARNINGS": "error"}) == ["PYTHONPATH"]
    assert held_back({**shell, "PYTHONNOUSERSITE": ""}, {}) == [
        "PYTHONNOUSERSITE", "PYTHONPATH", "PYTHONWARNINGS"]  # fmt: skip


def test_uv_does_not_see_them_either(monkeypatch: pytest.MonkeyPatch) -> None:
    """uv builds sdists with a Python build backend: the same scrub as a probe."""
    monkeypatch.setenv("PYTHONPATH", "/somewhere")
    monkeypatch.setenv("PYTHONOPTIMIZE", "1")
    monkeypatch.setenv("PYTHONDONTWRITEBYTECODE", "1")
    env = Uv(binary="uv", offline=False).env()
    assert "PYTHONPATH" not in env and "PYTHONOPTIMIZE" not in env
    assert env["PYTHONDONTWRITEBYTECODE"] == "1"
    assert scrub({"PYTHONPATH": "/x", "HOME": "/h"}) == {"HOME": "/h"}


# -- the flag ---------------------------------------------------------------------------------


def test_every_command_that_runs_probes_takes_env() -> None:
    from envbisect.cli.parser import build_parser

    parser = build_parser()
    (sub,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    taking = {name for name, p in sub.choices.items()
              if any("--env" in a.option_strings for a in p._actions)}  # fmt: skip
    assert taking == {"run", "probe", "repro", "diff", "lock", "matrix", "commits"}
    args = optionset.parsed(["probe", "--env", "A=1", "--env", "B=2"])
    assert probe_env(args) == {"A": "1", "B": "2"}


def test_a_matrix_takes_env_from_the_command_line(tmp_path: Path) -> None:
    from envbisect.modes.living.matrix import load_matrix, matrix_options

    path = tmp_path / "m.toml"
    path.write_text("[matrix]\nprobes = ['import:x']\n[[axis]]\npackage = 'a'\n")
    spec = load_matrix(path)
    plain = matrix_options(spec, flat_options()).probing.repro
    passed = matrix_options(spec, flat_options(env=(("PYTHONOPTIMIZE", "1"),))).probing.repro
    assert plain is not None and passed is not None
    assert passed.user_env == (("PYTHONOPTIMIZE", "1"),) and plain.user_env == ()
    assert dict(passed.extra_env) == {"DISABLE_VERSION_CHECK": "1"}  # the matrix's own, kept
    assert passed.repro_id != plain.repro_id


def parsed(*items: str) -> dict[str, str]:
    return probe_env(optionset.parsed(["probe", *(f"--env={i}" for i in items)]))


def test_env_flag_parsing() -> None:
    assert parsed() == {}
    assert parsed("PYTHONOPTIMIZE=1", "A_B=x=y", "EMPTY=") == {
        "PYTHONOPTIMIZE": "1", "A_B": "x=y", "EMPTY": ""}  # fmt: skip
    cases = {
        "FOO": "'FOO' is not NAME=VALUE",
        "=1": "'=1' is not NAME=VALUE",
        "1ABC=2": "'1ABC': not a variable name",
        "A-B=1": "'A-B': not a variable name",
        "PATH=/x": "PATH: envbisect sets it",
        "ENVBISECT_RUN=3": "ENVBISECT_RUN: envbisect sets it",
        "CUDA_VISIBLE_DEVICES=0": "CUDA_VISIBLE_DEVICES: envbisect sets it",
    }
    for item, message in cases.items():
        with pytest.raises(UsageError) as e:
            parsed(item)
        assert message in e.value.message and e.value.ref == "bad-env" and e.value.hint
    with pytest.raises(UsageError, match="given twice"):
        parsed("A=1", "A=2")
    with pytest.raises(UsageError) as e:
        parsed("=hf_abcdefghijkl")  # a token pasted without its name is not echoed
    assert "hf_abc" not in e.value.message


def test_credentials_passed_with_env_are_masked() -> None:
    assert mask_env("HF_TOKEN", "hf_x") == mask_env("AWS_SECRET_ACCESS_KEY", "a") == "***"
    assert mask_env("OPENAI_API_KEY", "x") == mask_env("MY_VAR", "ghp_abc") == "***"
    assert mask_env("PYTHONOPTIMIZE", "1") == "1"
    assert mask_env("PROXY", "http://u:pw@proxy:3128") == "http://***@proxy:3128"
    argv = ["run", "--env", "HF_TOKEN=hf_secret", "--env=WANDB_API_KEY=k", "--env", "OK=1"]
    assert mask_env_args(argv) == ["run", "--env", "HF_TOKEN=***", "--env=WANDB_API_KEY=***",
                                   "--env", "OK=1"]  # fmt: skip
    res = RunResult(package="p", env={"PYTHONOPTIMIZE": "1", "HF_TOKEN": "***"})
    when = datetime(2025, 1, 1, tzinfo=timezone.utc)
    text = report_markdown(res, when=when)
    assert "- set for every probe (--env): `HF_TOKEN=***`, `PYTHONOPTIMIZE=1`" in text
    assert res.to_dict()["env"] == {"PYTHONOPTIMIZE": "1", "HF_TOKEN": "***"}
    plain = RunResult(package="p")
    assert "--env" not in report_markdown(plain, when=when) and plain.to_dict()["env"] == {}


# -- end to end: real environments ------------------------------------------------------------

REPRO = """\
import importlib.metadata

import raisy

print("raisy from", raisy.__file__)
version = importlib.metadata.version("raisy")
assert version < "1.5", "raisy " + version + " is too new"
"""
# On PYTHONPATH, it would shadow the environment's raisy and pass every probe.
SHADOW = "print('SHADOW raisy imported')\nraise SystemExit(0)\n"


@pytest.mark.slow
def test_shell_variables_do_not_reach_the_probe_and_env_passes_them(
    index: LocalIndex, python: str, results: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    shadow = tmp_path / "shadow"
    shadow.mkdir()
    (shadow / "raisy.py").write_text(SHADOW)
    repro_file = tmp_path / "repro.py"
    repro_file.write_text(REPRO)
    monkeypatch.setenv("PYTHONOPTIMIZE", "1")  # envbisect's own shell: would strip the assert
    monkeypatch.setenv("PYTHONPATH", str(shadow))  # and would import the shadow

    def run(**env: str) -> tuple[RunResult, RecordingProgress]:
        repro = Repro.build(origin=tmp_path, repro_file=str(repro_file), user_env=env)
        common = flat_options(repro=repro, indexes=IndexConfig(index_url=index.url),
                               python=python, results=results)  # fmt: skip
        rec = RecordingProgress()
        opts = RunOptions(package="raisy", common=common, good="1.4.0", bad="1.5.0")
        return run_bisect(opts, rec), rec

    plain, rec = run()
    # The assert ran (PYTHONOPTIMIZE did not reach it) in the environment's raisy.
    assert (plain.status, plain.first_new, plain.last_old) == (Status.FOUND, "1.5.0", "1.4.0")
    bad = plain.row("1.5.0")
    assert bad is not None and bad.outcome.signature.startswith("AssertionError: raisy 1.5.0")
    assert rec.started == ["1.4.0", "1.5.0"] and not any(r for _, _, r in rec.finished)
    with Store(results) as store:
        records = list(store.all())
    assert len(records) == 2
    for r in records:
        assert "SHADOW" not in r.stdout_tail and "raisy from" in r.stdout_tail
        assert str(shadow) not in r.stdout_tail
    plain_report = Path(plain.report_path or "").read_text()
    assert "--env" not in plain_report and plain.to_dict()["env"] == {}

    # --env PYTHONOPTIMIZE=1: passed on purpose, the assert is stripped, both ends pass. Both
    # environments are probed again: the plain run's outcomes do not answer for this one.
    optimized, rec = run(PYTHONOPTIMIZE="1")
    assert optimized.status is Status.NO_ANSWER
    assert [(r.version, r.outcome.kind.value, r.reused) for r in optimized.rows] == [
        ("1.4.0", "pass", False), ("1.5.0", "pass", False)]  # fmt: skip
    assert [(v, reused) for v, _, reused in rec.finished] == [("1.4.0", False), ("1.5.0", False)]
    report = Path(optimized.report_path or "").read_text()
    assert "- set for every probe (--env): `PYTHONOPTIMIZE=1`" in report
    assert optimized.to_dict()["env"] == {"PYTHONOPTIMIZE": "1"}
    with Store(results) as store:
        records = list(store.all())
    assert len(records) == 4  # two per repro identity, none overwritten
    assert len({r.repro_id for r in records}) == 2
    assert {r.env_id for r in records} == {r.env_id for r in records[:2]}  # same environments

    # And the other way round: each run again reuses only its own outcomes.
    again, rec = run()
    assert (again.status, again.first_new) == (Status.FOUND, "1.5.0")
    assert [r.reused for r in again.rows] == [True, True]
    assert [(v, reused) for v, _, reused in rec.finished] == [("1.4.0", True), ("1.5.0", True)]
    again_opt, rec = run(PYTHONOPTIMIZE="1")
    assert again_opt.status is Status.NO_ANSWER
    assert [r.outcome.kind.value for r in again_opt.rows] == ["pass", "pass"]
    assert [(v, reused) for v, _, reused in rec.finished] == [("1.4.0", True), ("1.5.0", True)]
