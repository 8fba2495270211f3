"""``--help`` in groups (what to test, indexes, environments, search, output; the command's
own flags under "<command> options"), with two examples each and the docs' address; every
example parses with the real parser, so none can name a flag that does not exist."""

from __future__ import annotations

import argparse
import ast
import contextlib
import io
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from envbisect.cli.helpfmt import DOCS, EXAMPLES
from envbisect.cli.parser import build_parser
from envbisect.optionspec import Group
from support.cli import on_index
from support.index_server import LocalIndex

COMMANDS = sorted(EXAMPLES)


def help_of(command: str) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), pytest.raises(SystemExit):
        build_parser().parse_args([command, "--help"])
    return out.getvalue()


def test_every_command_has_two_examples_and_every_option_a_group() -> None:
    parser = build_parser()
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    names = set(action.choices)
    assert set(EXAMPLES) == names
    order = [g.value for g in Group if g is not Group.OWN]
    for command in COMMANDS:
        text = help_of(command)
        headings = [ln[:-1] for ln in text.splitlines() if ln.endswith(":") and ln[:1].isalpha()]
        shown = [h for h in headings if h in order]
        assert shown == [g for g in order if g in shown], (command, headings)  # in order
        assert shown[-1] == "output" and headings[-1] == "examples", (command, headings)
        assert not {"options", "optional arguments"} & set(headings), command
        assert len(EXAMPLES[command]) == 2 and all(e in text for e in EXAMPLES[command])
        assert f"docs: {DOCS}" in text


@pytest.mark.parametrize("command", COMMANDS)
def test_each_example_parses(command: str) -> None:
    for example in EXAMPLES[command]:
        argv = shlex.split(example)[1:]
        if "--" in argv:  # what follows -- is the repro's own command line (cli/main.py)
            argv = argv[: argv.index("--")]
        args, unknown = build_parser().parse_known_args(argv)
        assert args.command == command and unknown == [], example


def test_run_help_is_grouped_for_a_reader() -> None:
    text = help_of("run")
    assert text.index("what to test:") < text.index("indexes:") < text.index("output:")
    assert text.index("--repro") < text.index("--index-url") < text.index("--jobs")


# What a command line loads before it answers: the modules named below are what a command that
# runs needs (the display, package parsing, threads), never what --version or --help prints.
LOADED = """
import sys
from envbisect.cli.main import main
try:
    code = main(sys.argv[1:])
except SystemExit as e:  # --help: argparse leaves through SystemExit
    code = e.code
heavy = ("rich", "packaging", "concurrent.futures", "httpx", "envbisect.model", "typing")
print("LOADED", sorted(m for m in heavy if m in sys.modules), file=sys.stderr)
sys.exit(code)
"""


