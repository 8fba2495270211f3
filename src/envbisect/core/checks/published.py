"""The combinations the published tables measured failing (results/*/results.json).

Who does what: the package ships the tables' measured cells (bench/make_check_data.py writes
them into checkdb.json); ``envbisect check`` adds the tables of a ``results/`` folder at hand,
newer than what shipped (the command reads them). ``published`` looks up the cell of the
report's versions in each table whose axes the report names all of: a cell measured failing
is a finding, with the failure's signature and its date, and the fix is the nearest passing
cell of the same row (one axis moved, the others as reported, its lockfile named), proven by
the table's own probes; a cell measured passing is a note (the table shows it works).
Only exact versions count: a table's cell is one release, not its neighbours. A table whose
rows were searched (not swept) publishes *inferred* cells too, between two measured cells of
their row that agree: such a cell counts, said as inferred ("between measured cells ..."), and
the fix is still a measured passing cell. A report that runs LLaMA-Factory (whose trainers
subclass trl's and the Trainer and carry their own fixes) gets a training-step failure of a
table without a LLaMA-Factory axis as a note, not a finding; a failure at an import counts.

Each table's ``where`` says where a user opens its files: the folder a table at hand was
read from, or the published URL of a table the package ships (the caller's: envbisect's
Source URL, never a path that exists only in envbisect's own checkout).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from packaging.version import InvalidVersion, Version

from envbisect.core.checks.finding import Finding, Kind, command, evidence, python_flag
from envbisect.core.checks.observed import Observed

_FAILING = frozenset({"fail", "crash", "timeout"})


def published(
    obs: Observed, tables: Sequence[Mapping[str, Any]]
) -> tuple[list[Finding], list[str]]:
    """The findings (a combination measured failing), and the notes: a combination measured
    passing says so too (no finding: the table proves it works), with its date and lock."""
    out: list[Finding] = []
    notes: list[str] = []
    for table in tables:
        axes = [str(a) for a in table.get("axes", ())]
        if not axes or not all(a in obs.packages for a in axes):
            continue
        mine = {a: obs.packages[a].value.split("+", 1)[0] for a in axes}
        cells = list(table.get("cells", ()))
        cell = next((c for c in cells if _same(c.get("versions", {}), mine)), None)
        if cell is None:
            continue
        name = str(table.get("table"))
        where = str(table.get("where") or f"results/{name}")
        probes = [str(p) for p in table.get("probes", ())]
        shown = " with ".join(f"{a} {mine[a]}" for a in axes)
        when = str(cell.get("measured_at") or table.get("measured") or "")[:10]
        said = f"the published table {name} (measured {when}, probes {', '.join(probes)}"
        said += f", Python {cell['python']})" if cell.get("python") else ")"
        if cell.get("kind") == "pass":
            notes.append(
                f"{said} shows {shown} passing{_inferred(cell)}{_outside(cell)}{_lock(where, cell)}"
            )
            continue
        if cell.get("kind") not in _FAILING:
            continue
        if _wrapped(obs, axes, str(cell.get("signature") or "")):
            notes.append(
                f"{said} shows {shown} failing{_inferred(cell)}: {cell.get('signature')}; "
                "measured with their own trainers, and this report runs LLaMA-Factory's, "
                "which subclass them and carry their own fixes: not a finding here"
            )
            continue
        measured = [c for c in cells if not c.get("inferred")]
        move = _nearest_passing(measured, mine, axes)
        if move is None:
            continue
        axis, version = move
        pins = [f"{a}=={version if a == axis else mine[a]}" for a in axes]
        verify = ["envbisect", "probe"]
        for pin in pins:
            verify += ["--with", pin]
        verify += python_flag(obs.python_minor())
        for probe in probes:
            verify += ["--probe", probe]
        signature = str(cell.get("signature") or cell.get("kind"))
        moved = {**mine, axis: version}
        there: Mapping[str, Any] = next(
            (c for c in measured if c.get("kind") == "pass" and _same(c["versions"], moved)), {}
        )
        out.append(
            Finding(
                kind=Kind.PUBLISHED,
                severity="error",
                package=axis,
                message=f"{said} shows {shown} failing{_inferred(cell)}{_outside(cell)}: "
                f"{signature}; {axis} "
                f"{version} passes there with the rest as reported{_lock(where, there)}",
                evidence=evidence(*(obs.packages[a] for a in axes)),
                fix=command("pip", "install", f"{axis}=={version}"),
                verify=command(*verify),
                source=f"{where}/results.json",
            )
        )
    return out, notes


# A report that runs LLaMA-Factory trains through its trainers (subclasses of trl's and of
# transformers' Trainer, patched for known breaks: 0.9.2 and later override the
# get_batch_samples that trl 0.9's DPOTrainer loses to transformers 4.46). A table measured
# without it says what its packages do used directly: a failure in a training step does not
# carry over to such a report; one at an import does (the same import runs either way).
_RUNNERS = ("llamafactory", "llmtuner")
_AT_IMPORT = ("ImportError", "ModuleNotFoundError", "RuntimeError: Failed to import")


def _wrapped(obs: Observed, axes: Sequence[str], signature: str) -> bool:
    """Whether a failing cell's verdict stops short of this report: the report runs
    LLaMA-Factory, the table has no LLaMA-Factory axis, and the failure is not an import."""
    return (
        any(r in obs.packages for r in _RUNNERS)
        and not any(r in axes for r in _RUNNERS)
        and not signature.startswith(_AT_IMPORT)
    )


def _inferred(cell: Mapping[str, Any]) -> str:
    return (
        " (inferred: between measured cells of its row that agree, not built itself)"
        if cell.get("inferred")
        else ""
    )


def _outside(cell: Mapping[str, Any]) -> str:
    return " (outside the pins: built past a release's cap)" if cell.get("outside") else ""


def _lock(where: str, cell: Mapping[str, Any]) -> str:
    """Where the cell's lockfile is published (``where``: the table's folder or URL), when it
    has one."""
    lock = cell.get("lock")
    return f" (its lock: {where}/{lock})" if isinstance(lock, str) and lock else ""


def table_of(results: Mapping[str, Any], name: str, where: str = "") -> dict[str, Any]:
    """A published table (a results.json's data) as the checks read it: its axes, probes, when
    it was measured, and its measured and inferred cells (versions, outcome, a failure's
    signature; an inferred one marked so, with no lockfile); cells never built and not
    inferred (outside the pins, unknown) are left out. ``where``: the folder it was read from."""
    matrix = results.get("matrix") or {}
    cells = [
        {
            "python": c.get("python"),
            "versions": c["versions"],
            "kind": c["kind"],
            **({"signature": c.get("signature", "")} if c["kind"] != "pass" else {}),
            **({"measured_at": c["measured_at"]} if c.get("measured_at") else {}),
            **({"lock": c["lock"]} if c["kind"] == "pass" and c.get("lock") else {}),
            **({"outside": True} if c.get("outside") else {}),
            **({"inferred": True} if c.get("state") == "inferred" else {}),
        }
        for c in results.get("cells", [])
        if c.get("state") in ("measured", "inferred") and "versions" in c and "kind" in c
    ]
    return {
        "table": matrix.get("name", name),
        "axes": matrix.get("axes", []),
        "probes": matrix.get("probes", []),
        "measured": matrix.get("measured"),
        "cells": cells,
        **({"where": where} if where else {}),
    }


def _same(versions: Mapping[str, Any], mine: Mapping[str, str]) -> bool:
    try:
        return all(Version(str(versions.get(a))) == Version(v) for a, v in mine.items())
    except InvalidVersion:
        return False


def _nearest_passing(
    cells: Sequence[Mapping[str, Any]], mine: Mapping[str, str], axes: Sequence[str]
) -> tuple[str, str] | None:
    """(axis, version): a passing cell with one axis moved, the others as reported; the last
    axis moved first (the package paired with the first), the oldest version above the
    reported one first (the release that fixed it), else the newest below it."""
    for axis in reversed(axes):
        rest = {a: v for a, v in mine.items() if a != axis}
        passing = sorted(
            (
                Version(str(c["versions"][axis]))
                for c in cells
                if c.get("kind") == "pass" and _same(c.get("versions", {}), rest)
            ),
            reverse=True,
        )
        if not passing:
            continue
        here = Version(mine[axis])
        below = [v for v in passing if v < here]
        above = sorted(v for v in passing if v > here)
        pick = above[0] if above else below[0]
        return axis, str(pick)
    return None
