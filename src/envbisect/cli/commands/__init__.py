"""The subcommands, one module per command (pip's habit): each turns its parsed options into
one mode call and prints the typed answer from its fields.

Every command has one signature, ``cmd(ctx) -> exit code``, and the table in cli/main.py names
the module and the function, imported only when that command runs. Data goes to stdout (text,
or one JSON object with ``--json``); progress and hints to stderr through the console in the
context. What several commands share (the repro, the search options, printing an answer, a
dry run's plans or "no answer") is in cli/context.py; no command imports another's private
helpers. Heavy modules are imported inside each command so that ``envbisect --help`` stays
fast.

run          run (by version, --by-date), with --commits
commits      commits, and the commit refs and lines run --commits shares
probe        probe: one environment
repro        repro: reproducing a bug report
pins         pins: what a pin source asks for
versions     versions: a package's versions and why each excluded one is
diff         diff: the packages between a good and a bad environment
lock         lock: the newest passing environment
matrix       matrix, and matrix --update
publish      publish: a matrix's tables from the store
ci_template  ci-template: the workflow that keeps tables current
env          env: the environment report
check        check: a report's (or this machine's) environment, offline
why          why: the release that changed what a traceback names, read from the wheels
completion   completion: a shell's completion script
"""
