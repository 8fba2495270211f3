"""Every command-line option, declared once, and attached to the subcommands that take it.

(nox's ``_option_set`` and pip's ``cmdoptions`` habit.) Each option is an ``Option`` record
(optionspec.py): its flags, type, default, help, ``--help`` group, and where it has them its
``[tool.envbisect]`` key and the environment variable that stands for it. A subcommand lists
the options it takes (cli/parser.py); the parser, the table's reader (cli/projectconf.py),
``-v``'s origin line, completion and the docs' reference are made from these records, and the
modes read the resolved values by record (cli/readflags.py), never by name. An option may be
attached with other words where the same flag means the same thing (``Option.but``: ``--python``
of ``env``, ``--package`` of ``commits``). Each executor declares its own (exec/kinds/).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from envbisect.optionspec import (
    Completes,
    Group,
    Kind,
    Option,
    count,
    jobs,
    probability,
    seconds,
)

DEFAULT_INDEX = "https://pypi.org/simple"
FILE, DIR = Completes.FILE, Completes.DIR
WHAT, INDEXES, ENVIRONMENTS = Group.WHAT, Group.INDEXES, Group.ENVIRONMENTS
SEARCH_GROUP = Group.SEARCH


def opt(*flags: str, **kw: Any) -> Option[Any]:
    """An option of these flags (a name without ``-``: a positional argument); its ``dest`` is
    the long flag's, unless given."""
    if flags and not flags[0].startswith("-"):
        return Option(dest=flags[0], kind=Kind.POSITIONAL, **kw)
    long = next(f for f in flags if f.startswith("--"))
    kw.setdefault("dest", long[2:].replace("-", "_"))
    return Option(flags=flags, **kw)


def switch(*flags: str, **kw: Any) -> Option[bool]:
    """``--flag``: True when given."""
    return opt(*flags, kind=Kind.SWITCH, default=False, **kw)


def many(*flags: str, **kw: Any) -> Option[list[str]]:
    """A repeatable option: each use adds one value to a list (none given: [])."""
    return opt(*flags, kind=Kind.MANY, default=[], **kw)


# -- what goes into each environment, and where it comes from ------------------------------------

WITH = many(
    "--with",
    group=WHAT,
    dest="with_reqs",
    metavar="REQ",
    help="a requirement of every environment (repeatable)",
)
OVERRIDE = many(
    "--override",
    path=FILE,
    dest="overrides",
    metavar="REQ|FILE",
    help="as uv's: every requirement on the project (the pins', any package's) takes these "
    "versions, e.g. transformers==4.52.4 where the release caps it lower; or a file of "
    "such lines (repeatable)",
)
INHERIT = switch(
    "--inherit",
    help="each environment sees the --python interpreter's own packages (a machine's CUDA "
    "torch, transformers...): planned at the versions installed there and never downloaded "
    "or installed; what the environment adds goes in front of them",
)
PYTHON = opt(
    "-p",  # as uv's
    "--python",
    group=ENVIRONMENTS,
    env="UV_PYTHON",
    uv_rules=True,
    said="envbisect: Python {value} (from {where}; --python to choose another)",
    key="python",
    key_what="a version or a path",
    metavar="VERSION",
    help="the environments' interpreter: a version (uv installs one missing) or a path",
)
NO_PYTHON_DOWNLOADS = opt(
    "--no-python-downloads",
    dest="python_downloads",
    kind=Kind.OFF,
    default=True,
    help="never ask uv to install a missing --python (as UV_PYTHON_DOWNLOADS=never)",
)
EXCLUDE_NEWER = opt(
    "--exclude-newer",
    group=ENVIRONMENTS,
    env="UV_EXCLUDE_NEWER",
    metavar="DATE",
    help="ignore files uploaded after DATE: YYYY-MM-DD, RFC 3339 or a span (7 days, P7D); "
    "default: UV_EXCLUDE_NEWER, or a --repro script's [tool.uv] exclude-newer",
)
PRE = switch("--pre", group=ENVIRONMENTS, help="include pre-releases")
ALLOW_SDIST = switch(
    "--allow-sdist",
    group=ENVIRONMENTS,
    help="let uv build sdists (runs their setup.py; wheels only by default)",
)
PINS = many(
    "--pins",
    group=WHAT,
    path=FILE,
    metavar="SOURCE",
    help="the project's pins: a folder, pyproject.toml, requirements file, pylock.toml, "
    "installed:PYTHON, name==version from the index, an environment report (pip freeze, pip "
    "list, conda list, llamafactory-cli env, transformers env, accelerate env, torch's "
    "collect_env; a Markdown file that holds one; - for stdin: its Python and torch build "
    "set --python and --torch-backend), or a PEP 723 script (repeatable)",
)
EXTRAS = opt("--extras", group=WHAT, metavar="A,B", help="optional-dependency groups of the pins")
PLATFORM = opt(
    "--platform",
    group=ENVIRONMENTS,
    metavar="TAG",
    help="another platform, as a wheel tag: manylinux_2_28_x86_64, macosx_11_0_arm64, win_amd64...",
)

