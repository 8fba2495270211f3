"""``envbisect matrix``: a whole compatibility matrix, or with ``--update`` what is new since
the published table.

Who does what: ``modes.living.matrixrun`` runs the cells (whole, or an update), writes
``run.json`` and publishes the table; this module reads the command line, hands it over and
prints the answer.
"""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import TYPE_CHECKING

from envbisect.cli.context import Context, machine, print_plans
from envbisect.cli.readflags import matrix_common
from envbisect.errors import UsageError
from envbisect.textsafe import for_terminal

if TYPE_CHECKING:
    from envbisect.modes.living.matrixrun import TableRun


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
    from envbisect.modes.living.matrix import load_matrix
    from envbisect.modes.living.matrixrun import run_table

    a = ctx.args
    if a.recheck is not None and not a.update:
        raise UsageError(
            "--recheck DAYS rechecks a published table: it goes with --update",
            hint=f"envbisect matrix {a.file} --update --recheck {a.recheck}",
        )
    spec = load_matrix(Path(a.file))
    common = matrix_common(a, spec, command=published_command(ctx.command))
    done = run_table(
        spec,
        common,
        machine=machine(),
        update=bool(a.update),
        recheck_days=a.recheck,
        full=a.full,
        max_cells=a.max_cells,
        progress=ctx.progress,
    )
    if done.update is not None:
        return _print_update(ctx, spec.name, done)
    if common.dry_run:
        return print_plans(ctx, done.matrix.plans)
    return _print_whole(ctx, spec.name, done)


def _print_update(ctx: Context, name: str, done: TableRun) -> int:
    res = done.update
    assert res is not None
    if done.run is None:  # --dry-run: planned, nothing built
        if ctx.args.json:
            cells = res.matrix.plans
            print(
                json.dumps(
                    {"status": "dry-run", "matrix": name, **res.to_dict(), "cells": cells},
                    indent=2,
                )
            )
        else:
            print(f"{name}: --update --dry-run (nothing built)")
            for line in res.lines():
                print(for_terminal(line))
        return 0
    pub, out = done.published, done.out
    assert pub is not None and out is not None
    if ctx.args.json:
        answer = {"matrix": name, **done.run.to_dict(), **res.to_dict(), **pub.to_dict()}
        print(json.dumps(answer, indent=2))
        return 0
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
    return 0


def _print_whole(ctx: Context, name: str, done: TableRun) -> int:
    """Every cell (the monotone rows inferred unless --full): what became of them."""
    pub, out, run = done.published, done.out, done.run
    assert pub is not None and out is not None and run is not None
    if ctx.args.json:
        print(json.dumps({"matrix": name, **run.to_dict(), **pub.to_dict()}, indent=2))
        return 0
    n = done.matrix.counts()
    print(
        f"{name}: {n.cells} cells: {n.built} built, {n.reused} reused, "
        f"{n.inferred} inferred, {n.unresolvable} unresolvable"
    )
    print(f"tables: {out / 'table.md'}, {out / 'table.html'}")
    return 0
