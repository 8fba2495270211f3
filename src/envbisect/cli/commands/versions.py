"""``envbisect versions``: a package's versions and why each excluded one is, printed from the
typed ``VersionsResult`` (core/results/versions.py decides the reasons)."""

from __future__ import annotations

import json

from envbisect.cli import flags as o
from envbisect.cli import ownflags as w
from envbisect.cli.context import Context, listing_options
from envbisect.textsafe import for_terminal


def cmd_versions(ctx: Context) -> int:
    from envbisect.modes.listing import list_versions

    a = ctx.args
    res = list_versions(
        a[w.PACKAGE],
        listing_options(ctx),
        pins=tuple(a[o.PINS]),
        pre=a[o.PRE],
        allow_sdist=a[o.ALLOW_SDIST],
        progress=ctx.progress,
    )
    if a[o.JSON]:
        print(json.dumps(res.to_dict(), indent=2))
        return 0
    for line in res.lines():
        print(for_terminal(line))
    return 0
