"""Every command-line option, declared once, and attached to the subcommands that take it.

(pip's ``cmdoptions`` habit.) An ``Opt`` is the flags and the ``add_argument`` keywords; a
subcommand lists the options it takes, and ``common_options`` reads the parsed ones into the
``CommonOptions`` every mode shares. An option may be attached with another help text or
default where the same flag means the same thing in other words (``--python`` of ``env``).
"""

from __future__ import annotations

import argparse
import math
import os
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from packaging.utils import canonicalize_name

from envbisect.errors import UsageError
from envbisect.exec.executor import EXECUTORS
from envbisect.model import IndexConfig
from envbisect.options import CommonOptions, TorchChoice

if TYPE_CHECKING:
    from envbisect.index.settings import IndexSettings

DEFAULT_INDEX = "https://pypi.org/simple"


MIN_TIMEOUT = 1.0  # below this a probe cannot even start Python


def _positive(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"{text!r} is not a finite number of seconds")
    if value <= 0:
        raise argparse.ArgumentTypeError("must be more than 0 seconds")
    if value < MIN_TIMEOUT:
        raise argparse.ArgumentTypeError(f"must be at least {MIN_TIMEOUT:g} second")
    return value


MAX_JOBS = 256


def _whole(minimum: int, maximum: int | None = None) -> Callable[[str], int]:
    """An argparse type: a whole number from ``minimum`` (to ``maximum``)."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"must be {minimum} or more")
        if maximum is not None and value > maximum:
            raise argparse.ArgumentTypeError(f"must be at most {maximum}")
        return value

    return parse


count = _whole(1)  # runs, probes, cells
count0 = _whole(0)  # GPUs per probe
jobs = _whole(1, MAX_JOBS)


def _probability(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a probability") from None
    if not 0.5 <= value < 1.0:
        raise argparse.ArgumentTypeError("must be at least 0.5 and below 1 (e.g. 0.95)")
    return value


@dataclass(frozen=True, slots=True)
class Opt:
    flags: tuple[str, ...]
    kw: dict[str, Any] = field(default_factory=dict)

    def add(self, parser: argparse.ArgumentParser, **override: Any) -> None:
        parser.add_argument(*self.flags, **{**self.kw, **override})


def opt(*flags: str, **kw: Any) -> Opt:
    return Opt(flags, kw)


# -- what goes into each environment, and where it comes from ------------------------------------

WITH = opt(
    "--with",
    dest="with_reqs",
    action="append",
    default=[],
    metavar="REQ",
    help="a requirement of every environment (repeatable)",
)
PYTHON = opt(
    "--python",
    metavar="VERSION",
    help="the interpreter of the environments (a version uv can find, or a path)",
)
EXCLUDE_NEWER = opt(
    "--exclude-newer",
    metavar="DATE",
    help="ignore files uploaded after DATE (YYYY-MM-DD or RFC 3339)",
)
PRE = opt("--pre", action="store_true", help="include pre-releases")
ALLOW_SDIST = opt(
    "--allow-sdist",
    action="store_true",
    help="let uv build sdists (runs their setup.py; wheels only by default)",
)
PINS = opt(
    "--pins",
    action="append",
    default=[],
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
EXTRA_INDEX_URL = opt(
    "--extra-index-url",
    action="append",
    default=[],
    metavar="URL",
    help="another index, consulted before the main one as uv does (repeatable)",
)
FIND_LINKS = opt(
    "--find-links",
    action="append",
    default=[],
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
    "published minutes ago",
)
REFRESH_PACKAGE = opt(
    "--refresh-package",
    metavar="NAME",
    action="append",
    default=[],
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
    "(from nvidia-smi); none: from the main index like any package (an environment "
    "report's torch build sets it otherwise)",
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
PROBE = opt(
    "--probe",
    dest="probes",
    action="append",
    default=[],
    metavar="NAME[:ARGS]",
    help="a built-in probe: import:PKG[,PKG], datasets-json, lora-step, "
    "llamafactory-train (repeatable; the environment fails if any fails)",
)
ENV = opt(
    "--env",
    dest="probe_env",
    action="append",
    default=[],
    metavar="NAME=VALUE",
    help="set NAME=VALUE for every probe (repeatable). Interpreter variables that change what "
    "runs or what it imports (PYTHONOPTIMIZE, PYTHONPATH, PYTHONWARNINGS, PYTHONHASHSEED...) "
    "never reach a probe from your shell: pass one here to test with it. What --env sets is "
    "part of what was probed (stored outcomes with and without it are kept apart) and is "
    "named in report.md",
)
TIMEOUT = opt(
    "--timeout",
    type=_positive,
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
    help="also print uv's output and each probe's output",
)

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
EXECUTOR = opt(
    "--executor",
    choices=tuple(EXECUTORS),
    help="where probes run: local (threads, the default), process (a pool of worker "
    "processes; every task crosses a pickle, as to another machine) or ray (a Ray cluster: "
    "--ray-address, or a local instance on 127.0.0.1; pip install 'envbisect-ml[ray]')",
)
RAY_ADDRESS = opt(
    "--ray-address",
    metavar="ADDR",
    help="--executor ray: join this cluster (HOST:PORT, or auto); default: start a local "
    "instance bound to 127.0.0.1",
)
GPUS_PER_PROBE = opt(
    "--gpus-per-probe",
    type=count0,
    metavar="N",
    help="give each probe N GPUs and only those (CUDA_VISIBLE_DEVICES): Ray's num_gpus, or "
    "this machine's GPUs shared out by the local executor (default 0)",
)
ANY_FAILURE = opt(
    "--any-failure",
    action="store_true",
    help="count any failure as bad, not only one like the bad end's",
)
CONFIDENCE = opt(
    "--confidence",
    type=_probability,
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
    type=_positive,
    metavar="SECONDS",
    help="cut a build from source after this long: that commit is untestable (default: no limit)",
)

DRY_RUN = opt(
    "--dry-run",
    action="store_true",
    help="plan every environment it would build first (run: both ends; probe: the one; "
    "matrix: every cell), print the plans (--json: with their pins and conflicts), build "
    "nothing",
)

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
ENVIRONMENT = (WITH, *INDEX, PYTHON, EXCLUDE_NEWER, PRE, ALLOW_SDIST)
PROBING = (REPRO, PROBE, ENV, TIMEOUT, NATIVE_BACKTRACE, RESULTS, KEEP_ENVS, JSON)
EXECUTION = (EXECUTOR, RAY_ADDRESS, GPUS_PER_PROBE)
SEARCH = (JOBS, REPEAT, *EXECUTION, CONFIDENCE, PROBABILISTIC, MAX_PROBES)


def attach(parser: argparse.ArgumentParser, *opts: Opt | Iterable[Opt]) -> None:
    for o in opts:
        for one in (o,) if isinstance(o, Opt) else o:
            one.add(parser)


# -- reading them back ------------------------------------------------------------------------


def index_settings(args: argparse.Namespace) -> IndexSettings:
    """The indexes the flags, the environment and the configuration files name, and where
    each came from (index/settings.py has the order); read once per invocation."""
    from envbisect.index.settings import resolve as resolve_indexes  # not for --help

    cached = getattr(args, "_index_settings", None)
    if cached is not None:
        return cast("IndexSettings", cached)
    if getattr(args, "index_url", None) == "":
        check_url("--index-url", "")  # not PyPI by default: an empty flag is a mistake
    found = resolve_indexes(
        index_url=getattr(args, "index_url", None),
        extra_index_urls=tuple(getattr(args, "extra_index_url", ())),
        environ=os.environ,
        cwd=Path.cwd(),
        # A command without index flags (matrix, publish) takes its indexes from its file
        # and only the wheel folders from the flags and the settings (matrix_options).
        no_config=getattr(args, "no_config", False)
        or not (hasattr(args, "index_url") or hasattr(args, "find_links")),
        find_links=tuple(getattr(args, "find_links", ())),
        project=(conf.origin, conf.values) if (conf := getattr(args, "_project", None)) else None,
    )
    for f in (found.main, *found.extra):
        check_url(f.origin, f.url)
    args._index_settings = found
    return found


def indexes(args: argparse.Namespace, torch_index: str | None = None) -> IndexConfig:
    found = index_settings(args)
    url = found.main.url
    extra = tuple(f.url for f in found.extra)
    links = []
    for f in found.links:
        p = f.url
        if "://" in p:
            check_url(f.origin, p)
            links.append(p)
        elif not p or not Path(p).is_dir():
            raise UsageError(
                f"{f.origin} {p}: no such folder"
                if f.origin == "--find-links"
                else f"find-links {p} (from {f.origin}): no such folder",
                hint="pass a folder of wheels (or a URL); every environment would be "
                "untestable"
                + (
                    "" if f.origin == "--find-links" else "; or --no-config to ignore your settings"
                ),
                ref="bad-find-links",
            )
        else:
            links.append(str(Path(p).resolve()))
    return IndexConfig(
        index_url=url,
        extra_index_urls=extra,
        find_links=tuple(links),
        torch_index=torch_index,
        index_strategy="unsafe-best-match" if found.pip_rule else "first-index",
    )


def check_url(flag: str, url: str) -> None:
    """An index URL httpx and uv can use: http(s) or file, with a host, well formed."""
    from urllib.parse import urlsplit

    from envbisect.redact import mask_text as mask_url  # urlsplit may be what fails

    hint = "an index URL looks like https://pypi.org/simple (user:password@ before the host)"
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018  (raises on a bad port)
    except ValueError as e:
        raise UsageError(
            f"{flag} {mask_url(url)!r} is not a URL ({e})", hint=hint, ref="bad-url"
        ) from None
    ok = (parts.scheme in ("http", "https") and parts.hostname) or parts.scheme == "file"
    if not ok or any(c.isspace() or ord(c) < 32 for c in url):
        raise UsageError(
            f"{flag} {mask_url(url)!r} is not an http(s) or file URL", hint=hint, ref="bad-url"
        )


def torch_index(args: argparse.Namespace) -> str | TorchChoice | None:
    """PyTorch's variant folder ``--torch-backend`` names, or for ``auto`` the choice left to
    the session (it asks nvidia-smi when the indexes are first needed, not while the options
    are read); None: torch from the main index."""
    from envbisect.index import pytorch

    backend = getattr(args, "torch_backend", None)
    mirror = getattr(args, "torch_index_url", None)
    if backend == "none":
        return None  # said so: torch from the main index, whatever a report's build
    if backend is None:
        if mirror:
            raise UsageError(
                "--torch-index-url needs --torch-backend",
                hint="e.g. --torch-backend cu121 --torch-index-url https://mirror/whl",
                ref="bad-torch-backend",
            )
        return None
    if not pytorch.valid_backend(backend):
        raise UsageError(
            f"--torch-backend {backend!r} is not a PyTorch index variant",
            hint="use cpu, cu118, cu121, cu124, cu126, cu128, rocm6.2, xpu, auto or none",
            ref="bad-torch-backend",
        )
    if backend == "auto":
        return TorchChoice(mirror=mirror or pytorch.OFFICIAL)
    return pytorch.variant_url(backend, mirror or pytorch.OFFICIAL)


_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# What envbisect or the executor sets for every probe, and where the user's own value goes.
_ENV_RESERVED = {
    "PATH": "probes inherit your PATH, with the environment's bin folder first",
    "VIRTUAL_ENV": "it is the candidate environment's path",
    "CUDA_VISIBLE_DEVICES": "probes inherit it from your shell, or --gpus-per-probe N gives "
    "each probe its own GPUs",
}


def probe_env(args: argparse.Namespace) -> dict[str, str]:
    """``--env NAME=VALUE`` flags as a mapping; a malformed one is a UsageError."""
    from envbisect.redact import mask_env

    out: dict[str, str] = {}
    for item in getattr(args, "probe_env", None) or ():
        name, sep, value = item.partition("=")
        if not sep or not name:
            shown = name + sep + mask_env(name, value) if sep else mask_env("", item)
            raise UsageError(
                f"--env {shown!r} is not NAME=VALUE",
                hint="e.g. --env PYTHONOPTIMIZE=1 (an empty value: --env NAME=)",
                ref="bad-env",
            )
        if not _ENV_NAME.fullmatch(name):
            raise UsageError(
                f"--env {name!r}: not a variable name",
                hint="a name is ASCII letters, digits and _, not starting with a digit "
                "(e.g. --env PYTHONOPTIMIZE=1)",
                ref="bad-env",
            )
        if name in out:
            raise UsageError(
                f"--env {name} is given twice",
                hint=f"pass {name} once, with the value the probes should see",
                ref="bad-env",
            )
        if name in _ENV_RESERVED or name.startswith("ENVBISECT_"):
            why = _ENV_RESERVED.get(name, "envbisect's own variables tell a probe its run")
            raise UsageError(
                f"--env {name}: envbisect sets it for every probe",
                hint=f"leave it out: {why}",
                ref="bad-env",
            )
        out[name] = value
    return out


def extras(args: argparse.Namespace) -> tuple[str, ...]:
    return tuple(e.strip() for e in (getattr(args, "extras", None) or "").split(",") if e.strip())


def common_options(args: argparse.Namespace, *, command: str, repro: Any = None) -> CommonOptions:
    """What every mode takes from the same flags; a flag a subcommand lacks keeps its default."""
    base = CommonOptions()
    results = getattr(args, "results", None)
    torch = torch_index(args)
    return CommonOptions(
        repro=repro,
        indexes=indexes(args, torch if isinstance(torch, str) else None),
        torch_auto=torch if isinstance(torch, TorchChoice) else None,
        python=getattr(args, "python", None),
        offline=getattr(args, "offline", base.offline),
        refresh=getattr(args, "refresh", False),
        refresh_packages=tuple(
            sorted({canonicalize_name(n) for n in getattr(args, "refresh_package", None) or ()})
        ),
        cache_dir=getattr(args, "cache_dir", None),
        results=(results or base.results).resolve(),
        timeout=getattr(args, "timeout", base.timeout),
        keep_envs=getattr(args, "keep_envs", base.keep_envs),
        native_backtrace=getattr(args, "native_backtrace", base.native_backtrace),
        any_failure=getattr(args, "any_failure", base.any_failure),
        repeat=getattr(args, "repeat", base.repeat),
        jobs=getattr(args, "jobs", base.jobs),
        executor=getattr(args, "executor", None) or base.executor,
        ray_address=getattr(args, "ray_address", None),
        gpus_per_probe=getattr(args, "gpus_per_probe", None) or base.gpus_per_probe,
        dry_run=getattr(args, "dry_run", False),
        env=tuple(sorted(probe_env(args).items())),
        build_timeout=getattr(args, "build_timeout", None),
        command=command,
    )


def matrix_common(args: argparse.Namespace, spec: Any, *, command: str) -> CommonOptions:
    """The options of a matrix run (``spec``: its ``MatrixSpec``): the file may name an
    executor and GPUs per probe; the command line's win."""
    return replace(
        common_options(args, command=command),
        executor=args.executor or spec.executor or "local",
        gpus_per_probe=spec.gpus_per_probe if args.gpus_per_probe is None else args.gpus_per_probe,
    )
