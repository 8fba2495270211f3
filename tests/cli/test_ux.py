"""The first five minutes at a terminal: the live display under a real pseudo-terminal, -q and
-v, suggestions for misspelled commands and flags, the hints, markup in user text, ``publish
--json`` and shell completion (the user's own index settings: test_index_settings.py). Every
CLI case runs the real CLI in a subprocess (support/cli.py).
"""

from __future__ import annotations

import argparse
import io
import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import RecordingProgress, write_repro
from envbisect.cli.display import RichProgress, duration, fit
from envbisect.env.forensics import NativeBacktrace
from envbisect.env.repro import Repro
from envbisect.model import IndexConfig, Outcome, OutcomeKind
from envbisect.modes.run import RunOptions, run_bisect
from support.cli import CLI, assert_clean_error, envbisect, on_index
from support.index_server import LocalIndex
from support.options import flat_options
from support.terminal import under_pty

# -- the live display under a real pseudo-terminal ----------------------------------------------


SLEEPY = "import time\ntime.sleep(3)\nimport raisy\nraisy.run()\n"
PHASES = ("building", "resolving & installing", "running")  # a local probe's, in order
AHEAD = ("built ahead", "running")  # one built while the probe before it ran
RAISY = ("--", "python", "-c", "import raisy; raisy.run()")  # fails from raisy 1.5.0 on


def raisy_run(
    index: LocalIndex, python: str, tmp_path: Path, good: str = "1.4.0", bad: str = "1.5.0"
) -> list[str]:
    """``run --package raisy --good GOOD --bad BAD`` on the test's index (``on_index``)."""
    return ["run", "--package", "raisy", "--good", good, "--bad", bad,
            *on_index(index.url, python, tmp_path)]  # fmt: skip


@pytest.mark.slow
def test_live_display_shows_the_elapsed_time_advance_during_one_probe(
    index: LocalIndex, python: str, tmp_path: Path
) -> None:
    repro = tmp_path / "repro.py"
    repro.write_text(SLEEPY)
    code, out, screen = under_pty(
        [
            *CLI,
            *raisy_run(index, python, tmp_path),
            "--cache-dir",
            str(tmp_path / "c"),
            "--repro",
            str(repro),
        ],
        # a terminal that wants colour: the session's NO_COLOR (conftest.py) would draw none
        {**{k: v for k, v in os.environ.items() if k != "NO_COLOR"}, "TERM": "xterm-256color"},
    )
    assert code == 0, screen
    # the answer on stdout, untouched by the display
    assert "first bad version of raisy: 1.5.0" in out
    plain = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", screen)
    # One probe's line, redrawn while it runs: "1.4.0: running 0.4 s (probe 1.6 s)"...
    seen = [float(s) for s in re.findall(r"1\.4\.0: running (\d+\.\d) s", plain)]
    assert len(set(seen)) >= 4, plain
    assert seen == sorted(seen) and seen[-1] >= 2.0  # it advances, during the 3 s sleep
    # each phase before it, in order: drawn when it starts, however short (a warm build is)
    firsts = [plain.find(f"1.4.0: {phase} ") for phase in PHASES]
    assert -1 not in firsts and firsts == sorted(firsts), plain
    assert "\x1b[" in screen  # redrawn in place (cursor movement), not printed line by line
    # the second probe knows how long one takes: an ETA from the measured probe
    assert re.search(r"this step and at most 0 more, about \d+\.\d s left", plain), plain


@pytest.mark.slow
def test_not_a_terminal_gets_plain_lines(index: LocalIndex, python: str, tmp_path: Path) -> None:
    proc = envbisect(*raisy_run(index, python, tmp_path), *RAISY)
    assert proc.returncode == 0, proc.stderr
    assert "\x1b[" not in proc.stderr and "running" not in proc.stderr
    assert "[1] probing 1.4.0 (0 left in range; this step and at most 1 more)" in proc.stderr
    assert "envbisect: index: " + index.url + " (--index-url)" in proc.stderr
    # the range's marks, explained once, before the first range drawn
    legend = "envbisect: the range, oldest to newest: G a pass, B the failure searched for, "
    assert proc.stderr.count(legend) == 1
    drawn = re.findall(r"\[([GBFS?×0-9, ]+)\]$", proc.stderr, flags=re.M)
    assert drawn and proc.stderr.index(legend) < proc.stderr.index(f"[{drawn[0]}]")
    marks = {m.split("×")[0] for d in drawn for m in d.split(", ")}
    assert marks <= {"G", "B", "F", "S", "?"} and all(f"{m} " in proc.stderr for m in marks)


