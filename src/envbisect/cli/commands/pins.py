"""``envbisect pins``: what a pin source asks for, printed from the typed ``PinsResult``."""

from __future__ import annotations

import json

from envbisect.cli import flags as o
from envbisect.cli.context import Context, listing_options
from envbisect.textsafe import for_terminal


def cmd_pins(ctx: Context) -> int:
    from envbisect.modes.listing import show_pins

    res = show_pins(ctx.args.source, listing_options(ctx), ctx.progress)
    if ctx.args[o.JSON]:
        print(json.dumps(res.to_dict(), indent=2))
        return 0
    for line in res.lines():
        print(for_terminal(line))
    return 0
