"""The first five minutes at a terminal: the live display under a real pseudo-terminal, -q and
-v, the user's own index settings (each source and its precedence, with the tests' local index
on 127.0.0.1), suggestions for misspelled commands and flags, the hints, markup in user text,
``publish --json`` and shell completion. Every CLI case runs the real CLI in a subprocess.
"""

from __future__ import annotations

import fcntl
import io
import json
import os
import pty
import re
import shutil
import struct
import subprocess
import sys
import termios
import threading
from pathlib import Path

import pytest
from test_cli import assert_clean_error, envbisect

from conftest import RecordingReporter, write_repro
from envbisect.cli.display import RichReporter, duration, fit
from envbisect.env.repro import Repro
from envbisect.index.settings import PYPI, resolve
from envbisect.model import IndexConfig, Outcome, OutcomeKind
from envbisect.modes.run import RunOptions, run_bisect
from envbisect.options import CommonOptions
from support.index_server import LocalIndex

CLOSED = "http://127.0.0.1:9/simple"  # nothing listens on the discard port


def clean_env(**extra: str) -> dict[str, str]:
    """The test session's environment (no index settings of this machine) plus ``extra``."""
    return {**os.environ, **extra}


# -- index settings: each source, and its precedence (pure: an environ and files in tmp) --------


def _resolve(tmp_path: Path, env: dict[str, str], **flags: object) -> list[tuple[str, str]]:
    base = {
        "PIP_CONFIG_FILE": os.devnull,
        "XDG_CONFIG_HOME": str(tmp_path / "xdg"),
        "XDG_CONFIG_DIRS": str(tmp_path / "xdg-dirs"),
        "HOME": str(tmp_path / "home"),
    }
    found = resolve(
        index_url=flags.get("index_url"),  # type: ignore[arg-type]
        extra_index_urls=tuple(flags.get("extra", ())),  # type: ignore[arg-type]
        environ={**base, **env},
        cwd=Path(str(flags.get("cwd", tmp_path))),
        no_config=bool(flags.get("no_config", False)),
    )
    return [(found.main.url, found.main.origin), *((f.url, f.origin) for f in found.extra)]


def test_nothing_set_is_pypi(tmp_path: Path) -> None:
    assert _resolve(tmp_path, {}) == [(PYPI, "default")]


def test_each_main_index_source_in_uvs_order(tmp_path: Path) -> None:
    project = tmp_path / "proj"
    (project / "sub").mkdir(parents=True)
    (project / "pyproject.toml").write_text(
        '[project]\nname = "p"\n[tool.uv]\nindex-url = "http://127.0.0.1:1/pyproject"\n'
    )
    user = tmp_path / "xdg" / "uv"
    user.mkdir(parents=True)
    (user / "uv.toml").write_text(
        '[[index]]\nurl = "http://127.0.0.1:1/user"\ndefault = true\n'
        '[[index]]\nurl = "http://127.0.0.1:1/user-extra"\n'
        '[[index]]\nurl = "http://127.0.0.1:1/explicit"\nexplicit = true\n'
    )
    pipconf = tmp_path / "pip.conf"
    pipconf.write_text("[global]\nindex-url = http://127.0.0.1:1/pipconf\n")
    env = {
        "UV_DEFAULT_INDEX": "http://127.0.0.1:1/uv-default",
        "UV_INDEX_URL": "http://127.0.0.1:1/uv-index-url",
        "PIP_INDEX_URL": "http://127.0.0.1:1/pip-env",
        "PIP_CONFIG_FILE": str(pipconf),
    }
    cwd = project / "sub"  # the nearest parent with a [tool.uv] table is the project's
    flag = _resolve(tmp_path, env, index_url="http://127.0.0.1:1/flag", cwd=cwd)
    assert flag[0] == ("http://127.0.0.1:1/flag", "--index-url")
    assert _resolve(tmp_path, env, cwd=cwd)[0] == (
        "http://127.0.0.1:1/uv-default",
        "UV_DEFAULT_INDEX",
    )
    env.pop("UV_DEFAULT_INDEX")
    assert _resolve(tmp_path, env, cwd=cwd)[0][1] == "UV_INDEX_URL"
    env.pop("UV_INDEX_URL")
    url, origin = _resolve(tmp_path, env, cwd=cwd)[0]
    assert url.endswith("/pyproject") and origin.endswith("pyproject.toml tool.uv.index-url")
    # uv.toml beats pyproject.toml in the same folder
    (project / "uv.toml").write_text('index-url = "http://127.0.0.1:1/uvtoml"\n')
    assert _resolve(tmp_path, env, cwd=cwd)[0][0].endswith("/uvtoml")
    (project / "uv.toml").unlink()
    (project / "pyproject.toml").write_text('[project]\nname = "p"\n')  # no [tool.uv]: skipped
    url, origin = _resolve(tmp_path, env, cwd=cwd)[0]
    assert url.endswith("/user") and "uv.toml index (default)" in origin
    (user / "uv.toml").unlink()
    assert _resolve(tmp_path, env, cwd=cwd)[0] == ("http://127.0.0.1:1/pip-env", "PIP_INDEX_URL")
    env.pop("PIP_INDEX_URL")
    url, origin = _resolve(tmp_path, env, cwd=cwd)[0]
    assert url.endswith("/pipconf") and origin == f"{pipconf} [global] index-url"
    assert _resolve(tmp_path, env, cwd=cwd, no_config=True) == [(PYPI, "default")]