def test_the_reporter_fits_the_range_and_counts_down() -> None:
    drawing = "[" + ", ".join(["G"] * 3 + ["?"] * 40 + ["B"] * 3) + "]"
    fitted = fit(drawing, 40)
    assert len(fitted) <= 40 and fitted.startswith("[G, G") and fitted.endswith("B, B]")
    assert "…" in fitted and fit("[G, ?, B]", 40) == "[G, ?, B]"
    assert duration(3.14) == "3.1 s" and duration(125) == "2 min 05 s"
    from rich.console import Console

    console = Console(file=open(os.devnull, "w"), width=80)  # noqa: SIM115
    rep = RichProgress(console, live=False)
    shown = []
    for steps in (4, 3, 2):
        shown.append(rep._where(7, steps))
        rep.probe_finished("x", Outcome(kind=OutcomeKind.PASS), 10.0, False, "")
    assert "at most 3 more" in shown[0] and "about" not in shown[0]  # nothing measured yet
    assert "at most 2 more, about 30.0 s left" in shown[1]
    assert "at most 1 more, about 20.0 s left" in shown[2]
    # On a terminal 60 wide, the range fits after the outcome, or on a line of its own.
    narrow = io.StringIO()
    rep = RichProgress(Console(file=narrow, width=60), live=True)
    rep._live_ok, wide = True, "[" + ", ".join(["G"] * 2 + ["?"] * 30 + ["B"] * 2) + "]"
    rep.probe_finished("1.0.0", Outcome(kind=OutcomeKind.PASS), 1.0, False, wide)
    rep.probe_finished("1.1.0", Outcome(kind=OutcomeKind.FAIL, signature="E" * 20), 1.0, False,
                       wide)  # fmt: skip
    said, drawn = narrow.getvalue().split("(×N: N in a row)\n", 1)  # the legend, once, first
    assert said.startswith("envbisect: the range, oldest to newest: G a pass")
    lines = drawn.splitlines()
    assert all(len(ln) <= 60 for ln in lines) and len(lines) == 3, lines
    assert lines[0].startswith("    1.0.0: pass (1.0 s) [G, G") and lines[2].startswith("      [G")
    # Text from a repro is printed as it is: brackets, emoji codes, a trailing backslash.
    buf = io.StringIO()
    rep = RichProgress(Console(file=buf, width=200, emoji=False), live=False)
    odd = Outcome(kind=OutcomeKind.FAIL, signature="ValueError: [bold]x[/bold] :six: end\\")
    rep.probe_finished("1.0.0", odd, 1.0, False, "[G, B]")
    assert "1.0.0: fail (ValueError: [bold]x[/bold] :six: end\\) (1.0 s) [G, B]" in buf.getvalue()


def test_each_phase_is_drawn_when_it_starts_however_short() -> None:
    """Three phases begun and the probe finished within a millisecond, well inside one tick
    of the display's own refresh (8 a second): each is still drawn, in order, as it starts."""
    from rich.console import Console

    buf = io.StringIO()
    rep = RichProgress(Console(file=buf, width=100, force_terminal=True), live=True)
    rep.probe_started("1.4.0", 1, 1)
    for phase in PHASES:
        rep.phase("1.4.0", phase)
    rep.probe_finished("1.4.0", Outcome(kind=OutcomeKind.PASS), 0.001, False, "[G, B]")
    plain = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", buf.getvalue())
    firsts = [plain.find(f"1.4.0: {phase} ") for phase in PHASES]
    assert -1 not in firsts and firsts == sorted(firsts), plain
    assert "1.4.0: pass" in plain and rep._live is None  # the display gone before the result


# -- -q and -v ------------------------------------------------------------------------------------


@pytest.mark.slow
def test_quiet_prints_the_answer_only(index: LocalIndex, python: str, tmp_path: Path) -> None:
    proc = envbisect(*raisy_run(index, python, tmp_path), "-q", *RAISY)
    assert proc.returncode == 0 and proc.stderr == ""
    assert "first bad version of raisy: 1.5.0" in proc.stdout
    probe = envbisect(
        "probe", "--with", "raisy==1.0.0", "--probe", "import:six",
        *on_index(index.url, python, tmp_path), "-q",
    )  # fmt: skip
    assert probe.returncode == 4 and probe.stderr == ""
    assert probe.stdout == "untestable (not installed in this environment: six)\n"
    both = envbisect("-q", "run", "-v", "--package", "raisy")
    assert_clean_error(both, 2, "-q and -v")


@pytest.mark.slow
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


@pytest.mark.slow
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


@pytest.mark.slow
def test_swapped_good_and_bad_are_suggested_to_be_swapped(
    index: LocalIndex, python: str, tmp_path: Path
) -> None:
    # raisy 1.5.0 fails and 1.4.0 passes: naming them the other way round verifies backwards.
    proc = envbisect(*raisy_run(index, python, tmp_path, good="1.5.0", bad="1.4.0"), *RAISY)
    assert_clean_error(proc, 1, "the good end does not pass")
    hint = (
        "hint: --good 1.5.0 fails and --bad 1.4.0 passes: were they swapped? "
        "--good 1.4.0 --bad 1.5.0 searches that way round"
    )
    assert hint in proc.stderr


