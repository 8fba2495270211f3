"""Real-world suite: real breakpoints from PyPI's history, each run with the real CLI.

Run from the repository root (needs PyPI): ``python bench/realworld.py`` prints a Markdown
table, one row a case: case | kind | truth | answer | right? | probes built | seconds.
``--only NAME`` (repeatable) runs some; ``--list`` lists them with their sources.

Every case is a breakage that users hit and reported (the source column: an issue or the
release notes), and every truth was checked by hand with plain uv before it went in here:
``uv venv --python PY`` + ``uv pip install`` of the version just below the first bad one and of
the first bad one, and the repro run in each (it passes below, fails at the first bad one).

Each case runs ``envbisect run`` (by version or ``--by-date``) or ``envbisect diff`` as a
subprocess with ``--json``, a fresh results folder in a temporary directory, and one shared
cache (``--cache DIR``: uv's downloads under ``DIR/uv``, envbisect's metadata under
``DIR/meta``), so a second run of the suite downloads nothing. Ranges are given with
``--good``/``--bad`` so that each case takes a few probes; ``--timeout`` bounds every probe.

Interpreters: a version such as ``3.10`` is passed to envbisect as the path of a pyenv
interpreter when ``~/.pyenv/versions/3.10.*`` exists (uv does not look behind pyenv's shims),
else as it is.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
ENVBISECT = [sys.executable, "-m", "envbisect"]

# Two lockfiles of one app, flask==2.2.2 on Python 3.11: ``uv pip compile`` of ``flask==2.2.2``
# with --exclude-newer 2023-01-01 (GOOD) and 2024-06-01 (BAD). Five packages differ.
DIFF_GOOD = """\
click==8.1.3
flask==2.2.2
itsdangerous==2.1.2
jinja2==3.1.2
markupsafe==2.1.1
werkzeug==2.2.2
"""
DIFF_BAD = """\
click==8.1.7
flask==2.2.2
itsdangerous==2.2.0
jinja2==3.1.4
markupsafe==2.1.5
werkzeug==3.0.3
"""

# The reproducer of abess-team/abess#496 (a linear regression fit), as filed.
ABESS_REPRO = """\
from abess.linear import LinearRegression
from abess.datasets import make_glm_data
import numpy as np

