"""``--color auto|always|never`` and the variables rich documents: under ``auto`` a pipe
gets plain text, ``FORCE_COLOR`` colours it, ``NO_COLOR`` wins over both; ``always`` and
``never`` win over the variables (rich keeps bold and dim under NO_COLOR, as it documents;
``never`` writes no escape at all). The real CLI in a subprocess, its stderr a pipe."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from support.cli import CLI, envbisect, on_index
from support.index_server import LocalIndex
from support.terminal import under_pty

SGR = re.compile(r"\x1b\[([0-9;]*)m")


def has_colour(text: str) -> bool:
    """A foreground colour in any SGR sequence (rich keeps bold and dim under NO_COLOR)."""
    codes = [c for m in SGR.finditer(text) for c in m.group(1).split(";") if c]
    return any(30 <= int(c) <= 38 or 90 <= int(c) <= 97 for c in codes)


# A usage error: printed at once, coloured by rich when colour is on.
ARGS = ("run", "--package", "x", "--exclude-newer", "yesterday", "--", "true")


def plain_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "FORCE_COLOR", "TERM")}
    return {**env, **extra}


@pytest.mark.parametrize(
    ("flag", "env", "coloured"),
    [
        ((), {}, False),  # auto, a pipe
        ((), {"FORCE_COLOR": "1"}, True),
        ((), {"FORCE_COLOR": "1", "NO_COLOR": "1"}, False),
        (("--color", "always"), {}, True),
        (("--color", "always"), {"NO_COLOR": "1"}, True),  # the flag over the variable
        (("--color", "never"), {"FORCE_COLOR": "1"}, False),
        (("--color", "auto"), {"FORCE_COLOR": "1"}, True),
    ],
)
def test_color_follows_the_flag_then_no_color_then_force_color(
    flag: tuple[str, ...], env: dict[str, str], coloured: bool
) -> None:
    # --color before the subcommand and after it: both are read.
    for argv in ((*flag, *ARGS), (ARGS[0], *flag, *ARGS[1:])):
        proc = envbisect(*argv, env=plain_env(**env))
        assert proc.returncode == 2
        assert "[bad-date]" in proc.stderr
        assert has_colour(proc.stderr) is coloured, (argv, env, proc.stderr)
        if flag[1:] == ("never",):
            assert "\x1b[" not in proc.stderr  # plain text: no style at all


# -- on a real terminal: NO_COLOR means no escape sequence at all ---------------------------------

ESCAPE = "\x1b"


def test_no_color_on_a_terminal_writes_no_style_at_all() -> None:
    # An error's reference is dim: rich kept bold and dim under NO_COLOR on a terminal.
    argv = [*CLI, *ARGS]
    code, _, screen = under_pty(argv, plain_env(TERM="xterm-256color"))
    assert code == 2 and "[bad-date]" in screen and ESCAPE in screen  # a terminal: styled
    code, _, screen = under_pty(argv, plain_env(TERM="xterm-256color", NO_COLOR="1"))
    assert code == 2 and "[bad-date]" in screen
    assert ESCAPE not in screen, repr(screen)
    # --color always is the later word, over NO_COLOR
    code, _, screen = under_pty([*CLI, "--color", "always", *ARGS], plain_env(NO_COLOR="1"))
    assert has_colour(screen)


@pytest.mark.slow
def test_no_color_on_a_terminal_draws_no_live_display(
    index: LocalIndex, python: str, tmp_path: Path
) -> None:
    # The live display moves the cursor: under NO_COLOR, the plain lines a log gets instead.
    argv = [*CLI, "run", "--package", "raisy", "--good", "1.4.0", "--bad", "1.5.0",
            *on_index(index.url, python, tmp_path, cache=True),
            "--", "python", "-c", "import raisy; raisy.run()"]  # fmt: skip
    code, out, screen = under_pty(argv, plain_env(TERM="xterm-256color", NO_COLOR="1"))
    assert code == 0, screen
    assert "first bad version of raisy: 1.5.0" in out
    assert ESCAPE not in screen, repr(screen)
    assert "[1] probing" in screen  # the progress, as plain lines
