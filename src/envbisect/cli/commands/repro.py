"""``envbisect repro``: reproduce a bug report here; the exit code says whether it happened.

The answer is printed from the typed ``ReproResult`` (core/results/reproduce.py), then the next
commands' flags as this one had them (``carried``).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from envbisect.cli.context import Context
from envbisect.cli.display import escape
from envbisect.cli.readflags import common_options
from envbisect.textsafe import for_terminal


def cmd_repro(ctx: Context) -> int:
    from envbisect.env import envreport
    from envbisect.modes.reproduce import ReproOptions, run_repro

    a = ctx.args
    ropts = ReproOptions(
        report=a.report,
        common=common_options(a, command=ctx.command),
        with_reqs=tuple(a.with_reqs),
        exclude_newer=a.exclude_newer,
        pre=a.pre,
        allow_sdist=a.allow_sdist,
        allow_download=a.allow_download,
        gpu=envreport.has_gpu(),
        carry=carried(a),
        cwd=Path.cwd(),
    )
    res = run_repro(ropts, ctx.progress)
    ctx.progress.close()  # the live display ends before the answer
    if a.json:
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


def carried(a: argparse.Namespace) -> tuple[str, ...]:
    """The flags a next command takes as this one had them (index URLs masked: a password is
    never printed)."""
    from envbisect.redact import mask_url

    out: list[str] = []
    for flag, value in (
        ("--python", a.python),
        ("--torch-backend", a.torch_backend),
        ("--torch-index-url", a.torch_index_url),
        ("--index-url", a.index_url),
        ("--results", str(a.results) if a.results != Path("results") else None),
    ):
        if value:
            out += [flag, mask_url(value) if "url" in flag else value]
    for url in a.extra_index_url:
        out += ["--extra-index-url", mask_url(url)]
    for folder in a.find_links:
        out += ["--find-links", folder]
    if a.no_config:
        out.append("--no-config")
    return tuple(out)
