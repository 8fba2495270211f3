"""The subcommands: one ``Sub`` each, its texts and the options it takes (each declared once:
cli/flags.py, cli/ownflags.py, and the executors' in exec/kinds/), in the order ``--help``
lists them. cli/parser.py builds the parser from ``SUBCOMMANDS``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from envbisect.cli import flags as o
from envbisect.cli import ownflags as w
from envbisect.exec import kinds
from envbisect.optionspec import Completes, Option


@dataclass(frozen=True, slots=True, kw_only=True)
class Sub:
    """A subcommand: its ``--help`` texts and what it takes, in the order ``--help`` lists them
    (within each group of cli/helpfmt.py)."""

    name: str
    help: str
    description: str
    usage: str | None = None
    takes: tuple[Option[Any] | tuple[Option[Any], ...], ...] = ()


def _dry(what: str) -> str:
    """``--dry-run``'s help, said of what this command plans."""
    return (
        f"plan {what} first, print the plans (--json: with their pins and conflicts), build nothing"
    )


DRY_RUN_RUN = o.DRY_RUN.but(help=_dry("both ends' environments"))
DRY_RUN_PROBE = o.DRY_RUN.but(help=_dry("the one environment"))
DRY_RUN_REPRO = o.DRY_RUN.but(help=_dry("the report's environment, as resolved for this machine"))
DRY_RUN_LOCK = o.DRY_RUN.but(help=_dry("the newest environment and where the search starts"))

# Where probes run, and what each executor takes (exec/kinds/: each declares its own).
EXECUTION = kinds.options()

# The commands whose -v prints uv's and the probes' output: they build environments.
BUILDS = frozenset({"run", "commits", "probe", "repro", "diff", "lock", "matrix"})

