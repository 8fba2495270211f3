"""What every subcommand is handed (``Context``) and the pieces several of them share: the
repro of the command line, the search options, and how a search's answer is printed.

Below cli/commands.py and cli/commitcmd.py, which both import it (so neither imports the
other's private helpers).
"""

from __future__ import annotations

import argparse
import json
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.console import Console

from envbisect.cli.flags import probe_env
from envbisect.progress import Progress
from envbisect.textsafe import for_terminal

if TYPE_CHECKING:
    from envbisect.core.results.search import SearchResult


@dataclass(frozen=True, slots=True, kw_only=True)
class Context:
    args: argparse.Namespace
    tail: list[str]  # the command after --
    command: str  # the whole command line, for reports
    console: Console
    progress: Progress
    parser: argparse.ArgumentParser  # the whole command line's (completion prints from it)


def repro_for(ctx: Context, *, default_for: str | None = None, pins: bool = False) -> Any:
    """The repro of the command line: --repro FILE, the command after --, --probe, or the
    package's default probe."""
    from envbisect.env.repro import Repro

    a = ctx.args
    return Repro.build(
        origin=Path.cwd(),
        repro_file=a.repro,
        command=ctx.tail,
        probes=a.probes,
        default_for=default_for,
        # LLaMA-Factory refuses to start outside its checked ranges: we test outside them.
        extra_env={"DISABLE_VERSION_CHECK": "1"} if pins else None,
        user_env=probe_env(a),
    )


def search_options(args: argparse.Namespace) -> Any:
    """--confidence, --probabilistic and --max-probes as the modes take them."""
    from envbisect.modes.searchoptions import SearchOptions

    return SearchOptions(
        confidence=args.confidence, probabilistic=args.probabilistic, max_probes=args.max_probes
    )


def print_result(ctx: Context, res: SearchResult, lines: list[str]) -> None:
    """The answer: JSON, or the mode's lines then the lockfile and the report."""
    if ctx.args.json:
        print(json.dumps(res.to_dict(), indent=2))
        return
    for line in lines:
        print(for_terminal(line))
    if res.lock_path:
        print(f"known-good lockfile: {res.lock_path}")
    print(f"report: {res.report_path}")


def machine() -> str:
    """This machine in a few words, for a table's ``run.json`` (never a path or a host name)."""
    import os
    import platform

    return (
        f"{platform.system()} {platform.machine()}, {os.cpu_count()} cores, "
        f"Python {platform.python_version()}"
    )
