"""The options one command takes (``run``'s --package, ``lock``'s --from, ``matrix``'s
--update...), declared as cli/flags.py declares the shared ones, and attached by cli/parser.py.
"""

from __future__ import annotations

from envbisect.cli.flags import FILE, WHAT, opt, switch
from envbisect.optionspec import count, count0

PACKAGE = opt("--package", group=WHAT, metavar="NAME", help="the package to bisect")
GOOD = opt("--good", group=WHAT, metavar="V", help="a version that works (default: an end)")
BAD = opt("--bad", group=WHAT, metavar="V", help="a version that fails (default: an end)")
BY_DATE = switch(
    "--by-date",
    group=WHAT,
    help="bisect the whole environment by date: --good and --bad are dates, each probe "
    "resolves everything as of a release's upload time, and the culprit release is named",
)
BASELINE = opt(
    "--baseline",
    group=WHAT,
    path=FILE,
    metavar="SOURCE",
    help="an environment to stay close to: a lockfile, pylock.toml or installed:PYTHON "
    "(the broken environment, typically)",
)
REST = opt(
    "--rest",
    group=WHAT,
    choices=("baseline", "contemporary", "latest"),
    help="the rest of each environment: kept at the baseline where possible, as of the "
    "candidate's upload time, or latest (default: baseline when one is given, "
    "else latest)",
)
LOCK = opt(
    "--lock",
    path=FILE,
    metavar="FILE",
    help="a lockfile (requirements.txt with == pins, or pylock.toml): exactly that environment",
)
FROM_LOCK = opt(
    "--from",
    group=WHAT,
    path=FILE,
    dest="from_lock",
    metavar="LOCK",
    help="upgrade mode: your working environment (a lockfile, pylock.toml or "
    "installed:PYTHON); take every upgrade that keeps the repro passing",
)
GOOD_DATE = opt(
    "--good-date",
    metavar="DATE",
    help="a date whose environment passed (default: the upload of the newest exact pin)",
)
STRATEGY = opt(
    "--strategy",
    choices=("auto", "history", "descent"),
    default="auto",
    help="auto (default): each round, hold back the package the failure names (cannot "
    "import name 'x' from 'pkg'), else search by date from the start (or against --from), "
    "following the failures down from the newest environment where no start passes or none "
    "builds; history: the search by date or against --from every round; descent: follow "
    "the failures down from the start",
)
NO_PROJECT = switch(
    "--no-project",
    help="a release named as the pins source (--pins NAME==VERSION) stays out of the lock "
    "(default: the lock holds it)",
)
FULL = switch("--full", help="probe every cell (no inference, no --max-cells limit)")
MAX_CELLS = opt(
    "--max-cells",
    type=count,
    default=500,
    metavar="N",
    help="refuse larger matrices without --full (default 500)",
)
UPDATE = switch(
    "--update",
    help="keep the published table current: from DIR/<matrix>/results.json, probe only the "
    "cells whose axis versions are new on the index; the published cells keep their "
    "outcomes and lockfiles; a version yanked, gone or no longer selected leaves the "
    "table with a note; what changed goes to the table's history and feed.xml",
)
RECHECK = opt(
    "--recheck",
    type=count0,
    metavar="DAYS",
    help="with --update: probe again every published measured cell older than DAYS, in "
    "exactly its locked environment (what it had installed), and record an outcome that "
    "changed (0: every one)",
)
OUTPUT = opt(
    "--output",
    path=FILE,
    metavar="FILE",
    help="write it there (e.g. .github/workflows/living-tables.yml); default: stdout",
)
INSTALL = opt(
    "--install",
    path=FILE,
    metavar="SPEC",
    default=None,
    help="what the workflow installs with uv tool install (default: envbisect's repository "
    "as a git URL, at the tag of this version once released), a requirement, or . for the "
    "checkout itself",
)
QUICK = switch(
    "--quick",
    help="do not import torch or test compiled packages against numpy",
)

ONLINE = switch(
    "--online",
    help="also read, from each release's wheels on the index, which release removed "
    "or changed what the report's traceback names (envbisect why); without it "
    "nothing is fetched",
)
HERE = switch(
    "--here",
    help="check this machine instead of a report: the active virtualenv's packages "
    "(VIRTUAL_ENV or ./.venv, else envbisect's own interpreter), torch's build, and the "
    "driver and GPUs nvidia-smi names",
)