def test_extra_indexes_flags_replace_variables_files_add_pip_only_alone(tmp_path: Path) -> None:
    (tmp_path / "uv.toml").write_text(
        'extra-index-url = ["http://127.0.0.1:1/file-extra"]\n'
        '[pip]\nindex-url = "http://127.0.0.1:1/pip-section"\n'
    )
    env = {
        "UV_INDEX": "named=http://127.0.0.1:1/uv-index http://127.0.0.1:1/uv-index-2",
        "UV_EXTRA_INDEX_URL": "http://127.0.0.1:1/uv-extra",
        "PIP_EXTRA_INDEX_URL": "http://127.0.0.1:1/pip-extra",
    }
    got = _resolve(tmp_path, env)
    assert got[0] == ("http://127.0.0.1:1/pip-section", f"{tmp_path / 'uv.toml'} pip.index-url")
    assert [u for u, _ in got[1:]] == [
        "http://127.0.0.1:1/uv-index",  # the name before = is dropped, as uv reads it
        "http://127.0.0.1:1/uv-index-2",
        "http://127.0.0.1:1/uv-extra",
        "http://127.0.0.1:1/file-extra",  # the configuration file's after the variables'
    ]
    flags = _resolve(tmp_path, env, extra=["http://127.0.0.1:1/flag-extra"])
    assert [u for u, _ in flags[1:]] == [
        "http://127.0.0.1:1/flag-extra",
        "http://127.0.0.1:1/file-extra",
    ]
    (tmp_path / "uv.toml").unlink()
    only_pip = _resolve(tmp_path, {"PIP_EXTRA_INDEX_URL": env["PIP_EXTRA_INDEX_URL"]})
    assert only_pip == [(PYPI, "default"), ("http://127.0.0.1:1/pip-extra", "PIP_EXTRA_INDEX_URL")]
    assert _resolve(tmp_path, {"UV_NO_CONFIG": "1", **env}) == [(PYPI, "default")]


def _versions(
    index: LocalIndex,
    python: str,
    tmp_path: Path,
    env: dict[str, str],
    *flags: str,
    cwd: Path | None = None,
) -> subprocess.CompletedProcess[str]:
    return envbisect(
        "versions",
        "raisy",
        "--python",
        python,
        "--cache-dir",
        str(tmp_path / "cache"),
        "--json",
        *flags,
        env=clean_env(**env),
        cwd=cwd,
    )


def _seen(proc: subprocess.CompletedProcess[str]) -> list[str]:
    assert proc.returncode == 0, proc.stderr
    return [c["version"] for c in json.loads(proc.stdout)["candidates"]]


RAISY = [f"1.{i}.0" for i in range(8)]


