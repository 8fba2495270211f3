"""The command line's grammar: one ``Sub`` per subcommand (its texts and the options it takes,
each declared once in cli/flags.py), and ``build_parser`` that puts them together.

Who does what: this module says what may be typed; main.py runs the command it names and
turns errors into exit codes. Nothing here is imported by a command, so ``--help`` stays fast;
the reference docs are made from ``build_parser()`` (docs/hooks.py).
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NoReturn, cast

from envbisect import __version__
from envbisect.cli import execflags as x
from envbisect.cli import flags as o
from envbisect.cli import helpfmt
from envbisect.errors import UsageError

if TYPE_CHECKING:
    Subcommands = argparse._SubParsersAction[argparse.ArgumentParser]


class WholeParserNeeded(Exception):
    """An error at the top of a parser made for one subcommand: its usage line would name that
    one alone, so the whole parser reads the command line again (and says it as ever)."""


class _Parser(argparse.ArgumentParser):
    made_for: str | None = None  # the one subcommand this top-level parser was made for
    json_errors = False  # --json is on the command line: the error object on stdout too

    def __init__(self, *args: Any, **kw: Any) -> None:
        # No abbreviations (as uv): ``--index`` is not taken for ``--index-url``.
        super().__init__(*args, **{**kw, "allow_abbrev": False})

    def error(self, message: str) -> NoReturn:
        if self.made_for is not None:
            raise WholeParserNeeded(message)
        from envbisect.cli.display import report_error  # rich: only when there is an error

        hint = suggest(message, self) or f"see {self.prog} --help"
        report_error(UsageError(message, hint=hint), as_json=self.json_errors)
        raise SystemExit(2)


def suggest(message: str, parser: argparse.ArgumentParser, unknown: Sequence[str] = ()) -> str:
    """``did you mean ...?`` for a misspelled subcommand, choice or flag (difflib), or ""."""
    import difflib
    import re

    choice = re.search(r"invalid choice: '([^']*)' \(choose from (.*)\)", message)
    if choice:
        word = choice.group(1)
        options = [c.strip(" '\"") for c in choice.group(2).split(",")]
    else:
        flags = [f for f in unknown if f.startswith("--")] or [
            w for w in message.split() if w.startswith("--")
        ]
        if not flags:
            return ""
        word = flags[0].split("=", 1)[0].rstrip(":,.")
        options = [s for a in parser._actions for s in a.option_strings if s.startswith("--")]
    close = difflib.get_close_matches(word, options, n=1, cutoff=0.6)
    if not close or close[0] == word:  # a flag that exists is not misspelt: its value is wrong
        return ""
    return f"did you mean {close[0]}? (see {parser.prog} --help)"


@dataclass(frozen=True, slots=True, kw_only=True)
class Sub:
    """A subcommand: its ``--help`` texts and what it takes, in the order ``--help`` lists them
    (within each group of cli/helpfmt.py)."""

    name: str
    help: str
    description: str
    usage: str | None = None
    takes: tuple[o.Opt | tuple[o.Opt, ...], ...] = ()

    def add(self, sub: Subcommands) -> argparse.ArgumentParser:
        one = sub.add_parser(
            self.name, help=self.help, usage=self.usage, description=self.description
        )
        o.attach(one, *self.takes)
        return one


def _dry(what: str) -> str:
    """``--dry-run``'s help, said of what this command plans."""
    return (
        f"plan {what} first, print the plans (--json: with their pins and conflicts), build nothing"
    )


