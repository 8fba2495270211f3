"""``envbisect why``'s answer: each evidence item of the text, what the releases say of it,
and the fixes (modes/why.py decides; this is the typed answer, its text and its --json).

``kind`` of an explained item: ``version`` (a release changed what the text names: fixes
given), ``broken-release`` (the release the report runs lacks its own module), ``local`` (a
file or folder outside site-packages: the user's, no release involved), ``not-installed``,
``unexplained`` (nothing on the index says; no fix). The exit code is check's: 1 where there
is a finding (a fix, a broken release, a local file, a missing package), 0 where none.
The ``--json`` object: ``origin``, ``python``, ``findings`` (each with ``evidence``, ``kind``,
``histories``, ``fixes``, ``notes``), ``requests``, ``reads``, ``seconds``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from envbisect.core.evidence.boundaries import Fix, History
from envbisect.core.evidence.failure import Evidence

FINDINGS = ("version", "broken-release", "local", "not-installed")


@dataclass(frozen=True, slots=True, kw_only=True)
class Explained:
    item: Evidence
    kind: str
    package: str | None = None
    histories: tuple[History, ...] = ()
    fixes: tuple[Fix, ...] = ()
    notes: tuple[str, ...] = ()

    @property
    def finding(self) -> bool:
        return self.kind in FINDINGS

    def to_dict(self) -> dict[str, Any]:
        return {
            "evidence": self.item.to_dict(),
            "kind": self.kind,
            "package": self.package,
            "histories": [h.to_dict() for h in self.histories],
            "fixes": [f.to_dict() for f in self.fixes],
            "notes": list(self.notes),
        }

    def lines(self) -> list[str]:
        out = [f"line {self.item.at}: {self.item.text}"]
        for h in self.histories:
            out.append(f"  {describe(h)}")
        for note in self.notes:
            out.append(f"  note: {note}")
        for n, f in enumerate(self.fixes):
            lead = "fix:" if n == 0 else "or: "
            out.append(f"  {lead} {f.command}  ({f.why})")
        if self.kind == "broken-release" and self.histories:
            first = self.histories[0]
            which = (
                f"{first.package} {first.installed}"
                if first.installed
                else f"a release of {first.package}"
            )
            out.insert(1, f"  broken release: {which} fails on its own ({first.question})")
        return out


def describe(h: History) -> str:
    """One history in words: where its answer changes, and what was read."""
    if not h.changes:
        said = {1: "yes", 0: "no", None: "unknown"}
        values = {a for _, a in h.answers if a is not None}
        state = said[values.pop()] if len(values) == 1 else "unknown"
        spans = f"{state} in every release read"
    else:
        parts = []
        for c in h.changes:
            became = "yes" if c.new else "no"
            parts.append(f"{became} from {c.first_new} on (after {c.last_old})")
        spans = "; ".join(parts)
    where = f", the text's {h.installed}" if h.installed else ""
    if not h.reads:  # from the history envbisect ships, not read now
        known = f"envbisect's history of {len(h.versions)} releases"
        return f"{h.question}? {spans} [{h.package}: {known}{where}]"
    return (
        f"{h.question}? {spans} [{h.package}: {h.reads} of {len(h.versions)} releases read{where}]"
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class WhyResult:
    origin: str
    python: str
    explained: tuple[Explained, ...] = ()
    requests: int = 0
    reads: int = 0
    seconds: float = 0.0
    unreadable: tuple[tuple[str, str], ...] = ()  # releases stepped around: file, why
    stated: tuple[tuple[str, str], ...] = ()  # the versions the text states, of those asked

    @property
    def fixes(self) -> list[Fix]:
        return [f for e in self.explained for f in e.fixes]

    @property
    def exit_code(self) -> int:
        return 1 if any(e.finding for e in self.explained) else 0

    def summary(self) -> str:
        found = [e for e in self.explained if e.finding]
        if not self.explained:
            return (
                f"{self.origin}: no finding: the text names no import, attribute or call "
                "that a release could have changed"
            )
        if not found:
            return f"{self.origin}: no finding: no release explains what the text names"
        return f"{self.origin}: {len(found)} finding(s) (Python {self.python})"

    def lines(self) -> list[str]:
        out = [self.summary()]
        for e in self.explained:
            out += e.lines()
        for filename, why in self.unreadable:
            out.append(f"note: {filename} could not be read and was stepped around: {why}")
        return out

    def to_dict(self) -> dict[str, Any]:
        return {
            "origin": self.origin,
            "python": self.python,
            "findings": [e.to_dict() for e in self.explained],
            "unreadable": [{"file": f, "why": w} for f, w in self.unreadable],
            "stated": dict(self.stated),
            "requests": self.requests,
            "reads": self.reads,
            "seconds": round(self.seconds, 3),
        }
