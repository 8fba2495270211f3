"""Every command-line option, declared once, and attached to the subcommands that take it.

(pip's ``cmdoptions`` habit.) An ``Opt`` is the flags and the ``add_argument`` keywords; a
subcommand lists the options it takes (cli/parser.py), and cli/readflags.py reads the parsed
ones into the ``CommonOptions`` every mode shares. An option may be attached with another help
text or default where the same flag means the same thing in other words (``Opt.but``:
``--python`` of ``env``, ``--package`` of ``commits``). The value types are cli/argtypes.py's.
"""

from __future__ import annotations

import argparse
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from envbisect.cli.argtypes import count, count0, jobs, probability, seconds

DEFAULT_INDEX = "https://pypi.org/simple"


@dataclass(frozen=True, slots=True)
class Opt:
    flags: tuple[str, ...]
    kw: dict[str, Any] = field(default_factory=dict)

    def add(self, parser: argparse.ArgumentParser, **override: Any) -> None:
        parser.add_argument(*self.flags, **{**self.kw, **override})

    def but(self, **override: Any) -> Opt:
        """The same option, attached with another help text, default or requirement."""
        return Opt(self.flags, {**self.kw, **override})


def opt(*flags: str, **kw: Any) -> Opt:
    return Opt(flags, kw)


def many(*flags: str, **kw: Any) -> Opt:
    """A repeatable option: each use adds one value to a list (none given: [])."""
    return Opt(flags, {"action": "append", "default": [], **kw})


# -- what goes into each environment, and where it comes from ------------------------------------

WITH = many(
    "--with",
    dest="with_reqs",
    metavar="REQ",
    help="a requirement of every environment (repeatable)",
)
OVERRIDE = many(
    "--override",
    dest="overrides",
    metavar="REQ|FILE",
    help="as uv's: every requirement on the project (the pins', any package's) takes these "
    "versions, e.g. transformers==4.52.4 where the release caps it lower; or a file of "
    "such lines (repeatable)",
)
INHERIT = opt(
    "--inherit",
    action="store_true",
    help="each environment sees the --python interpreter's own packages (a machine's CUDA "
    "torch, transformers...): planned at the versions installed there and never downloaded "
    "or installed; what the environment adds goes in front of them",
)
PYTHON = opt(
    "-p",  # as uv's
    "--python",
    metavar="VERSION",
    help="the environments' interpreter: a version (uv installs one missing) or a path",
)
NO_PYTHON_DOWNLOADS = opt(
    "--no-python-downloads", dest="python_downloads", action="store_false",
    help="never ask uv to install a missing --python (as UV_PYTHON_DOWNLOADS=never)",
)  # fmt: skip
EXCLUDE_NEWER = opt(
    "--exclude-newer",
    metavar="DATE",
    help="ignore files uploaded after DATE: YYYY-MM-DD, RFC 3339 or a span (7 days, P7D); "
    "default: UV_EXCLUDE_NEWER, or a --repro script's [tool.uv] exclude-newer",
)
PRE = opt("--pre", action="store_true", help="include pre-releases")
ALLOW_SDIST = opt(
    "--allow-sdist",
    action="store_true",
    help="let uv build sdists (runs their setup.py; wheels only by default)",
)
PINS = many(
    "--pins",
    metavar="SOURCE",
    help="the project's pins: a folder, pyproject.toml, requirements file, pylock.toml, "
    "installed:PYTHON, name==version from the index, an environment report (pip freeze, pip "
    "list, conda list, llamafactory-cli env, transformers env, accelerate env, torch's "
    "collect_env; a Markdown file that holds one; - for stdin: its Python and torch build "
    "set --python and --torch-backend), or a PEP 723 script (repeatable)",
)
EXTRAS = opt("--extras", metavar="A,B", help="optional-dependency groups of the pins")
PLATFORM = opt(
    "--platform",
    metavar="TAG",
    help="another platform, as a wheel tag: manylinux_2_28_x86_64, macosx_11_0_arm64, win_amd64...",
)