np.random.seed(12345)
data = make_glm_data(n=100, p=50, k=10, family="gaussian")
model = LinearRegression(support_size=10)
model.fit(data.x, data.y)
print(model.predict(data.x)[:4])
"""


def py(code: str) -> list[str]:
    return ["python", "-c", code]


@dataclass(frozen=True)
class Case:
    """One real breakpoint.

    ``mode``: ``run`` (``--package``), ``by-date`` or ``diff``. ``truth``: the culprit package
    and its first bad version (``fix``: a fix search, ``--good`` newer than ``--bad``, and the
    truth is the first fixed version). ``args``: the command's own arguments (range, ``--with``...),
    ``repro``: the command after ``--``. ``verified``: what was checked by hand with plain uv.
    """

    name: str
    kind: str
    mode: str
    truth: tuple[str, str]
    python: str
    args: tuple[str, ...]
    repro: tuple[str, ...]
    source: str
    verified: str
    files: dict[str, str] = field(default_factory=dict)
    fix: bool = False


CASES: tuple[Case, ...] = (
    Case(
        name="numpy2-float_",
        kind="API removal",
        mode="run",
        truth=("numpy", "2.0.0"),
        python="3.11",
        args=("--package", "numpy", "--good", "1.26.4", "--bad", "2.1.0"),
        repro=tuple(py("import numpy as np; np.float_")),
        source="https://numpy.org/doc/stable/release/2.0.0-notes.html",
        verified="1.26.4 passes; 2.0.0: AttributeError: `np.float_` was removed in the NumPy 2.0"
        " release",
    ),
    Case(
        name="numpy124-bool-alias",
        kind="API removal",
        mode="run",
        truth=("numpy", "1.24.0"),
        python="3.11",
        args=("--package", "numpy", "--good", "1.23.5", "--bad", "1.25.0"),
        repro=tuple(py("import numpy as np; np.bool")),
        source="https://numpy.org/doc/stable/release/1.24.0-notes.html",
        verified="1.23.5 passes (DeprecationWarning); 1.24.0: AttributeError: module 'numpy' has"
        " no attribute 'bool'",
    ),
    Case(
        name="numpy2-abi-pandas",
        kind="ABI break (transitive)",
        mode="run",
        truth=("numpy", "2.0.0"),
        python="3.11",
        args=(
            "--package",
            "numpy",
            "--with",
            "pandas==2.0.3",
            "--good",
            "1.26.4",
            "--bad",
            "2.0.2",
        ),
        repro=tuple(py("import pandas")),
        source="https://pandas.pydata.org/docs/whatsnew/v2.2.2.html",
        verified="pandas 2.0.3 (no numpy cap) + numpy 1.26.4 imports; + numpy 2.0.0: ValueError:"
        " numpy.dtype size changed, may indicate binary incompatibility",
    ),
    Case(
        name="pandas2-append",
        kind="API removal",
        mode="run",
        truth=("pandas", "2.0.0"),
        python="3.11",
        args=("--package", "pandas", "--with", "numpy<2", "--good", "1.5.3", "--bad", "2.0.3"),
        repro=tuple(py("import pandas as pd; pd.DataFrame().append({'a': 1}, ignore_index=True)")),
        source="https://pandas.pydata.org/docs/whatsnew/v2.0.0.html",
        verified="1.5.3 passes (FutureWarning); 2.0.0: AttributeError: 'DataFrame' object has no"
        " attribute 'append'",
    ),
    Case(
        name="sqlalchemy2-execute",
        kind="API removal",
        mode="run",
        truth=("sqlalchemy", "2.0.0"),
        python="3.11",
        args=("--package", "sqlalchemy", "--good", "1.4.50", "--bad", "2.0.1"),
        repro=tuple(
            py("import sqlalchemy as sa; sa.create_engine('sqlite://').execute('select 1')")
        ),
        source="https://docs.sqlalchemy.org/en/20/changelog/migration_20.html",
        verified="1.4.54 (the newest 1.4, just below 2.0.0 in version order) passes"
        " (RemovedIn20Warning); 2.0.0: AttributeError: 'Engine' object has no attribute 'execute'",
    ),
    Case(
        name="werkzeug3-flask222",
        kind="two-package (app pinned)",
        mode="run",
        truth=("werkzeug", "3.0.0"),
        python="3.11",
        args=(
            "--package",
            "werkzeug",
            "--with",
            "flask==2.2.2",
            "--good",
            "2.3.7",
            "--bad",
            "3.0.1",
        ),
        repro=tuple(py("import flask")),
        source="https://github.com/pallets/werkzeug/issues/2789",
        verified="flask 2.2.2 + werkzeug 2.3.7 and 2.3.8 (2.3.8 came out after 3.0.0, below it"
        " in version order) import; + 3.0.0: ImportError: cannot import name 'url_quote' from"
        " 'werkzeug.urls'",
    ),
    Case(
        name="werkzeug21-safe_str_cmp",
        kind="API removal",
        mode="run",
        truth=("werkzeug", "2.1.0"),
        python="3.11",
        args=("--package", "werkzeug", "--good", "2.0.3", "--bad", "2.1.2"),
        repro=tuple(py("from werkzeug.security import safe_str_cmp")),
        source="https://werkzeug.palletsprojects.com/en/stable/changes/#version-2-1-0",
        verified="2.0.3 passes; 2.1.0: ImportError: cannot import name 'safe_str_cmp'",
    ),
    Case(
        name="click81-black",
        kind="transitive (app pinned)",
        mode="run",
        truth=("click", "8.1.0"),
        python="3.10",
        args=("--package", "click", "--with", "black==22.1.0", "--good", "8.0.4", "--bad", "8.1.3"),
        repro=("black", "--version"),
        source="https://github.com/psf/black/issues/2964",
        verified="black 22.1.0 + click 8.0.4: `black --version` prints; + click 8.1.0:"
        " ImportError: cannot import name '_unicodefun' from 'click'",
    ),
    Case(
        name="by-date-black-click",
        kind="transitive, by date",
        mode="by-date",
        truth=("click", "8.1.0"),
        python="3.10",
        args=("--with", "black==22.1.0", "--good", "2022-03-01", "--bad", "2022-04-15"),
        repro=("black", "--version"),
        source="https://github.com/psf/black/issues/2964",
        verified="as click81-black; click 8.1.0 was uploaded 2022-03-28, inside the window",
    ),
    Case(
        name="by-date-jinja2-markupsafe",
        kind="transitive, by date",
        mode="by-date",
        truth=("markupsafe", "2.1.0"),
        python="3.10",
        args=("--with", "jinja2==2.11.3", "--good", "2021-06-01", "--bad", "2022-06-01"),
        repro=tuple(py("import jinja2")),
        source="https://github.com/pallets/jinja/issues/1596",
        verified="jinja2 2.11.3 + markupsafe 2.0.1 imports; + markupsafe 2.1.0: ImportError:"
        " cannot import name 'soft_unicode' from 'markupsafe'",
    ),
    Case(
        name="importlib-metadata5-get",
        kind="API removal",
        mode="run",
        truth=("importlib-metadata", "5.0.0"),
        python="3.11",
        args=("--package", "importlib-metadata", "--good", "4.12.0", "--bad", "5.1.0"),
        repro=tuple(
            py("import importlib_metadata as m; m.entry_points().get('console_scripts', [])")
        ),
        source="https://github.com/python/importlib_metadata/issues/409",
        verified="4.13.0 passes (DeprecationWarning); 5.0.0: AttributeError: 'EntryPoints'"
        " object has no attribute 'get'",
    ),
    Case(
        name="urllib3-2-method_whitelist",
        kind="API removal",
        mode="run",
        truth=("urllib3", "2.0.0"),
        python="3.11",
        args=("--package", "urllib3", "--good", "1.26.18", "--bad", "2.0.2"),
        repro=tuple(py("from urllib3.util.retry import Retry; Retry(method_whitelist=['GET'])")),
        source="https://urllib3.readthedocs.io/en/stable/changelog.html",
        verified="1.26.15 and 1.26.20 (the newest 1.26, below 2.0.0 in version order) pass"
        " (DeprecationWarning); 2.0.0: TypeError: Retry.__init__() got an unexpected keyword"
        " argument 'method_whitelist'",
    ),
    Case(
        name="pyyaml6-load-loader",
        kind="signature change",
        mode="run",
        truth=("pyyaml", "6.0"),
        python="3.9",
        args=("--package", "pyyaml", "--good", "5.4.1", "--bad", "6.0.1"),
        repro=tuple(py("import yaml; yaml.load('a: 1')")),
        source="https://github.com/yaml/pyyaml/pull/561",
        verified="5.4.1 passes (YAMLLoadWarning); 6.0: TypeError: load() missing 1 required"
        " positional argument: 'Loader'",
    ),
    Case(
        name="jinja2-31-Markup",
        kind="API removal",
        mode="run",
        truth=("jinja2", "3.1.0"),
        python="3.11",
        args=("--package", "jinja2", "--good", "3.0.3", "--bad", "3.1.2"),
        repro=tuple(py("from jinja2 import Markup")),
        source="https://jinja.palletsprojects.com/en/stable/changes/#version-3-1-0",
        verified="3.0.3 passes; 3.1.0: ImportError: cannot import name 'Markup' from 'jinja2'",
    ),
    Case(
        name="itsdangerous21-json",
        kind="API removal",
        mode="run",
        truth=("itsdangerous", "2.1.0"),
        python="3.11",
        args=("--package", "itsdangerous", "--good", "2.0.1", "--bad", "2.1.2"),
        repro=tuple(py("from itsdangerous import json")),
        source="https://itsdangerous.palletsprojects.com/en/stable/changes/#version-2-1-0",
        verified="2.0.1 passes; 2.1.0: ImportError: cannot import name 'json' from 'itsdangerous'",
    ),
    Case(
        name="networkx3-to_numpy_matrix",
        kind="API removal",
        mode="run",
        truth=("networkx", "3.0"),
        python="3.11",
        args=("--package", "networkx", "--good", "2.8.8", "--bad", "3.1"),
        repro=tuple(py("import networkx as nx; nx.to_numpy_matrix")),
        source="https://networkx.org/documentation/stable/release/release_3.0.html",
        verified="2.8.8 passes; 3.0: AttributeError: module 'networkx' has no attribute"
        " 'to_numpy_matrix'",
    ),
    Case(
        name="scipy114-simps",
        kind="API removal (binary wheel)",
        mode="run",
        truth=("scipy", "1.14.0"),
        python="3.11",
        args=("--package", "scipy", "--good", "1.13.1", "--bad", "1.14.1"),
        repro=tuple(py("from scipy.integrate import simps")),
        source="https://docs.scipy.org/doc/scipy/release/1.14.0-notes.html",
        verified="1.13.1 passes; 1.14.0: ImportError: cannot import name 'simps' from"
        " 'scipy.integrate'",
    ),
    Case(
        name="pyarrow21-datasets",
        kind="transitive (app pinned)",
        mode="run",
        truth=("pyarrow", "21.0.0"),
        python="3.11",
        args=(
            "--package",
            "pyarrow",
            "--with",
            "datasets==2.14.6",
            "--with",
            "numpy<2",
            "--good",
            "19.0.1",
            "--bad",
            "21.0.0",
        ),
        repro=tuple(py("import datasets")),
        source="https://arrow.apache.org/release/21.0.0.html",
        verified="datasets 2.14.6 + numpy<2 + pyarrow 20.0.0 imports; + pyarrow 21.0.0:"
        " AttributeError: module 'pyarrow' has no attribute 'PyExtensionType'",
    ),
    Case(
        name="abess-crash",
        kind="native crash (released wheel)",
        mode="run",
        truth=("abess", "0.4.6"),
        python="3.8",
        args=("--package", "abess", "--good", "0.4.4", "--bad", "0.4.7", "--repro", "{repro.py}"),
        repro=(),
        source="https://github.com/abess-team/abess/issues/496",
        verified="0.4.4 and 0.4.5 print predictions; 0.4.6 and 0.4.7 die with SIGILL (exit"
        " 132) in pybind_cabess.cpython-38-x86_64-linux-gnu.so (gdb: 0.4.6 in"
        " Normalize(Eigen::Matrix<double...>&, ...) at `vcvtsi2sd %edx,%xmm0,%xmm16`, 0.4.7 in"
        " a stripped `??` frame at `vpmaxsq`: AVX-512 instructions, and this CPU has AVX2 only;"
        " the issue reports a SIGSEGV on Azure);"
        " `import abess` alone passes. Not monotone further down: 0.4.2 and 0.4.3 die the same"
        " way (hence --good 0.4.4)",
        files={"repro.py": ABESS_REPRO},
    ),
    Case(
        name="abess-crash-fixed",
        kind="native crash, fix search",
        mode="run",
        truth=("abess", "0.4.8"),
        python="3.8",
        args=("--package", "abess", "--good", "0.4.8", "--bad", "0.4.6", "--repro", "{repro.py}"),
        repro=(),
        source="https://github.com/abess-team/abess/issues/496",
        verified="0.4.6 and 0.4.7 SIGILL as in abess-crash (0.4.7rc1 is a pre-release, left"
        " out); 0.4.8 passes",
        files={"repro.py": ABESS_REPRO},
        fix=True,
    ),
    Case(
        name="diff-flask-locks",
        kind="two lockfiles (diff)",
        mode="diff",
        truth=("werkzeug", "3.0.0"),
        python="3.11",
        args=("{good.txt}", "{bad.txt}"),
        repro=tuple(py("import flask")),
        source="https://github.com/pallets/werkzeug/issues/2789",
        verified="GOOD installs and imports; BAD: ImportError: cannot import name 'url_quote';"
        " werkzeug 2.3.8 / 3.0.0 with flask 2.2.2 as in werkzeug3-flask222",
        files={"good.txt": DIFF_GOOD, "bad.txt": DIFF_BAD},
    ),
)


def find_interpreter(version: str) -> str:
    """A pyenv interpreter's path for ``version`` (3.10) when there is one, else ``version``."""
    versions = Path.home() / ".pyenv" / "versions"
    if versions.is_dir():
        for candidate in sorted(versions.glob(f"{version}.*"), reverse=True):
            exe = candidate / "bin" / f"python{version}"
            if exe.exists():
                return str(exe)
    return version