DRY_RUN_RUN = o.DRY_RUN.but(help=_dry("both ends' environments"))
DRY_RUN_PROBE = o.DRY_RUN.but(help=_dry("the one environment"))
DRY_RUN_REPRO = o.DRY_RUN.but(help=_dry("the report's environment, as resolved for this machine"))
DRY_RUN_LOCK = o.DRY_RUN.but(help=_dry("the newest environment and where the search starts"))

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
    takes=(o.PACKAGE, o.BY_DATE, o.GOOD, o.BAD, o.ANY_FAILURE, o.PINS, o.EXTRAS, o.BASELINE,
           o.REST, o.SEARCH, x.EXECUTION, o.ENVIRONMENT, o.PROBING, DRY_RUN_RUN, o.COMMITS,
           o.REPO, o.GOOD_REF, o.BAD_REF, o.BUILD_TIMEOUT),
)  # fmt: skip
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
        o.PACKAGE.but(required=True, help="the package built from its commits"),
        o.GOOD.but(metavar="REF", required=True, help="a ref (or release version) that works"),
        o.BAD.but(metavar="REF", required=True, help="a ref (or release version) that fails"),
        o.REPO, o.BUILD_TIMEOUT, o.ANY_FAILURE, o.SEARCH, x.EXECUTION, o.WITH, o.INDEX, o.PYTHON,
        o.NO_PYTHON_DOWNLOADS, o.ALLOW_SDIST, o.PROBING,
    ),
)  # fmt: skip
PROBE = Sub(
    name="probe",
    help="build one environment and run probes in it",
    usage="envbisect probe (--with REQ... | --pins SOURCE | --lock FILE) [options] "
    "(--probe NAME | --repro FILE | -- CMD...)",
    description="The quickest way to try one environment: build it, run the probes, print "
    "each outcome, record it in the store. Exit 0 when it passes, 4 when it does not.",
    takes=(
        o.PINS, o.EXTRAS, o.LOCK,
        o.REPEAT.but(
            help="run the probes N times in the environment and say how many runs failed"
        ),
        o.ENVIRONMENT, o.PROBING, DRY_RUN_PROBE,
    ),
)  # fmt: skip
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
        o.opt("report", metavar="REPORT", help="a Markdown file, or - for stdin"),
        o.ENVIRONMENT, o.REPEAT, x.EXECUTION, o.ENV, o.TIMEOUT, o.NATIVE_BACKTRACE, o.RESULTS,
        o.KEEP_ENVS, o.JSON, o.ALLOW_DOWNLOAD, DRY_RUN_REPRO,
    ),
)  # fmt: skip
PINS = Sub(
    name="pins",
    help="print what a pin source asks for, and what applies to the target",
    description="Read a pin source (a project folder, pyproject.toml, requirements file, "
    "pylock.toml, installed:PYTHON, a released distribution such as llamafactory==0.9.5, "
    "an environment report or a Markdown file holding one, - for stdin, or a PEP 723 "
    "script) and print its requirements.",
    takes=(
        o.opt("source", metavar="SOURCE"),
        o.EXTRAS.but(help="optional-dependency groups to select"),
        o.TARGET_PYTHON, o.PLATFORM, o.INDEX, o.JSON,
    ),
)  # fmt: skip
VERSIONS = Sub(
    name="versions",
    help="list a package's versions: upload date, installable on the target, in range",
    description="Every version of PACKAGE on the index, whether a file installs on the "
    "target, whether the pins allow it, and why each excluded one is excluded.",
    takes=(
        o.opt("package", metavar="PACKAGE"),
        o.PINS, o.EXTRAS,
        o.PRE.but(help="do not exclude pre-releases"),
        o.ALLOW_SDIST.but(help="count an sdist as installable"),
        o.TARGET_PYTHON, o.PLATFORM, o.INDEX, o.JSON,
    ),
)  # fmt: skip
DIFF = Sub(
    name="diff",
    help="find the package (or packages) between a good and a bad environment",
    usage="envbisect diff GOOD BAD [options] (--repro FILE | --probe NAME | -- CMD...)",
    description="GOOD and BAD are lockfiles, pylock.toml files, installed:PYTHON or pin "
    "sources. Delta debugging over the changed packages finds the minimal set that brings "
    "the failure (an interaction when it takes several), then each culprit's first bad "
    "version.",
    takes=(
        o.opt("good", metavar="GOOD"),
        o.opt("bad", metavar="BAD"),
        o.ANY_FAILURE.but(help="count any failure as the failure, not only one like BAD's"),
        o.OVERRIDE, o.JOBS, o.REPEAT, x.EXECUTION, o.INDEX, o.PYTHON, o.NO_PYTHON_DOWNLOADS,
        o.PROBING,
    ),
)  # fmt: skip
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
        o.PINS, o.EXTRAS, o.FROM_LOCK, o.GOOD_DATE, o.STRATEGY, o.NO_PROJECT,
        o.ANY_FAILURE.but(
            help="count any failure as the failure, not only one like the newest's"
        ),
        o.WITH, o.OVERRIDE, o.INDEX, o.PYTHON, o.NO_PYTHON_DOWNLOADS, o.INHERIT, o.PRE, o.JOBS,
        o.REPEAT, x.EXECUTION, o.PROBING, DRY_RUN_LOCK,
    ),
)  # fmt: skip
MATRIX = Sub(
    name="matrix",
    help="run a compatibility matrix (matrices/*.toml) and publish its tables",
    description="Every cell a fresh uv environment probed for real, through the same store "
    "as run (an interrupted matrix resumes). Unless --full, rows are taken to be monotone: "
    "their ends are probed, agreeing ends make the cells between inferred, disagreeing "
    "ends are bisected. Tables go to DIR/<matrix>/.",
    takes=(
        o.opt("file", metavar="FILE", help="a matrices/*.toml file"),
        o.JOBS.but(help="cells probed at once, one per row (default 1)"),
        x.EXECUTION,
        o.ENV.but(
            help="set NAME=VALUE for every cell's probes (repeatable; interpreter "
            "variables from your shell never reach them): part of what was probed, and "
            "recorded in DIR/<matrix>/run.json"
        ),
        o.FULL, o.MAX_CELLS, o.OVERRIDE,
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
        o.METADATA_CACHE, o.JSON,
        o.DRY_RUN.but(
            help="plan every cell it would build (with --update: the new cells, and list those "
            "it would recheck and those that leave), build nothing"
        ),
        o.UPDATE, o.RECHECK,
    ),
)  # fmt: skip
PUBLISH = Sub(
    name="publish",
    help="regenerate a matrix's tables, pictures and lockfiles from the store",
    description="Writes DIR/<matrix>/table.md, table.html, heatmap.svg, results.json, "
    "results.csv, a lockfile per passing cell and the recommended (newest passing) one.",
    takes=(
        o.opt("files", nargs="*", metavar="FILE",
              help="matrices/*.toml files (default: all of matrices/)"),
        o.RESULTS,
        o.FIND_LINKS.but(
            help="a folder of wheels of this machine (repeatable), as for "
            "matrix: the lockfiles name the file's public indexes, each file from the "
            "folder checked there by hash"
        ),
        o.NO_CONFIG_LINKS,
        o.JSON.but(help="print the files written as one JSON object on stdout"),
        o.OFFLINE.but(help="metadata from the cache only"),
        o.REFRESH, o.METADATA_CACHE,
    ),
)  # fmt: skip
CI_TEMPLATE = Sub(
    name="ci-template",
    help="write a GitHub Actions workflow that keeps the published tables current",
    description="A scheduled workflow: for each matrices/*.toml, envbisect matrix FILE "
    "--update (new cells probed, old ones rechecked after a while), then envbisect "
    "publish, then a pull request with the changed results, its body what is new since "
    "the last publish. uv's cache and envbisect's metadata cache are kept between runs.",
    takes=(o.OUTPUT, o.INSTALL),
)
ENV = Sub(
    name="env",
    help="report on an environment (versions, torch/CUDA build, driver, GPUs) and check it",
    description="The environment report maintainers ask for, with checks that each come "
    "with a fix.",
    takes=(
        o.PYTHON.but(
            metavar="PATH",
            default=None,
            help="the interpreter to report on (default: the active virtualenv's, VIRTUAL_ENV "
            "or ./.venv, else the one running envbisect)",
        ),
        o.QUICK,
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
            metavar="REPORT",
            help="a Markdown or text file, - for stdin, or a folder of them; several: one "
            "line each, then the findings, then the count",
        ),
        o.HERE,
        o.opt(
            "--online",
            action="store_true",
            help="also read, from each release's wheels on the index, which release removed "
            "or changed what the report's traceback names (envbisect why); without it "
            "nothing is fetched",
        ),
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
        o.opt("why_input", metavar="INPUT", help="a file, the failure's text itself, or - "
              "for stdin"),
        o.opt("--prove", action="store_true",
              help="build the two environments that show each finding's first fix (the last "
              "good release passes, the first bad one fails, the text's other versions held) "
              "and say what each did"),
        o.opt("-p", "--python", dest="why_python", metavar="VERSION",
              help="the Python the failure ran on, e.g. 3.10 (default: as the text's paths, "
              "environment block or prose say, else this one's)"),
        o.INDEX, o.JSON,
    ),
)  # fmt: skip
COMPLETION = Sub(
    name="completion",
    help="print a shell completion script (bash, zsh, tcsh, fish or powershell)",
    description="Prints a completion script made from envbisect's own parser (shtab): "
    "e.g. envbisect completion bash > ~/.local/share/bash-completion/completions/envbisect",
    takes=(o.opt("shell", choices=("bash", "zsh", "tcsh", "fish", "powershell")),),
)