@pytest.mark.slow
def test_a_python_that_does_not_exist_is_not_offered_for_install(tmp_path: Path) -> None:
    proc = envbisect("pins", str(tmp_path), "--python", "9.9")
    assert_clean_error(proc, 2, "no Python interpreter matches --python 9.9")
    assert "uv python install 9.9" not in proc.stderr
    assert "no Python 9.9 exists that uv could install; this machine has" in proc.stderr


@pytest.mark.slow
def test_markup_and_emoji_codes_in_user_text_are_shown_as_typed(
    index: LocalIndex, python: str, tmp_path: Path
) -> None:
    proc = envbisect(
        "probe", "--with", "raisy==1.0.0", *on_index(index.url, python, tmp_path),
        "--probe", "import:six",
    )  # fmt: skip
    assert proc.returncode == 4, proc.stderr  # six is not on the local index: the import fails
    assert "import:six: " in proc.stderr
    assert "6\ufe0f\u20e3" not in proc.stderr + proc.stdout  # rich's :six: emoji
    odd = envbisect("run", "--package", "[bold]x:smile:", "--python", python)
    assert "[bold]x:smile:" in odd.stderr and "\U0001f604" not in odd.stderr


# -- publish --json and completion --------------------------------------------------------------


@pytest.mark.slow
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


@pytest.mark.slow
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
    assert_clean_error(envbisect("completion", "elvish"), 2, "invalid choice: 'elvish'")


def _fish_words(line: str) -> list[str]:
    """A fish command line's words, by fish's rules for '...' (\\ and \\' escape)."""
    words: list[str] = []
    word, quoted, i = "", False, 0
    while i < len(line):
        c = line[i]
        if quoted and c == "\\" and line[i + 1 : i + 2] in ("'", "\\"):
            word, i = word + line[i + 1], i + 2
            continue
        if c == "'":
            quoted = not quoted
        elif c == " " and not quoted:
            words, word = [*words, word], ""
        else:
            word += c
        i += 1
    assert not quoted, line
    return [*words, word]


def test_fish_and_powershell_scripts_name_every_command_and_flag() -> None:
    """shtab makes neither: cli/completions.py does, from the parser. Every subcommand and
    each of its flags is offered; an option's choices are its values; help texts stay inside
    their quotes (fish's rules checked word by word; PowerShell's '' doubling)."""
    from envbisect.cli.parser import build_parser

    parser = build_parser()
    subs = {
        name: sub
        for a in parser._actions
        if isinstance(a, argparse._SubParsersAction)
        for name, sub in a.choices.items()
    }
    fish = envbisect("completion", "fish")
    assert fish.returncode == 0, fish.stderr
    lines = [ln for ln in fish.stdout.splitlines() if not ln.startswith("#")]
    words = [_fish_words(ln) for ln in lines]
    assert all(w[:3] == ["complete", "-c", "envbisect"] for w in words)
    assert words[0] == ["complete", "-c", "envbisect", "-f"]  # no files unless an option's
    words = words[1:]
    offered = {w[w.index("-a") + 1] for w in words if "-a" in w and "not" in w[4]}
    assert offered == set(subs)
    for name, sub in subs.items():
        mine = [w for w in words if w[4] == f"__fish_seen_subcommand_from {name}"]
        longs = {w[w.index("-l") + 1] for w in mine if "-l" in w}
        wanted = {f[2:] for a in sub._actions for f in a.option_strings if f.startswith("--")}
        assert longs == wanted, name
    rest = next(w for w in words if "-l" in w and w[w.index("-l") + 1] == "rest")
    assert rest[rest.index("-a") + 1] == "baseline contemporary latest"
    ps = envbisect("completion", "powershell")
    assert (
        ps.returncode == 0
        and "Register-ArgumentCompleter -Native -CommandName envbisect" in ps.stdout
    )
    for name in subs:
        assert f"    '{name}' = @(" in ps.stdout
    assert ps.stdout.count("{") == ps.stdout.count("}")
    assert "@('--rest', 'baseline contemporary latest')" in ps.stdout


# -- phases: reported by local probes, never part of what is decided ------------------------------


class PhaseRecorder(RecordingProgress):
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
        common=flat_options(
            repro=repro,
            indexes=IndexConfig(index_url=index.url),
            python=python,
            results=tmp_path / name,
            native_backtrace=NativeBacktrace.NEVER,
            executor=executor,
            jobs=jobs,
        ),
    )


@pytest.mark.slow
def test_local_probes_report_their_phases_and_a_broken_reporter_changes_nothing(
    index: LocalIndex, python: str, tmp_path: Path
) -> None:
    seen = PhaseRecorder(verbose=True)
    res = run_bisect(_crashy(index, python, tmp_path, "a"), seen)
    assert (res.first_new, res.last_old) == ("1.7.0", "1.6.0")
    built = [r.version for r in res.rows if r.build_seconds]
    for version in built:  # each built probe: its phases, in order
        phases = [p for v, p in seen.phases if v == version]
        assert phases in (list(PHASES), list(AHEAD)), phases
    assert [p for _, p in seen.phases][:3] == list(PHASES)  # the first: nothing was ahead
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
