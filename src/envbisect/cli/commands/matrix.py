"""``envbisect matrix``: a whole compatibility matrix, or with ``--update`` what is new since
the published table.

Who does what: ``modes.living.matrix`` runs the cells, ``modes.living.update`` plans and probes
an update, ``modes.living.publish`` merges and publishes it (and says what changed); this
module prints the answer and writes ``run.json``.
"""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import TYPE_CHECKING

from envbisect.cli import flags as o
from envbisect.cli import ownflags as w
from envbisect.cli.context import Context, machine, print_plans
from envbisect.cli.readflags import matrix_common
from envbisect.core.living.lastrun import LastRun
from envbisect.errors import UsageError
from envbisect.redact import mask_env_map
from envbisect.textsafe import for_terminal

if TYPE_CHECKING:
    from envbisect.modes.living.publish import Published
    from envbisect.modes.living.update import UpdateResult


def published_command(command: str) -> str:
    """The command line as a published table shows it: a wheel folder of this machine given
    to ``--find-links`` is named ``DIR`` (a table names no folder of one machine; a URL
    stays)."""
    out: list[str] = []
    after = False
    for arg in shlex.split(command):
        if after and "://" not in arg:
            arg = "DIR"
        elif arg.startswith("--find-links=") and "://" not in arg:
            arg = "--find-links=DIR"
        out.append(arg)
        after = arg == "--find-links"
    return shlex.join(out)


def cmd_matrix(ctx: Context) -> int:
    """``envbisect matrix``: the whole matrix, or with ``--update`` what is new since the
    published table."""
    if ctx.args[w.UPDATE] or ctx.args[w.RECHECK] is not None:
        return cmd_matrix_update(ctx)
    return cmd_matrix_whole(ctx)


def cmd_matrix_update(ctx: Context) -> int:
    from envbisect.modes.living.matrix import load_matrix, matrix_options
    from envbisect.modes.living.publish import publish_table
    from envbisect.modes.living.update import update_matrix
    from envbisect.modes.outputs import inside
    from envbisect.modes.session import Session

    a = ctx.args
    if not a[w.UPDATE]:
        raise UsageError(
            "--recheck DAYS rechecks a published table: it goes with --update",
            hint=f"envbisect matrix {a.file} --update --recheck {a[w.RECHECK]}",
        )
    spec = load_matrix(Path(a.file))
    common = matrix_common(a, spec, command=published_command(ctx.command))
    res = update_matrix(
        spec,
        common,
        recheck_days=a[w.RECHECK],
        full=a[w.FULL],
        max_cells=a[w.MAX_CELLS],
        progress=ctx.progress,
    )
    if common.dry_run:
        if a[o.JSON]:
            print(
                json.dumps(
                    {
                        "status": "dry-run",
                        "matrix": spec.name,
                        **res.to_dict(),
                        "cells": res.matrix.plans,
                    },
                    indent=2,
                )
            )
        else:
            print(f"{spec.name}: --update --dry-run (nothing built)")
            for line in res.lines():
                print(for_terminal(line))
        return 0
    out = inside(common.results, common.results / spec.name)
    note = res.note()
    run_meta = LastRun(
        command=published_command(ctx.command),
        # An update that probed nothing measured nothing: the table's date stays the last
        # measurement's, and ``checked`` says when the index was last read for it.
        measured=res.matrix.started
        if note.probed
        else _published_measured(out, res.matrix.started),
        checked=res.matrix.started,
        machine=machine(),
        targets=res.matrix.targets,
        axis_versions=res.matrix.axes,
        counts=res.matrix.counts(),
        full=a[w.FULL],
        jobs=a[o.JOBS],
        update=note,
        env=mask_env_map(common.probing.env) if common.probing.env else {},
    ).to_dict()
    (out / "run.json").write_text(json.dumps(run_meta, indent=2) + "\n", encoding="utf-8")
    with Session(matrix_options(spec, common), ctx.progress) as session:
        pub = publish_table(spec, session)
    if a[o.JSON]:
        print(
            json.dumps(
                {"matrix": spec.name, **run_meta, **res.to_dict(), **pub.to_dict()}, indent=2
            )
        )
        return 0
    _print_update(spec.name, res, pub, out)
    return 0


def _print_update(name: str, res: UpdateResult, pub: Published, out: Path) -> None:
    n = res.matrix.counts()
    print(
        f"{name}: {n.cells} new cell(s): {n.built} built, {n.reused} reused, "
        f"{n.inferred} inferred, {n.unresolvable} unresolvable; {len(res.rechecked)} rechecked, "
        f"{sum(g.cells for g in res.gone)} left the table"
    )
    if pub.change is not None:
        print(for_terminal(f"{pub.change.title()}: {pub.change.headline()}"))
        for line in pub.change.lines:
            print(for_terminal(f"  {line}"))
    else:
        print("nothing changed")
    print(f"tables: {out / 'table.md'}, {out / 'table.html'}; feed: {out / 'feed.xml'}")


def cmd_matrix_whole(ctx: Context) -> int:
    """``envbisect matrix FILE``: every cell (the monotone rows inferred unless --full)."""
    from envbisect.modes.living.matrix import load_matrix, matrix_options, run_matrix
    from envbisect.modes.living.publish import publish_table
    from envbisect.modes.outputs import inside
    from envbisect.modes.session import Session

    a = ctx.args
    spec = load_matrix(Path(a.file))
    common = matrix_common(a, spec, command=published_command(ctx.command))
    res = run_matrix(spec, common, full=a[w.FULL], max_cells=a[w.MAX_CELLS], progress=ctx.progress)
    if common.dry_run:
        return print_plans(ctx, res.plans)
    run_meta = LastRun(
        command=published_command(ctx.command),
        measured=res.started,
        machine=machine(),
        targets=res.targets,
        axis_versions=res.axes,
        counts=res.counts(),
        full=a[w.FULL],
        jobs=a[o.JOBS],
        env=mask_env_map(common.probing.env) if common.probing.env else {},
    ).to_dict()
    out = inside(common.results, common.results / spec.name)
    out.mkdir(parents=True, exist_ok=True)
    (out / "run.json").write_text(json.dumps(run_meta, indent=2) + "\n", encoding="utf-8")
    with Session(matrix_options(spec, common), ctx.progress) as session:
        pub = publish_table(spec, session)
    n = res.counts()
    if a[o.JSON]:
        print(json.dumps({"matrix": spec.name, **run_meta, **pub.to_dict()}, indent=2))
    else:
        print(
            f"{spec.name}: {n.cells} cells: {n.built} built, {n.reused} reused, "
            f"{n.inferred} inferred, {n.unresolvable} unresolvable"
        )
        print(f"tables: {out / 'table.md'}, {out / 'table.html'}")
    return 0


def _published_measured(folder: Path, default: str) -> str:
    """The ``measured`` date of the committed ``results.json`` (``default`` if unreadable)."""
    from envbisect.modes.living.publish import read_table

    try:
        measured = read_table(folder).meta.measured
    except (OSError, ValueError, UsageError):
        return default
    return measured if measured is not None else default
