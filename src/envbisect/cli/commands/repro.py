"""``envbisect repro``: reproduce a bug report here; the exit code says whether it happened.

The answer is printed from the typed ``ReproResult`` (core/results/reproduce.py), then the next
commands' flags as this one had them (``carried``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

from envbisect.cli import flags as o
from envbisect.cli.context import Context
from envbisect.cli.display import escape
from envbisect.cli.readflags import common_options
from envbisect.textsafe import for_terminal

if TYPE_CHECKING:
    from envbisect.cli.optionset import Options


def cmd_repro(ctx: Context) -> int:
    from envbisect.env import envreport
    from envbisect.modes.reproduce import ReproOptions, run_repro

    a = ctx.args
    ropts = ReproOptions(
        report=a.report,
        common=common_options(a, command=ctx.command),
        with_reqs=tuple(a[o.WITH]),
        exclude_newer=a[o.EXCLUDE_NEWER],
        pre=a[o.PRE],
        allow_sdist=a[o.ALLOW_SDIST],
        allow_download=a[o.ALLOW_DOWNLOAD],
        gpu=envreport.has_gpu(),
        carry=carried(a),
        cwd=Path.cwd(),
    )
    res = run_repro(ropts, ctx.progress)
    ctx.progress.close()  # the live display ends before the answer
    if a[o.JSON]:
        print(json.dumps(res.to_dict(), indent=2))
    else:
        for line in res.lines():
            print(for_terminal(line))
        if res.plans:
            from envbisect.modes.dryrun import render

            print("\n".join(render(list(res.plans))))
    if res.hint:
        ctx.console.print(f"[cyan]hint[/cyan]: {escape(res.hint)}", highlight=False)
    return res.exit_code


def carried(a: Options) -> tuple[str, ...]:
    """The flags a next command takes as this one had them (index URLs masked: a password is
    never printed)."""
    from envbisect.redact import mask_url

    out: list[str] = []
    for flag, value in (
        ("--python", a[o.PYTHON]),
        ("--torch-backend", a[o.TORCH_BACKEND]),
        ("--torch-index-url", a[o.TORCH_INDEX_URL]),
        ("--index-url", a[o.INDEX_URL]),
        ("--results", str(a[o.RESULTS]) if a[o.RESULTS] != Path("results") else None),
    ):
        if value:
            out += [flag, mask_url(value) if "url" in flag else value]
    for url in a[o.EXTRA_INDEX_URL]:
        out += ["--extra-index-url", mask_url(url)]
    for folder in a[o.FIND_LINKS]:
        out += ["--find-links", folder]
    if a[o.NO_CONFIG]:
        out.append("--no-config")
    return tuple(out)