INDEX_URL = opt(
    "--index-url",
    metavar="URL",
    help=f"the main index (default: as uv's settings, then pip's, name it; else {DEFAULT_INDEX})",
)
EXTRA_INDEX_URL = many(
    "--extra-index-url",
    metavar="URL",
    help="another index, consulted before the main one as uv does (repeatable)",
)
FIND_LINKS = many(
    "--find-links",
    metavar="DIR",
    help="a folder of wheels (repeatable)",
)
NO_CONFIG = opt(
    "--no-config",
    action="store_true",
    help="ignore the index settings of the environment (UV_INDEX_URL, PIP_INDEX_URL...), "
    "uv.toml, pyproject.toml's [tool.uv] and pip.conf: only the index flags count",
)
OFFLINE = opt(
    "--offline",
    action="store_true",
    help="no network: metadata from the cache, packages from uv's cache (run once online first)",
)
REFRESH = opt(
    "--refresh",
    action="store_true",
    help="revalidate every cached index page whatever its age (uv's --refresh): see a release "
    "published minutes ago; every build asks uv for its pages again",
)
REFRESH_PACKAGE = many(
    "--refresh-package",
    metavar="NAME",
    help="revalidate NAME's cached index pages only (repeatable)",
)
COLOR = opt(
    "--color",
    choices=("auto", "always", "never"),
    default=argparse.SUPPRESS,
    help="colour on stderr: auto (a terminal, unless NO_COLOR is set; FORCE_COLOR forces it), "
    "always, never",
)
CACHE_DIR = opt(
    "--cache-dir",
    type=Path,
    metavar="DIR",
    help="the metadata cache (default $ENVBISECT_CACHE_DIR, else ~/.cache/envbisect)",
)
TORCH_BACKEND = opt(
    "--torch-backend",
    metavar="VARIANT",
    help="take torch, torchvision, torchaudio from PyTorch's index for this "
    "variant: cpu, cu118, cu121, cu124, cu126, cu128, rocm6.2..., or auto "
    "(from nvidia-smi); none: from the main index like any package (default: "
    "UV_TORCH_BACKEND; an environment report's torch build sets it otherwise)",
)
TORCH_INDEX_URL = opt(
    "--torch-index-url",
    metavar="URL",
    help="a mirror laid out like https://download.pytorch.org/whl (variant folders)",
)

# -- what runs in each environment, and what is kept -------------------------------------------

REPRO = opt(
    "--repro",
    metavar="FILE",
    help="a Python file run as python -X faulthandler FILE; a PEP 723 '# /// script' block "
    "in it adds its dependencies to --with and its requires-python sets --python",
)
# What env/repro.py's probe_usage() says (tests/env/test_probes.py checks it): written here so
# that the parser imports nothing of the probes.
PROBES = (
    "import:PKG[,PKG...], datasets-json, lora-step, llamafactory, llamafactory-train[:STAGE], "
    "sft-step[:lora], dpo-step[:lora], trainer-step[:resume|lora|lora-resume]"
)
PROBE = many(
    "--probe",
    dest="probes",
    metavar="NAME[:ARGS]",
    help="a built-in probe: " + PROBES + " (repeatable; the environment fails if any fails)",
)
ENV = many(
    "--env",
    dest="probe_env",
    metavar="NAME=VALUE",
    help="set NAME=VALUE for every probe (repeatable). Interpreter variables that change what "
    "runs or what it imports (PYTHONOPTIMIZE, PYTHONPATH, PYTHONWARNINGS, PYTHONHASHSEED...) "
    "never reach a probe from your shell: pass one here to test with it. What --env sets is "
    "part of what was probed (stored outcomes with and without it are kept apart) and is "
    "named in report.md",
)
TIMEOUT = opt(
    "--timeout",
    type=seconds,
    default=600.0,
    metavar="SECONDS",
    help="kill a probe after this long (default 600)",
)
NATIVE_BACKTRACE = opt(
    "--native-backtrace",
    choices=("auto", "always", "never"),
    default="auto",
    help="re-run a crash under gdb for its native backtrace (default auto: when gdb is installed)",
)
RESULTS = opt(
    "--results",
    type=Path,
    default=Path("results"),
    metavar="DIR",
    help="where the store, reports and lockfiles go (default ./results)",
)
KEEP_ENVS = opt(
    "--keep-envs",
    action="store_true",
    help="keep each environment after its probe (under DIR/.envs)",
)
JSON = opt("--json", action="store_true", help="print one JSON object on stdout")
# Before or after the subcommand; SUPPRESS so that the subcommand's default does not undo the
# main parser's value.
QUIET = opt(
    "-q",
    "--quiet",
    action="store_true",
    default=argparse.SUPPRESS,
    help="print the answer only (errors still go to stderr)",
)
VERBOSE = opt(
    "-v",
    "--verbose",
    action="store_true",
    default=argparse.SUPPRESS,
    help="also say where each option's value came from, and print uv's output and each "
    "probe's output",
)
# -v of a command that builds nothing: what it says (cli/parser.py attaches one or the other).
VERBOSE_READS = VERBOSE.but(help="also say where each option's value came from")

