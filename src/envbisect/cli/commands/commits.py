"""``envbisect commits``, and the commit refs and lines ``run --commits`` shares.

The answer is printed from the typed ``CommitAnswer`` (core/results/commits.py), commit subjects
through ``for_terminal``: they are their authors' text.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from envbisect.cli import flags as o
from envbisect.cli import ownflags as w
from envbisect.cli.context import Context, print_result, repro_for, search_options
from envbisect.cli.readflags import common_options
from envbisect.core.names import project_name
from envbisect.core.results.search import RunResult
from envbisect.errors import UsageError
from envbisect.modes.searchoptions import CommitRefs

if TYPE_CHECKING:
    from envbisect.cli.optionset import Options


def commit_lines(res: RunResult) -> list[str]:
    """The commit search's lines, after a run's verdict (none without --commits)."""
    return res.commits.lines() if res.commits is not None else []


def commit_refs(args: Options) -> CommitRefs | None:
    """``run --commits`` and its refs; ``--repo``/``--good-ref``/``--bad-ref`` need it."""
    given = [
        f
        for f, v in (
            ("--repo", args[o.REPO]),
            ("--good-ref", args[o.GOOD_REF]),
            ("--bad-ref", args[o.BAD_REF]),
        )
        if v
    ]
    if not args[o.COMMITS]:
        if given:
            raise UsageError(
                f"{given[0]} is for the commit search",
                hint="add --commits, or use envbisect commits",
                ref="bad-usage",
            )
        return None
    if args[w.BY_DATE]:
        raise UsageError(
            "--commits follows one package's releases; --by-date moves them all",
            hint="use --package NAME with --commits",
            ref="bad-usage",
        )
    return CommitRefs(repo=args[o.REPO], good_ref=args[o.GOOD_REF], bad_ref=args[o.BAD_REF])


def cmd_commits(ctx: Context) -> int:
    from envbisect.modes.commits import CommitOptions, run_commits

    a = ctx.args
    project_name(a[w.PACKAGE], what="--package")  # before anything is read, cloned or built
    repro = repro_for(ctx, default_for=a[w.PACKAGE])
    opts = CommitOptions(
        package=a[w.PACKAGE],
        common=common_options(a, command=ctx.command, repro=repro),
        good=a[w.GOOD],
        bad=a[w.BAD],
        repo=a[o.REPO],
        with_reqs=tuple(a[o.WITH]),
        allow_sdist=a[o.ALLOW_SDIST],
        search=search_options(a),
    )
    if not (a[o.REPRO] or ctx.tail or a[o.PROBE]):
        ctx.console.print(
            f"envbisect: no repro given; probing with {repro.describe()}",
            markup=False,
            highlight=False,
        )
    res = run_commits(opts, ctx.progress)  # no answer: NoAnswer with the result (main.py)
    assert res.commits is not None
    print_result(ctx, res, res.commits.lines())
    return 0
