"""Turning a finished run into text: the verdict lines and report.md.

Pure: everything here takes data and returns strings; the engine writes the files. The
results themselves, and their ``--json``, are ``core.results*``; the lockfiles written beside
report.md are core/lockfile.py's.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from envbisect import __version__
from envbisect.core.results.parts import Direction, ProbeRow, RowVerdict, SearchMode, Status
from envbisect.core.results.search import RunResult, SearchResult
from envbisect.model import InstalledDist, OutcomeKind
from envbisect.textsafe import md_block, md_code, md_text


def verdict_line(res: SearchResult) -> str:
    if res.status is Status.NO_ANSWER:
        return f"no answer for {res.package}: {res.reason}"
    if res.verdict:
        return res.verdict
    new_word = "first bad" if res.direction == Direction.REGRESSION else "first fixed"
    old_word = "last good" if res.direction == Direction.REGRESSION else "last broken"
    what = "" if res.direction == Direction.REGRESSION else " (searching for the fix)"
    if res.status is Status.AMBIGUOUS:
        return (
            f"the {new_word} version of {res.package} is one of {', '.join(res.possible)}"
            f"{what}; {old_word} is {res.last_old} ({res.reason})"
        )
    outcome = res.first_new_outcome
    how = f": {outcome.describe()}" if outcome and res.direction == Direction.REGRESSION else ""
    sure = f" (probability {res.probability:.2f})" if res.probability is not None else ""
    yanked = res.yanked_between if isinstance(res, RunResult) else ()
    left_out = (
        f" (yanked between them, not tested: {', '.join(yanked)}; name one with --bad to test it)"
        if yanked
        else ""
    )
    return (
        f"{new_word} version of {res.package}: {res.first_new}{how}{what}; "
        f"{_neighbour(res)}{old_word}: {res.last_old}{sure}{left_out}"
    )


def _neighbour(res: SearchResult) -> str:
    """ "the version before it, 1.4.0, fails another way (...); " when it does."""
    row = res.row(res.neighbour) if res.neighbour else None
    if row is None:
        return ""
    side = "before" if res.direction == Direction.REGRESSION else "after"
    return f"the version {side} it, {row.version}, fails another way ({row.outcome.describe()}); "


def breakpoints_line(res: SearchResult) -> str | None:
    """Every breakpoint in order, when the outcome changes more than once:
    ``breakpoints: 2.4.0: fail (...) (the first failure); 3.0.0: fail (...)``."""
    if len(res.breakpoints) < 2:
        return None
    parts = []
    first_failure = True
    for b in res.breakpoints:
        text = b.describe()
        if (
            first_failure
            and b.outcome.kind is not OutcomeKind.PASS
            and res.direction == Direction.REGRESSION
        ):
            text += " (the first failure)"
            first_failure = False
        parts.append(text)
    return "breakpoints: " + "; ".join(parts)


def other_failures_hint(res: SearchResult) -> str | None:
    """When failures unlike the reference hid the boundary, say how to chase either bug."""
    other = [
        r
        for r in res.rows
        if r.verdict is RowVerdict.SKIP and r.outcome.kind is not OutcomeKind.UNTESTABLE
    ]
    if not other or res.status is Status.FOUND:
        return None
    first = min(other, key=lambda r: _version_key(r.version))
    return (
        f"{len(other)} probe(s) failed differently from the reference "
        f"({first.outcome.describe()} at {first.version}); to bisect that failure pass "
        f"--bad {first.version} (or --good/--bad around it), or --any-failure to count "
        "every failure as bad; finished probes are reused"
    )


def _version_key(text: str) -> tuple[int, Any]:
    try:
        return (0, Version(text))
    except InvalidVersion:
        return (1, text)


def env_diff(
    good: tuple[InstalledDist, ...], bad: tuple[InstalledDist, ...]
) -> list[tuple[str, str | None, str | None]]:
    """(name, version in good, version in bad) for every distribution that differs."""
    a = {canonicalize_name(d.name): d.version for d in good}
    b = {canonicalize_name(d.name): d.version for d in bad}
    return [(n, a.get(n), b.get(n)) for n in sorted(a.keys() | b.keys()) if a.get(n) != b.get(n)]


def report_markdown(res: SearchResult, *, when: datetime) -> str:
    """report.md of a finished search, written ``when`` (the caller reads the clock)."""
    lines = [f"# envbisect: {_md(res.package)}", "", f"**{_md(verdict_line(res))}**", ""]
    lines += _facts(res, when)
    lines += _probes_table(res)
    lines += _search_section(res)
    lines += _breakpoints_section(res)
    if res.skipped:
        lines += ["", "## Untestable without building", ""]
        lines += [f"- {_md(v)}: {_md(why)}" for v, why in res.skipped]
    lines += _boundary_section(res)
    for section in [*res.sections, *([res.commits.markdown()] if res.commits else [])]:
        lines += ["", section.rstrip()]
    if res.lock_path:
        lines += ["", "## Known-good lockfile", ""]
        lines.append(f"- `{res.lock_path}` (`uv pip install --require-hashes -r {res.lock_path}`)")
        if res.pylock_path:
            lines.append(f"- `{res.pylock_path}` (PEP 751)")
    return "\n".join(lines) + "\n"


def _facts(res: SearchResult, when: datetime) -> list[str]:
    """The run's list: what was run, on what, what was built and reused, and when."""
    passed = ", ".join(md_code(f"{k}={v}") for k, v in sorted(res.env.items()))
    return [
        f"- command: {md_code(res.command)}",
        f"- repro: {md_code(res.repro)}",
        *([f"- set for every probe (--env): {passed}"] if passed else []),
        *(
            [
                f"- overrides (every requirement on these takes these versions): "
                f"{', '.join(md_code(o) for o in res.overrides)}"
            ]
            if res.overrides
            else []
        ),
        f"- target: {_md(res.target)}",
        f"- candidates in range: {res.candidates}; environments built this run: "
        f"{sum(1 for r in res.rows if not r.reused and r.build_seconds > 0)}; "
        f"outcomes reused from the store: {sum(1 for r in res.rows if r.reused)}",
        f"- written {when:%Y-%m-%d %H:%M:%S %Z} by envbisect {__version__}",
        *(f"- {s.describe()} for it" for s in res.stand_ins),
    ]


