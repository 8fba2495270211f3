"""``check --online``: what ``envbisect why`` read from the wheels (core/results/why.py), as
check's findings: a release that removed or changed what the report's traceback names, or a
broken release, each with its fix (the first of why's, forward ones first) and the command
that shows it. What why finds that is not about a release (a file of the user's hiding a
package, a package not installed) is not a finding here: check's findings are version
findings. Pure: why's answer in, findings out.
"""

from __future__ import annotations

from envbisect.core.checks.finding import Finding, Kind
from envbisect.core.checks.observed import Said
from envbisect.core.results.why import Explained, WhyResult, describe


def release_findings(result: WhyResult, report: str) -> list[Finding]:
    """One finding per explained evidence item that has a fix."""
    return [f for e in result.explained if (f := _finding(e, report)) is not None]


def _finding(e: Explained, report: str) -> Finding | None:
    if not e.fixes or e.kind not in ("version", "broken-release"):
        return None
    first = e.fixes[0]
    told = "; ".join(describe(h) for h in e.histories)
    what = "a broken release" if e.kind == "broken-release" else "a release changed what it names"
    others = "; or ".join(f.command for f in e.fixes[1:])
    return Finding(
        kind=Kind.RELEASE,
        severity="error",
        package=first.package,
        message=f"{what}: {told}" + (f" (or: {others})" if others else ""),
        evidence=(Said(value=e.item.text, line=e.item.at, text=e.item.text),),
        fix=first.command,
        verify=f"envbisect why {report} --prove" if report != "-" else None,
        source="the wheels of each release on the index (envbisect why)",
    )