@pytest.mark.parametrize(
    "var",
    [
        "PIP_INDEX_URL",
        "UV_INDEX_URL",
        "UV_DEFAULT_INDEX",
        "UV_INDEX",
        "UV_EXTRA_INDEX_URL",
        "PIP_EXTRA_INDEX_URL",
    ],
)
def test_a_local_index_named_only_in_a_variable_is_used(
    var: str, index: LocalIndex, python: str, tmp_path: Path
) -> None:
    # The other indexes' variables come on top of a main one: an empty file:// index here, so
    # that nothing reaches PyPI and raisy can only come from the variable's index.
    empty = tmp_path / "empty-index"
    empty.mkdir()
    main = (
        []
        if var.endswith(("INDEX_URL", "DEFAULT_INDEX")) and "EXTRA" not in var
        else ["--index-url", empty.as_uri()]
    )
    proc = _versions(index, python, tmp_path, {var: index.url}, *main)
    assert _seen(proc) == RAISY
    line = next(ln for ln in proc.stderr.splitlines() if ln.startswith("envbisect: index"))
    assert f"{index.url} ({var})" in line
    # --no-config: the variable is ignored, PyPI is asked (and has no raisy like this one)
    ignored = _versions(
        index, python, tmp_path, {var: CLOSED}, "--index-url", index.url, "--no-config"
    )
    assert _seen(ignored) == RAISY and CLOSED not in ignored.stderr


def test_pips_extra_indexes_follow_pips_rule_and_uvs_follow_uvs(
    index: LocalIndex, python: str, tmp_path: Path
) -> None:
    """A mirror with one old file of raisy (as this machine's pip.conf names a folder of a
    few wheels). Named in pip's settings it is merged as pip merges indexes (the best version
    from any), and uv is told so; named in uv's, uv's rule holds: the first index that has
    the project gives all of its files."""
    (old,) = [f for f in index.project("raisy") if f.path.name.startswith("raisy-1.0.0-")]
    mirror = tmp_path / "mirror"
    (mirror / "raisy").mkdir(parents=True)
    shutil.copy(old.path, mirror / "raisy" / old.path.name)
    (mirror / "raisy" / "index.html").write_text(
        f'<a href="{old.path.name}#sha256={old.sha256}">{old.path.name}</a>\n'
    )
    flags = ("--index-url", index.url)
    pip = _versions(index, python, tmp_path, {"PIP_EXTRA_INDEX_URL": mirror.as_uri()}, *flags)
    assert _seen(pip) == RAISY
    assert "pip's rule" in pip.stderr
    uv = _versions(index, python, tmp_path, {"UV_EXTRA_INDEX_URL": mirror.as_uri()}, *flags)
    assert _seen(uv) == ["1.0.0"]
    assert "pip's rule" not in uv.stderr
    # and uv installs by pip's rule too: the newest raisy, from the main index
    rep = write_repro(tmp_path, "raisy")
    env = clean_env(PIP_EXTRA_INDEX_URL=mirror.as_uri())
    out = envbisect("probe", "--with", "raisy", "--python", python, "--repro", str(rep),
                    "--results", str(tmp_path / "r"), "--cache-dir", str(tmp_path / "cache"),
                    "--json", *flags, env=env)  # fmt: skip
    installed = {d["name"]: d["version"] for d in json.loads(out.stdout)["installed"]}
    assert installed["raisy"] == "1.7.0", out.stderr


def test_find_links_folders_from_each_source_in_uvs_order(tmp_path: Path) -> None:
    def links(env: dict[str, str], **kw: object) -> list[tuple[str, str]]:
        got = resolve(index_url=None, extra_index_urls=(), environ={"HOME": str(tmp_path),
                      "PIP_CONFIG_FILE": os.devnull, **env}, cwd=tmp_path, **kw)  # type: ignore[arg-type]  # fmt: skip
        return [(f.url, f.origin) for f in got.links]

    assert links({}) == []
    assert links({"PIP_FIND_LINKS": "/a /b"}) == [
        ("/a", "PIP_FIND_LINKS"),
        ("/b", "PIP_FIND_LINKS"),
    ]
    (tmp_path / "uv.toml").write_text('find-links = ["/from-file"]\n')
    # uv's file names one: pip's are not read; the variable comes before the file
    assert links({"PIP_FIND_LINKS": "/a"}) == [("/from-file", f"{tmp_path / 'uv.toml'} find-links")]
    assert [u for u, _ in links({"UV_FIND_LINKS": "/u1,/u2"})] == ["/u1", "/u2", "/from-file"]
    # the flag replaces the variable; --no-config keeps the flag alone
    flag = links({"UV_FIND_LINKS": "/u1"}, find_links=("/flag",))
    assert [u for u, _ in flag] == ["/flag", "/from-file"]
    assert links({"UV_FIND_LINKS": "/u1"}, find_links=("/flag",), no_config=True) == [
        ("/flag", "--find-links")
    ]


