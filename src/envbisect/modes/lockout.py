"""What ``envbisect lock`` leaves in ``results/<run-id>/``: report.md (the chain of evidence),
and for a lock that was found requirements.txt (hash-pinned, naming its indexes), pylock.toml
and constraints.txt (one line per held-back package: first bad version, outcome, signature)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from envbisect import __version__
from envbisect.core.plan import Plan
from envbisect.core.report import ProbeRow, RunResult, report_markdown
from envbisect.modes.outputs import inside, write_lockfiles
from envbisect.strategy.lock import held_back
from envbisect.textsafe import md_code, md_text

if TYPE_CHECKING:
    from envbisect.modes.lock import _Lock


def write_lock_outputs(lk: _Lock, row: ProbeRow | None, newest: Plan | None = None) -> None:
    """report.md always; with a passing environment its requirements.txt (hash-pinned),
    pylock.toml and constraints.txt (each held-back package with why)."""
    session, result = lk.session, lk.result
    run_dir = inside(session.opts.results, session.opts.results / result.run_id)
    run_dir.mkdir(parents=True, exist_ok=True)
    held = lk.constraints.held
    extra: dict[str, Any] = {
        "lock": None,
        "constraints_file": None,
        "constraints": [c.to_dict() for c in held],
        "dropped": [{**c.to_dict(), "why": why} for c, why in lk.constraints.dropped],
        "rounds": lk.rounds,
    }
    lines = ["## Constraints", ""]
    if not held:
        lines.append("- none: the newest environment the requirements allow passes")
    for c in held:
        lines.append(f"- **{md_text(c.package + c.specifier)}**: {md_text(c.describe())}")
        lines.append(f"  - proof: {md_code(c.passed)} passed, {md_code(c.failed)} failed")
        if c.still_needed is not None:
            lines.append(f"  - still needed: {md_code(c.still_needed_label)} "
                         f"{md_text(c.still_needed.describe())}")  # fmt: skip
    for c, why in lk.constraints.dropped:
        lines.append(f"- dropped {md_text(c.package + c.specifier)}: {md_text(why)}")
    if held:
        lines.append("")
        lines.append("Held back packages are in `constraints.txt` (`uv pip install -c` it).")
    result.sections = ["\n".join(lines)]
    if row is not None and newest is not None and row.installed:
        header = [
            f"The newest environment that passes, written by envbisect {__version__} for "
            f"{session.target.short}",
            f"{row.version}: {row.outcome.describe()} with `{result.repro}`",
            *[f"held back: {c.line()}" for c in held],
        ]
        lock, pl = write_lockfiles(run_dir, row.installed, session, header=header)
        result.lock_path, result.pylock_path = str(lock), str(pl)
        cons = run_dir / "constraints.txt"
        cons.write_text(lk.constraints.text([
            f"What envbisect {__version__} held back, and why (pip/uv -c constraints.txt)",
        ]), encoding="utf-8")  # fmt: skip
        unconstrained = lk.newest({})
        behind = (
            held_back(_str_pins(unconstrained), _str_pins(newest))
            if isinstance(unconstrained, Plan)
            else []
        )
        extra.update(lock=str(lock), pylock=str(pl), constraints_file=str(cons),
                     held_back=[{"package": n, "locked": a, "newest": b}
                                for n, a, b in behind])  # fmt: skip
        n = len(newest.pins)
        result.verdict = (
            f"the newest environment that passes: {n} package(s), "
            + (f"{len(held)} held back ({', '.join(f'{c.package}{c.specifier}' for c in held)})"
               if held else "nothing held back")
        )  # fmt: skip
    result.extra = extra
    report = run_dir / "report.md"
    result.report_path = str(report)
    report.write_text(report_markdown(result), encoding="utf-8")


def _str_pins(planned: Plan) -> dict[str, str]:
    return {str(n): str(v) for n, v in planned.pins.items()}


def dry_run_outputs(lk: _Lock, newest: Plan) -> RunResult:
    """``--dry-run``: the plans of the newest environment and of the starting point."""
    from envbisect.modes.dryrun import plan_views
    from envbisect.modes.session import Want

    session = lk.session
    wants = [Want(label="newest", spec=session.env_spec(newest.requirements()))]
    label, pins, _ = lk.start(newest)
    reqs = [f"{n}=={v}" for n, v in sorted(pins.items())]
    wants.append(Want(label=f"starting point: {label}", spec=session.env_spec(reqs)))
    lk.result.status = "dry-run"
    lk.result.extra = {"dry_run": True, "plans": plan_views(session, wants)}
    return lk.result
