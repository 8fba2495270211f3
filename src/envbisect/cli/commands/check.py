"""``envbisect check``: what is wrong with a bug report's environment (or this machine's),
offline: findings with their evidence and a fix each; exit 1 when there are any.

Who does what: this module reads the inputs (the report, or this machine as ``envbisect env
--quick`` reads it; the data the package ships, envbisect/data/checkdb.json; the published
tables in ``--results`` when there) and prints the typed answer; the checks are
core/checks/'s, pure. Nothing is built and no connection is opened: no index client is
imported, and reading this machine runs its interpreter and nvidia-smi only.
"""

from __future__ import annotations

import functools
import json
import os
import sys
from importlib import resources
from pathlib import Path
from typing import Any

from envbisect.cli import flags as o
from envbisect.cli import ownflags as w
from envbisect.cli.context import Context, decoded_input
from envbisect.errors import UsageError
from envbisect.textsafe import for_terminal

DATA = ("data", "checkdb.json")


def cmd_check(ctx: Context) -> int:
    a = ctx.args
    reports = list(a.check_report or ())
    if a[w.HERE] == bool(reports):
        raise UsageError(
            "give a report or --here, not both"
            if a[w.HERE]
            else "no report to check: give a bug report's file (or - for stdin), or --here",
            hint="envbisect check issue.md, or envbisect check --here for this machine",
            ref="check-what",
        )
    if a[w.HERE]:
        return _one(ctx, None)
    files = _expanded(reports)
    if len(files) == 1 and not Path(reports[0]).is_dir():
        return _one(ctx, files[0])
    return _many(ctx, files)


def _one(ctx: Context, spec: str | None) -> int:
    """One report (or this machine, ``spec`` None): its findings, the exit code."""
    diagnosis = _diagnosed(ctx, spec)
    if not diagnosis.findings and spec is not None and not diagnosis.observed.packages:
        ctx.progress.message(
            "envbisect: the report names no versions: no finding\n"
            "hint: paste the output of llamafactory-cli env, transformers env, python -m "
            "torch.utils.collect_env or pip freeze into the report"
        )
    if ctx.args[o.JSON]:
        print(json.dumps(diagnosis.to_dict(), indent=2))
    else:
        for line in diagnosis.lines():
            print(for_terminal(line))
    return int(diagnosis.exit_code)


def _diagnosed(ctx: Context, spec: str | None) -> Any:
    from envbisect.core.checks.diagnosis import CheckData, diagnose, with_forward_fixes

    a = ctx.args
    text = None
    if spec is None:
        observed = _machine()
    else:
        text, origin = _text(spec)
        observed = _report(text, origin)
    data = CheckData.from_dict(shipped(), _tables_at_hand(a[o.RESULTS]))
    diagnosis = diagnose(observed, data)
    if a[w.ONLINE] and text is not None:
        diagnosis = _online(ctx, diagnosis, text)
    elif text is not None:
        diagnosis = _shipped(diagnosis, text)
    return with_forward_fixes(diagnosis, data)


def _expanded(specs: list[str]) -> list[str]:
    """The reports named: a folder stands for its Markdown and text files, in name order."""
    out: list[str] = []
    for spec in specs:
        folder = Path(spec)
        if spec != "-" and folder.is_dir():
            found = sorted(
                p for p in folder.iterdir() if p.suffix in (".md", ".txt") and p.is_file()
            )
            if not found:
                raise UsageError(
                    f"no report in {spec}: it holds no .md or .txt file",
                    hint="give the reports' files, or the folder that holds them",
                    ref="check-report",
                )
            out += [str(p) for p in found]
        else:
            out.append(spec)
    if out.count("-") > 1:
        raise UsageError("stdin (-) given twice", hint="give - once", ref="check-report")
    return out


def _many(ctx: Context, files: list[str]) -> int:
    """Several reports, for a maintainer triaging a backlog: one line each (its findings'
    kinds and first fixes), then each report's findings, then the count; ``--json`` a list.
    A report that cannot be read is said in its line and the others go on (exit 2 at the
    end); else exit 1 where any report has a finding."""
    answers: list[tuple[str, Any, str | None]] = []
    for spec in files:
        try:
            answers.append((spec, _diagnosed(ctx, spec), None))
        except UsageError as e:
            answers.append((spec, None, e.message))
    if ctx.args[o.JSON]:
        print(
            json.dumps(
                [
                    d.to_dict()
                    if d is not None
                    else {"status": "error", "report": spec, "error": err}
                    for spec, d, err in answers
                ],
                indent=2,
            )
        )
    else:
        width = max(len(spec) for spec, _, _ in answers)
        for spec, d, err in answers:
            print(for_terminal(f"{spec:<{width}}  {_one_line(d, err)}"))
        for _spec, d, _ in answers:
            if d is not None and d.findings:
                print()
                for line in d.lines():
                    print(for_terminal(line))
        with_findings = sum(1 for _, d, _ in answers if d is not None and d.findings)
        unreadable = sum(1 for _, d, _ in answers if d is None)
        print()
        print(
            f"{len(answers)} reports: {with_findings} with findings, "
            f"{len(answers) - with_findings - unreadable} without"
            + (f", {unreadable} unreadable" if unreadable else "")
        )
    if any(d is None for _, d, _ in answers):
        return 2
    return 1 if any(d.findings for _, d, _ in answers) else 0