def test_a_folder_named_only_in_pip_find_links_is_used(
    index: LocalIndex, python: str, tmp_path: Path
) -> None:
    from support.wheels import build_wheel

    folder = tmp_path / "wheels"
    folder.mkdir()
    build_wheel(folder, "onlyhere", "1.0.0", {"onlyhere/__init__.py": ""})
    proc = envbisect("versions", "onlyhere", "--python", python, "--index-url", index.url,
                     "--cache-dir", str(tmp_path / "cache"), "--json",
                     env=clean_env(PIP_FIND_LINKS=str(folder)))  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert [c["version"] for c in json.loads(proc.stdout)["candidates"]] == ["1.0.0"]
    assert f"find-links: {folder} (PIP_FIND_LINKS)" in proc.stderr
    gone = envbisect("versions", "onlyhere", "--python", python, "--index-url", index.url,
                     env=clean_env(PIP_FIND_LINKS=str(tmp_path / "nowhere")))  # fmt: skip
    assert gone.returncode == 2 and "(from PIP_FIND_LINKS): no such folder" in gone.stderr
    assert "--no-config" in gone.stderr and "Traceback" not in gone.stderr


def test_the_flag_beats_the_variable_which_beats_the_file_which_beats_pip(
    index: LocalIndex, python: str, tmp_path: Path
) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / "uv.toml").write_text(f'index-url = "{index.url}"\n')
    pipconf = tmp_path / "pip.conf"
    pipconf.write_text(f"[global]\nindex-url = {CLOSED}\n")
    # uv.toml over pip.conf and PIP_INDEX_URL (uv's own settings first)
    proc = _versions(
        index,
        python,
        tmp_path,
        {"PIP_INDEX_URL": CLOSED, "PIP_CONFIG_FILE": str(pipconf)},
        cwd=project,
    )
    assert _seen(proc) == RAISY and f"({project / 'uv.toml'} index-url)" in proc.stderr
    # UV_INDEX_URL over uv.toml: the closed port is asked, and says so
    (project / "uv.toml").write_text(f'index-url = "{CLOSED}"\n')
    proc = _versions(index, python, tmp_path, {"UV_INDEX_URL": index.url}, cwd=project)
    assert _seen(proc) == RAISY
    # --index-url over everything
    proc = _versions(
        index, python, tmp_path, {"UV_INDEX_URL": CLOSED}, "--index-url", index.url, cwd=project
    )
    assert _seen(proc) == RAISY and f"{index.url} (--index-url)" in proc.stderr
    # a pip.conf alone is read too
    (project / "uv.toml").unlink()
    pipconf.write_text(f"[install]\nindex-url = {index.url}\n")
    proc = _versions(index, python, tmp_path, {"PIP_CONFIG_FILE": str(pipconf)}, cwd=project)
    assert _seen(proc) == RAISY and f"({pipconf} [install] index-url)" in proc.stderr


def test_credentials_in_the_index_line_are_masked(
    index: LocalIndex, python: str, tmp_path: Path
) -> None:
    url = index.url.replace("http://", "http://alice:s3cret-pw@")
    proc = _versions(index, python, tmp_path, {"PIP_INDEX_URL": url})
    assert "s3cret-pw" not in proc.stderr + proc.stdout
    assert "http://***@127.0.0.1" in proc.stderr


