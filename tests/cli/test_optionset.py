"""The options of one invocation, resolved once (cli/optionset.py): what was typed, found on
the parser that read it; each value from the highest-ranked source that gives one (the command
line, the environment, the command's inputs, ``[tool.envbisect]``, the default); the parsed
namespace never written; ``-v`` says where each value came from."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from envbisect.cli.main import build_parser
from envbisect.cli.optionset import Draft, Options, Origin, Source, given, typed_dests
from envbisect.cli.origins import resolve
from envbisect.cli.parser import options_of, subparser


def parsed(*argv: str) -> tuple[argparse.Namespace, argparse.ArgumentParser]:
    parser = build_parser()
    args, unknown = parser.parse_known_args(list(argv))
    assert unknown == []
    return args, subparser(parser, args.command)


def test_what_was_typed_is_found_on_the_parser_whole_short_or_with_a_value() -> None:
    argv = ["run", "--package", "x", "--timeout", "5", "--jobs=2", "-v", "-p3.11", "--", "true"]
    _, sub = parsed(*argv[:-2])
    typed = typed_dests(sub, argv[:-2])
    assert {"package", "timeout", "jobs", "verbose", "python"} <= typed
    assert not typed & {"results", "exclude_newer", "probes"}
    assert given(["run", "--timeout", "5"], ("--timeout",))
    assert not given(["run", "--time", "5"], ("--timeout",))  # no abbreviation: not --timeout
    assert given(["run", "--timeout=5"], ("--timeout",))
    assert not given(["run", "--jobs", "2"], ("--timeout",))


def test_a_value_is_taken_only_over_one_of_a_lower_source() -> None:
    args = argparse.Namespace(python=None, torch_backend=None, jobs=1, results=None)
    draft = Draft(args, typed={"jobs"})
    project = Origin(Source.PROJECT, "[tool.envbisect] in pyproject.toml")
    assert draft.offer("torch_backend", "cu121", project)  # over the default
    assert draft.offer("torch_backend", "cpu", Origin(Source.INPUTS, "report.txt"))
    assert not draft.offer("torch_backend", "cu118", project)  # below the report's
    assert draft.offer("torch_backend", "cu126", Origin(Source.ENVIRONMENT, "UV_TORCH_BACKEND"))
    assert not draft.offer("jobs", 4, project)  # typed: the command line wins
    assert draft.offer("python", "3.11", Origin(Source.DEFAULT, ".python-version"))
    assert not draft.offer("platform", "linux", project)  # the subcommand has no such flag
    opts = draft.freeze(None)
    assert (opts.torch_backend, opts.jobs, opts.python) == ("cu126", 1, "3.11")
    assert opts.origin("torch_backend") == Origin(Source.ENVIRONMENT, "UV_TORCH_BACKEND")
    assert not hasattr(opts, "platform")
    assert args.torch_backend is None and args.python is None  # the parsed namespace: as read
    with pytest.raises(AttributeError, match="resolved once"):
        opts.jobs = 3
    assert opts.chosen() == [
        "--jobs 1 (the command line)",
        "--torch-backend cu126 (UV_TORCH_BACKEND)",
    ]


def test_resolve_ranks_the_environment_over_the_project_table_and_says_each_origin(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "pyproject.toml").write_text(
        '[tool.envbisect]\ntorch-backend = "cu121"\njobs = 3\npython = "3.10"\n', encoding="utf-8"
    )
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("UV_TORCH_BACKEND", "cpu")
    monkeypatch.setenv("UV_PYTHON", "3.11")
    argv = ["run", "--package", "x", "--good", "1", "--bad", "2", "-v", "--timeout", "9"]
    args, sub = parsed(*argv)
    said: list[str] = []
    opts = resolve(args, sub, argv, said.append, verbose=True, options=options_of(sub))
    assert isinstance(opts, Options)
    assert (opts.torch_backend, opts.python, opts.jobs, opts.timeout) == ("cpu", "3.11", 3, 9.0)
    assert opts.origin("jobs").source is Source.PROJECT and opts.project is not None
    assert opts.origin("python") == Origin(Source.ENVIRONMENT, "UV_PYTHON")
    assert args.torch_backend is None and args.jobs != 3  # never written
    (line,) = [s for s in said if s.startswith("envbisect: options: ")]
    assert (
        "--torch-backend cpu (UV_TORCH_BACKEND)" in line
        and "--timeout 9.0 (the command line)" in line
    )
    assert f"--jobs 3 ([tool.envbisect] in {tmp_path / 'pyproject.toml'})" in line


def test_the_options_line_never_shows_a_credential() -> None:
    args = argparse.Namespace(
        index_url="https://me:s3cret@mirror.example/simple",
        probe_env=["HF_TOKEN=hf_abcdef", "MODE=fast"],
        jobs=2,
    )
    flags = {"index_url": "--index-url", "probe_env": "--env"}
    opts = Draft(args, typed={"index_url", "probe_env", "jobs"}, flags=flags).freeze(None)
    line = ", ".join(opts.chosen())
    assert "s3cret" not in line and "hf_abcdef" not in line
    assert "--index-url https://***@mirror.example/simple (the command line)" in line
    assert "--env HF_TOKEN=*** MODE=fast (the command line)" in line
