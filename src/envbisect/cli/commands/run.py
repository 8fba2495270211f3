"""``envbisect run``: bisect one package's versions, or the whole environment ``--by-date``.

The answer is printed from the typed ``RunResult`` and ``DateResult`` (core/results/), with the
commit lines of ``--commits`` (commands/commits.py).
"""

from __future__ import annotations

from envbisect.cli import flags as o
from envbisect.cli import ownflags as w
from envbisect.cli.commands.commits import commit_lines, commit_refs
from envbisect.cli.context import (
    Context,
    no_answer,
    print_plans,
    print_result,
    repro_for,
    requested,
    search_options,
)
from envbisect.cli.display import escape
from envbisect.cli.readflags import common_options
from envbisect.core.names import project_name
from envbisect.core.results.parts import Status
from envbisect.errors import UsageError


def cmd_run(ctx: Context) -> int:
    from envbisect.core.runreport import breakpoints_line, other_failures_hint, verdict_line
    from envbisect.modes.run import RunOptions, run_bisect

    a = ctx.args
    if a[w.BY_DATE]:
        commit_refs(a)  # --commits, --repo...: not with --by-date
        return _run_by_date(ctx)
    if not a[w.PACKAGE]:
        raise UsageError(
            "nothing to bisect",
            hint="name the package (--package datasets), or bisect by date (--by-date "
            "--good 2025-01-01 --bad 2025-09-01)",
            ref="bad-usage",
        )
    project_name(a[w.PACKAGE], what="--package")  # before anything is read, built or written
    refs = commit_refs(a)
    repro = repro_for(ctx, default_for=a[w.PACKAGE], pins=bool(a[o.PINS]))
    opts = RunOptions(
        package=a[w.PACKAGE],
        common=common_options(a, command=ctx.command, repro=repro),
        **requested(a),
        good=a[w.GOOD],
        bad=a[w.BAD],
        exclude_newer=a[o.EXCLUDE_NEWER],
        allow_sdist=a[o.ALLOW_SDIST],
        baseline=a[w.BASELINE],
        rest=a[w.REST],
        search=search_options(a),
        commits=refs,
    )
    if not (a[o.REPRO] or ctx.tail or a[o.PROBE]):
        ctx.console.print(
            f"envbisect: no repro given; probing with {escape(repro.describe())}", highlight=False
        )
    result = run_bisect(opts, ctx.progress)
    if result.status is Status.DRY_RUN:
        return print_plans(ctx, result.plans)
    if result.status is Status.NO_ANSWER:
        return no_answer(ctx, result, hint=swapped_hint(a[w.GOOD], a[w.BAD], result.reason or ""))
    points = breakpoints_line(result)
    lines = [verdict_line(result), *([points] if points else []), *commit_lines(result)]
    print_result(ctx, result, lines)
    other = other_failures_hint(result)
    if other:
        ctx.console.print(f"[cyan]hint[/cyan]: {escape(other)}", highlight=False)
    return 0


def swapped_hint(good: str | None, bad: str | None, reason: str) -> str:
    """The ends verified the other way round (--good fails, --bad passes): say to swap them."""
    if not (good and bad) or not reason.startswith("the good end does not pass"):
        return ""
    return (
        f"--good {good} fails and --bad {bad} passes: were they swapped? "
        f"--good {bad} --bad {good} searches that way round"
    )


def _run_by_date(ctx: Context) -> int:
    from envbisect.modes.bydate import DateOptions, run_by_date

    a = ctx.args
    if not (a[w.GOOD] and a[w.BAD]):
        raise UsageError(
            "--by-date needs --good DATE and --bad DATE",
            hint="e.g. --good 2025-01-01 --bad 2026-11-30 (YYYY-MM-DD or RFC 3339)",
            ref="bad-date",
        )
    if a[w.PACKAGE]:
        raise UsageError(
            "--by-date moves the whole environment; --package moves one package",
            hint="use one of them (pin the package with --with NAME==V to hold it fixed)",
            ref="bad-usage",
        )
    repro = repro_for(ctx, pins=bool(a[o.PINS]))
    opts = DateOptions(
        good=a[w.GOOD],
        bad=a[w.BAD],
        common=common_options(a, command=ctx.command, repro=repro),
        **requested(a),
        search=search_options(a),
    )
    res = run_by_date(opts, ctx.progress)  # no answer: NoAnswer with the result (main.py)
    if res.status is Status.DRY_RUN:
        return print_plans(ctx, res.plans)
    from envbisect.core.runreport import breakpoints_line

    sure = f" (probability {res.probability:.2f})" if res.probability is not None else ""
    lines = [f"first bad: {res.first_new}{sure}", f"last good: {res.last_old}"]
    if res.neighbour:
        lines.insert(1, f"fails another way right before it: {res.neighbour}")
    points = breakpoints_line(res)
    lines += [points] if points else []
    for c in res.culprits:
        conf = res.confirmation_of(c.package)
        said = conf.said() if conf is not None else "not confirmed"
        lines.append(
            f"culprit: {c.package} {c.bad_version} (was {c.good_version or 'absent'}), {said}"
        )
    print_result(ctx, res, lines)
    return 0