# -- how a search runs -----------------------------------------------------------------------

JOBS = opt(
    "--jobs",
    type=jobs,
    default=1,
    metavar="K",
    help="probe K environments at once, built and run in parallel (a bisection splits "
    "its range K+1 ways: about log_{K+1}(n) rounds; default 1)",
)
REPEAT = opt(
    "--repeat",
    type=count,
    default=1,
    metavar="N",
    help="run the repro N times in each environment: a failure in any run marks it, "
    "the fail rate is recorded; runs that disagree switch a bisection to a "
    "probabilistic search",
)
ANY_FAILURE = opt(
    "--any-failure",
    action="store_true",
    help="count any failure as bad, not only one like the bad end's",
)
CONFIDENCE = opt(
    "--confidence",
    type=probability,
    default=0.95,
    metavar="P",
    help="probabilistic search: stop when one boundary has this probability (default 0.95)",
)
PROBABILISTIC = opt(
    "--probabilistic",
    action="store_true",
    help="start with the probabilistic search (the repro is known to be flaky)",
)
MAX_PROBES = opt(
    "--max-probes",
    type=count,
    metavar="N",
    help="probabilistic search: give up after N probes (default: about 20 runs "
    "per bit of the range)",
)

ALLOW_DOWNLOAD = opt(
    "--allow-download",
    action="store_true",
    help="let the repro download the models and data sets it names from the Hugging Face "
    "Hub (by default a report whose repro needs a download says so and is not run)",
)
# -- past the release: its commits ------------------------------------------------------------

COMMITS = opt(
    "--commits",
    action="store_true",
    help="after the first bad release, bisect the first-parent commits between the last good "
    "release's tag and the first bad one's: each built from source with uv, the rest of the "
    "environment held as in the last good release's probe",
)
REPO = opt(
    "--repo",
    metavar="URL",
    help="the package's git repository: a URL or the path of a local clone (default: the "
    "Source, Repository or Homepage URL of its metadata, on a known code host); mirrored "
    "once under the cache folder, fetched on each run (--offline: used as it is)",
)
GOOD_REF = opt(
    "--good-ref",
    metavar="REF",
    help="the last good release's commit (tag, branch or commit id; default: its tag: "
    "v1.2.0, 1.2.0, NAME-1.2.0 or NAME-v1.2.0)",
)
BAD_REF = opt(
    "--bad-ref",
    metavar="REF",
    help="the first bad release's commit (default: its tag, as --good-ref)",
)
BUILD_TIMEOUT = opt(
    "--build-timeout",
    type=seconds,
    metavar="SECONDS",
    help="cut a build from source after this long: that commit is untestable (default: no limit)",
)

DRY_RUN = opt(
    "--dry-run",
    action="store_true",
    help="plan the environments it would build first, print the plans (--json: with their "
    "pins and conflicts), build nothing",
)


