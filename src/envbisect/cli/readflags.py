"""Reading the parsed flags back: the ``CommonOptions`` every mode shares, the indexes, ``--env``.

Who does what: cli/flags.py declares each option once; this module turns what was typed into
the modes' values (index/settings.py orders the indexes the flags and the settings name), and
rejects a malformed value with a ``UsageError`` before any work. A flag a subcommand lacks
keeps its default.
"""

from __future__ import annotations

import argparse
import os
import re
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from packaging.utils import canonicalize_name

from envbisect.errors import UsageError
from envbisect.model import IndexConfig, IndexStrategy
from envbisect.options import (
    CommonOptions,
    ExecutorKind,
    NativeBacktrace,
    SlurmSettings,
    TorchChoice,
)

if TYPE_CHECKING:
    from envbisect.index.settings import IndexSettings


def index_settings(args: argparse.Namespace) -> IndexSettings:
    """The indexes the flags, the environment and the configuration files name, and where
    each came from (index/settings.py has the order); read once per invocation."""
    from envbisect.cli.optionset import Options

    if isinstance(args, Options):
        return cast("IndexSettings", args.derived("index_settings", lambda: _index_settings(args)))
    return _index_settings(args)


def _index_settings(args: argparse.Namespace) -> IndexSettings:
    from envbisect.cli.optionset import Options
    from envbisect.index.settings import resolve as resolve_indexes  # not for --help

    if getattr(args, "index_url", None) == "":
        check_url("--index-url", "")  # not PyPI by default: an empty flag is a mistake
    conf = args.project if isinstance(args, Options) else None
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
        project=(conf.origin, conf.values) if conf is not None else None,
    )
    for f in (found.main, *found.extra):
        check_url(f.origin, f.url)
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


def read_overrides(values: Sequence[str]) -> tuple[str, ...]:
    """``--override`` values: a requirement, or a file of them (a value naming a file that
    exists, or one ending in .txt), as "name<spec>" texts, sorted."""
    from envbisect.core.overrides import parse

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
    return tuple(sorted(parse(lines).values()))


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
        python_downloads=getattr(args, "python_downloads", True),
        offline=getattr(args, "offline", base.offline),
        refresh=getattr(args, "refresh", False),
        refresh_packages=tuple(
            sorted({canonicalize_name(n) for n in getattr(args, "refresh_package", None) or ()})
        ),
        cache_dir=getattr(args, "cache_dir", None),
        results=(results or base.results).resolve(),
        timeout=getattr(args, "timeout", base.timeout),
        keep_envs=getattr(args, "keep_envs", base.keep_envs),
        native_backtrace=NativeBacktrace(getattr(args, "native_backtrace", base.native_backtrace)),
        any_failure=getattr(args, "any_failure", base.any_failure),
        repeat=getattr(args, "repeat", base.repeat),
        jobs=getattr(args, "jobs", base.jobs),
        executor=ExecutorKind(getattr(args, "executor", None) or base.executor),
        ray_address=getattr(args, "ray_address", None),
        gpus_per_probe=getattr(args, "gpus_per_probe", None) or base.gpus_per_probe,
        slurm=slurm_settings(args),
        dry_run=getattr(args, "dry_run", False),
        env=tuple(sorted(probe_env(args).items())),
        build_timeout=getattr(args, "build_timeout", None),
        overrides=read_overrides(getattr(args, "overrides", None) or ()),
        inherit=getattr(args, "inherit", False),
        command=command,
    )


def slurm_settings(args: argparse.Namespace) -> SlurmSettings:
    """``--slurm-*``: each extra option as sbatch takes it (``qos=high`` is ``--qos=high``)."""
    options = []
    for raw in getattr(args, "slurm_options", None) or ():
        text = raw.strip()
        if not text or any(c in text for c in "\r\n\0"):
            raise UsageError(
                f"--slurm-option {raw!r} is not one sbatch option",
                hint="one option each, e.g. --slurm-option=--qos=high",
                ref="bad-slurm-option",
            )
        options.append(text if text.startswith("-") else f"--{text}")
    return SlurmSettings(
        partition=getattr(args, "slurm_partition", None),
        account=getattr(args, "slurm_account", None),
        time=getattr(args, "slurm_time", None),
        options=tuple(options),
    )


def matrix_common(args: argparse.Namespace, spec: Any, *, command: str) -> CommonOptions:
    """The options of a matrix run (``spec``: its ``MatrixSpec``): the file may name an
    executor and GPUs per probe; the command line's win."""
    return replace(
        common_options(args, command=command),
        executor=ExecutorKind(args.executor or spec.executor or ExecutorKind.LOCAL),
        gpus_per_probe=spec.gpus_per_probe if args.gpus_per_probe is None else args.gpus_per_probe,
    )
