"""``--color auto|always|never`` and the variables rich documents: under ``auto`` a pipe
gets plain text, ``FORCE_COLOR`` colours it, ``NO_COLOR`` wins over both; ``always`` and
``never`` win over the variables (rich keeps bold and dim under NO_COLOR, as it documents;
``never`` writes no escape at all). The real CLI in a subprocess, its stderr a pipe."""

from __future__ import annotations

import os
import re

import pytest

from support.cli import envbisect

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
