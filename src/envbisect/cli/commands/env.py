"""``envbisect env``: the environment report maintainers ask for, with its checks.

The report is env/envreport.py's (a mapping, as ``--json`` prints it); its text is rendered
there too.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from envbisect.cli import flags as o
from envbisect.cli import ownflags as w
from envbisect.cli.context import Context


def cmd_env(ctx: Context) -> int:
    from envbisect.env import envreport

    args = ctx.args
    python = args[o.PYTHON]
    if python is None:  # what a user asks about: the environment they are in
        from envbisect.env.pyrequest import active_venv

        venv = active_venv(os.environ, Path.cwd())
        python = venv.request if venv is not None else sys.executable
        origin = venv.origin if venv is not None else "the interpreter running envbisect"
        ctx.progress.message(f"envbisect: reporting on {python} ({origin}; --python for another)")
    report = envreport.collect(python, deep=not args[w.QUICK])
    report["nvidia"] = envreport.read_nvidia_smi()
    found = envreport.checks(report)
    if args[o.JSON]:
        report["checks"] = [c.to_dict() for c in found]
        print(json.dumps(report, indent=2, sort_keys=True))
    else:
        sys.stdout.write(envreport.render(report, found))
    return 0
