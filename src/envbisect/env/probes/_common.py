"""Shared by the probe scripts; copied next to them, imported as a plain module."""

import importlib.util
import json
import sys


def untestable(reason):
    sys.stderr.write("ENVBISECT-UNTESTABLE: " + reason + "\n")
    sys.stderr.flush()
    sys.exit(125)


def require(*names):
    """Untestable unless every module is installed; a module that fails *inside* its own
    import is a real failure and must surface, so only absence is checked here."""
    missing = [n for n in names if importlib.util.find_spec(n) is None]
    if missing:
        untestable("not installed in this environment: " + ", ".join(missing))


def report(**data):
    sys.stdout.write("ENVBISECT-REPORT: " + json.dumps(data, sort_keys=True) + "\n")
    sys.stdout.flush()
