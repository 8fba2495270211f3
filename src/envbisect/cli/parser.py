"""The command line's grammar: one ``add_<command>_parser`` per subcommand, each listing the
options it takes (declared once, in options.py), and ``build_parser`` that puts them together.

Who does what: this module says what may be typed; main.py runs the command it names and
turns errors into exit codes. Nothing here is imported by a command, so ``--help`` stays fast;
the reference docs are made from ``build_parser()`` (docs/hooks.py).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, NoReturn, cast

from envbisect import __version__
from envbisect.cli import flags as o
from envbisect.cli import helpfmt
from envbisect.cli.display import print_error
from envbisect.errors import UsageError

if TYPE_CHECKING:
    Subcommands = argparse._SubParsersAction[argparse.ArgumentParser]


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        print_error(UsageError(message, hint=suggest(message, self) or f"see {self.prog} --help"))
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


def add_run_parser(sub: Subcommands) -> None:
    run = sub.add_parser(
        "run",
        help="bisect one package's versions in fresh uv environments",
        usage="envbisect run (--package NAME | --by-date) [options] "
        "[--repro FILE | --probe NAME | -- CMD ARGS...]",
        description="Find the first bad (or first fixed) version of one package: each probe is "
        "a fresh uv virtualenv with NAME==V and the --with requirements, the repro run in it. "
        "With no repro, built-in probes for the package run (import, datasets-json, lora-step).",
    )
    run.add_argument("--package", metavar="NAME", help="the package to bisect")
    run.add_argument(
        "--by-date",
        action="store_true",
        help="bisect the whole environment by date: --good and --bad are dates, each probe "
        "resolves everything as of a release's upload time, and the culprit release is named",
    )
    run.add_argument("--good", metavar="V", help="a version that works (default: an end)")
    run.add_argument("--bad", metavar="V", help="a version that fails (default: an end)")
    o.attach(run, o.ANY_FAILURE, o.PINS, o.EXTRAS)
    run.add_argument(
        "--baseline",
        metavar="SOURCE",
        help="an environment to stay close to: a lockfile, pylock.toml or installed:PYTHON "
        "(the broken environment, typically)",
    )
    run.add_argument(
        "--rest",
        choices=("baseline", "contemporary", "latest"),
        help="the rest of each environment: kept at the baseline where possible, as of the "
        "candidate's upload time, or latest (default: baseline when one is given, "
        "else latest)",
    )
    o.attach(run, o.SEARCH, o.ENVIRONMENT, o.PROBING, o.DRY_RUN)
    o.attach(run, o.COMMITS, o.REPO, o.GOOD_REF, o.BAD_REF, o.BUILD_TIMEOUT)


def add_commits_parser(sub: Subcommands) -> None:
    commits = sub.add_parser(
        "commits",
        help="bisect a package's commits between two refs, each built from source",
        usage="envbisect commits --package NAME --good REF --bad REF [--repo URL] [options] "
        "[--repro FILE | --probe NAME | -- CMD ARGS...]",
        description="Find the first bad commit of one package between two refs (tags, "
        "branches, commit ids, or release versions mapped to their tags): the first-parent "
        "commits, oldest first, each built from source with uv into a fresh environment whose "
        "rest is held fixed (as in the good release's environment, or as uv resolves it for "
        "the good commit). A commit that does not build is untestable: skipped, never bad.",
    )
    commits.add_argument(
        "--package", metavar="NAME", required=True, help="the package built from its commits"
    )
    commits.add_argument(
        "--good", metavar="REF", required=True, help="a ref (or release version) that works"
    )
    commits.add_argument(
        "--bad", metavar="REF", required=True, help="a ref (or release version) that fails"
    )
    o.attach(
        commits,
        o.REPO,
        o.BUILD_TIMEOUT,
        o.ANY_FAILURE,
        o.SEARCH,
        o.WITH,
        o.INDEX,
        o.PYTHON,
        o.ALLOW_SDIST,
        o.PROBING,
    )


def add_probe_parser(sub: Subcommands) -> None:
    probe = sub.add_parser(
        "probe",
        help="build one environment and run probes in it",
        usage="envbisect probe (--with REQ... | --pins SOURCE | --lock FILE) [options] "
        "(--probe NAME | --repro FILE | -- CMD...)",
        description="The quickest way to try one environment: build it, run the probes, print "
        "each outcome, record it in the store. Exit 0 when it passes, 4 when it does not.",
    )
    o.attach(probe, o.PINS, o.EXTRAS)
    probe.add_argument(
        "--lock",
        metavar="FILE",
        help="a lockfile (requirements.txt with == pins, or pylock.toml): exactly that environment",
    )
    o.REPEAT.add(
        probe, help="run the probes N times in the environment and say how many runs failed"
    )
    o.attach(probe, o.ENVIRONMENT, o.PROBING, o.DRY_RUN)


def add_repro_parser(sub: Subcommands) -> None:
    repro = sub.add_parser(
        "repro",
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
    )
    repro.add_argument("report", metavar="REPORT", help="a Markdown file, or - for stdin")
    o.attach(
        repro,
        o.ENVIRONMENT,
        o.REPEAT,
        o.EXECUTION,
        o.ENV,
        o.TIMEOUT,
        o.NATIVE_BACKTRACE,
        o.RESULTS,
        o.KEEP_ENVS,
        o.JSON,
        o.ALLOW_DOWNLOAD,
        o.DRY_RUN,
    )


def add_pins_parser(sub: Subcommands) -> None:
    pins = sub.add_parser(
        "pins",
        help="print what a pin source asks for, and what applies to the target",
        description="Read a pin source (a project folder, pyproject.toml, requirements file, "
        "pylock.toml, installed:PYTHON, a released distribution such as llamafactory==0.9.5, "
        "an environment report or a Markdown file holding one, - for stdin, or a PEP 723 "
        "script) and print its requirements.",
    )
    pins.add_argument("source", metavar="SOURCE")
    o.EXTRAS.add(pins, help="optional-dependency groups to select")
    o.PYTHON.add(pins, help="the target interpreter (a version uv can find, or a path)")
    o.attach(pins, o.PLATFORM, o.INDEX, o.JSON)


def add_versions_parser(sub: Subcommands) -> None:
    versions = sub.add_parser(
        "versions",
        help="list a package's versions: upload date, installable on the target, in range",
        description="Every version of PACKAGE on the index, whether a file installs on the "
        "target, whether the pins allow it, and why each excluded one is excluded.",
    )
    versions.add_argument("package", metavar="PACKAGE")
    o.attach(versions, o.PINS, o.EXTRAS)
    o.PRE.add(versions, help="do not exclude pre-releases")
    o.ALLOW_SDIST.add(versions, help="count an sdist as installable")
    o.PYTHON.add(versions, help="the target interpreter (a version uv can find, or a path)")
    o.attach(versions, o.PLATFORM, o.INDEX, o.JSON)


def add_diff_parser(sub: Subcommands) -> None:
    diff = sub.add_parser(
        "diff",
        help="find the package (or packages) between a good and a bad environment",
        usage="envbisect diff GOOD BAD [options] (--repro FILE | --probe NAME | -- CMD...)",
        description="GOOD and BAD are lockfiles, pylock.toml files, installed:PYTHON or pin "
        "sources. Delta debugging over the changed packages finds the minimal set that brings "
        "the failure (an interaction when it takes several), then each culprit's first bad "
        "version.",
    )
    diff.add_argument("good", metavar="GOOD")
    diff.add_argument("bad", metavar="BAD")
    o.ANY_FAILURE.add(diff, help="count any failure as the failure, not only one like BAD's")
    o.attach(diff, o.JOBS, o.REPEAT, o.EXECUTION, o.INDEX, o.PYTHON, o.PROBING)


def add_lock_parser(sub: Subcommands) -> None:
    lock = sub.add_parser(
        "lock",
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
    )
    o.attach(lock, o.PINS, o.EXTRAS)
    lock.add_argument(
        "--from",
        dest="from_lock",
        metavar="LOCK",
        help="upgrade mode: your working environment (a lockfile, pylock.toml or "
        "installed:PYTHON); take every upgrade that keeps the repro passing",
    )
    lock.add_argument(
        "--good-date",
        metavar="DATE",
        help="a date whose environment passed (default: the upload of the newest exact pin)",
    )
    lock.add_argument(
        "--strategy",
        choices=("auto", "history", "descent"),
        default="auto",
        help="auto (default): each round, hold back the package the failure names (cannot "
        "import name 'x' from 'pkg'), else search by date from the start (or against --from), "
        "following the failures down from the newest environment where no start passes or none "
        "builds; history: the search by date or against --from every round; descent: follow "
        "the failures down from the start",
    )
    lock.add_argument(
        "--no-project",
        action="store_true",
        help="a release named as the pins source (--pins NAME==VERSION) stays out of the lock "
        "(default: the lock holds it)",
    )
    o.ANY_FAILURE.add(lock, help="count any failure as the failure, not only one like the newest's")
    o.attach(
        lock, o.WITH, o.INDEX, o.PYTHON, o.PRE, o.JOBS, o.REPEAT, o.EXECUTION, o.PROBING, o.DRY_RUN
    )


def add_matrix_parser(sub: Subcommands) -> None:
    matrix = sub.add_parser(
        "matrix",
        help="run a compatibility matrix (matrices/*.toml) and publish its tables",
        description="Every cell a fresh uv environment probed for real, through the same store "
        "as run (an interrupted matrix resumes). Unless --full, rows are taken to be monotone: "
        "their ends are probed, agreeing ends make the cells between inferred, disagreeing "
        "ends are bisected. Tables go to DIR/<matrix>/.",
    )
    matrix.add_argument("file", metavar="FILE", help="a matrices/*.toml file")
    o.JOBS.add(matrix, help="cells probed at once, one per row (default 1)")
    o.attach(matrix, o.EXECUTION)
    o.ENV.add(
        matrix,
        help="set NAME=VALUE for every cell's probes (repeatable; interpreter "
        "variables from your shell never reach them): part of what was probed, and "
        "recorded in DIR/<matrix>/run.json",
    )
    matrix.add_argument(
        "--full", action="store_true", help="probe every cell (no inference, no --max-cells limit)"
    )
    matrix.add_argument(
        "--max-cells",
        type=o.count,
        default=500,
        metavar="N",
        help="refuse larger matrices without --full (default 500)",
    )
    o.FIND_LINKS.add(
        matrix,
        help="a folder of wheels of this machine (repeatable): replaces "
        "the file's find_links and stands in for its torch_backend index; default: "
        "your settings' find-links (pip.conf, uv.toml, UV_FIND_LINKS)",
    )
    o.NO_CONFIG.add(matrix, help="ignore the find-links folders of your settings")
    o.RESULTS.add(matrix, help="the store and the published tables (default ./results)")
    o.OFFLINE.add(matrix, help="no network: metadata and packages from the caches")
    o.REFRESH.add(matrix)
    o.REFRESH_PACKAGE.add(
        matrix,
        help="revalidate NAME's cached index pages (repeatable; --update does it for "
        "the axes' packages)",
    )
    o.CACHE_DIR.add(matrix, help="the metadata cache")
    o.JSON.add(matrix)
    o.DRY_RUN.add(
        matrix,
        help="plan every cell it would build (with --update: the new cells, and list those it "
        "would recheck and those that leave), build nothing",
    )
    matrix.add_argument(
        "--update",
        action="store_true",
        help="keep the published table current: from DIR/<matrix>/results.json, probe only the "
        "cells whose axis versions are new on the index; the published cells keep their "
        "outcomes and lockfiles; a version yanked, gone or no longer selected leaves the "
        "table with a note; what changed goes to the table's history and feed.xml",
    )
    matrix.add_argument(
        "--recheck",
        type=o.count0,
        metavar="DAYS",
        help="with --update: probe again every published measured cell older than DAYS, in "
        "exactly its locked environment (what it had installed), and record an outcome that "
        "changed (0: every one)",
    )


def add_publish_parser(sub: Subcommands) -> None:
    publish = sub.add_parser(
        "publish",
        help="regenerate a matrix's tables, pictures and lockfiles from the store",
        description="Writes DIR/<matrix>/table.md, table.html, heatmap.svg, results.json, "
        "results.csv, a lockfile per passing cell and the recommended (newest passing) one.",
    )
    publish.add_argument(
        "files", nargs="*", metavar="FILE", help="matrices/*.toml files (default: all of matrices/)"
    )
    o.attach(publish, o.RESULTS)
    o.FIND_LINKS.add(
        publish,
        help="a folder of wheels of this machine (repeatable), as for "
        "matrix: the lockfiles name the file's public indexes, each file from the "
        "folder checked there by hash",
    )
    o.NO_CONFIG.add(publish, help="ignore the find-links folders of your settings")
    o.JSON.add(publish, help="print the files written as one JSON object on stdout")
    o.OFFLINE.add(publish, help="metadata from the cache only")
    o.REFRESH.add(publish)
    o.CACHE_DIR.add(publish, help="the metadata cache")


def add_ci_template_parser(sub: Subcommands) -> None:
    ci = sub.add_parser(
        "ci-template",
        help="write a GitHub Actions workflow that keeps the published tables current",
        description="A scheduled workflow: for each matrices/*.toml, envbisect matrix FILE "
        "--update (new cells probed, old ones rechecked after a while), then envbisect "
        "publish, then a pull request with the changed results, its body what is new since "
        "the last publish. uv's cache and envbisect's metadata cache are kept between runs.",
    )
    ci.add_argument(
        "--output",
        metavar="FILE",
        help="write it there (e.g. .github/workflows/living-tables.yml); default: stdout",
    )
    ci.add_argument(
        "--install",
        metavar="SPEC",
        default=None,
        help="what the workflow installs with uv tool install (default: envbisect-ml==THIS "
        "VERSION, envbisect's name on PyPI), a git URL, or . for the checkout itself",
    )


def add_env_parser(sub: Subcommands) -> None:
    env = sub.add_parser(
        "env",
        help="report on an environment (versions, torch/CUDA build, driver, GPUs) and check it",
        description="The environment report maintainers ask for, with checks that each come "
        "with a fix.",
    )
    o.PYTHON.add(
        env,
        metavar="PATH",
        default=None,
        help="the interpreter to report on (default: the active virtualenv's, VIRTUAL_ENV or "
        "./.venv, else the one running envbisect)",
    )
    env.add_argument(
        "--quick",
        action="store_true",
        help="do not import torch or test compiled packages against numpy",
    )
    o.JSON.add(env)


def add_completion_parser(sub: Subcommands) -> None:
    completion = sub.add_parser(
        "completion",
        help="print a shell completion script (bash, zsh or tcsh)",
        description="Prints a completion script made from envbisect's own parser (shtab): "
        "e.g. envbisect completion bash > ~/.local/share/bash-completion/completions/envbisect",
    )
    completion.add_argument("shell", choices=("bash", "zsh", "tcsh"))


# In the order --help lists them.
PARSERS: tuple[Callable[[Subcommands], None], ...] = (
    add_run_parser,
    add_commits_parser,
    add_probe_parser,
    add_repro_parser,
    add_pins_parser,
    add_versions_parser,
    add_diff_parser,
    add_lock_parser,
    add_matrix_parser,
    add_publish_parser,
    add_ci_template_parser,
    add_env_parser,
    add_completion_parser,
)


def build_parser() -> argparse.ArgumentParser:
    """The whole command line: every subcommand and its options."""
    parser = _Parser(
        prog="envbisect",
        description="Find which package version broke a "
        "Python environment, prove it, and hand back one that works.",
        epilog=f"docs: {helpfmt.DOCS} (or docs/ in the source: nox -s docs, mkdocs serve)",
    )
    parser.add_argument("--version", action="version", version=f"envbisect {__version__}")
    o.attach(parser, o.QUIET, o.VERBOSE, o.COLOR)
    # _Parser is an ArgumentParser: the add_*_parser functions take the common type.
    sub = cast("Subcommands", parser.add_subparsers(dest="command", parser_class=_Parser))
    for add in PARSERS:
        add(sub)
    # -q and -v after the subcommand too (envbisect run ... -q), as before it.
    for name, one in sub.choices.items():
        o.attach(one, o.QUIET, o.VERBOSE, o.COLOR)
        helpfmt.arrange(one, name)
    return parser


def subparser(parser: argparse.ArgumentParser, command: str | None) -> argparse.ArgumentParser:
    """The subcommand's parser (for its ``--help`` and its flags), else ``parser``."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction) and command in action.choices:
            return cast(argparse.ArgumentParser, action.choices[command])
    return parser
