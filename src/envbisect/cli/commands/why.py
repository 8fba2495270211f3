"""``envbisect why``: the release that removed or changed what a failure's text names, read
from the wheels on the index (modes/why.py), printed from the typed ``WhyResult``.

The input is a file, ``-`` (stdin), or the failure text itself on the command line (a
traceback's last line is enough). A file saved by Windows PowerShell (UTF-16 with a BOM) or
with a UTF-8 BOM reads as text too.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from envbisect.cli.context import Context
from envbisect.errors import UsageError
from envbisect.textsafe import for_terminal


def decode(data: bytes) -> str:
    """Text of a report as saved: UTF-8 (a BOM dropped), UTF-16 with a BOM (PowerShell's
    ``>``), else UTF-8 with the bytes it cannot read replaced."""
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        return data.decode("utf-16", errors="replace")
    return data.decode("utf-8-sig", errors="replace")


def read_input(spec: str) -> tuple[str, str]:
    """``(text, origin)`` of ``spec``: stdin for ``-``, a file that exists, else the text."""
    if spec == "-":
        return decode(sys.stdin.buffer.read()), "<stdin>"
    path = Path(spec)
    looks_like_text = "\n" in spec or " " in spec or "'" in spec
    try:
        if not looks_like_text or path.is_file():
            return decode(path.read_bytes()), spec
    except OSError as e:
        if not looks_like_text:
            raise UsageError(
                f"cannot read {spec}: {e.strerror or e}",
                hint="give a file, - for stdin, or the failure text itself in quotes",
                ref="why-input",
            ) from e
    return spec, "<text>"


def cmd_why(ctx: Context) -> int:
    from envbisect.cli.readflags import common_options
    from envbisect.modes.session import Session
    from envbisect.modes.why import explain

    a = ctx.args
    text, origin = read_input(a.why_input)
    if not text.strip():
        raise UsageError(
            f"{origin} is empty",
            hint="give the failure's text: the traceback, or the whole bug report",
            ref="why-input",
        )
    common = common_options(a, command=ctx.command)
    with Session(common, ctx.progress, plan_only=True) as session:
        result = explain(
            text, origin=origin, client=session.client, python=a.why_python, progress=ctx.progress
        )
    ctx.progress.close()
    if a.json:
        print(json.dumps(result.to_dict(), indent=2))
    else:
        for line in result.lines():
            print(for_terminal(line))
    return result.exit_code