INDEX_URL = opt(
    "--index-url",
    group=INDEXES,
    key="index-url",
    key_what="a URL",
    key_for_indexes=True,
    metavar="URL",
    help=f"the main index (default: as uv's settings, then pip's, name it; else {DEFAULT_INDEX})",
)
EXTRA_INDEX_URL = many(
    "--extra-index-url",
    group=INDEXES,
    key="extra-index-url",
    key_what="a list of URLs",
    key_for_indexes=True,
    metavar="URL",
    help="another index, consulted before the main one as uv does (repeatable)",
)
FIND_LINKS = many(
    "--find-links",
    group=INDEXES,
    path=DIR,
    key="find-links",
    key_what="a list of folders or URLs",
    key_relative=True,
    key_for_indexes=True,
    metavar="DIR",
    help="a folder of wheels (repeatable)",
)
NO_CONFIG = switch(
    "--no-config",
    group=INDEXES,
    help="ignore the index settings of the environment (UV_INDEX_URL, PIP_INDEX_URL...), "
    "uv.toml, pyproject.toml's [tool.uv] and pip.conf: only the index flags count",
)
OFFLINE = switch(
    "--offline",
    group=INDEXES,
    help="no network: metadata from the cache, packages from uv's cache (run once online first)",
)
REFRESH = switch(
    "--refresh",
    group=INDEXES,
    help="revalidate every cached index page whatever its age (uv's --refresh): see a release "
    "published minutes ago; every build asks uv for its pages again",
)
REFRESH_PACKAGE = many(
    "--refresh-package",
    group=INDEXES,
    metavar="NAME",
    help="revalidate NAME's cached index pages only (repeatable)",
)
COLOR = opt(
    "--color",
    group=Group.OUTPUT,
    choices=("auto", "always", "never"),
    suppress=True,
    help="colour on stderr: auto (a terminal, unless NO_COLOR is set; FORCE_COLOR forces it), "
    "always, never",
)
CACHE_DIR = opt(
    "--cache-dir",
    group=INDEXES,
    path=DIR,
    type=Path,
    metavar="DIR",
    help="the metadata cache (default $ENVBISECT_CACHE_DIR, else ~/.cache/envbisect)",
)
TORCH_BACKEND = opt(
    "--torch-backend",
    group=INDEXES,
    env="UV_TORCH_BACKEND",
    key="torch-backend",
    key_what="a variant",
    metavar="VARIANT",
    help="take torch, torchvision, torchaudio from PyTorch's index for this "
    "variant: cpu, cu118, cu121, cu124, cu126, cu128, rocm6.2..., or auto "
    "(from nvidia-smi); none: from the main index like any package (default: "
    "UV_TORCH_BACKEND; an environment report's torch build sets it otherwise)",
)
TORCH_INDEX_URL = opt(
    "--torch-index-url",
    group=INDEXES,
    metavar="URL",
    help="a mirror laid out like https://download.pytorch.org/whl (variant folders)",
)

# -- what runs in each environment, and what is kept -------------------------------------------

