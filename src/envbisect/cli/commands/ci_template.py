"""``envbisect ci-template``: the GitHub Actions workflow that keeps published tables current.

The workflow is ``envbisect/templates/living-tables.yml``, shipped as package data; this
module sets what it installs and writes it.
"""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path

from envbisect import install_requirement
from envbisect.cli import ownflags as w
from envbisect.cli.context import Context
from envbisect.errors import UsageError

TEMPLATE = "living-tables.yml"
# The line of the template that says what the workflow installs (``--install``).
_INSTALL = "  ENVBISECT: envbisect-ml\n"


def workflow(install: str | None = None) -> str:
    """The CI workflow's text, installing ``install`` (``uv tool install`` takes it); by
    default envbisect's repository (``install_requirement``: at the tag of the version that
    writes it once released)."""
    text = resources.files("envbisect").joinpath("templates").joinpath(TEMPLATE).read_text("utf-8")
    if install is None:
        install = install_requirement()
    elif not install.strip() or not install.isprintable():
        raise UsageError(
            f"--install {install!r}: not a package to install",
            hint=f"a requirement ({install_requirement()}), a git URL, or .",
        )
    # A JSON string is a YAML double-quoted scalar: any printable text stays one value.
    return text.replace(_INSTALL, f"  ENVBISECT: {json.dumps(install)}\n", 1)


def cmd_ci_template(ctx: Context) -> int:
    text = workflow(ctx.args[w.INSTALL])
    if ctx.args[w.OUTPUT] is None:
        print(text, end="")
        return 0
    path = Path(ctx.args[w.OUTPUT])
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    except OSError as e:
        raise UsageError(
            f"cannot write {path}: {e.strerror}",
            hint="pass --output a file in a folder you can write, e.g. "
            ".github/workflows/living-tables.yml",
        ) from e
    ctx.progress.message(
        f"envbisect: wrote {path}: commit it; it runs every Monday and on "
        "demand (workflow_dispatch)"
    )
    print(path)
    return 0
