"""``envbisect why``: the release that removed or changed what a failure's text names, read
from the wheels on the index (modes/why.py), printed from the typed ``WhyResult``.

The input is a file, ``-`` (stdin), or the failure text itself on the command line (a
traceback's last line is enough). A file saved by Windows PowerShell (UTF-16 with a BOM) or
with a UTF-8 BOM reads as text too.
"""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

from envbisect.cli import flags as o
from envbisect.cli.context import Context, read_input
from envbisect.errors import UsageError
from envbisect.textsafe import for_terminal


def cmd_why(ctx: Context) -> int:
    from envbisect.cli.readflags import common_options
    from envbisect.modes.session import Session
    from envbisect.modes.why import explain

    a = ctx.args
    text, origin = read_input(a.why_input)
    if not text.strip():
        raise UsageError(
            f"{origin} is empty",
            hint="give the failure's text: the traceback, or the whole bug report",
            ref="why-input",
        )
    common = common_options(a, command=ctx.command)
    with Session(common, ctx.progress, plan_only=True) as session:
        result = explain(
            text, origin=origin, client=session.client, python=a.why_python, progress=ctx.progress
        )
    proofs: tuple[Any, ...] = ()
    if a.prove:
        from envbisect.modes.whyprove import prove

        def common_for(repro: Any) -> Any:
            opts = common_options(a, command=ctx.command, repro=repro)
            python = a.why_python or opts.planning.python
            return replace(opts, planning=replace(opts.planning, python=python))

        proofs = prove(result, dict(result.stated), common_for, ctx.progress)
    ctx.progress.close()
    if not result.explained:
        ctx.progress.message(
            "hint: give the whole traceback, from its first line to the error's last (cannot "
            "import name, No module named, has no attribute, unexpected keyword argument)"
        )
    if a[o.JSON]:
        print(json.dumps({**result.to_dict(), "proofs": [p.to_dict() for p in proofs]}, indent=2))
    else:
        for line in result.lines():
            print(for_terminal(line))
        for proof in proofs:
            print(for_terminal(proof.line()))
    return result.exit_code