def _probes_table(res: SearchResult) -> list[str]:
    """Every probe in the order it was made, one table row each."""
    lines = [
        "",
        "## Probes, in order",
        "",
        "| # | version | outcome | counted as | build s | probe s | |",
        "|---|---|---|---|---|---|---|",
    ]
    for i, r in enumerate(res.rows, 1):
        extra = "; ".join(_row_notes(res, r))
        lines.append(
            f"| {i} | {_md(r.version)} | {_md(r.outcome.describe())} | {_md(r.verdict.value)} | "
            f"{r.build_seconds:.1f} | {r.probe_seconds:.1f} | {_md(extra)} |"
        )
    return lines


def _row_notes(res: SearchResult, r: ProbeRow) -> list[str]:
    """A probe row's last column: reused, runs that failed, its round and host, what moved."""
    notes = ["reused"] if r.reused else []
    if r.runs > 1:
        notes.append(f"{r.fails} of {r.runs} runs failed")
    if r.round and res.search is not None and res.search.jobs > 1:
        notes.append(f"round {r.round}")
    if r.host and any(o.host != r.host for o in res.rows if o.host):
        notes.append(f"on {r.host}")
    if r.moved:
        notes.append(
            "moved with it: " + ", ".join(_move(m.package, m.before, m.after) for m in r.moved)
        )
    if r.note:
        notes.append(r.note)
    return notes


def _breakpoints_section(res: SearchResult) -> list[str]:
    """Each boundary, where the outcome changes more than once in the range."""
    if len(res.breakpoints) <= 1:
        return []
    lines = [
        "",
        "## Breakpoints",
        "",
        "The outcome changes more than once in the range; each boundary, oldest first:",
        "",
    ]
    for b in res.breakpoints:
        lines.append(f"- {_md(b.describe())} (the version before: {_md(b.last_old)})")
    return lines


def _boundary_section(res: SearchResult) -> list[str]:
    """The two environments either side of the answer: the failure, and what differs."""
    good = res.row(res.last_old if res.direction == Direction.REGRESSION else res.first_new)
    bad = res.row(res.first_new if res.direction == Direction.REGRESSION else res.last_old)
    if res.status is Status.NO_ANSWER or not good or not bad:
        return []
    lines = ["", "## The boundary", ""]
    lines += [f"### {_md(bad.version)}: {_md(bad.outcome.describe())}", ""]
    lines += [*md_block(bad.outcome.detail or "(no output)"), ""]
    lines += [f"### {_md(good.version)}: {_md(good.outcome.describe())}", ""]
    lines += ["## What differs between the two environments", ""]
    diff = env_diff(good.installed, bad.installed)
    if diff:
        lines += ["| package | working | failing |", "|---|---|---|"]
        lines += [f"| {_md(n)} | {_md(a or '-')} | {_md(b or '-')} |" for n, a, b in diff]
    else:
        lines.append("(nothing but the package under test, or the lists were not recorded)")
    return lines


def _search_section(res: SearchResult) -> list[str]:
    """How the search went: rounds with --jobs, and for a flaky repro each point's fail rate
    and the probability of the answer."""
    s = res.search
    if s is None or s.plain:
        return []
    lines = ["", "## Search", ""]
    lines.append(f"- {s.rounds} round(s) of up to {s.jobs} probe(s); {s.repeat} run(s) per probe")
    if s.mode is SearchMode.PROBABILISTIC:
        lines.append(f"- probabilistic search: {s.switch_reason}")
        if res.probability is not None:
            lines.append(
                f"- P(first {'bad' if res.direction != Direction.FIX else 'fixed'} is "
                f"{res.first_new}) = {res.probability:.3f} (confidence asked: "
                f"{s.confidence})"
            )
    rates = s.fail_rates or ()
    if rates:
        lines += ["", "| version | runs | failed | fail rate |", "|---|---|---|---|"]
        lines += [
            f"| {r.version} | {r.runs} | {r.fails} | {r.fails / r.runs:.2f} |"
            for r in rates
            if r.runs
        ]
    return lines


def _move(name: str, before: str | None, after: str | None) -> str:
    if before is None:
        return f"{name} +{after}"
    if after is None:
        return f"{name} {before} dropped"
    return f"{name} {before}→{after}"


def _md(text: str) -> str:
    return md_text(text)
