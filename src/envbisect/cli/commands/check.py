"""``envbisect check``: what is wrong with a bug report's environment (or this machine's),
offline: findings with their evidence and a fix each; exit 1 when there are any.

Who does what: this module reads the inputs (the report, or this machine as ``envbisect env
--quick`` reads it; the data the package ships, envbisect/data/checkdb.json; the published
tables in ``--results`` when there) and prints the typed answer; the checks are
core/checks/'s, pure. Nothing is built and no connection is opened: no index client is
imported, and reading this machine runs its interpreter and nvidia-smi only.
"""

from __future__ import annotations

import json
import os
import sys
from importlib import resources
from pathlib import Path
from typing import Any

from envbisect.cli.context import Context
from envbisect.errors import UsageError
from envbisect.textsafe import for_terminal

DATA = ("data", "checkdb.json")


def cmd_check(ctx: Context) -> int:
    from envbisect.core.checks.diagnosis import CheckData, diagnose

    a = ctx.args
    if a.here == (a.check_report is not None):
        raise UsageError(
            "give a report or --here, not both"
            if a.here
            else "no report to check: give a bug report's file (or - for stdin), or --here",
            hint="envbisect check issue.md, or envbisect check --here for this machine",
            ref="check-what",
        )
    observed = _machine() if a.here else _report(a.check_report)
    data = CheckData.from_dict(shipped(), _tables_at_hand(a.results))
    diagnosis = diagnose(observed, data)
    if a.json:
        print(json.dumps(diagnosis.to_dict(), indent=2))
    else:
        for line in diagnosis.lines():
            print(for_terminal(line))
    return diagnosis.exit_code


def _report(spec: str) -> Any:
    from envbisect.core.checks.observed import from_text

    origin = "<stdin>" if spec == "-" else spec
    try:
        text = sys.stdin.read() if spec == "-" else Path(spec).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        why = "not UTF-8 text" if isinstance(e, UnicodeDecodeError) else e.strerror or str(e)
        raise UsageError(
            f"cannot read the report {origin}: {why}",
            hint="give a bug report saved as a Markdown or text file (or - for stdin)",
            ref="check-report",
        ) from e
    observed = from_text(text, origin=origin)
    if observed is None:
        raise UsageError(
            f"{origin} names no package, torch build, driver or GPU to check",
            hint="paste the output of llamafactory-cli env, transformers env, python -m "
            "torch.utils.collect_env or pip freeze into the report",
            ref="check-nothing",
        )
    return observed


def _machine() -> Any:
    """This machine as ``envbisect env --quick`` reads it (no torch import)."""
    from envbisect.core.checks.observed import from_machine
    from envbisect.env import envreport
    from envbisect.env.pyrequest import active_venv

    venv = active_venv(os.environ, Path.cwd())
    python = venv.request if venv is not None else sys.executable
    report = envreport.collect(python, deep=False, timeout=60)
    return from_machine(report, envreport.read_nvidia_smi(), origin=f"this machine ({python})")


def shipped() -> dict[str, Any]:
    """The data the package carries (bench/make_check_data.py writes it)."""
    path = resources.files("envbisect")
    for part in DATA:
        path = path / part
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return data


def _tables_at_hand(results: Path) -> list[dict[str, Any]]:
    """The published tables in ``results`` (newer than those shipped, where they differ)."""
    from envbisect.core.checks.published import table_of

    tables = []
    for path in sorted(results.glob("*/results.json")) if results.is_dir() else ():
        try:
            tables.append(table_of(json.loads(path.read_text(encoding="utf-8")), path.parent.name))
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            continue  # not a table this release of envbisect reads: the shipped one stands
    return tables
