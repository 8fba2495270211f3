"""``envbisect publish``: a matrix's tables, pictures and lockfiles, again from the store."""

from __future__ import annotations

import json
from pathlib import Path

from envbisect.cli import flags as o
from envbisect.cli.context import Context
from envbisect.cli.readflags import common_options
from envbisect.errors import UsageError


def cmd_publish(ctx: Context) -> int:
    from envbisect.modes.living.matrix import load_matrix, matrix_options
    from envbisect.modes.living.publish import publish_table
    from envbisect.modes.session import Session

    files = [Path(f) for f in ctx.args.files] or sorted(Path("matrices").glob("*.toml"))
    if not files:
        raise UsageError(
            "no matrix to publish", hint="name matrices/*.toml files", ref="matrix-missing"
        )
    common = common_options(ctx.args, command=ctx.command)
    published = []
    for f in files:
        spec = load_matrix(f)
        with Session(matrix_options(spec, common), ctx.progress) as session:
            pub = publish_table(spec, session)
        published.append({"matrix": spec.name, "file": str(f), **pub.to_dict()})
        if not ctx.args[o.JSON]:
            for p in pub.files:
                print(p)
    if ctx.args[o.JSON]:
        print(json.dumps({"status": "ok", "published": published}, indent=2))
    return 0
