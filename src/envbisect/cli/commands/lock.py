"""``envbisect lock``: the newest environment the pins allow in which the repro passes,
printed from the typed ``LockResult`` (core/results/lock.py)."""

from __future__ import annotations

import json

from envbisect.cli import flags as o
from envbisect.cli import ownflags as w
from envbisect.cli.context import Context, print_plans, repro_for, requested
from envbisect.cli.readflags import common_options
from envbisect.core.results.parts import Status
from envbisect.textsafe import for_terminal


def cmd_lock(ctx: Context) -> int:
    from envbisect.modes.lock.solve import LockOptions, Strategy, run_lock

    a = ctx.args
    repro = repro_for(ctx, pins=bool(a[o.PINS] or a[w.FROM_LOCK]))
    opts = LockOptions(
        common=common_options(a, command=ctx.command, repro=repro),
        **requested(a),
        from_lock=a[w.FROM_LOCK],
        good_date=a[w.GOOD_DATE],
        strategy=Strategy(a[w.STRATEGY]),
        no_project=a[w.NO_PROJECT],
    )
    res = run_lock(opts, ctx.progress)  # no answer: NoAnswer with the result (main.py)
    if res.status is Status.DRY_RUN:
        return print_plans(ctx, res.plans)
    from envbisect.core.runreport import verdict_line

    if a[o.JSON]:
        print(json.dumps(res.to_dict(), indent=2))
        return 0
    print(for_terminal(verdict_line(res)))
    for c in res.constraints:
        print(for_terminal(c.held_line()))
    print(f"lockfile: {res.lock_path}")
    print(f"pylock: {res.pylock_path}")
    print(f"constraints: {res.constraints_file}")
    print(f"report: {res.report_path}")
    return 0
