"""Resolving the options of one invocation, in the order cli/optionset.py describes: what was
typed, the environment variables each option names (uv's, as uv reads them), what the command's
inputs imply (cli/implied.py), the repository's ``[tool.envbisect]`` table
(cli/projectconf.py), and the default (uv's rules for --python). main.py calls ``resolve``
once; each value taken is said on stderr, and ``-v`` says where every one came from.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Mapping, Sequence
from typing import Any

from envbisect.cli.optionset import Draft, Options, Origin, Say, Source, flag_names, typed_dests
from envbisect.errors import UsageError
from envbisect.optionspec import BadValue, Option


def resolve(
    parsed: argparse.Namespace,
    parser: argparse.ArgumentParser,
    argv: Sequence[str],
    say: Say,
    *,
    verbose: bool,
    options: Mapping[str, Option[Any]],
) -> Options:
    """The options of the command line ``argv`` that ``parser`` (the subcommand's) parsed
    into ``parsed``, resolved once, each value with its origin (module doc has the order);
    ``options``: the records the parser was made from; each value taken is said on stderr."""
    from pathlib import Path

    from envbisect.cli import implied

    draft = Draft(parsed, typed_dests(parser, argv), flag_names(parser), options)
    for option in options.values():  # uv's variables, for the options they stand for
        _from_environment(draft, option, say)
    implied.apply(draft, say)  # a report's Python and torch, a script's
    conf = None
    if not draft.get("no_config"):  # the table's reader (and tomllib) only where it is read
        from envbisect.cli import projectconf

        conf = projectconf.find(Path.cwd())
    if conf is not None:
        taken = projectconf.apply(draft, conf)
        if verbose and taken:
            say(f"envbisect: from {conf.origin}: {', '.join(taken)}")
    for option in options.values():
        if option.uv_rules and draft.get(option.dest) is None:
            _by_uv_rules(draft, option, say)
    opts = draft.freeze(conf)
    chosen = opts.chosen()
    if verbose and chosen:
        say(f"envbisect: options: {', '.join(chosen)}")
    return opts


def _from_environment(draft: Draft, option: Option[Any], say: Say) -> None:
    """The option's variable (``UV_PYTHON``), where it is set and nothing typed wins."""
    value = os.environ.get(option.env, "").strip() if option.env else ""
    if not value or option.env is None:
        return
    try:
        typed = option.parse(value)
    except BadValue as e:
        raise UsageError(
            f"{option.env}={value!r}: {e} (it stands for {option.long})",
            hint=f"set it as {option.long} takes it, or unset it",
            ref="bad-usage",
        ) from None
    if draft.offer(option.dest, typed, Origin(Source.ENVIRONMENT, option.env)):
        say(option.said.format(flag=option.long, value=value, where=option.env))


def _by_uv_rules(draft: Draft, option: Option[Any], say: Say) -> None:
    """--python not given: uv's rules (.python-version, the active virtualenv)."""
    from envbisect.env.pyrequest import default_python

    found = default_python()
    if found is not None and draft.offer(
        option.dest, found.request, Origin(Source.DEFAULT, found.origin)
    ):
        say(option.said.format(flag=option.long, value=found.request, where=found.origin))
