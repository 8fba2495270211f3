"""A probe record as a row of the store's ``probes`` table, and back.

The store (store.py) owns the database: its schema, migrations, claims and transactions; this
module only says which column holds what (the outcome's fields in columns of their own, the
spec, the installed list, the environment report and each run's outcome as JSON).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from envbisect.model import InstalledDist, Outcome, OutcomeKind, ProbeRecord

__all__ = ["from_row", "to_row"]


def to_row(rec: ProbeRecord) -> dict[str, Any]:
    """The ``probes`` row of ``rec``: column name to value."""
    o = rec.outcome
    return {
        "env_id": rec.env_id,
        "repro_id": rec.repro_id,
        "spec": json.dumps(rec.spec, sort_keys=True),
        "installed": json.dumps([d.to_dict() for d in rec.installed]),
        "installed_hash": rec.installed_hash,
        "kind": o.kind.value,
        "signal": o.signal,
        "exit_code": o.exit_code,
        "signature": o.signature,
        "exception": o.exception,
        "detail": o.detail,
        "stdout_tail": rec.stdout_tail,
        "stderr_tail": rec.stderr_tail,
        "build_seconds": rec.build_seconds,
        "probe_seconds": rec.probe_seconds,
        "timeout": rec.timeout,
        "started_at": rec.started_at,
        "envbisect_version": rec.envbisect_version,
        "library": o.library,
        "function": o.function,
        "step": o.step,
        "env_report": json.dumps(rec.env_report) if rec.env_report is not None else None,
        "runs": json.dumps([_run_dict(r) for r in rec.runs]) if rec.runs else None,
        "host": rec.host or None,
    }


def from_row(row: Mapping[str, Any]) -> ProbeRecord:
    """The record a ``probes`` row holds (``KeyError``, ``ValueError``... on a damaged one)."""
    outcome = Outcome(
        kind=OutcomeKind(row["kind"]),
        signal=row["signal"],
        exit_code=row["exit_code"],
        signature=row["signature"],
        exception=row["exception"],
        detail=row["detail"],
        library=row.get("library"),
        function=row.get("function"),
        step=row.get("step") or "",
    )
    return ProbeRecord(
        env_id=row["env_id"],
        repro_id=row["repro_id"],
        spec=json.loads(row["spec"]),
        installed=tuple(InstalledDist(**d) for d in json.loads(row["installed"])),
        installed_hash=row["installed_hash"],
        outcome=outcome,
        stdout_tail=row["stdout_tail"],
        stderr_tail=row["stderr_tail"],
        build_seconds=row["build_seconds"],
        probe_seconds=row["probe_seconds"],
        timeout=row["timeout"],
        started_at=row["started_at"],
        envbisect_version=row["envbisect_version"],
        env_report=json.loads(row["env_report"]) if row.get("env_report") else None,
        runs=tuple(_run_outcome(d) for d in json.loads(row["runs"])) if row.get("runs") else (),
        host=row.get("host") or "",
    )


def _run_dict(o: Outcome) -> dict[str, Any]:
    return {**o.to_dict(), "exception": o.exception}


def _run_outcome(d: dict[str, Any]) -> Outcome:
    return Outcome(
        kind=OutcomeKind(d["kind"]),
        signal=d.get("signal"),
        exit_code=d.get("exit_code"),
        signature=d.get("signature") or "",
        exception=d.get("exception"),
        library=d.get("library"),
        function=d.get("function"),
        step=d.get("step") or "",
    )
