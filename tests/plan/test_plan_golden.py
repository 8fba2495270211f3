"""The planner over frozen index snapshots: golden files hold the inputs, the expected plan,
and the path (candidates pinned, in order). resolvelib's own functional tests work this way.

Regenerate after an intended change with ``UPDATE_GOLDEN=1 pytest tests/plan/test_plan_golden.py``
and review the diff: the path is part of the contract.
"""

from __future__ import annotations

import json
import os
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from packaging.requirements import Requirement
from packaging.version import Version

from envbisect.core.plan import Plan, PlanTarget, Policy
from envbisect.core.resolve import plan
from support.snapshot import SnapshotSource

CASES = sorted((Path(__file__).parents[1] / "data" / "plan").glob("*.json"))


def run_case(case: dict[str, Any]) -> dict[str, Any]:
    target = PlanTarget(
        markers=case["target"]["markers"], python_version=Version(case["target"]["python"])
    )
    result = plan(
        [Requirement(r) for r in case["requirements"]],
        SnapshotSource(case["index"]),
        target,
        policy=Policy(case["policy"]),
        baseline={k: Version(v) for k, v in case["baseline"].items()},
        cutoff=datetime.fromisoformat(case["cutoff"]) if case["cutoff"] else None,
        forward=case.get("forward", False),
    )
    if isinstance(result, Plan):
        return {
            "pins": {k: str(v) for k, v in sorted(result.pins.items())},
            "moved": [
                [n, str(b) if b else None, str(v) if v else None] for n, b, v in result.moved
            ],
            "visited": [list(x) for x in result.visited],
        }
    return {"unresolvable": result.reason, "visited": [list(x) for x in result.visited]}


@pytest.mark.parametrize("path", CASES, ids=[p.stem for p in CASES])
def test_golden(path: Path) -> None:
    case = json.loads(path.read_text())
    got = run_case(case)
    if os.environ.get("UPDATE_GOLDEN"):
        case["expected"] = got
        path.write_text(json.dumps(case, indent=1) + "\n")
    assert got == case["expected"], case["description"]
