"""What every subcommand is handed (``Context``) and the pieces several of them share: the
repro of the command line, the search options, and how an answer, a dry run's plans and "no
answer" are printed.

Below the modules of cli/commands/ (one per command), which all import it, so that no command
imports another's private helpers; main.py prints a search's "no answer" with it too.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypedDict

from envbisect.cli import flags as o
from envbisect.errors import NoAnswer, UsageError
from envbisect.progress import Progress
from envbisect.textsafe import for_terminal

if TYPE_CHECKING:
    from envbisect.cli.display import AnyConsole
    from envbisect.cli.optionset import Options
    from envbisect.core.results.search import SearchResult
    from envbisect.modes.listing import ListingOptions


@dataclass(frozen=True, slots=True, kw_only=True)
class Context:
    args: Options  # resolved once (cli/optionset.py): ``args[OPTION]``, or a command's own
    tail: list[str]  # the command after --
    command: str  # the whole command line, for reports
    console: AnyConsole  # rich's, or its plain text where rich would print no more
    progress: Progress
    parser: argparse.ArgumentParser  # the line's: the whole one for completion (it prints it)


def repro_for(ctx: Context, *, default_for: str | None = None, pins: bool = False) -> Any:
    """The repro of the command line: --repro FILE, the command after --, --probe, or the
    package's default probe."""
    from envbisect.cli.readflags import probe_env
    from envbisect.env.repro import Repro

    a = ctx.args
    return Repro.build(
        origin=Path.cwd(),
        repro_file=a[o.REPRO],
        command=ctx.tail,
        probes=a[o.PROBE],
        default_for=default_for,
        # LLaMA-Factory refuses to start outside its checked ranges: we test outside them.
        extra_env={"DISABLE_VERSION_CHECK": "1"} if pins else None,
        user_env=probe_env(a),
    )


class Requested(TypedDict):
    """What every environment asks for, as the modes' options name it (``**requested(a)``)."""

    with_reqs: tuple[str, ...]
    pins: tuple[str, ...]
    extras: tuple[str, ...]
    pre: bool


def requested(args: Options) -> Requested:
    """--with, --pins, --extras and --pre, for run, run --by-date, probe and lock."""
    from envbisect.cli import flags as o
    from envbisect.cli.readflags import extras

    return Requested(
        with_reqs=tuple(args[o.WITH]),
        pins=tuple(args[o.PINS]),
        extras=extras(args),
        pre=args[o.PRE],
    )


def search_options(args: Options) -> Any:
    """--confidence, --probabilistic and --max-probes as the modes take them."""
    from envbisect.modes.searchoptions import SearchOptions

    return SearchOptions(
        confidence=args[o.CONFIDENCE],
        probabilistic=args[o.PROBABILISTIC],
        max_probes=args[o.MAX_PROBES],
    )


def listing_options(ctx: Context) -> ListingOptions:
    """What ``pins`` and ``versions`` read with: the indexes, the target's platform, extras."""
    from envbisect.cli import flags as o
    from envbisect.cli.readflags import common_options, extras
    from envbisect.modes.listing import ListingOptions

    return ListingOptions(
        common=common_options(ctx.args, command=ctx.command),
        extras=extras(ctx.args),
        platform=ctx.args[o.PLATFORM],
    )


def print_result(ctx: Context, res: SearchResult, lines: list[str]) -> None:
    """The answer: JSON, or the mode's lines then the lockfile and the report."""
    if ctx.args[o.JSON]:
        print(json.dumps(res.to_dict(), indent=2))
        return
    for line in lines:
        print(for_terminal(line))
    if res.lock_path:
        print(f"known-good lockfile: {res.lock_path}")
    print(f"report: {res.report_path}")


def print_plans(ctx: Context, plans: Sequence[dict[str, Any]]) -> int:
    """``--dry-run``: the plans on stdout (one JSON object with --json), exit 0."""
    from envbisect.modes.dryrun import render

    if ctx.args[o.JSON]:
        print(json.dumps({"dry_run": True, "plans": list(plans)}, indent=2))
    else:
        print("\n".join(render(plans)))
    return 0


def no_answer(
    ctx: Context, res: SearchResult, why: NoAnswer | None = None, *, hint: str = ""
) -> int:
    """One behaviour for "no answer" in every mode: the verdict and the report on stdout (or
    the result with an ``error`` object, with --json), the error and a hint on stderr, exit 1."""
    from envbisect.cli.display import Color, error_json, print_error
    from envbisect.core.runreport import verdict_line

    if why is None:
        why = NoAnswer(
            f"the ends did not verify: {res.reason}",
            hint=hint or "pick --good/--bad that pass and fail",
        )
        print_line = verdict_line(res)
    else:
        print_line = why.message
    if ctx.args[o.JSON]:
        print(json.dumps({**res.to_dict(), "error": error_json(why)}, indent=2))
    else:
        print(for_terminal(print_line))
        print(f"report: {res.report_path}")
    print_error(why, Color.of(ctx.args))
    return 1


def machine() -> str:
    """This machine in a few words, for a table's ``run.json`` (never a path or a host name)."""
    import os
    import platform

    return (
        f"{platform.system()} {platform.machine()}, {os.cpu_count()} cores, "
        f"Python {platform.python_version()}"
    )


def decode(data: bytes) -> str:
    """Text of a report as saved: UTF-8 (a BOM dropped), UTF-16 with a BOM (PowerShell's
    ``>``), else UTF-8 with the bytes it cannot read replaced; ``ValueError`` for a file that
    is not text (NUL characters, or mostly bytes that are no UTF-8)."""
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        text = data.decode("utf-16", errors="replace")
    else:
        text = data.decode("utf-8-sig", errors="replace")
    if "\x00" in text or text.count("\ufffd") > max(8, len(text) // 10):
        raise ValueError("not a text file")
    return text


def read_input(spec: str) -> tuple[str, str]:
    """``(text, origin)`` of ``spec``: stdin for ``-``, a file that exists, else the text."""
    looks_like_text = "\n" in spec or " " in spec or "'" in spec
    path = Path(spec)
    if spec != "-" and looks_like_text and not _is_file(path):
        return spec, "<text>"
    return decoded_input(
        spec,
        what="",
        ref="why-input",
        hint="give a file, - for stdin, or the failure text itself in quotes",
    )


def decoded_input(spec: str, *, what: str, ref: str, hint: str) -> tuple[str, str]:
    """``(text, origin)`` of the file ``spec`` (stdin for ``-``) as ``decode`` reads it, or a
    usage error (``ref``, ``hint``) that names it (``what``: "the report ", say)."""
    from envbisect.env.pinsource import REPORT_URL_HINT, refuse_url

    origin = "<stdin>" if spec == "-" else spec
    if spec != "-":
        refuse_url(spec, Path.cwd(), named=what.strip() or "INPUT", hint=REPORT_URL_HINT)
    try:
        data = sys.stdin.buffer.read() if spec == "-" else Path(spec).read_bytes()
        return decode(data), origin
    except (OSError, ValueError) as e:
        why = str(e) if isinstance(e, ValueError) else e.strerror or str(e)
        raise UsageError(f"cannot read {what}{origin}: {why}", hint=hint, ref=ref) from e


def _is_file(path: Path) -> bool:
    try:
        return path.is_file()
    except OSError:  # a name too long to be a path: the text itself
        return False
