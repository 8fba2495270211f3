"""``envbisect diff``: the packages between a good and a bad environment, printed from the
typed ``DiffResult`` (core/results/diff.py)."""

from __future__ import annotations

from envbisect.cli import ownflags as w
from envbisect.cli.context import Context, print_result, repro_for
from envbisect.cli.readflags import common_options


def cmd_diff(ctx: Context) -> int:
    from envbisect.modes.diff.mode import DiffOptions, run_diff

    a = ctx.args
    opts = DiffOptions(
        good=a[w.GOOD],
        bad=a[w.BAD],
        common=common_options(a, command=ctx.command, repro=repro_for(ctx)),
    )
    res = run_diff(opts, ctx.progress)  # no answer: NoAnswer with the result (main.py)
    print_result(ctx, res, res.lines())
    return 0
