"""``envbisect commits``, and the commit refs and lines ``run --commits`` shares.

The answer is printed from the typed ``CommitAnswer`` (core/results/commits.py), commit subjects
through ``for_terminal``: they are their authors' text.
"""

from __future__ import annotations

import argparse

from envbisect.cli.context import Context, print_result, repro_for, search_options
from envbisect.cli.readflags import common_options
from envbisect.core.names import project_name
from envbisect.core.results.search import RunResult
from envbisect.errors import UsageError
from envbisect.modes.searchoptions import CommitRefs


def commit_lines(res: RunResult) -> list[str]:
    """The commit search's lines, after a run's verdict (none without --commits)."""
    return res.commits.lines() if res.commits is not None else []


def commit_refs(args: argparse.Namespace) -> CommitRefs | None:
    """``run --commits`` and its refs; ``--repo``/``--good-ref``/``--bad-ref`` need it."""
    given = [
        f
        for f, v in (
            ("--repo", args.repo),
            ("--good-ref", args.good_ref),
            ("--bad-ref", args.bad_ref),
        )
        if v
    ]
    if not args.commits:
        if given:
            raise UsageError(
                f"{given[0]} is for the commit search",
                hint="add --commits, or use envbisect commits",
                ref="bad-usage",
            )
        return None
    if args.by_date:
        raise UsageError(
            "--commits follows one package's releases; --by-date moves them all",
            hint="use --package NAME with --commits",
            ref="bad-usage",
        )
    return CommitRefs(repo=args.repo, good_ref=args.good_ref, bad_ref=args.bad_ref)


def cmd_commits(ctx: Context) -> int:
    from envbisect.modes.commits import CommitOptions, run_commits

    a = ctx.args
    project_name(a.package, what="--package")  # before anything is read, cloned or built
    repro = repro_for(ctx, default_for=a.package)
    opts = CommitOptions(
        package=a.package,
        common=common_options(a, command=ctx.command, repro=repro),
        good=a.good,
        bad=a.bad,
        repo=a.repo,
        with_reqs=tuple(a.with_reqs),
        allow_sdist=a.allow_sdist,
        search=search_options(a),
    )
    if not (a.repro or ctx.tail or a.probes):
        ctx.console.print(
            f"envbisect: no repro given; probing with {repro.describe()}",
            markup=False,
            highlight=False,
        )
    res = run_commits(opts, ctx.progress)  # no answer: NoAnswer with the result (main.py)
    assert res.commits is not None
    print_result(ctx, res, res.commits.lines())
    return 0