def test_uv_installs_from_the_index_named_in_pip_index_url(
    index: LocalIndex, python: str, tmp_path: Path
) -> None:
    proc = envbisect(
        "probe",
        "--with",
        "raisy==1.6.0",
        "--python",
        python,
        "--results",
        str(tmp_path / "r"),
        "--cache-dir",
        str(tmp_path / "c"),
        "--json",
        "--probe",
        "import:raisy",
        env=clean_env(PIP_INDEX_URL=index.url),
    )
    assert proc.returncode == 0, proc.stderr
    installed = {d["name"]: d["version"] for d in json.loads(proc.stdout)["installed"]}
    assert installed == {"raisy": "1.6.0"}


# -- the live display under a real pseudo-terminal ----------------------------------------------


SLEEPY = "import time\ntime.sleep(3)\nimport raisy\nraisy.run()\n"


def _under_pty(argv: list[str], env: dict[str, str], cols: int = 100) -> tuple[int, str, str]:
    """Run argv with stderr on a pseudo-terminal (``cols`` wide); (exit code, stdout, what the
    terminal received)."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, cols, 0, 0))
    proc = subprocess.Popen(
        argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=slave, env=env, text=True
    )
    os.close(slave)
    chunks: list[bytes] = []

    def read() -> None:
        while True:
            try:
                data = os.read(master, 65536)
            except OSError:  # EIO: the other side closed
                return
            if not data:
                return
            chunks.append(data)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    out, _ = proc.communicate(timeout=300)
    reader.join(timeout=10)
    os.close(master)
    return proc.returncode, out, b"".join(chunks).decode("utf-8", "replace")


def test_live_display_shows_the_elapsed_time_advance_during_one_probe(
    index: LocalIndex, python: str, tmp_path: Path
) -> None:
    repro = tmp_path / "repro.py"
    repro.write_text(SLEEPY)
    code, out, screen = _under_pty(
        [
            sys.executable,
            "-m",
            "envbisect",
            "run",
            "--package",
            "raisy",
            "--good",
            "1.4.0",
            "--bad",
            "1.5.0",
            "--index-url",
            index.url,
            "--python",
            python,
            "--results",
            str(tmp_path / "r"),
            "--cache-dir",
            str(tmp_path / "c"),
            "--repro",
            str(repro),
        ],
        clean_env(TERM="xterm-256color"),
    )
    assert code == 0, screen
    # the answer on stdout, untouched by the display
    assert "first bad version of raisy: 1.5.0" in out
    plain = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", screen)
    # One probe's line, redrawn while it runs: "1.4.0: running 0.4 s (probe 1.6 s)"...
    seen = [float(s) for s in re.findall(r"1\.4\.0: running (\d+\.\d) s", plain)]
    assert len(set(seen)) >= 4, plain
    assert seen == sorted(seen) and seen[-1] >= 2.0  # it advances, during the 3 s sleep
    # a phase before it (uv venv is quick: a frame may miss it)
    assert re.search(r"1\.4\.0: (building|resolving & installing) \d+\.\d s", plain)
    assert "\x1b[" in screen  # redrawn in place (cursor movement), not printed line by line
    # the second probe knows how long one takes: an ETA from the measured probe
    assert re.search(r"this step and at most 0 more, about \d+\.\d s left", plain), plain


def test_not_a_terminal_gets_plain_lines(index: LocalIndex, python: str, tmp_path: Path) -> None:
    proc = envbisect(
        "run",
        "--package",
        "raisy",
        "--good",
        "1.4.0",
        "--bad",
        "1.5.0",
        "--index-url",
        index.url,
        "--python",
        python,
        "--results",
        str(tmp_path / "r"),
        "--",
        "python",
        "-c",
        "import raisy; raisy.run()",
    )
    assert proc.returncode == 0, proc.stderr
    assert "\x1b[" not in proc.stderr and "running" not in proc.stderr
    assert "[1] probing 1.4.0 (0 left in range; this step and at most 1 more)" in proc.stderr
    assert "envbisect: index: " + index.url + " (--index-url)" in proc.stderr


def test_the_reporter_fits_the_range_and_counts_down() -> None:
    drawing = "[" + ", ".join(["G"] * 3 + ["?"] * 40 + ["B"] * 3) + "]"
    fitted = fit(drawing, 40)
    assert len(fitted) <= 40 and fitted.startswith("[G, G") and fitted.endswith("B, B]")
    assert "…" in fitted and fit("[G, ?, B]", 40) == "[G, ?, B]"
    assert duration(3.14) == "3.1 s" and duration(125) == "2 min 05 s"
    from rich.console import Console

    console = Console(file=open(os.devnull, "w"), width=80)  # noqa: SIM115
    rep = RichReporter(console, live=False)
    shown = []
    for steps in (4, 3, 2):
        shown.append(rep._where(7, steps))
        rep.probe_finished("x", Outcome(kind=OutcomeKind.PASS), 10.0, False, "")
    assert "at most 3 more" in shown[0] and "about" not in shown[0]  # nothing measured yet
    assert "at most 2 more, about 30.0 s left" in shown[1]
    assert "at most 1 more, about 20.0 s left" in shown[2]
    # On a terminal 60 wide, the range fits after the outcome, or on a line of its own.
    narrow = io.StringIO()
    rep = RichReporter(Console(file=narrow, width=60), live=True)
    rep._live_ok, wide = True, "[" + ", ".join(["G"] * 2 + ["?"] * 30 + ["B"] * 2) + "]"
    rep.probe_finished("1.0.0", Outcome(kind=OutcomeKind.PASS), 1.0, False, wide)
    rep.probe_finished("1.1.0", Outcome(kind=OutcomeKind.FAIL, signature="E" * 20), 1.0, False,
                       wide)  # fmt: skip
    lines = narrow.getvalue().splitlines()
    assert all(len(ln) <= 60 for ln in lines) and len(lines) == 3, lines
    assert lines[0].startswith("    1.0.0: pass (1.0 s) [G, G") and lines[2].startswith("      [G")
    # Text from a repro is printed as it is: brackets, emoji codes, a trailing backslash.
    buf = io.StringIO()
    rep = RichReporter(Console(file=buf, width=200, emoji=False), live=False)
    odd = Outcome(kind=OutcomeKind.FAIL, signature="ValueError: [bold]x[/bold] :six: end\\")
    rep.probe_finished("1.0.0", odd, 1.0, False, "[G, B]")
    assert "1.0.0: fail (ValueError: [bold]x[/bold] :six: end\\) (1.0 s) [G, B]" in buf.getvalue()


# -- -q and -v ------------------------------------------------------------------------------------


def test_quiet_prints_the_answer_only(index: LocalIndex, python: str, tmp_path: Path) -> None:
    proc = envbisect(
        "run",
        "-q",
        "--package",
        "raisy",
        "--good",
        "1.4.0",
        "--bad",
        "1.5.0",
        "--index-url",
        index.url,
        "--python",
        python,
        "--results",
        str(tmp_path / "r"),
        "--",
        "python",
        "-c",
        "import raisy; raisy.run()",
    )
    assert proc.returncode == 0 and proc.stderr == ""
    assert "first bad version of raisy: 1.5.0" in proc.stdout
    probe = envbisect(
        "probe",
        "--with",
        "raisy==1.0.0",
        "--probe",
        "import:six",
        "--index-url",
        index.url,
        "--python",
        python,
        "--results",
        str(tmp_path / "r"),
        "-q",
    )
    assert probe.returncode == 4 and probe.stderr == ""
    assert probe.stdout == "untestable (not installed in this environment: six)\n"
    both = envbisect("-q", "run", "-v", "--package", "raisy")
    assert_clean_error(both, 2, "-q and -v")


def test_verbose_shows_uvs_and_the_probes_output(
    index: LocalIndex, python: str, tmp_path: Path
) -> None:
    def args(results: str) -> list[str]:
        return [
            "probe",
            "--with",
            "raisy==1.0.0",
            "--index-url",
            index.url,
            "--python",
            python,
            "--results",
            str(tmp_path / results),
            "--",
            "python",
            "-c",
            "print('hello-from-probe')",
        ]

    loud = envbisect("-v", *args("r"))
    assert loud.returncode == 0, loud.stderr
    assert "stdout: hello-from-probe" in loud.stderr
    assert re.search(r"uv: .*raisy==1\.0\.0", loud.stderr), loud.stderr  # uv's "+ raisy==1.0.0"
    plain = envbisect(*args("r2"))
    assert plain.returncode == 0 and "stdout: hello-from-probe" not in plain.stderr
    assert "uv:" not in plain.stderr


# -- suggestions and hints -----------------------------------------------------------------


def test_misspelled_subcommand_and_flag_get_a_suggestion() -> None:
    proc = envbisect("rn", "--package", "x")
    assert_clean_error(proc, 2, "invalid choice: 'rn'")
    assert "hint: did you mean run?" in proc.stderr
    proc = envbisect("run", "--package", "x", "--godo", "1.0")
    assert_clean_error(proc, 2, "unrecognized arguments: --godo 1.0")
    assert "hint: did you mean --good? (see envbisect run --help)" in proc.stderr
    proc = envbisect("run", "--package", "x", "--rest", "latst")
    assert_clean_error(proc, 2, "invalid choice: 'latst'")
    assert "did you mean latest?" in proc.stderr
    proc = envbisect("run", "--package", "x", "--zzzzzz")  # nothing close: the usual hint
    assert_clean_error(proc, 2, "unrecognized arguments")
    assert "hint: see envbisect run --help" in proc.stderr


def test_swapped_good_and_bad_are_suggested_to_be_swapped(
    index: LocalIndex, python: str, tmp_path: Path
) -> None:
    # raisy 1.5.0 fails and 1.4.0 passes: naming them the other way round verifies backwards.
    proc = envbisect(
        "run",
        "--package",
        "raisy",
        "--good",
        "1.5.0",
        "--bad",
        "1.4.0",
        "--index-url",
        index.url,
        "--python",
        python,
        "--results",
        str(tmp_path / "r"),
        "--",
        "python",
        "-c",
        "import raisy; raisy.run()",
    )
    assert_clean_error(proc, 1, "the good end does not pass")
    hint = (
        "hint: --good 1.5.0 fails and --bad 1.4.0 passes: were they swapped? "
        "--good 1.4.0 --bad 1.5.0 searches that way round"
    )
    assert hint in proc.stderr


def test_a_python_that_does_not_exist_is_not_offered_for_install(tmp_path: Path) -> None:
    proc = envbisect("pins", str(tmp_path), "--python", "9.9")
    assert_clean_error(proc, 2, "no Python interpreter matches --python 9.9")
    assert "uv python install 9.9" not in proc.stderr
    assert "no Python 9.9 exists that uv could install; this machine has" in proc.stderr


def test_markup_and_emoji_codes_in_user_text_are_shown_as_typed(
    index: LocalIndex, python: str, tmp_path: Path
) -> None:
    proc = envbisect(
        "probe",
        "--with",
        "raisy==1.0.0",
        "--index-url",
        index.url,
        "--python",
        python,
        "--results",
        str(tmp_path / "r"),
        "--probe",
        "import:six",
    )
    assert proc.returncode == 4, proc.stderr  # six is not on the local index: the import fails
    assert "import:six: " in proc.stderr
    assert "6\ufe0f\u20e3" not in proc.stderr + proc.stdout  # rich's :six: emoji
    odd = envbisect("run", "--package", "[bold]x:smile:", "--python", python)
    assert "[bold]x:smile:" in odd.stderr and "\U0001f604" not in odd.stderr


# -- publish --json and completion --------------------------------------------------------------


def test_publish_json_lists_what_it_wrote(index: LocalIndex, python: str, tmp_path: Path) -> None:
    (tmp_path / "repro.py").write_text("import gridapp\ngridapp.run()\n")
    matrix = tmp_path / "tiny.toml"
    matrix.write_text(
        f'[matrix]\nname = "tiny"\npython = ["{python}"]\nindex_url = "{index.url}"\n'
        'repro = "repro.py"\ntimeout = 60\n\n[[axis]]\npackage = "gridapp"\n'
        'versions = ["1.0.0"]\n\n[[axis]]\npackage = "gridlib"\nversions = ["1.0.0"]\n'
    )
    results = ["--results", str(tmp_path / "r"), "--cache-dir", str(tmp_path / "c")]
    ran = envbisect("matrix", str(matrix), *results)
    assert ran.returncode == 0, ran.stderr
    # not a terminal: a plain line as planning starts, before anything is built
    lines = ran.stderr.splitlines()
    assert lines.index("envbisect: planning 1 cells") < lines.index(
        "[1] probing gridapp==1.0.0 gridlib==1.0.0"
    )
    proc = envbisect("publish", str(matrix), *results, "--json")
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["status"] == "ok" and [p["matrix"] for p in data["published"]] == ["tiny"]
    files = [Path(f) for f in data["published"][0]["files"]]
    assert {f.name for f in files} >= {"table.md", "table.html", "results.json"}
    assert all(f.is_file() for f in files)


def test_completion_scripts_load_in_the_shells() -> None:
    bash = envbisect("completion", "bash")
    assert bash.returncode == 0, bash.stderr
    assert "--good" in bash.stdout and "publish" in bash.stdout
    check = subprocess.run(
        ["bash", "-c", "source /dev/stdin && complete -p envbisect"],
        input=bash.stdout,
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert check.returncode == 0 and "envbisect" in check.stdout, check.stderr
    zsh = envbisect("completion", "zsh")
    assert zsh.returncode == 0 and zsh.stdout.startswith("#compdef envbisect")
    if shutil.which("zsh"):
        ok = subprocess.run(["zsh", "-n"], input=zsh.stdout, capture_output=True, text=True)
        assert ok.returncode == 0, ok.stderr
    assert_clean_error(envbisect("completion", "fish"), 2, "invalid choice: 'fish'")


# -- phases: reported by local probes, never part of what is decided ------------------------------


class PhaseRecorder(RecordingReporter):
    """Records each probe's phases; ``explode``: every hook beyond the base ones raises."""

    def __init__(self, *, explode: bool = False, verbose: bool = False) -> None:
        super().__init__()
        self.phases: list[tuple[str, str]] = []
        self.outputs: list[tuple[str, str]] = []
        self.explode = explode
        self.verbose = verbose

    def phase(self, version: str, phase: str) -> None:
        self.phases.append((version, phase))
        if self.explode:
            raise RuntimeError("a broken display")

    def output(self, version: str, stream: str, text: str) -> None:
        self.outputs.append((version, stream))
        if self.explode:
            raise RuntimeError("a broken display")