@dataclass
class Result:
    case: Case
    answer: str
    right: bool
    probes: int
    seconds: float
    note: str


def command(case: Case, work: Path, cache: Path, timeout: int) -> list[str]:
    args = list(case.args)
    for name in case.files:
        args = [a.replace("{" + name + "}", str(work / name)) for a in args]
    head = ["diff"] if case.mode == "diff" else ["run"]
    if case.mode == "by-date":
        head.append("--by-date")
    return [
        *ENVBISECT,
        *head,
        *args,
        "--no-config",  # the user's index settings set aside: PyPI alone, on any machine
        "--python",
        find_interpreter(case.python),
        "--timeout",
        str(timeout),
        "--results",
        str(work / "results"),
        "--cache-dir",
        str(cache / "meta"),
        "--json",
        *(["--", *case.repro] if case.repro else []),
    ]


def crash_of(out: dict[str, Any]) -> str:
    """`` (SIGILL in libfoo.so)`` when the failing outcome is a crash, else ``""`` (in a fix
    search, the last broken version's outcome)."""
    outcome = out.get("first_bad_outcome") or {}
    if outcome.get("kind") != "crash":
        return ""
    where = f" in {outcome['library']}" if outcome.get("library") else ", library not named"
    broken = f"last broken {out.get('last_broken')}: " if out.get("direction") == "fix" else ""
    return f" ({broken}{outcome.get('signal')}{where})"