@pytest.mark.parametrize(
    ("argv", "allowed"),
    [
        (["--version"], set()),
        (["-V"], set()),
        (["--help"], {"typing"}),  # dataclasses imports typing's half; argparse the rest
        (["run", "--help"], {"typing"}),
        (["help", "lock"], {"typing"}),
    ],
)
def test_version_and_help_import_only_what_they_print(argv: list[str], allowed: set[str]) -> None:
    done = subprocess.run(
        [sys.executable, "-c", LOADED, *argv], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip(), "it printed nothing"
    line = next(ln for ln in done.stderr.splitlines() if ln.startswith("LOADED"))
    loaded = set(ast.literal_eval(line.removeprefix("LOADED ")))
    assert loaded <= allowed, line


@pytest.mark.parametrize("command", COMMANDS)
def test_a_parser_made_for_one_command_reads_its_lines_as_the_whole_one(command: str) -> None:
    """main builds only the subcommand a line names (cli/parser.py named_command): its help,
    its examples and their values are the whole parser's."""
    from envbisect.cli.parser import named_command

    for example in EXAMPLES[command]:
        argv = shlex.split(example)[1:]
        argv = argv[: argv.index("--")] if "--" in argv else argv
        assert named_command(argv, COMMANDS) == (None if command == "completion" else command)
        whole = build_parser().parse_known_args(argv)
        assert build_parser(only=command).parse_known_args(argv) == whole
    out = io.StringIO()
    with contextlib.redirect_stdout(out), pytest.raises(SystemExit):
        build_parser(only=command).parse_args([command, "--help"])
    assert out.getvalue() == help_of(command)


@pytest.mark.parametrize(
    ("argv", "named"),
    [
        (["-q", "--color", "never", "probe", "-v"], "probe"),
        (["--color=always", "run"], "run"),
        (["-h", "probe"], None),  # the top's help lists every command
        (["--col", "always", "probe"], None),  # an abbreviation: the whole parser's error
        (["prob"], None),  # a typo: the whole parser's "did you mean"
        (["completion", "bash"], None),  # printed from the whole parser
        ([], None),
    ],
)
def test_which_lines_get_a_parser_of_their_command(argv: list[str], named: str | None) -> None:
    from envbisect.cli.parser import named_command

    assert named_command(argv, COMMANDS) == named


def test_an_error_at_the_top_reads_as_from_the_whole_parser() -> None:
    # --color's bad value, before a command: the usage line lists every command.
    bad = subprocess.run([sys.executable, "-m", "envbisect", "--color", "pink", "probe"],
                         capture_output=True, text=True)  # fmt: skip
    assert bad.returncode == 2
    assert "invalid choice: 'pink'" in bad.stderr and "Traceback" not in bad.stderr


PROBE_LOADED = LOADED.replace(
    'heavy = ("rich", "packaging", "concurrent.futures", "httpx", "envbisect.model", "typing")',
    'heavy = ("rich", "importlib.metadata", "email", "httpx", "socket", "envbisect.core.plan",'
    ' "envbisect.core.results.search", "envbisect.modes.bydate")',
)


def test_a_probe_in_a_pipe_imports_none_of_what_it_does_not_use(
    index: LocalIndex, python: str, tmp_path: Path
) -> None:
    """A probe's fixed cost is mostly imports (bench/bench_probe.py): one built and run with
    stderr a pipe loads no rich (plainconsole.py), no importlib.metadata or email parser
    (distinfo.py), no index client, no planner and no search."""
    env = {k: v for k, v in os.environ.items() if k not in ("FORCE_COLOR", "TTY_COMPATIBLE")}
    done = subprocess.run(
        [sys.executable, "-c", PROBE_LOADED, "probe", "--with", "helperlib==1.0.0",
         "--no-config", *on_index(index.url, python, tmp_path), "--", "python", "-c", "pass"],
        capture_output=True, text=True, timeout=120, env=env,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "python -c pass: pass" in done.stdout + done.stderr
    line = next(ln for ln in done.stderr.splitlines() if ln.startswith("LOADED"))
    assert ast.literal_eval(line.removeprefix("LOADED ")) == [], line


# -- what --help says is true of the command it is the help of, and copies whole --------------

PATHLIKE = r"[\w.~<>*-]*/[\w.~<>*/-]+"


def _cli_help(command: str, columns: int) -> str:
    env = {**os.environ, "COLUMNS": str(columns)}
    proc = subprocess.run(
        [sys.executable, "-m", "envbisect", command, "--help"],
        capture_output=True, text=True, env=env, timeout=60,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


@pytest.mark.parametrize("columns", [60, 80, 100])
def test_help_never_breaks_a_path_across_lines(columns: int) -> None:
    # "~/.local/share/bash-" / "completion/completions/envbisect": a path cut at its hyphen.
    import re

    parser = build_parser()
    seen = 0
    for command in COMMANDS:
        sub = next(
            a.choices[command] for a in parser._actions if isinstance(a, argparse._SubParsersAction)
        )
        texts = [sub.description or "", *(str(a.help or "") for a in sub._actions)]
        shown = _cli_help(command, columns)
        for word in {w.rstrip(".,;:)") for t in texts for w in re.findall(PATHLIKE, t)}:
            seen += 1
            assert word in shown, f"envbisect {command} --help at {columns} columns cuts {word!r}"
    assert seen > 20  # the texts hold paths to check
    assert "~/.local/share/bash-completion/completions/envbisect" in _cli_help(
        "completion", columns
    )


def test_verbose_and_dry_run_say_what_this_command_does() -> None:
    # check -v promised probe output; lock's --dry-run spoke of run, probe and matrix.
    from envbisect.cli.subcommands import BUILDS

    for command in COMMANDS:
        shown = " ".join(_cli_help(command, 200).split())
        verbose = shown.split("-v, --verbose ", 1)[1].split(" --color", 1)[0]
        assert ("probe's output" in verbose) is (command in BUILDS), (command, verbose)
        if "--dry-run " in shown:
            dry = shown.split("--dry-run ", 1)[1].split(" -q, --quiet", 1)[0]
            others = [c for c in COMMANDS if c != command and f"{c}:" in dry]
            assert not others, (command, dry)
    lock = " ".join(_cli_help("lock", 200).split())
    assert "--dry-run plan the newest environment and where the search starts first" in lock
