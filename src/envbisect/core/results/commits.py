"""A commit search's answer: typed, with its text lines, its report.md section and its JSON.

Pure: the mode (modes/commits.py) fills a ``CommitAnswer`` from the bisection; the CLI prints
``lines()``, report.md gets ``markdown()``, ``--json`` gets ``first_bad()`` as
``first_bad_commit`` and ``to_dict()`` as ``commits``. A commit's subject is its author's
text: it reaches the terminal through ``for_terminal`` (the CLI) and Markdown through
``md_text``, never as markup.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from envbisect.core.commits import BuildInfo, Commit
from envbisect.core.results.parts import Direction, RowVerdict, Status
from envbisect.model import Outcome
from envbisect.textsafe import md_code, md_text


@dataclass(frozen=True, slots=True, kw_only=True)
class ProbedCommit:
    """One commit probed (or answered from the store), in the order the search asked."""

    commit: Commit
    outcome: Outcome
    verdict: RowVerdict
    version: str | None  # the package's version as its build said (None: not built)
    env_id: str
    reused: bool
    build_seconds: float = 0.0
    probe_seconds: float = 0.0

    def to_dict(self, web: str | None) -> dict[str, Any]:
        return {
            **self.commit.to_dict(web),
            "version": self.version,
            "outcome": self.outcome.to_dict(),
            "verdict": self.verdict.value,
            "env_id": self.env_id,
            "reused": self.reused,
            "build_seconds": round(self.build_seconds, 3),
            "probe_seconds": round(self.probe_seconds, 3),
        }


@dataclass(frozen=True, slots=True, kw_only=True)
class CommitBreakpoint:
    first_new: Commit
    last_old: Commit
    outcome: Outcome
    possible: tuple[Commit, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class CommitAnswer:
    """Where between two refs the package's behaviour changed, commit by commit.

    ``first_new`` is the first bad commit (a fix search: the first fixed one), ``last_old``
    the last good one; ``possible``: untestable commits hide the boundary, which is one of
    these. ``commits`` counts the points of the range (the good end and every first-parent
    commit up to the bad end); ``probes`` the builds asked for (stored ones included)."""

    package: str
    repo: str
    web: str | None
    good_ref: str
    bad_ref: str
    status: Status  # found | ambiguous | no-answer
    direction: Direction | None
    reason: str = ""
    first_new: Commit | None = None
    last_old: Commit | None = None
    possible: tuple[Commit, ...] = ()
    commits: int = 0
    tested: tuple[ProbedCommit, ...] = ()
    untestable: tuple[tuple[Commit, str], ...] = ()
    breakpoints: tuple[CommitBreakpoint, ...] = ()
    build: BuildInfo | None = None
    rest: str = ""  # where the rest of each environment came from
    start: str = ""  # why the range starts elsewhere than the good ref (a merge base), or ""

    @property
    def fix(self) -> bool:
        return self.direction == Direction.FIX

    @property
    def probes(self) -> int:
        return len({t.commit.sha for t in self.tested})

    def outcome_of(self, commit: Commit | None) -> Outcome | None:
        for t in reversed(self.tested):
            if commit is not None and t.commit.sha == commit.sha:
                return t.outcome
        return None

    def first_bad(self) -> dict[str, Any] | None:
        """``first_bad_commit`` (a fix search: the first fixed commit), or None."""
        if self.status is not Status.FOUND or self.first_new is None:
            return None
        out = self.first_new.to_dict(self.web)
        shown = self.outcome_of(self.last_old if self.fix else self.first_new)
        out["outcome"] = shown.to_dict() if shown else None
        return out

    def to_dict(self) -> dict[str, Any]:
        new_key, old_key = (
            ("first_fixed", "last_broken") if self.fix else ("first_bad", "last_good")
        )
        return {
            "package": self.package,
            "repo": self.repo,
            "good_ref": self.good_ref,
            "bad_ref": self.bad_ref,
            "status": self.status.value,
            "direction": self.direction.value if self.direction else None,
            **({"reason": self.reason} if self.reason else {}),
            new_key: self.first_new.to_dict(self.web) if self.first_new else None,
            old_key: self.last_old.to_dict(self.web) if self.last_old else None,
            **(
                {f"{new_key}_candidates": [c.to_dict(self.web) for c in self.possible]}
                if self.possible
                else {}
            ),
            "commits_in_range": self.commits,
            "probes": self.probes,
            "tested": [t.to_dict(self.web) for t in self.tested],
            "untestable": [{**c.to_dict(self.web), "reason": why} for c, why in self.untestable],
            "breakpoints": [
                {new_key: b.first_new.sha, old_key: b.last_old.sha, "outcome": b.outcome.to_dict()}
                for b in self.breakpoints
            ],
            "build": self.build.to_dict() if self.build else None,
            "rest": self.rest,
            **({"start": self.start} if self.start else {}),
        }

    def verdict(self) -> str:
        """One line: the first bad commit and the last good one, or why there is none."""
        if self.status is Status.NO_ANSWER:
            return f"no first bad commit of {self.package}: {self.reason}"
        new_word = "first fixed" if self.fix else "first bad"
        old_word = "last broken" if self.fix else "last good"
        assert self.last_old is not None and self.first_new is not None
        if self.status is Status.AMBIGUOUS:
            shas = ", ".join(c.short for c in self.possible)
            return (
                f"the {new_word} commit of {self.package} is one of {shas} "
                f"({self.reason}); {old_word}: {self.last_old.short}"
            )
        shown = self.outcome_of(self.last_old if self.fix else self.first_new)
        how = f": {shown.describe()}" if shown is not None else ""
        return (
            f"{new_word} commit of {self.package}: {self.first_new.short}{how}; "
            f"{old_word}: {self.last_old.short}"
        )

    def lines(self) -> list[str]:
        """The answer as text lines (untrusted subjects: the caller makes them safe)."""
        out = [self.verdict()]
        if self.status is Status.NO_ANSWER:
            return out
        assert self.last_old is not None and self.first_new is not None
        new_word = "first fixed" if self.fix else "first bad"
        old_word = "last broken" if self.fix else "last good"
        out.append(f"  {new_word}: {self.first_new.describe(self.web)}")
        out.append(f"  {old_word}: {self.last_old.describe(self.web)}")
        skipped = (
            f"; untestable: {', '.join(c.short for c, _ in self.untestable)}"
            if (self.untestable)
            else ""
        )
        out.append(
            f"  commits tested: {self.probes} of {self.commits} between {self.good_ref} "
            f"and {self.bad_ref}{skipped}"
        )
        return out

    def markdown(self) -> str:
        """The report.md section."""
        title = "First fixed commit" if self.fix else "First bad commit"
        lines = [f"## {title}", "", f"**{md_text(self.verdict())}**", ""]
        lines.append(
            f"- repository: {md_code(self.repo)}, first-parent commits after "
            f"{md_code(self.good_ref)} up to {md_code(self.bad_ref)}: "
            f"{self.commits} in range, {self.probes} built and probed"
        )
        if self.start:
            lines.append(f"- {md_text(self.start)}")
        if self.build is not None:
            lines.append(f"- build: {md_text(self.build.describe(self.package))}")
        if self.rest:
            lines.append(f"- the rest of each environment: {md_text(self.rest)}")
        if self.status is not Status.NO_ANSWER and self.first_new and self.last_old:
            for word, c in (
                ("first fixed" if self.fix else "first bad", self.first_new),
                ("last broken" if self.fix else "last good", self.last_old),
            ):
                lines.append(f"- {word}: {_md_commit(c, self.web)}")
        lines += [
            "",
            "| # | commit | date | subject | version | outcome | counted as |",
            "|---|---|---|---|---|---|---|",
        ]
        for i, t in enumerate(self.tested, 1):
            c = t.commit
            reused = " (reused)" if t.reused else ""
            lines.append(
                f"| {i} | {_md_sha(c, self.web)} | {c.author_date[:10]} | {md_text(c.subject)} "
                f"| {md_text(t.version or '-')} | {md_text(t.outcome.describe())} | "
                f"{md_text(t.verdict.value)}{reused} |"
            )
        if self.untestable:
            lines += ["", "Untestable (skipped, never counted as bad):", ""]
            lines += [
                f"- {_md_sha(c, self.web)} {md_text(c.subject)}: {md_text(why)}"
                for c, why in self.untestable
            ]
        if len(self.breakpoints) > 1:
            lines += ["", "Breakpoints, oldest first:", ""]
            lines += [
                f"- {_md_sha(b.first_new, self.web)}: {md_text(b.outcome.describe())}"
                for b in self.breakpoints
            ]
        return "\n".join(lines) + "\n"


def _md_sha(c: Commit, web: str | None) -> str:
    d = c.to_dict(web)
    return f"[`{c.short}`]({d['link']})" if d["link"] else f"`{c.short}`"


def _md_commit(c: Commit, web: str | None) -> str:
    merge = " (a merge)" if c.merge else ""
    return f"{_md_sha(c, web)} {md_text(c.subject)}{merge}, {md_text(c.author_date)}"