def answer_of(case: Case, out: dict[str, Any]) -> tuple[str, bool, str]:
    """(answer, right?, note) from the command's JSON object."""
    package, version = case.truth
    if "error" in out and out.get("status") == "error":
        err = out["error"]
        return f"error [{err.get('ref')}]", False, str(err.get("message"))
    status = out.get("status")
    if case.mode == "run":
        if status == "found":
            first = str(out.get("first_fixed" if case.fix else "first_bad"))
            return f"{package} {first}{crash_of(out)}", first == version, ""
        if status == "ambiguous":
            cands = [str(v) for v in out.get("first_bad_candidates") or []]
            return f"one of {', '.join(cands)}", False, "ambiguous"
        return str(status), False, str(out.get("reason", ""))
    culprits = out.get("culprits") or []
    named = [f"{c['package']} {c['bad_version']}" for c in culprits]
    answer = " + ".join(named) if named else str(status)
    right = len(culprits) == 1 and (culprits[0]["package"], culprits[0]["bad_version"]) == (
        package,
        version,
    )
    note = "" if culprits else str(out.get("reason", ""))
    return answer, right, note


def run_case(case: Case, cache: Path, timeout: int, verbose: bool) -> Result:
    with tempfile.TemporaryDirectory(prefix=f"rw-{case.name}-") as tmp:
        work = Path(tmp)
        for name, text in case.files.items():
            (work / name).write_text(text)
        cmd = command(case, work, cache, timeout)
        env = dict(os.environ, UV_CACHE_DIR=str(cache / "uv"))
        env["PYTHONPATH"] = os.pathsep.join(
            p for p in (str(ROOT / "src"), os.environ.get("PYTHONPATH", "")) if p
        )
        started = time.monotonic()
        proc = subprocess.run(cmd, cwd=work, env=env, capture_output=True, text=True, check=False)
        seconds = time.monotonic() - started
        if verbose:
            sys.stderr.write(proc.stderr)
        try:
            out: dict[str, Any] = json.loads(proc.stdout)
        except json.JSONDecodeError:
            tail = (proc.stderr.strip().splitlines() or ["no output"])[-1]
            return Result(case, f"exit {proc.returncode}", False, 0, seconds, tail)
        answer, right, note = answer_of(case, out)
        probes = len(out.get("probes") or [])
        return Result(case, answer, right, probes, seconds, note)


