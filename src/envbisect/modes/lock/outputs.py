"""What ``envbisect lock`` leaves in ``results/<run-id>/``: report.md (the chain of evidence),
and for a lock that was found requirements.txt (hash-pinned, naming its indexes), pylock.toml
and constraints.txt (one line per held-back package: first bad version, outcome, signature).

It is handed a ``LockOutcome`` (core/results/lock.py): where the search ended, frozen; it
knows nothing of the search itself (modes/lock/solve.py)."""

from __future__ import annotations

from dataclasses import replace

from envbisect import __version__
from envbisect.core.results.lock import LockOutcome, LockResult
from envbisect.core.results.parts import Status
from envbisect.modes.outputs import inside, write_lockfiles, write_report
from envbisect.modes.session import Session
from envbisect.strategy.constraints import Constraints, held_back
from envbisect.textsafe import md_code, md_text


def write_lock_outputs(done: LockOutcome, session: Session) -> LockResult:
    """report.md always; with a passing environment its requirements.txt (hash-pinned),
    pylock.toml and constraints.txt (each held-back package with why). Returns the result,
    with its files."""
    result = replace(
        done.result,
        constraints=done.held,
        dropped=done.dropped,
        rounds=done.rounds,
        descent=done.descent,
        sections=(_section(done),),
    )
    run_dir = inside(session.opts.results, session.opts.results / result.run_id)
    run_dir.mkdir(parents=True, exist_ok=True)
    row, held = done.passing, done.held
    if result.status is Status.FOUND and row is not None and row.installed:
        header = [
            f"The newest environment that passes, written by envbisect {__version__} for "
            f"{session.target.short}",
            f"{row.version}: {row.outcome.describe()} with `{result.repro}`",
            *[f"held back: {c.line()}" for c in held],
        ]
        lock, pl = write_lockfiles(run_dir, row.installed, session, header=header)
        cons = run_dir / "constraints.txt"
        cons.write_text(
            Constraints(held=list(held)).text(
                [
                    f"What envbisect {__version__} held back, and why (pip/uv -c constraints.txt)",
                ]
            ),
            encoding="utf-8",
        )
        behind = held_back(done.unconstrained, done.locked) if done.unconstrained else ()
        named = ", ".join(f"{c.package}{c.specifier}" for c in held)
        result = replace(
            result,
            lock_path=str(lock),
            pylock_path=str(pl),
            constraints_file=str(cons),
            held_back=behind,
            verdict=f"the newest environment that passes: {len(done.locked)} package(s), "
            + (f"{len(held)} held back ({named})" if held else "nothing held back"),
        )
    return write_report(result, run_dir)


def _section(done: LockOutcome) -> str:
    """report.md's ``## Constraints``: each held with its proof, each dropped with why."""
    lines = ["## Constraints", ""]
    if not done.held:
        lines.append("- none: the newest environment the requirements allow passes")
    for c in done.held:
        lines.append(f"- **{md_text(c.package + c.specifier)}**: {md_text(c.describe())}")
        lines.append(f"  - found by {_FOUND_BY.get(c.found_by, c.found_by)}")
        lines.append(
            f"  - proof: {md_code(c.passed)} "
            + ("passed" if c.last_good_outcome is None else "did not fail that way")
            + f", {md_code(c.failed)} failed"
        )
        if c.still_needed is not None:
            lines.append(
                f"  - still needed: {md_code(c.still_needed_label)} "
                f"{md_text(c.still_needed.describe())}"
            )
    for d in done.dropped:
        lines.append(
            f"- dropped {md_text(d.constraint.package + d.constraint.specifier)}: {md_text(d.why)}"
        )
    if done.held:
        lines.append("")
        lines.append("Held back packages are in `constraints.txt` (`uv pip install -c` it).")
    if done.descent:
        lines += ["", "## The descent", ""]
        lines += [f"{i}. {md_text(step)}" for i, step in enumerate(done.descent, 1)]
    return "\n".join(lines)


_FOUND_BY = {
    "date": "date (the release moment where the failure started)",
    "descent": "descent (held back from the newest environment's failure)",
    "from": "--from (delta debugging against your lock)",
}
