"""Reading the resolved options back, by record: the ``CommonOptions`` every mode shares (its
records by concern), the indexes, ``--env``, ``--override``.

Who does what: cli/flags.py (and each executor, exec/kinds/) declares each option once;
cli/optionset.py resolves the values; this module turns them into the modes' values
(index/settings.py orders the indexes the flags and the settings name), and rejects a
malformed value with a ``UsageError`` before any work. An option a subcommand lacks reads as
its default (``opts[OPTION]``).
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from packaging.utils import canonicalize_name

from envbisect.cli import flags as o
from envbisect.cli.optionset import Options
from envbisect.core.overrides import OverrideSet
from envbisect.env.forensics import NativeBacktrace
from envbisect.errors import UsageError
from envbisect.exec import kinds
from envbisect.model import IndexConfig, IndexStrategy
from envbisect.options import (
    CommonOptions,
    Execution,
    Parallelism,
    Planning,
    Probing,
    TorchChoice,
)

if TYPE_CHECKING:
    from envbisect.index.settings import IndexSettings


def index_settings(opts: Options) -> IndexSettings:
    """The indexes the flags, the environment and the configuration files name, and where
    each came from (index/settings.py has the order); read once per invocation."""
    return cast("IndexSettings", opts.derived("index_settings", lambda: _index_settings(opts)))


def _index_settings(opts: Options) -> IndexSettings:
    from envbisect.index.settings import resolve as resolve_indexes  # not for --help

    if opts[o.INDEX_URL] == "":
        check_url("--index-url", "")  # not PyPI by default: an empty flag is a mistake
    conf = opts.project
    found = resolve_indexes(
        index_url=opts[o.INDEX_URL],
        extra_index_urls=tuple(opts[o.EXTRA_INDEX_URL]),
        environ=os.environ,
        cwd=Path.cwd(),
        # A command without index flags (matrix, publish) takes its indexes from its file
        # and only the wheel folders from the flags and the settings (matrix_options).
        no_config=opts[o.NO_CONFIG] or not (o.INDEX_URL in opts or o.FIND_LINKS in opts),
        find_links=tuple(opts[o.FIND_LINKS]),
        project=(conf.origin, conf.values) if conf is not None else None,
    )
    for f in (found.main, *found.extra):
        check_url(f.origin, f.url)
    return found


def indexes(opts: Options, torch_index: str | None = None) -> IndexConfig:
    found = index_settings(opts)
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
        index_strategy=(
            IndexStrategy.UNSAFE_BEST_MATCH if found.pip_rule else IndexStrategy.FIRST_INDEX
        ),
    )


def check_url(flag: str, url: str) -> None:
    """An index URL httpx and uv can use: http(s) or file, with a host, well formed."""
    from envbisect.core.names import split_url
    from envbisect.redact import mask_text as mask_url  # urlsplit may be what fails

    hint = "an index URL looks like https://pypi.org/simple (user:password@ before the host)"
    parts = split_url(url, what=flag, hint=hint, ref="bad-url")
    ok = (parts.scheme in ("http", "https") and parts.hostname) or parts.scheme == "file"
    if not ok or any(c.isspace() or ord(c) < 32 for c in url):
        raise UsageError(
            f"{flag} {mask_url(url)!r} is not an http(s) or file URL", hint=hint, ref="bad-url"
        )


def torch_index(opts: Options) -> str | TorchChoice | None:
    """PyTorch's variant folder ``--torch-backend`` names, or for ``auto`` the choice left to
    the session (it asks nvidia-smi when the indexes are first needed, not while the options
    are read); None: torch from the main index."""
    from envbisect.index import pytorch

    backend, mirror = opts[o.TORCH_BACKEND], opts[o.TORCH_INDEX_URL]
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


def probe_env(opts: Options) -> dict[str, str]:
    """``--env NAME=VALUE`` flags as a mapping; a malformed one is a UsageError."""
    return cast("dict[str, str]", opts.derived("probe_env", lambda: _probe_env(opts[o.ENV])))


def _probe_env(items: Sequence[str]) -> dict[str, str]:
    from envbisect.redact import mask_env

    out: dict[str, str] = {}
    for item in items:
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


def overrides(opts: Options) -> OverrideSet:
    """``--override`` values, read once per invocation (a file of them too)."""
    return cast("OverrideSet", opts.derived("overrides", lambda: read_overrides(opts[o.OVERRIDE])))


def read_overrides(values: Sequence[str]) -> OverrideSet:
    """``--override`` values: a requirement, or a file of them (a value naming a file that
    exists, or one ending in .txt), as "name<spec>" texts, sorted."""

    lines: list[tuple[str, str]] = []
    for value in values:
        path = Path(value).expanduser()
        if path.is_file() or value.endswith(".txt"):
            try:
                text = path.read_text(encoding="utf-8")
            except OSError as e:
                raise UsageError(
                    f"--override {value}: cannot read it ({e.strerror or e})",
                    hint="give a requirement (transformers==4.52.4) or a file of them",
                    ref="bad-override",
                ) from None
            lines += [(f"--override {value}", ln) for ln in text.splitlines()]
        else:
            lines.append(("--override", value))
    return OverrideSet.read(lines)


def extras(opts: Options) -> tuple[str, ...]:
    return tuple(e.strip() for e in (opts[o.EXTRAS] or "").split(",") if e.strip())


def common_options(
    opts: Options, *, command: str, repro: Any = None, execution: Execution | None = None
) -> CommonOptions:
    """What every mode takes from the same options, by concern; an option a subcommand lacks
    reads as its default (``execution``: where a matrix file says where its probes run)."""
    return CommonOptions(
        planning=planning(opts),
        probing=Probing(
            repro=repro,
            timeout=opts[o.TIMEOUT],
            repeat=opts[o.REPEAT],
            any_failure=opts[o.ANY_FAILURE],
            native_backtrace=NativeBacktrace(opts[o.NATIVE_BACKTRACE]),
            env=tuple(sorted(probe_env(opts).items())),
            keep_envs=opts[o.KEEP_ENVS],
        ),
        parallel=Parallelism(jobs=opts[o.JOBS]),
        execution=execution or execution_of(opts),
        results=opts[o.RESULTS].resolve(),
        dry_run=opts[o.DRY_RUN],
        command=command,
    )


def planning(opts: Options) -> Planning:
    """The indexes, the interpreter and the rest every environment is planned from."""
    torch = torch_index(opts)
    return Planning(
        indexes=indexes(opts, torch if isinstance(torch, str) else None),
        torch_auto=torch if isinstance(torch, TorchChoice) else None,
        python=opts[o.PYTHON],
        python_downloads=opts[o.NO_PYTHON_DOWNLOADS],
        offline=opts[o.OFFLINE],
        refresh=opts[o.REFRESH],
        refresh_packages=tuple(sorted({canonicalize_name(n) for n in opts[o.REFRESH_PACKAGE]})),
        cache_dir=opts[o.CACHE_DIR],
        overrides=overrides(opts),
        inherit=opts[o.INHERIT],
        build_timeout=opts[o.BUILD_TIMEOUT],
    )


def execution_of(opts: Options, *, kind: str | None = None, gpus: int | None = None) -> Execution:
    """--executor and what it takes (``kind``, ``gpus``: a matrix file's, under the
    command line's)."""
    name = opts[kinds.executor_option()] or kind or "local"
    given = opts[kinds.GPUS_PER_PROBE]
    # Every executor's settings are read, so that a bad value is said whichever runs.
    every = {k: kinds.settings(k, opts) for k in kinds.kinds()}
    return Execution(
        kind=name,
        gpus_per_probe=(given if given is not None else gpus) or 0,
        settings=every[name],
    )


def matrix_common(opts: Options, spec: Any, *, command: str) -> CommonOptions:
    """The options of a matrix run (``spec``: its ``MatrixSpec``): the file may name an
    executor and GPUs per probe; the command line's win."""
    execution = execution_of(opts, kind=spec.executor, gpus=spec.gpus_per_probe)
    return common_options(opts, command=command, execution=execution)