def table(results: list[Result]) -> str:
    lines = [
        "| case | kind | truth | answer | right? | probes built | seconds |",
        "|---|---|---|---|---|---:|---:|",
    ]
    for r in results:
        truth = " ".join(r.case.truth) + (" (fixed)" if r.case.fix else "")
        mark = "yes" if r.right else "**no**"
        lines.append(
            f"| {r.case.name} | {r.case.kind} | {truth} | {r.answer} | {mark} | {r.probes} |"
            f" {r.seconds:.0f} |"
        )
    right = sum(r.right for r in results)
    total = sum(r.seconds for r in results)
    lines.append("")
    lines.append(
        f"{right}/{len(results)} right, {sum(r.probes for r in results)} environments built,"
        f" {total:.0f} s in all ({date.today().isoformat()})."
    )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--only", action="append", metavar="NAME", help="run this case only")
    parser.add_argument("--list", action="store_true", help="list the cases and their sources")
    parser.add_argument(
        "--cache",
        type=Path,
        default=Path.home() / ".cache" / "envbisect-realworld",
        help="shared cache: uv's under DIR/uv, envbisect's metadata under DIR/meta",
    )
    parser.add_argument(
        "--timeout", type=int, default=120, help="kill a probe after this long (default 120)"
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="show envbisect's progress")
    opts = parser.parse_args(argv)
    cases = list(CASES)
    if opts.only:
        unknown = set(opts.only) - {c.name for c in CASES}
        if unknown:
            parser.error(f"unknown case(s): {', '.join(sorted(unknown))} (see --list)")
        cases = [c for c in CASES if c.name in opts.only]
    if opts.list:
        for c in cases:
            print(f"{c.name}: {c.kind}; {' '.join(c.truth)} (Python {c.python})")
            head = "run --by-date" if c.mode == "by-date" else c.mode
            print(f"    envbisect {head} {shlex.join(c.args)} -- {shlex.join(c.repro)}")
            print(f"    source: {c.source}")
            print(f"    verified by hand: {c.verified}")
        return 0
    results = []
    for c in cases:
        sys.stderr.write(f"realworld: {c.name} ...\n")
        sys.stderr.flush()
        r = run_case(c, opts.cache, opts.timeout, opts.verbose)
        sys.stderr.write(
            f"realworld: {c.name}: {r.answer} ({'right' if r.right else 'WRONG'}, {r.probes}"
            f" probes, {r.seconds:.0f} s){' ' + r.note if r.note else ''}\n"
        )
        results.append(r)
    print(table(results))
    for r in results:
        if not r.right and r.note:
            print(f"\n{r.case.name}: {r.note}")
    return 0 if all(r.right for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
