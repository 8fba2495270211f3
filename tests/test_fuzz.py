"""Every parser of untrusted text, fuzzed: only envbisect's own errors (one line, a hint, a
documented ref), never another exception, whatever the input.

The parsers: bug reports and environment reports (the nine formats, in Markdown), what
``check`` reads of a report, requirements files, pylock, PEP 723 blocks, matrix files,
results.json and run.json, Simple API pages (HTML and JSON), METADATA's Requires-Dist.
Inputs are built from each format's own fragments (so the fuzz reaches past the first
check) mixed with arbitrary text, and, for PEP 508 requirements and markers, METADATA,
requirements files, pylock.toml and environment reports, written by their grammars
(tests/support/grammars.py: every version operator, every marker variable and operator,
both quotes, extras, URLs, folded headers, hashes and continuations, each report's rows), so
the fuzz reaches what real files hold; ``envbisect pins METADATA`` itself runs on a few. The
quick tier runs a short budget; ``nox -s fuzz`` (or ``ENVBISECT_FUZZ=long``, the scheduled
workflow .github/workflows/fuzz.yml) a long one. Inputs that broke a parser are kept as
``@example``s.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from envbisect.errors import EnvbisectError
from support import grammars

LONG = os.environ.get("ENVBISECT_FUZZ") == "long"
FUZZ = settings(
    max_examples=4000 if LONG else 150,
    deadline=None,
    suppress_health_check=list(HealthCheck),
    derandomize=not LONG,  # the quick tier is the same run every time
)

# Fragments of the formats, recombined: each parser meets its own syntax, broken in places.
_REPORT_BITS = [
    "- `llamafactory` version: 0.9.2\n", "- Platform: Linux-5.15-x86_64-with-glibc2.35\n",
    "- Python version: 3.11.7\n", "- PyTorch version: 2.5.1+cu124 (GPU)\n",
    "- Transformers version: 4.52.4\n", "- GPU type: NVIDIA A100\n", "torch==2.5.1\n",
    "Package    Version\n---------- -------\n", "numpy      1.26.4\n", "```\n", "```python\n",
    "```text\n", "import x\nx.run()\n", "Traceback (most recent call last):\n",
    '  File "/a.py", line 1, in <module>\n', "ImportError: cannot import name 'y'\n",
    "Segmentation fault (core dumped)\n", "Driver Version: 535.54\n", "CUDA Version: 12.2\n",
    "PyTorch version: 2.1.0\nIs debug build: False\nCUDA used to build PyTorch: 12.1\n",
    "# Name Version Build Channel\n", "pip 23.0 py_0 conda-forge\n",
    "llamafactory-cli train x.yaml\n",
    "```yaml\nmodel_name_or_path: x\n```\n", "- `transformers` version: 4.\n", "==\n", "+cu\n",
    "DISABLE_VERSION_CHECK=1\n", "stage: ppo\n", "\x00", "é", "\r\n", "- ", ": ", "`",
]  # fmt: skip
_REQ_BITS = [
    "six==1.16.0\n", "numpy>=1.20,<2\n", "-r other.txt\n", "-c cons.txt\n", "--index-url x\n",
    "-e .\n", "pkg @ https://x/y.whl\n", "torch===2.0.0+cpu\n", "# comment\n", "\\\n",
    "foo[bar]; python_version < '3.9'\n", "--hash=sha256:00\n", "  --hash=sha256:ab \\\n",
    "===\n", "[\n", ";\n", "\n",
]  # fmt: skip


def _mixed(bits: list[str]) -> st.SearchStrategy[str]:
    return st.lists(st.one_of(st.sampled_from(bits), st.text(max_size=12)), max_size=25).map(
        "".join
    )


def _only_our_errors(call: Any, *args: Any, **kw: Any) -> None:
    try:
        call(*args, **kw)
    except EnvbisectError as e:
        assert e.message and "\n" not in e.message.strip(), e.message
        assert "Traceback" not in e.message


@FUZZ
@given(_mixed(_REPORT_BITS))
@example("- Python version: 3.11\n- `transformers` version: 4.\n")
def test_environment_and_bug_reports(text: str) -> None:
    from envbisect.core.envreport.bugreport import read_bug_report
    from envbisect.env.pinsource import report_with_versions

    _only_our_errors(report_with_versions, text, "the report")
    _only_our_errors(read_bug_report, text)


@FUZZ
@given(_mixed(_REPORT_BITS))
def test_what_check_reads_of_a_report(text: str) -> None:
    from envbisect.core.checks.diagnosis import CheckData, diagnose
    from envbisect.core.checks.observed import from_text

    def run() -> None:
        obs = from_text(text, origin="r.md")
        if obs is not None:
            diagnose(obs, CheckData.from_dict({}, []))

    _only_our_errors(run)


@FUZZ
@given(_mixed(_REQ_BITS))
def test_requirements_files(text: str) -> None:
    from envbisect.core.pins.sources import parse_requirements

    _only_our_errors(parse_requirements, text, origin="r.txt", read=lambda name: ("", name))


_PYLOCK = st.fixed_dictionaries(
    {},
    optional={
        "lock-version": st.sampled_from(["1.0", "2.0", "x", 1]),
        "created-by": st.sampled_from(["x", 3]),
        "requires-python": st.sampled_from([">=3.8", "bad", None]),
        "packages": st.lists(
            st.fixed_dictionaries(
                {},
                optional={
                    "name": st.sampled_from(["six", "", "a b", 1]),
                    "version": st.sampled_from(["1.0", "x", None, 2]),
                    "marker": st.sampled_from(['python_version >= "3"', "bad ~=", 1]),
                    "wheels": st.lists(st.dictionaries(st.sampled_from(["url", "hashes", "name"]),
                                                       st.text(max_size=8)), max_size=2),
                    "index": st.text(max_size=10),
                },
            ),
            max_size=3,
        ),
    },
)  # fmt: skip


@FUZZ
@given(st.one_of(_PYLOCK, st.dictionaries(st.text(max_size=5), st.text(max_size=5))))
@example(
    {"lock-version": "1.0", "created-by": "x", "packages": [{"name": "six", "marker": "bad ~="}]}
)
def test_pylock(data: dict[str, Any]) -> None:
    import tomli_w

    from envbisect.core.pins.sources import parse_pylock

    try:
        text = tomli_w.dumps(_no_none(data))
    except (TypeError, ValueError):
        return
    _only_our_errors(parse_pylock, text, origin="pylock.toml")


@FUZZ
@given(_mixed(["# /// script\n", "# ///\n", '# dependencies = ["six"]\n', "# [tool.uv]\n",
               '# exclude-newer = "7 days"\n', '# requires-python = ">=3.9"\n', "#\n",
               "# dependencies = [1]\n", "# x = \n", "import six\n"]))  # fmt: skip
def test_pep723_blocks(text: str) -> None:
    from envbisect.core.pins.scriptmeta import read_script_metadata

    _only_our_errors(read_script_metadata, text, origin="s.py")


_VALUES = st.one_of(
    st.none(), st.booleans(), st.integers(-3, 3), st.text(max_size=8),
    st.lists(st.text(max_size=6), max_size=3),
)  # fmt: skip
_MATRIX = st.fixed_dictionaries(
    {},
    optional={
        "matrix": st.dictionaries(
            st.sampled_from(["name", "python", "probes", "repro", "rest", "timeout", "repeats",
                             "outside_pins", "with", "pins", "range_from", "executor",
                             "torch_backend", "find_links", "nope"]),
            _VALUES, max_size=8),
        "axis": st.lists(st.dictionaries(
            st.sampled_from(["package", "select", "versions", "range", "use_pins", "x"]),
            _VALUES, max_size=5), max_size=3),
    },
)  # fmt: skip


@FUZZ
@given(st.one_of(_MATRIX, st.dictionaries(st.text(max_size=5), _VALUES, max_size=4)))
@example({"\n": None})  # a key with a newline made a two-line message
def test_matrix_files(data: dict[str, Any]) -> None:
    from envbisect.core.living.spec import parse_matrix

    _only_our_errors(parse_matrix, data, path=Path("m.toml"))


_CELL = st.dictionaries(
    st.sampled_from(["python", "versions", "state", "kind", "seconds", "installed", "lock",
                     "signature", "outside", "inferred_from"]),
    st.one_of(_VALUES, st.dictionaries(st.text(max_size=4), st.text(max_size=4), max_size=2),
              st.floats(allow_nan=True)),
    max_size=8,
)  # fmt: skip


@FUZZ
@given(
    st.fixed_dictionaries(
        {},
        optional={
            "matrix": st.dictionaries(st.sampled_from(["name", "axes", "probes", "run"]),
                                      _VALUES, max_size=4),
            "cells": st.one_of(st.lists(_CELL, max_size=3), _VALUES),
            "history": st.one_of(st.lists(_VALUES, max_size=2), _VALUES),
        },
    )
)  # fmt: skip
def test_results_json_and_run_json(data: dict[str, Any]) -> None:
    from envbisect.core.living.document import PublishedTable
    from envbisect.core.living.lastrun import LastRun

    _only_our_errors(PublishedTable.from_dict, data)
    _only_our_errors(LastRun.from_dict, data.get("matrix") or {})


@FUZZ
@given(_mixed(['<a href="', '">', "</a>", "six-1.0-py3-none-any.whl", "#sha256=00", "?x",
               ' data-requires-python="&gt;=3"', ' data-yanked="', ' data-dist-info-metadata="',
               "<html>", "<body>", "../", "%2F", "six-1.0.tar.gz", "&amp;"]))  # fmt: skip
def test_simple_html_pages(text: str) -> None:
    _only_our_errors(_read_page, "text/html", text)


@FUZZ
@given(
    st.fixed_dictionaries(
        {},
        optional={
            "meta": st.dictionaries(st.sampled_from(["api-version", "x"]), _VALUES),
            "files": st.one_of(_VALUES, st.lists(st.dictionaries(
                st.sampled_from(["filename", "url", "hashes", "requires-python", "yanked",
                                 "upload-time", "core-metadata", "size"]),
                st.one_of(_VALUES, st.dictionaries(st.text(max_size=5), st.text(max_size=5))),
                max_size=6), max_size=3)),
            "versions": _VALUES,
        },
    )
)  # fmt: skip
@example({"meta": {"api-version": "\n"}})  # the index's words made a two-line message
def test_simple_json_pages(data: dict[str, Any]) -> None:
    _only_our_errors(_read_page, "application/vnd.pypi.simple.v1+json", json.dumps(data))


def _read_page(content_type: str, body: str) -> None:
    """A page as an index answers it, read as envbisect reads one: parsed, then every file
    and every version (a JSON page's rows are read lazily, when a version is asked for)."""
    from envbisect.index.cache import Page
    from envbisect.index.pages import parse_page

    page = Page(url="https://pypi.org/simple/six/", status=200, content_type=content_type,
                body=body)  # fmt: skip
    found = parse_page(page, "six", "https://pypi.org/simple", "https://pypi.org/simple/six/")
    if found is not None:
        for f in found.files:
            str(f)
        list(found.versions())


@FUZZ
@given(_mixed(["Metadata-Version: 2.1\n", "Name: x\n", "Requires-Dist: six\n",
               'Requires-Dist: lib; python_version ~= "3"\n', "Requires-Dist: a (>=1)\n",
               "Requires-Dist: b @ file:///x\n", "requires-dist: c; extra == 'x'\n", "  more\n",
               "\n\n", "Requires-Dist: \n", "Requires-Dist: d[\n"]))  # fmt: skip
def test_metadata_requires_dist(text: str) -> None:
    from envbisect.core.markers import applies
    from envbisect.index.source import _requirement, requires_dist

    env = {"python_version": "3.11", "python_full_version": "3.11.7", "extra": "",
           "sys_platform": "linux", "platform_machine": "x86_64"}  # fmt: skip

    def run() -> None:
        # As IndexMetadataSource.dependencies reads them: the lines, then each one parsed.
        for req in filter(None, map(_requirement, requires_dist(text))):
            applies(req.marker, env)

    _only_our_errors(run)


def _no_none(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _no_none(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_no_none(v) for v in value if v is not None]
    return value


def test_the_fuzz_budget_is_said() -> None:
    """The long budget is what nox -s fuzz runs (noxfile.py); the quick one is this file."""
    noxfile = (Path(__file__).parents[1] / "noxfile.py").read_text()
    assert "ENVBISECT_FUZZ" in noxfile and json.dumps("long") in noxfile.replace("'", '"')
    if LONG:
        pytest.skip("the long budget is running")


# -- by the formats' grammars ------------------------------------------------------------------

ENV = {
    "python_version": "3.11", "python_full_version": "3.11.7", "os_name": "posix",
    "sys_platform": "linux", "platform_system": "Linux", "platform_machine": "x86_64",
    "platform_release": "6.1.0-13-amd64", "platform_version": "#1 SMP PREEMPT_DYNAMIC Debian",
    "implementation_name": "cpython", "implementation_version": "3.11.7",
    "platform_python_implementation": "CPython",
}  # fmt: skip
_EXTRAS = st.lists(st.sampled_from(["x", "dev", "gpu", "A-B", "a_b", "1.0", ""]), max_size=3)


def _as_pins_prints(pins: Any, extras: list[str]) -> None:
    """What ``envbisect pins`` does with a pin set: the extras chosen, every line and the
    JSON, each pin's specifier and whether it applies; a lock's exact versions."""
    from envbisect.core.pins.sources import select_extras
    from envbisect.core.results.pins import PinsResult

    pins = select_extras(pins, extras, label="the source")
    res = PinsResult(pins=pins, markers=tuple(ENV.items()), extras=tuple(extras), target="t",
                     python="3.11")  # fmt: skip
    res.lines()
    json.dumps(res.to_dict())
    pins.baseline(ENV)
    for pin in pins.requirements:
        _ = pin.specifier_text, pin.exact_version, pin.applies(ENV, extras)


@FUZZ
@given(grammars.REQUIREMENT)
@example("a; python_version ~= 'x'")  # a version operator on a value that is no version
@example("a; 'x' not in platform_release or (extra === '1.0')")
def test_pep508_requirements_and_markers(text: str) -> None:
    from envbisect.core.markers import applies
    from envbisect.core.pins.sources import parse_requirements
    from envbisect.index.source import _requirement

    def run() -> None:
        req = _requirement(text)  # a Requires-Dist line, as the planner reads one
        if req is not None:
            applies(req.marker, ENV)
        _as_pins_prints(parse_requirements(text + "\n", origin="r.txt",
                                           read=lambda name: ("", name)), ["x"])  # fmt: skip

    _only_our_errors(run)


@FUZZ
@given(grammars.metadata(), _EXTRAS)
def test_metadata_as_envbisect_pins_reads_it(text: str, extras: list[str]) -> None:
    from envbisect.core.pins.sources import parse_metadata

    _only_our_errors(lambda: _as_pins_prints(parse_metadata(text, origin="METADATA"), extras))


@FUZZ
@given(grammars.requirements_file(), _EXTRAS)
def test_requirements_files_by_their_grammar(text: str, extras: list[str]) -> None:
    from envbisect.core.pins.sources import parse_requirements

    def run() -> None:
        pins = parse_requirements(text, origin="r.txt", read=lambda name: ("six\n", name))
        _as_pins_prints(pins, extras)

    _only_our_errors(run)


@FUZZ
@given(grammars.PYLOCK)
def test_pylock_by_its_fields(data: dict[str, Any]) -> None:
    import logging

    import tomli_w

    from envbisect.core.pins.sources import parse_pylock

    try:
        text = tomli_w.dumps(data)
    except (TypeError, ValueError):
        return
    logging.getLogger("packaging.pylock").disabled = True  # its "minor version" warning
    try:
        _only_our_errors(lambda: _as_pins_prints(parse_pylock(text, origin="pylock.toml"), []))
    finally:
        logging.getLogger("packaging.pylock").disabled = False


@FUZZ
@given(grammars.environment_report())
def test_environment_reports_by_their_rows(text: str) -> None:
    from envbisect.core.checks.diagnosis import CheckData, diagnose
    from envbisect.core.checks.observed import from_text
    from envbisect.core.envreport.bugreport import read_bug_report
    from envbisect.core.pins.from_report import report_pins
    from envbisect.env.pinsource import report_with_versions

    def pins() -> None:
        report = report_with_versions(text, "the report")
        _as_pins_prints(report_pins(report, origin="the report", releases=None), [])

    def check() -> None:
        obs = from_text(text, origin="r.md")
        if obs is not None:
            diagnose(obs, CheckData.from_dict({}, []))

    _only_our_errors(pins)
    _only_our_errors(read_bug_report, text)
    _only_our_errors(check)


@settings(FUZZ, max_examples=200 if LONG else 6)
@given(grammars.metadata())
def test_envbisect_pins_metadata_ends_in_an_answer_or_one_error(
    tmp_path_factory: pytest.TempPathFactory, text: str
) -> None:
    """The command itself, as a user runs it on a METADATA file: exit 0 with requirement
    lines, or exit 2 with one error and a hint; never a traceback."""
    import sys

    from support.cli import envbisect

    folder = tmp_path_factory.mktemp("metadata")
    (folder / "METADATA").write_text(text, encoding="utf-8")
    proc = envbisect("pins", str(folder / "METADATA"), "--offline", "--no-config",
                     "-p", sys.executable, "--json")  # fmt: skip
    assert "Traceback" not in proc.stderr, proc.stderr
    assert proc.returncode in (0, 2), proc.stderr
    json.loads(proc.stdout)  # the answer, or the error object
