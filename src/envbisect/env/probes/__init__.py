"""Built-in probes: small scripts run *inside* a candidate environment with its interpreter.

They import only the standard library at the top, then the packages under test. The protocol
(docs/reference/probe-protocol.md): exit 0 pass; exit 125 untestable, with a line
``ENVBISECT-UNTESTABLE: reason`` on stderr (a package the probe needs is not installed);
anything else is a failure or a crash.
Each prints one line ``ENVBISECT-REPORT: {json}`` with what it measured.

Checks raise explicitly (``raise AssertionError(...)``, ``raise SystemExit(...)``), never with
``assert``: ``--env PYTHONOPTIMIZE=1`` strips asserts, and a check that vanished would pass
(tests/test_layout.py fails on an ``assert`` statement here).
"""