RUN = Sub(
    name="run",
    help="bisect one package's versions in fresh uv environments",
    usage="envbisect run (--package NAME | --by-date) [options] "
    "[--repro FILE | --probe NAME | -- CMD ARGS...]",
    description="Find the first bad (or first fixed) version of one package: each probe is "
    "a fresh uv virtualenv with NAME==V and the --with requirements, the repro run in it. "
    "With no repro, built-in probes for the package run (import, datasets-json, lora-step; "
    "every probe: --probe).",
    takes=(
        w.PACKAGE,
        w.BY_DATE,
        w.GOOD,
        w.BAD,
        o.ANY_FAILURE,
        o.PINS,
        o.EXTRAS,
        w.BASELINE,
        w.REST,
        o.SEARCH,
        EXECUTION,
        o.ENVIRONMENT,
        o.PROBING,
        DRY_RUN_RUN,
        o.COMMITS,
        o.REPO,
        o.GOOD_REF,
        o.BAD_REF,
        o.BUILD_TIMEOUT,
    ),
)
COMMITS = Sub(
    name="commits",
    help="bisect a package's commits between two refs, each built from source",
    usage="envbisect commits --package NAME --good REF --bad REF [--repo URL] [options] "
    "[--repro FILE | --probe NAME | -- CMD ARGS...]",
    description="Find the first bad commit of one package between two refs (tags, "
    "branches, commit ids, or release versions mapped to their tags): the first-parent "
    "commits, oldest first, each built from source with uv into a fresh environment whose "
    "rest is held fixed (as in the good release's environment, or as uv resolves it for "
    "the good commit). A commit that does not build is untestable: skipped, never bad.",
    takes=(
        w.PACKAGE.but(required=True, help="the package built from its commits"),
        w.GOOD.but(metavar="REF", required=True, help="a ref (or release version) that works"),
        w.BAD.but(metavar="REF", required=True, help="a ref (or release version) that fails"),
        o.REPO,
        o.BUILD_TIMEOUT,
        o.ANY_FAILURE,
        o.SEARCH,
        EXECUTION,
        o.WITH,
        o.INDEX,
        o.PYTHON,
        o.NO_PYTHON_DOWNLOADS,
        o.ALLOW_SDIST,
        o.PROBING,
    ),
)
PROBE = Sub(
    name="probe",
    help="build one environment and run probes in it",
    usage="envbisect probe (--with REQ... | --pins SOURCE | --lock FILE) [options] "
    "(--probe NAME | --repro FILE | -- CMD...)",
    description="The quickest way to try one environment: build it, run the probes, print "
    "each outcome, record it in the store. Exit 0 when it passes, 4 when it does not.",
    takes=(
        o.PINS,
        o.EXTRAS,
        w.LOCK,
        o.REPEAT.but(help="run the probes N times in the environment and say how many runs failed"),
        o.ENVIRONMENT,
        o.PROBING,
        DRY_RUN_PROBE,
    ),
)
REPRO = Sub(
    name="repro",
    help="reproduce a bug report: build its environment here, run its repro, compare",
    usage="envbisect repro REPORT [options]",
    description="REPORT is a bug report in Markdown (a GitHub issue's text saved to a "
    "file, or - for stdin): its environment block (llamafactory-cli env, transformers "
    "env, pip freeze, conda list, collect_env...) is built for this machine, its first "
    "Python code block (or its llamafactory-cli train CONFIG.yaml command with the YAML "
    "block) is run there, and the failure seen is compared with the one the report shows. "
    "Exit 0: reproduced (the same failure); 4: not reproduced (it passes, or fails "
    "another way); 1: it cannot be tried here (another OS, no GPU for a CUDA repro, a "
    "download it needs, an environment that cannot be built). The next commands to run "
    "(lock, run) follow the answer.",
    takes=(
        o.opt(
            "report", metavar="REPORT", path=Completes.FILE, help="a Markdown file, or - for stdin"
        ),
        o.ENVIRONMENT,
        o.REPEAT,
        EXECUTION,
        o.ENV,
        o.TIMEOUT,
        o.NATIVE_BACKTRACE,
        o.RESULTS,
        o.KEEP_ENVS,
        o.JSON,
        o.ALLOW_DOWNLOAD,
        DRY_RUN_REPRO,
    ),
)
PINS = Sub(
    name="pins",
    help="print what a pin source asks for, and what applies to the target",
    description="Read a pin source (a project folder, pyproject.toml, requirements file, "
    "pylock.toml, installed:PYTHON, a released distribution such as llamafactory==0.9.5, "
    "an environment report or a Markdown file holding one, - for stdin, or a PEP 723 "
    "script) and print its requirements.",
    takes=(
        o.opt("source", metavar="SOURCE", path=Completes.FILE),
        o.EXTRAS.but(help="optional-dependency groups to select"),
        o.TARGET_PYTHON,
        o.PLATFORM,
        o.INDEX,
        o.JSON,
    ),
)
VERSIONS = Sub(
    name="versions",
    help="list a package's versions: upload date, installable on the target, in range",
    description="Every version of PACKAGE on the index, whether a file installs on the "
    "target, whether the pins allow it, and why each excluded one is excluded.",
    takes=(
        o.opt("package", metavar="PACKAGE"),
        o.PINS,
        o.EXTRAS,
        o.PRE.but(help="do not exclude pre-releases"),
        o.ALLOW_SDIST.but(help="count an sdist as installable"),
        o.TARGET_PYTHON,
        o.PLATFORM,
        o.INDEX,
        o.JSON,
    ),
)
DIFF = Sub(
    name="diff",
    help="find the package (or packages) between a good and a bad environment",
    usage="envbisect diff GOOD BAD [options] (--repro FILE | --probe NAME | -- CMD...)",
    description="GOOD and BAD are lockfiles, pylock.toml files, installed:PYTHON or pin "
    "sources. Delta debugging over the changed packages finds the minimal set that brings "
    "the failure (an interaction when it takes several), then each culprit's first bad "
    "version.",
    takes=(
        o.opt("good", metavar="GOOD", path=Completes.FILE),
        o.opt("bad", metavar="BAD", path=Completes.FILE),
        o.ANY_FAILURE.but(help="count any failure as the failure, not only one like BAD's"),
        o.OVERRIDE,
        o.JOBS,
        o.REPEAT,
        EXECUTION,
        o.INDEX,
        o.PYTHON,
        o.NO_PYTHON_DOWNLOADS,
        o.PROBING,
    ),
)
LOCK = Sub(
    name="lock",
    help="the newest environment your pins allow in which the repro passes, proven",
    usage="envbisect lock (--pins SOURCE... | --with REQ...) [--from LOCK] [options] "
    "(--repro FILE | --probe NAME | -- CMD...)",
    description="Resolve the newest environment the requirements allow and probe it. When "
    "it fails, find the release that broke it (against --from LOCK, --good-date, or the "
    "environment as of the newest exact pin's upload), hold that package below it, and "
    "resolve again, until an environment passes. Each constraint is proven (the version "
    "below passes and the first bad one fails, the rest held) and kept only while it is "
    "needed. Writes requirements.txt (hash-pinned), pylock.toml, constraints.txt and "
    "report.md. Exit 0 with a lock, 1 when there is none.",
    takes=(
        o.PINS,
        o.EXTRAS,
        w.FROM_LOCK,
        w.GOOD_DATE,
        w.STRATEGY,
        w.NO_PROJECT,
        o.ANY_FAILURE.but(help="count any failure as the failure, not only one like the newest's"),
        o.WITH,
        o.OVERRIDE,
        o.INDEX,
        o.PYTHON,
        o.NO_PYTHON_DOWNLOADS,
        o.INHERIT,
        o.PRE,
        o.JOBS,
        o.REPEAT,
        EXECUTION,
        o.PROBING,
        DRY_RUN_LOCK,
    ),
)
MATRIX = Sub(
    name="matrix",
    help="run a compatibility matrix (matrices/*.toml) and publish its tables",
    description="Every cell a fresh uv environment probed for real, through the same store "
    "as run (an interrupted matrix resumes). Unless --full, rows are taken to be monotone: "
    "their ends are probed, agreeing ends make the cells between inferred, disagreeing "
    "ends are bisected. Tables go to DIR/<matrix>/.",
    takes=(
        o.opt("file", metavar="FILE", path=Completes.FILE, help="a matrices/*.toml file"),
        o.JOBS.but(help="cells probed at once, one per row (default 1)"),
        EXECUTION,
        o.ENV.but(
            help="set NAME=VALUE for every cell's probes (repeatable; interpreter "
            "variables from your shell never reach them): part of what was probed, and "
            "recorded in DIR/<matrix>/run.json"
        ),
        w.FULL,
        w.MAX_CELLS,
        o.OVERRIDE,
        o.FIND_LINKS.but(
            help="a folder of wheels of this machine (repeatable): replaces "
            "the file's find_links and stands in for its torch_backend index; default: "
            "your settings' find-links (pip.conf, uv.toml, UV_FIND_LINKS)"
        ),
        o.NO_CONFIG_LINKS,
        o.RESULTS.but(help="the store and the published tables (default ./results)"),
        o.OFFLINE.but(help="no network: metadata and packages from the caches"),
        o.REFRESH,
        o.REFRESH_PACKAGE.but(
            help="revalidate NAME's cached index pages (repeatable; --update does it for "
            "the axes' packages)"
        ),
        o.METADATA_CACHE,
        o.JSON,
        o.DRY_RUN.but(
            help="plan every cell it would build (with --update: the new cells, and list those "
            "it would recheck and those that leave), build nothing"
        ),
        w.UPDATE,
        w.RECHECK,
    ),
)
PUBLISH = Sub(
    name="publish",
    help="regenerate a matrix's tables, pictures and lockfiles from the store",
    description="Writes DIR/<matrix>/table.md, table.html, heatmap.svg, results.json, "
    "results.csv, a lockfile per passing cell and the recommended (newest passing) one.",
    takes=(
        o.opt(
            "files",
            nargs="*",
            metavar="FILE",
            path=Completes.FILE,
            help="matrices/*.toml files (default: all of matrices/)",
        ),
        o.RESULTS,
        o.FIND_LINKS.but(
            help="a folder of wheels of this machine (repeatable), as for "
            "matrix: the lockfiles name the file's public indexes, each file from the "
            "folder checked there by hash"
        ),
        o.NO_CONFIG_LINKS,
        o.JSON.but(help="print the files written as one JSON object on stdout"),
        o.OFFLINE.but(help="metadata from the cache only"),
        o.REFRESH,
        o.METADATA_CACHE,
    ),
)
CI_TEMPLATE = Sub(
    name="ci-template",
    help="write a GitHub Actions workflow that keeps the published tables current",
    description="A scheduled workflow: for each matrices/*.toml, envbisect matrix FILE "
    "--update (new cells probed, old ones rechecked after a while), then envbisect "
    "publish, then a pull request with the changed results, its body what is new since "
    "the last publish. uv's cache and envbisect's metadata cache are kept between runs.",
    takes=(w.OUTPUT, w.INSTALL),
)
ENV = Sub(
    name="env",
    help="report on an environment (versions, torch/CUDA build, driver, GPUs) and check it",
    description="The environment report maintainers ask for, with checks that each come "
    "with a fix.",
    takes=(
        o.PYTHON.but(
            metavar="PATH",
            path=Completes.FILE,
            env=None,
            uv_rules=False,
            key=None,
            help="the interpreter to report on (default: the active virtualenv's, VIRTUAL_ENV "
            "or ./.venv, else the one running envbisect)",
        ),
        w.QUICK,
        o.JSON,
    ),
)
CHECK = Sub(
    name="check",
    help="check a bug report's environment (or this machine) offline: findings, each fixed",
    usage="envbisect check (REPORT... | --here) [options]",
    description="REPORT is a bug report in Markdown (or - for stdin) with its environment "
    "block (llamafactory-cli env, transformers env, collect_env, pip freeze...). Offline, "
    "nothing built: versions off the release's pins (LLaMA-Factory's per stage), torch's "
    "CUDA build against the driver and the GPU, a CPU torch where a GPU is named, "
    "bitsandbytes and flash-attn against torch and CUDA, combinations the published tables "
    "show failing. Each finding names the report's lines it rests on, a command line that "
    "fixes it and the envbisect command that proves the fix. Exit 0: no finding; 1: "
    "findings.",
    takes=(
        o.opt(
            "check_report",
            nargs="*",
            path=Completes.FILE,
            metavar="REPORT",
            help="a Markdown or text file, - for stdin, or a folder of them; several: one "
            "line each, then the findings, then the count",
        ),
        w.HERE,
        w.ONLINE,
        o.INDEX,
        o.RESULTS.but(
            help="published tables to read besides those envbisect ships (default ./results, "
            "when there)"
        ),
        o.JSON,
    ),
)
WHY = Sub(
    name="why",
    help="name the release that removed or changed what a traceback names, and the fixes",
    usage="envbisect why INPUT [options]",
    description="Reads a failure's text (a bug report, a log, a traceback; - for stdin) for "
    "what it names: a name that cannot be imported, a module not found, a missing "
    "attribute, a call that no longer fits. For each, the distribution that ships it and "
    "the one whose code made the import or the call are read release by release from "
    "their wheels on the index (a file list and one module each, by range requests; "
    "nothing built, nothing installed): the first release that removed or changed it, the "
    "first that brought it back or caught up, and the fix on each side. The versions the "
    "text states (an environment block, pip freeze, pip show) say which side to move. "
    "Exit 0: no finding; 1: findings.",
    takes=(
        o.opt(
            "why_input",
            metavar="INPUT",
            path=Completes.FILE,
            help="a file, the failure's text itself, or - for stdin",
        ),
        o.switch(
            "--prove",
            help="build the two environments that show each finding's first fix (the last "
            "good release passes, the first bad one fails, the text's other versions held) "
            "and say what each did",
        ),
        o.PYTHON.but(
            dest="why_python",
            env=None,
            uv_rules=False,
            key=None,
            metavar="VERSION",
            help="the Python the failure ran on, e.g. 3.10 (default: as the text's paths, "
            "environment block or prose say, else this one's)",
        ),
        o.INDEX,
        o.JSON,
    ),
)
COMPLETION = Sub(
    name="completion",
    help="print a shell completion script (bash, zsh, tcsh, fish or powershell)",
    description="Prints a completion script made from envbisect's own parser (shtab): "
    "e.g. envbisect completion bash > ~/.local/share/bash-completion/completions/envbisect",
    takes=(o.opt("shell", choices=("bash", "zsh", "tcsh", "fish", "powershell")),),
)

# In the order --help lists them.
SUBCOMMANDS = (
    RUN,
    COMMITS,
    PROBE,
    REPRO,
    PINS,
    VERSIONS,
    DIFF,
    LOCK,
    MATRIX,
    PUBLISH,
    CI_TEMPLATE,
    ENV,
    CHECK,
    WHY,
    COMPLETION,
)