def _crashy(
    index: LocalIndex,
    python: str,
    tmp_path: Path,
    name: str,
    executor: str = "local",
    jobs: int = 1,
) -> RunOptions:
    repro = Repro.from_file(str(write_repro(tmp_path / "repro", "crashy")), tmp_path)
    return RunOptions(
        package="crashy",
        common=CommonOptions(
            repro=repro,
            indexes=IndexConfig(index_url=index.url),
            python=python,
            results=tmp_path / name,
            native_backtrace="never",
            executor=executor,
            jobs=jobs,
        ),
    )


def test_local_probes_report_their_phases_and_a_broken_reporter_changes_nothing(
    index: LocalIndex, python: str, tmp_path: Path
) -> None:
    seen = PhaseRecorder(verbose=True)
    res = run_bisect(_crashy(index, python, tmp_path, "a"), seen)
    assert (res.first_new, res.last_old) == ("1.7.0", "1.6.0")
    built = [r.version for r in res.rows if r.build_seconds]
    for version in built:  # each built probe: its phases, in order
        phases = [p for v, p in seen.phases if v == version]
        assert phases == ["building", "resolving & installing", "running"]
    assert ("1.7.0", "stderr") in seen.outputs  # -v: the crash's faulthandler text
    broken = PhaseRecorder(explode=True, verbose=True)
    again = run_bisect(_crashy(index, python, tmp_path, "b"), broken)
    assert broken.phases and broken.started == seen.started  # the same probes, in order
    assert (again.first_new, again.last_old) == (res.first_new, res.last_old)
    # Worker processes cannot reach the reporter: started and finished only, the same answer.
    remote = PhaseRecorder()
    far = run_bisect(_crashy(index, python, tmp_path, "c", executor="process", jobs=2), remote)
    assert remote.phases == [] and remote.started
    assert (far.first_new, far.last_old) == (res.first_new, res.last_old)