def _one_line(d: Any, err: str | None) -> str:
    if d is None:
        return f"error: {err}"
    if not d.findings:
        return "no finding" + ("" if d.observed.packages else " (names no versions)")
    first = d.findings[0]
    more = f" (+{len(d.findings) - 1} more)" if len(d.findings) > 1 else ""
    return f"{len(d.findings)} finding(s): [{first.kind.value}] fix: {first.fix}{more}"


def _text(spec: str) -> tuple[str, str]:
    return decoded_input(
        spec,
        what="the report ",
        ref="check-report",
        hint="give a bug report saved as a Markdown or text file (or - for stdin)",
    )


def _report(text: str, origin: str) -> Any:
    """What the report says; one that names no package, build, driver or GPU is read for its
    traceback alone (the API history, and --online the wheels, may still say)."""
    from envbisect.core.checks.observed import Observed, from_text

    observed = from_text(text, origin=origin)
    if observed is None:
        return Observed(origin=origin, lines=tuple(text.splitlines()))
    return observed


def _shipped(diagnosis: Any, text: str) -> Any:
    """The findings the API history envbisect ships supports, added to the others."""
    from dataclasses import replace

    from envbisect.core.checks.apihistory import shipped_findings
    from envbisect.core.checks.finding import ORDER
    from envbisect.core.evidence.failure import read_failure

    if not read_failure(text).items:
        return diagnosis  # nothing the history could say: it is not even read (0.12 s)
    found = [*diagnosis.findings, *shipped_findings(api_history(), text, diagnosis.observed)]
    found.sort(key=lambda f: ORDER.index(f.kind))
    return replace(diagnosis, findings=tuple(found))


@functools.cache  # several reports in one run read it once
def api_history() -> dict[str, Any]:
    """The API history the package carries (bench/make_api_history.py writes it); empty
    where it is not there."""
    import gzip

    path = resources.files("envbisect") / "data" / "apihistory.json.gz"
    try:
        data: dict[str, Any] = json.loads(gzip.decompress(path.read_bytes()))
    except (OSError, ValueError):
        return {}
    return data


def _online(ctx: Context, diagnosis: Any, text: str) -> Any:
    """The findings ``envbisect why`` reads from the wheels added to the offline ones."""
    from dataclasses import replace

    from envbisect.cli.readflags import common_options
    from envbisect.core.checks.finding import ORDER
    from envbisect.core.checks.online import release_findings
    from envbisect.modes.session import Session
    from envbisect.modes.why import explain

    origin = diagnosis.observed.origin
    with Session(
        common_options(ctx.args, command=ctx.command), ctx.progress, plan_only=True
    ) as session:
        result = explain(text, origin=origin, client=session.client, progress=ctx.progress)
    ctx.progress.close()
    found = [*diagnosis.findings, *release_findings(result, origin if origin != "<stdin>" else "-")]
    found.sort(key=lambda f: ORDER.index(f.kind))
    return replace(diagnosis, findings=tuple(found))


def _machine() -> Any:
    """This machine as ``envbisect env --quick`` reads it (no torch import)."""
    from envbisect.core.checks.observed import from_machine
    from envbisect.env import envreport
    from envbisect.env.pyrequest import active_venv

    venv = active_venv(os.environ, Path.cwd())
    python = venv.request if venv is not None else sys.executable
    report = envreport.collect(python, deep=False, timeout=60)
    return from_machine(report, envreport.read_nvidia_smi(), origin=f"this machine ({python})")


@functools.cache
def shipped() -> dict[str, Any]:
    """The data the package carries (bench/make_check_data.py writes it)."""
    path = resources.files("envbisect")
    for part in DATA:
        path = path / part
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    from envbisect import source_url

    for table in data.get("published", ()):  # cited where a user can open it: the published URL
        table.setdefault("where", f"{source_url()}/blob/main/results/{table.get('table')}")
    return data


@functools.cache
def _tables_at_hand(results: Path) -> list[dict[str, Any]]:
    """The published tables in ``results`` (newer than those shipped, where they differ)."""
    from envbisect.core.checks.published import table_of

    tables = []
    for path in sorted(results.glob("*/results.json")) if results.is_dir() else ():
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            tables.append(table_of(data, path.parent.name, where=str(path.parent)))
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            continue  # not a table this release of envbisect reads: the shipped one stands
    return tables
