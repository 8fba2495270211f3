"""The conventions a user brings from uv and pip, read as the user reads them: the real CLI in
a subprocess, its stdout and stderr.

- ``--json`` keeps its promise on every error, a usage error from the parser too;
- no abbreviations (``--index`` is not ``--index-url``), ``-p`` for ``--python``;
- ``envbisect pins`` prints lines a requirements file takes as they are.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest
from packaging.requirements import Requirement

from envbisect.cli.parser import build_parser
from support.cli import assert_clean_error, envbisect


def _error_object(stdout: str) -> dict[str, object]:
    data = json.loads(stdout)
    assert data["status"] == "error", data
    error = data["error"]
    assert isinstance(error, dict)
    return error


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["run", "--godo", "1", "--json"], "unrecognized arguments: --godo 1"),  # parse_known
        (["run", "--package", "six", "--timeout", "abc", "--json"], "argument --timeout"),
        (["--json", "nosuch"], "invalid choice: 'nosuch'"),  # the top parser's error
        (["check", "--json", "-q", "-v", "r.md"], "-q and -v cannot be used together"),
    ],
)
def test_a_usage_error_with_json_prints_the_error_object_on_stdout(
    argv: list[str], message: str
) -> None:
    proc = envbisect(*argv)
    assert_clean_error(proc, 2, message)
    error = _error_object(proc.stdout)
    assert error["ref"] == "bad-usage" and error["exit_code"] == 2
    assert message in str(error["message"]) and error["hint"]


def test_a_usage_error_without_json_prints_nothing_on_stdout() -> None:
    proc = envbisect("run", "--godo", "1")
    assert_clean_error(proc, 2, "unrecognized arguments: --godo 1")
    assert proc.stdout == ""


def _parsers(parser: argparse.ArgumentParser) -> list[argparse.ArgumentParser]:
    found = [parser]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                found.extend(_parsers(sub))
    return found


def test_no_parser_takes_an_abbreviation() -> None:
    parsers = _parsers(build_parser())
    assert len(parsers) > 10  # the walk saw the subcommands
    assert not [p.prog for p in parsers if p.allow_abbrev]


def test_an_abbreviated_flag_is_refused_with_the_flag_it_may_mean() -> None:
    # --index ran as --index-url before: it built environments from the index it named.
    proc = envbisect("run", "--package", "six", "--index", "http://127.0.0.1:9/simple")
    assert_clean_error(proc, 2, "unrecognized arguments: --index http://127.0.0.1:9/simple")
    assert "hint: did you mean --index-url?" in proc.stderr
    assert "envbisect: indexes" not in proc.stderr  # nothing ran


@pytest.mark.parametrize("flag", ["-p", "--python"])
def test_p_is_python_as_uv_has_it(flag: str, tmp_path: Path) -> None:
    proc = envbisect("pins", str(tmp_path), flag, "9.9")
    assert_clean_error(proc, 2, "no Python interpreter matches --python 9.9")
    parsed = build_parser().parse_args(["why", "t.txt", flag, "3.10"])
    assert parsed.why_python == "3.10"  # why's own --python takes -p too


def test_pins_prints_lines_a_requirements_file_takes(tmp_path: Path) -> None:
    source = tmp_path / "requirements.txt"
    source.write_text(
        "transformers!=4.52.0,>=4.45\n"
        'six >= 1.0 ; python_version > "3"\n'
        "rich[jupyter]==13.0\n"
        "torch @ https://127.0.0.1/torch-2.0-py3-none-any.whl ; sys_platform == 'linux'\n"
        "uvicorn\n"
        'numpy ; sys_platform == "win32"\n',
        encoding="utf-8",
    )
    proc = envbisect("pins", str(source), "--platform", "manylinux_2_28_x86_64")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0].startswith(f"# {source}")
    assert lines[1:] == [
        "transformers!=4.52.0,>=4.45",
        'six>=1.0; python_version > "3"',
        "rich[jupyter]==13.0",
        'torch @ https://127.0.0.1/torch-2.0-py3-none-any.whl ; sys_platform == "linux"',
        "uvicorn",
        'numpy; sys_platform == "win32"  # does not apply here',
    ]
    for line in lines[1:]:
        Requirement(line.split("  #", 1)[0])  # each line a requirement, as pip reads one
    # Redirected into a requirements file, the output reads back as the same requirements.
    pasted = tmp_path / "pasted.txt"
    pasted.write_text(proc.stdout, encoding="utf-8")
    again = envbisect("pins", str(pasted), "--platform", "manylinux_2_28_x86_64")
    assert again.returncode == 0, again.stderr
    assert again.stdout.splitlines()[1:] == lines[1:]