# -- what one command takes (declared here too, so that every option is in one place) --------

PACKAGE = opt("--package", metavar="NAME", help="the package to bisect")
GOOD = opt("--good", metavar="V", help="a version that works (default: an end)")
BAD = opt("--bad", metavar="V", help="a version that fails (default: an end)")
BY_DATE = opt(
    "--by-date",
    action="store_true",
    help="bisect the whole environment by date: --good and --bad are dates, each probe "
    "resolves everything as of a release's upload time, and the culprit release is named",
)
BASELINE = opt(
    "--baseline",
    metavar="SOURCE",
    help="an environment to stay close to: a lockfile, pylock.toml or installed:PYTHON "
    "(the broken environment, typically)",
)
REST = opt(
    "--rest",
    choices=("baseline", "contemporary", "latest"),
    help="the rest of each environment: kept at the baseline where possible, as of the "
    "candidate's upload time, or latest (default: baseline when one is given, "
    "else latest)",
)
LOCK = opt(
    "--lock",
    metavar="FILE",
    help="a lockfile (requirements.txt with == pins, or pylock.toml): exactly that environment",
)
FROM_LOCK = opt(
    "--from",
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
NO_PROJECT = opt(
    "--no-project",
    action="store_true",
    help="a release named as the pins source (--pins NAME==VERSION) stays out of the lock "
    "(default: the lock holds it)",
)
FULL = opt(
    "--full", action="store_true", help="probe every cell (no inference, no --max-cells limit)"
)
MAX_CELLS = opt(
    "--max-cells",
    type=count,
    default=500,
    metavar="N",
    help="refuse larger matrices without --full (default 500)",
)
UPDATE = opt(
    "--update",
    action="store_true",
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
    metavar="FILE",
    help="write it there (e.g. .github/workflows/living-tables.yml); default: stdout",
)
INSTALL = opt(
    "--install",
    metavar="SPEC",
    default=None,
    help="what the workflow installs with uv tool install (default: envbisect's repository "
    "as a git URL, at the tag of this version once released), a requirement, or . for the "
    "checkout itself",
)
QUICK = opt(
    "--quick",
    action="store_true",
    help="do not import torch or test compiled packages against numpy",
)

HERE = opt(
    "--here",
    action="store_true",
    help="check this machine instead of a report: the active virtualenv's packages "
    "(VIRTUAL_ENV or ./.venv, else envbisect's own interpreter), torch's build, and the "
    "driver and GPUs nvidia-smi names",
)


# The same flag in other words, where several commands say it so.
TARGET_PYTHON = PYTHON.but(help="the target interpreter (a version uv can find, or a path)")
NO_CONFIG_LINKS = NO_CONFIG.but(help="ignore the find-links folders of your settings")
METADATA_CACHE = CACHE_DIR.but(help="the metadata cache")

# Groups, as subcommands take them.
INDEX = (
    INDEX_URL,
    EXTRA_INDEX_URL,
    NO_CONFIG,
    FIND_LINKS,
    OFFLINE,
    REFRESH,
    REFRESH_PACKAGE,
    CACHE_DIR,
    TORCH_BACKEND,
    TORCH_INDEX_URL,
)
ENVIRONMENT = (
    WITH,
    OVERRIDE,
    *INDEX,
    PYTHON,
    NO_PYTHON_DOWNLOADS,
    INHERIT,
    EXCLUDE_NEWER,
    PRE,
    ALLOW_SDIST,
)
PROBING = (REPRO, PROBE, ENV, TIMEOUT, NATIVE_BACKTRACE, RESULTS, KEEP_ENVS, JSON)
SEARCH = (JOBS, REPEAT, CONFIDENCE, PROBABILISTIC, MAX_PROBES)  # with cli/execflags.EXECUTION


def attach(parser: argparse.ArgumentParser, *opts: Opt | Iterable[Opt]) -> None:
    for o in opts:
        for one in (o,) if isinstance(o, Opt) else o:
            one.add(parser)
