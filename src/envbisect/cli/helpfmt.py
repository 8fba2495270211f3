"""``--help`` as a reader scans it: the options in groups (what to test, indexes,
environments, search, output), two examples per command, and the docs' address.

The groups are made after the parser (``arrange``): each option lands in the group its record
names (optionspec.py ``Group``), so the options stay declared once (cli/flags.py) whatever
command takes them; a command's own options are listed as "lock options".
tests/cli/test_cli_help.py parses every example with the real parser, so none can drift from
the flags.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from typing import Any

from envbisect.optionspec import Group, Option

DOCS = "https://envbisect.github.io/envbisect/"


EXAMPLES: dict[str, tuple[str, ...]] = {
    "run": (
        "envbisect run --package pyarrow --with datasets==2.14.6 --probe import:datasets",
        "envbisect run --package transformers --pins pyproject.toml --good 4.40.0 --bad 4.46.0"
        " -- python train.py",
    ),
    "commits": (
        "envbisect commits --package werkzeug --good 2.3.7 --bad 3.0.0 --repo "
        "https://github.com/pallets/werkzeug --with flask==2.2.2 -- python -c 'import flask'",
        "envbisect commits --package mypkg --good v1.0 --bad v1.1 --repo ../mypkg --repro repro.py",
    ),
    "probe": (
        "envbisect probe --with datasets==2.14.6 --probe import:datasets",
        "envbisect probe --pins requirements.txt --dry-run -- python -c 'import torch'",
    ),
    "repro": ("envbisect repro issue.md", "envbisect repro - --dry-run"),
    "pins": ("envbisect pins pyproject.toml", "envbisect pins llamafactory==0.9.5 --json"),
    "versions": ("envbisect versions peft", "envbisect versions torch --python 3.10 --json"),
    "diff": (
        "envbisect diff good.txt bad.txt --repro repro.py",
        "envbisect diff pylock.good.toml pylock.bad.toml --probe import:mypkg --jobs 2",
    ),
    "lock": (
        "envbisect lock --with datasets==2.14.6 --probe import:datasets",
        "envbisect lock --pins pyproject.toml --from requirements.lock --repro repro.py",
    ),
    "matrix": (
        "envbisect matrix matrices/datasets-pyarrow.toml --jobs 2",
        "envbisect matrix matrices/datasets-pyarrow.toml --update --recheck 90",
    ),
    "publish": ("envbisect publish", "envbisect publish matrices/transformers-peft.toml"),
    "ci-template": (
        "envbisect ci-template --output .github/workflows/living-tables.yml",
        "envbisect ci-template --install .",
    ),
    "env": ("envbisect env", "envbisect env --python .venv/bin/python --json"),
    "check": ("envbisect check issue.md", "envbisect check --here --json"),
    "why": (
        "envbisect why issue.md --json",
        "envbisect why \"ImportError: cannot import name 'cached_download' from "
        "'huggingface_hub'\"",
    ),
    "completion": ("envbisect completion bash", "envbisect completion zsh"),
}


class Formatter(argparse.HelpFormatter):
    """argparse's, but a text with line breaks (the examples) is kept as written, and a line
    is never broken inside a word: a path (``~/.local/share/bash-completion/...``), a URL or
    a flag stays whole, to be copied as it is (a word longer than the width has a line of its
    own)."""

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        if "\n" in text:
            return "".join(indent + line for line in text.splitlines(keepends=True))
        return "\n".join(indent + line for line in _wrap(text, width - len(indent)))

    def _split_lines(self, text: str, width: int) -> list[str]:
        return _wrap(text, width)


def _wrap(text: str, width: int) -> list[str]:
    import textwrap

    one = " ".join(text.split())
    return textwrap.wrap(one, max(width, 11), break_on_hyphens=False, break_long_words=False)


def arrange(
    parser: argparse.ArgumentParser, command: str, options: Mapping[str, Option[Any]]
) -> None:
    """Put ``parser``'s options (``options``: their records, by dest) into their groups, and
    its examples and the docs in its epilog."""
    parser.formatter_class = Formatter
    optionals = parser._optionals
    groups = {g: parser.add_argument_group(g.value) for g in Group if g is not Group.OWN}
    for action in list(optionals._group_actions):
        option = options.get(action.dest)
        group = option.group if option is not None else Group.OUTPUT  # -h, --help
        if group is not Group.OWN:
            optionals._group_actions.remove(action)
            groups[group]._group_actions.append(action)
    # Empty groups print nothing; "options" last but for output, as a reader looks for -h.
    parser._action_groups = [
        g for g in parser._action_groups if g is not optionals and g._group_actions
    ]
    if optionals._group_actions:  # the command's own: "lock options"
        optionals.title = f"{command} options"
        parser._action_groups.insert(len(parser._action_groups) - 1, optionals)
    lines = ["examples:", *(f"  {e}" for e in EXAMPLES.get(command, ()))]
    lines.append(f"\ndocs: {DOCS} (this command: {DOCS}reference/cli.html)")
    parser.epilog = "\n".join(lines)