# In the order --help lists them.
SUBCOMMANDS = (RUN, COMMITS, PROBE, REPRO, PINS, VERSIONS, DIFF, LOCK, MATRIX, PUBLISH,
               CI_TEMPLATE, ENV, CHECK, WHY, COMPLETION)  # fmt: skip


def build_parser(only: str | None = None, *, json_errors: bool = False) -> argparse.ArgumentParser:
    """The whole command line: every subcommand and its options (``only``: that subcommand
    alone, for a command line that names it: its options, not all 370, are made).
    ``json_errors``: a usage error also prints the ``--json`` error object on stdout."""
    parser = _Parser(
        prog="envbisect",
        formatter_class=helpfmt.Formatter,
        description="Find which package version broke a "
        "Python environment, prove it, and hand back one that works.",
        epilog=f"docs: {helpfmt.DOCS} (or docs/ in the source: nox -s docs, mkdocs serve)",
    )
    parser.add_argument("-V", "--version", action="version", version=f"envbisect {__version__}")
    o.attach(parser, o.QUIET, o.VERBOSE, o.COLOR)
    # _Parser is an ArgumentParser: Sub.add takes the common type.
    sub = cast("Subcommands", parser.add_subparsers(dest="command", parser_class=_Parser))
    parser.made_for = only
    parser.json_errors = json_errors
    for command in SUBCOMMANDS:
        if only is not None and command.name != only:
            continue
        one = command.add(sub)
        cast(_Parser, one).json_errors = json_errors
        # -q and -v after the subcommand too (envbisect run ... -q), as before it; -v's help
        # as this command means it.
        verbose = o.VERBOSE if command.name in BUILDS else o.VERBOSE_READS
        o.attach(one, o.QUIET, verbose, o.COLOR)
        helpfmt.arrange(one, command.name)
    return parser


_TOP_FLAGS = frozenset({"-q", "--quiet", "-v", "--verbose"})


def named_command(args: Sequence[str], commands: Sequence[str]) -> str | None:
    """The subcommand a command line runs, read as argparse reads it, where its parser alone
    will do: None where the line prints a completion from the whole parser, or has before its
    command anything but -q, -v and --color (``-h``, an abbreviation, a typo)."""
    i = 0
    while i < len(args):
        word = args[i]
        if word == "--color":
            i += 2
        elif word in _TOP_FLAGS or word.startswith("--color="):
            i += 1
        elif word in commands and word != "completion":
            return word  # its --help is its own parser's, the same either way
        else:
            return None
    return None


def subparser(parser: argparse.ArgumentParser, command: str | None) -> argparse.ArgumentParser:
    """The subcommand's parser (for its ``--help`` and its flags), else ``parser``."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction) and command in action.choices:
            return cast(argparse.ArgumentParser, action.choices[command])
    return parser