REPRO = opt(
    "--repro",
    group=WHAT,
    path=FILE,
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
    group=WHAT,
    key="probe",
    key_what="a list of probes",
    dest="probes",
    metavar="NAME[:ARGS]",
    help="a built-in probe: " + PROBES + " (repeatable; the environment fails if any fails)",
)
ENV = many(
    "--env",
    group=WHAT,
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
    group=WHAT,
    key="timeout",
    key_what="seconds, 1 or more",
    type=seconds,
    default=600.0,
    metavar="SECONDS",
    help="kill a probe after this long (default 600)",
)
NATIVE_BACKTRACE = opt(
    "--native-backtrace",
    group=WHAT,
    choices=("auto", "always", "never"),
    default="auto",
    help="re-run a crash under gdb for its native backtrace (default auto: when gdb is installed)",
)
RESULTS = opt(
    "--results",
    group=Group.OUTPUT,
    path=DIR,
    key="results",
    key_what="a folder",
    key_relative=True,
    type=Path,
    default=Path("results"),
    metavar="DIR",
    help="where the store, reports and lockfiles go (default ./results)",
)
KEEP_ENVS = switch(
    "--keep-envs",
    group=ENVIRONMENTS,
    help="keep each environment after its probe (under DIR/.envs)",
)
JSON = switch("--json", group=Group.OUTPUT, help="print one JSON object on stdout")
# Before or after the subcommand; SUPPRESS so that the subcommand's default does not undo the
# main parser's value.
QUIET = switch(
    "-q",
    "--quiet",
    group=Group.OUTPUT,
    suppress=True,
    help="print the answer only (errors still go to stderr)",
)
VERBOSE = switch(
    "-v",
    "--verbose",
    group=Group.OUTPUT,
    suppress=True,
    help="also say where each option's value came from, and print uv's output and each "
    "probe's output",
)
# -v of a command that builds nothing: what it says (cli/parser.py attaches one or the other).
VERBOSE_READS = VERBOSE.but(help="also say where each option's value came from")

# -- how a search runs -----------------------------------------------------------------------

JOBS = opt(
    "--jobs",
    group=SEARCH_GROUP,
    key="jobs",
    key_what="a whole number from 1 to 256",
    type=jobs,
    default=1,
    metavar="K",
    help="probe K environments at once, built and run in parallel (a bisection splits "
    "its range K+1 ways: about log_{K+1}(n) rounds; default 1)",
)
REPEAT = opt(
    "--repeat",
    group=SEARCH_GROUP,
    type=count,
    default=1,
    metavar="N",
    help="run the repro N times in each environment: a failure in any run marks it, "
    "the fail rate is recorded; runs that disagree switch a bisection to a "
    "probabilistic search",
)
ANY_FAILURE = switch(
    "--any-failure",
    group=WHAT,
    help="count any failure as bad, not only one like the bad end's",
)
CONFIDENCE = opt(
    "--confidence",
    group=SEARCH_GROUP,
    type=probability,
    default=0.95,
    metavar="P",
    help="probabilistic search: stop when one boundary has this probability (default 0.95)",
)
PROBABILISTIC = switch(
    "--probabilistic",
    group=SEARCH_GROUP,
    help="start with the probabilistic search (the repro is known to be flaky)",
)
MAX_PROBES = opt(
    "--max-probes",
    group=SEARCH_GROUP,
    type=count,
    metavar="N",
    help="probabilistic search: give up after N probes (default: about 20 runs "
    "per bit of the range)",
)

ALLOW_DOWNLOAD = switch(
    "--allow-download",
    help="let the repro download the models and data sets it names from the Hugging Face "
    "Hub (by default a report whose repro needs a download says so and is not run)",
)
# -- past the release: its commits ------------------------------------------------------------

COMMITS = switch(
    "--commits",
    group=SEARCH_GROUP,
    help="after the first bad release, bisect the first-parent commits between the last good "
    "release's tag and the first bad one's: each built from source with uv, the rest of the "
    "environment held as in the last good release's probe",
)
REPO = opt(
    "--repo",
    group=SEARCH_GROUP,
    metavar="URL",
    help="the package's git repository: a URL or the path of a local clone (default: the "
    "Source, Repository or Homepage URL of its metadata, on a known code host); mirrored "
    "once under the cache folder, fetched on each run (--offline: used as it is)",
)
GOOD_REF = opt(
    "--good-ref",
    group=SEARCH_GROUP,
    metavar="REF",
    help="the last good release's commit (tag, branch or commit id; default: its tag: "
    "v1.2.0, 1.2.0, NAME-1.2.0 or NAME-v1.2.0)",
)
BAD_REF = opt(
    "--bad-ref",
    group=SEARCH_GROUP,
    metavar="REF",
    help="the first bad release's commit (default: its tag, as --good-ref)",
)
BUILD_TIMEOUT = opt(
    "--build-timeout",
    group=ENVIRONMENTS,
    type=seconds,
    metavar="SECONDS",
    help="cut a build from source after this long: that commit is untestable (default: no limit)",
)

DRY_RUN = switch(
    "--dry-run",
    group=Group.OUTPUT,
    help="plan the environments it would build first, print the plans (--json: with their "
    "pins and conflicts), build nothing",
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
SEARCH = (JOBS, REPEAT, CONFIDENCE, PROBABILISTIC, MAX_PROBES)  # with the executors' (exec/kinds/)
