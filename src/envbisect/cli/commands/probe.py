"""``envbisect probe``: one environment built and probed; exit 0 when it passes, 4 when not.

The answer is printed from the typed ``ProbeResult`` (core/results/probe.py): the outcome line
on stderr (coloured by its kind), the built-in probes' reports and the outcome on stdout.
"""

from __future__ import annotations

from envbisect.cli import flags as o
from envbisect.cli import ownflags as w
from envbisect.cli.context import Context, print_plans, repro_for, requested
from envbisect.cli.display import STYLE, escape
from envbisect.cli.readflags import common_options
from envbisect.core.results.probe import EXIT_PROBE_FAILED
from envbisect.errors import UsageError
from envbisect.textsafe import for_terminal

__all__ = ["EXIT_PROBE_FAILED", "cmd_probe"]


def cmd_probe(ctx: Context) -> int:
    import json

    from envbisect.modes.probe import ProbeOptions, plan_one, probe_one

    a = ctx.args
    if not (a[o.WITH] or a[o.PINS] or a[w.LOCK]):
        raise UsageError(
            "no environment given",
            hint="name what to install: --with 'datasets==2.14.6', --pins SOURCE or --lock FILE",
            ref="probe-nothing",
        )
    repro = repro_for(ctx, pins=bool(a[o.PINS] or a[w.LOCK]))
    popts = ProbeOptions(
        common=common_options(a, command=ctx.command, repro=repro),
        **requested(a),
        lock=a[w.LOCK],
        exclude_newer=a[o.EXCLUDE_NEWER],
        allow_sdist=a[o.ALLOW_SDIST],
    )
    if a[o.DRY_RUN]:
        return print_plans(ctx, plan_one(popts, ctx.progress))
    res = probe_one(popts, ctx.progress)
    ctx.progress.close()  # the live display ends before the outcome is printed
    if a[o.JSON]:
        print(json.dumps(res.to_dict(), indent=2))
        return res.exit_code
    style, said = STYLE[res.outcome.kind], res.outcome.describe()
    ctx.console.print(
        f"{escape(res.repro)}: [{style}]{escape(said)}[/{style}] ({res.how()})", highlight=False
    )
    for line in res.report_lines():
        print(line)
    if res.detail:
        ctx.console.print(for_terminal(res.detail), markup=False, highlight=False)
    print(for_terminal(said))
    return res.exit_code
