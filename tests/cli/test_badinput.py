"""Bad input, each once: one ``error:`` line with its reference, one ``hint:`` line, the
right exit code, no traceback, nothing built. (More in test_cli.py and test_hostile.py.)"""

from __future__ import annotations

import importlib.util
import os
import shutil
import sqlite3
from pathlib import Path

import pytest

from envbisect.errors import UsageError
from envbisect.exec.ray import RayExecutor, is_loopback
from envbisect.store import Store
from support.cli import assert_clean_error, envbisect
from support.index_server import LocalIndex

MATRIX = "[matrix]\nprobes = ['import:a']\n[[axis]]\npackage = 'a'\n"


@pytest.fixture
def base(index: LocalIndex, python: str, tmp_path: Path) -> list[str]:
    return ["run", "--index-url", index.url, "--python", python, "--results", str(tmp_path / "r")]


@pytest.mark.parametrize(
    ("args", "needle", "ref"),
    [
        (["--timeout", "nan"], "not a finite number", "bad-usage"),
        (["--timeout", "inf"], "not a finite number", "bad-usage"),
        (["--timeout", "0.001"], "at least 1 second", "bad-usage"),
        (["--find-links", "/nonexistent/wheels"], "no such folder", "bad-find-links"),
        (["--index-url", "http://[::1/simple"], "is not a URL", "bad-url"),
        (["--index-url", "ftp://127.0.0.1/simple"], "not an http(s) or file URL", "bad-url"),
        (["--extra-index-url", "http://127.0.0.1/a b"], "not an http(s) or file URL", "bad-url"),
        (["--package", "evil\nname"], "is not a project name", "bad-name"),
        (["--package", ""], "nothing to bisect", "bad-usage"),
        (["--index-url", ""], "not an http(s) or file URL", "bad-url"),
        (["--find-links", ""], "no such folder", "bad-find-links"),
        (["--jobs", "100000"], "at most 256", "bad-usage"),
        (["--index-url", "http://127.0.0.1:99999/simple"], "Port out of range", "bad-url"),
    ],
)
def test_bad_run_flags(base: list[str], args: list[str], needle: str, ref: str) -> None:
    if "--package" not in args:
        args = [*args, "--package", "crashy"]
    proc = envbisect(*base, *args, "--", "true")
    assert_clean_error(proc, 2, needle)
    assert f"[{ref}]" in proc.stderr


@pytest.mark.parametrize("jobs", ["0", "-3", "two"])
def test_matrix_jobs(tmp_path: Path, jobs: str) -> None:
    path = tmp_path / "m.toml"
    path.write_text(MATRIX)
    proc = envbisect("matrix", path.as_posix(), f"--jobs={jobs}", "--results", str(tmp_path))
    assert_clean_error(proc, 2, "--jobs")


def test_by_date_good_yesterday_talks_about_good(base: list[str]) -> None:
    proc = envbisect(*base, "--by-date", "--good", "yesterday", "--bad", "2024-06-01", "--", "true")
    assert_clean_error(proc, 2, "--good 'yesterday' is not a date")
    assert "--exclude-newer" not in proc.stderr


def test_baseline_of_ranges_is_refused(base: list[str], tmp_path: Path) -> None:
    ranges = tmp_path / "ranges.txt"
    ranges.write_text("crashy>=1.0\nhelperlib<3\n")
    proc = envbisect(*base, "--package", "crashy", "--baseline", str(ranges), "--", "true")
    assert_clean_error(proc, 2, "pins no version exactly")
    assert not (tmp_path / "r" / ".envs").exists() or not any((tmp_path / "r" / ".envs").iterdir())


def test_a_matrix_file_that_is_not_utf8(tmp_path: Path) -> None:
    path = tmp_path / "m.toml"
    path.write_bytes(b"\xff\xfe" + MATRIX.encode("utf-16-le"))
    for cmd in ("matrix", "publish"):
        proc = envbisect(cmd, str(path), "--results", str(tmp_path / "r"))
        assert_clean_error(proc, 2, "not UTF-8")


def test_publish_from_a_damaged_store(tmp_path: Path) -> None:
    results = tmp_path / "r"
    Store(results).close()
    db = sqlite3.connect(results / "envbisect.db")
    db.executescript("DROP TABLE matrix_cells; CREATE TABLE matrix_cells (x TEXT);")
    db.close()
    path = tmp_path / "m.toml"
    path.write_text(MATRIX)
    proc = envbisect("publish", str(path), "--results", str(results))
    assert_clean_error(proc, 3, "damaged")
    assert "[store-damaged]" in proc.stderr


EVIL_REPRO = r"""
import sys
import raisy
sys.stderr.write("\x1b[2J\x1b]0;owned\x07\x9b31m\r")
try:
    raisy.run()
except ValueError:
    raise ValueError("<img src=x onerror=alert(1)> | `` ``` broke\x1b[5m")
"""


@pytest.mark.slow
def test_untrusted_text_is_stripped_for_the_terminal_and_escaped_for_markdown(
    index: LocalIndex, python: str, tmp_path: Path
) -> None:
    import json

    repro = tmp_path / "evil.py"
    repro.write_text(EVIL_REPRO)
    common = ["--index-url", index.url, "--python", python, "--results", str(tmp_path / "r")]
    proc = envbisect("run", "--package", "raisy", "--repro", str(repro), "--json", *common)
    assert proc.returncode == 0, proc.stderr
    assert "\x1b" not in proc.stderr and "\x07" not in proc.stderr and "\x9b" not in proc.stderr
    report = Path(json.loads(proc.stdout)["report"]).read_text()
    assert "\x1b" not in report and "\x07" not in report
    # Outside fenced code blocks (where HTML is not HTML), no raw markup.
    outside, fence = [], ""
    for line in report.splitlines():
        if line.startswith("```") and (not fence or line == fence):
            fence = "" if fence else line
            continue
        if not fence:
            outside.append(line)
    assert "<img" not in "\n".join(outside) and "&lt;img" in report
    probe = envbisect("probe", "--with", "raisy==1.7.0", "--repro", str(repro), *common)
    assert probe.returncode == 4
    assert "\x1b" not in probe.stderr + probe.stdout and "owned" not in probe.stderr


def test_table_md_escapes_what_it_is_given() -> None:
    from envbisect.core.living.meta import MatrixMeta
    from envbisect.core.living.tables import markdown

    meta = {"name": "m", "axes": ["a<script>", "b|c"], "description": "<script>x</script>",
            "command": "x `y`", "probes": ["<i>p</i>"], "machine": "\x1b]0;t\x07h"}  # fmt: skip
    text = markdown(MatrixMeta.from_dict(meta), [])
    assert "<script" not in text and "<i>" not in text and "\x1b" not in text
    assert "&lt;script&gt;" in text


def test_executor_ray_without_ray_is_one_usage_error() -> None:
    """Ray is an optional extra: without it, --executor ray is a usage error with its hint,
    raised before anything is started (with Ray installed, test_ray.py runs the real thing)."""
    assert is_loopback(None) and is_loopback("127.0.0.1:6379") and is_loopback("[::1]:6379")
    assert not is_loopback("10.0.0.7:6379")
    if importlib.util.find_spec("ray") is not None:
        pytest.skip("Ray is installed: test_ray.py covers the executor")
    with pytest.raises(UsageError) as e:
        RayExecutor(2)
    assert e.value.ref == "ray-missing" and "envbisect-ml[ray]" in (e.value.hint or "")


def test_executor_slurm_without_slurm_is_one_usage_error(base: list[str], tmp_path: Path) -> None:
    """Away from a cluster (no sbatch on PATH), --executor slurm says so before anything is
    built; the real executor is tests/exec/test_slurm.py's."""
    (tmp_path / "bin").mkdir()
    for tool in ("uv", "git"):
        found = shutil.which(tool)
        if found:
            (tmp_path / "bin" / tool).symlink_to(found)
    env = {**os.environ, "PATH": str(tmp_path / "bin")}
    got = envbisect(
        *base, "--package", "crashy", "--probe", "import:crashy", "--executor", "slurm",
        "--jobs", "2", env=env,
    )  # fmt: skip
    assert got.returncode == 2, got.stderr
    lines = got.stderr.strip().splitlines()
    assert lines[-2].startswith("error: --executor slurm needs Slurm's commands"), got.stderr
    assert lines[-1].startswith("hint:") and "login node" in lines[-1]
    assert "Traceback" not in got.stderr


def test_slurm_options_are_read_as_sbatch_takes_them(tmp_path: Path) -> None:
    from envbisect.cli.optionset import parsed
    from envbisect.cli.readflags import common_options
    from envbisect.exec.kinds.slurm import SlurmSettings

    args = parsed(
        ["run", "--package", "six", "--executor", "slurm", "--slurm-partition", "gpu",
         "--slurm-time", "1:00:00", "--slurm-option=--qos=high", "--slurm-option",
         "constraint=a100"]
    )  # fmt: skip
    slurm = common_options(args, command="run").execution.settings
    assert isinstance(slurm, SlurmSettings)
    assert (slurm.partition, slurm.account, slurm.time) == ("gpu", None, "1:00:00")
    assert slurm.options == ("--qos=high", "--constraint=a100")
    args = parsed(["run", "--package", "six", "--slurm-option", "a\nb"])
    with pytest.raises(UsageError, match="is not one sbatch option") as e:
        common_options(args, command="run")
    assert e.value.ref == "bad-slurm-option"


# -- the wrong kind of input: the error names what was typed ------------------------------------

ISSUE = "https://github.com/hiyouga/LLaMA-Factory/issues/6809"


@pytest.mark.parametrize(
    ("args", "named", "hint"),
    [
        (["check", ISSUE], "the report", "save the issue's text to a file"),
        (["repro", ISSUE], "the report", "save the issue's text to a file"),
        (["why", ISSUE], "INPUT", "save the issue's text to a file"),
        (["pins", "https://127.0.0.1/requirements.txt"], "SOURCE", "download the file first"),
        (
            ["probe", "--pins", "https://127.0.0.1/r.txt", "--", "true"],
            "--pins",
            "download the file first",
        ),
    ],
)
def test_a_url_is_not_read_as_a_file(args: list[str], named: str, hint: str) -> None:
    # It said "No such file or directory" of a URL: a user pasted the issue's address.
    proc = envbisect(*args)
    assert_clean_error(proc, 2, f"{named} {args[-1] if named != '--pins' else args[2]} is a URL")
    assert "[url-not-read]" in proc.stderr and f"hint: {hint}" in proc.stderr
    assert "No such file" not in proc.stderr


@pytest.mark.parametrize(
    ("args", "error", "hint"),
    [
        (["diff", "nosuch.txt", "other.txt", "--", "true"], "nosuch.txt (GOOD)", "GOOD takes"),
        (["diff", "requirements.txt", "nosuch.txt", "--", "true"], "nosuch.txt (BAD)", "BAD takes"),
        (["probe", "--lock", "nosuch.lock", "--", "true"], "no such file: nosuch.lock", "--lock"),
        (["pins", "nosuch"], "nosuch (SOURCE)", "SOURCE takes"),
    ],
)
def test_a_missing_pin_source_is_named_as_it_was_typed(
    args: list[str], error: str, hint: str, tmp_path: Path
) -> None:
    # diff and probe --lock hinted at --pins, a flag the user never typed.
    (tmp_path / "requirements.txt").write_text("six==1.16.0\n")
    proc = envbisect(*args, cwd=tmp_path)
    assert_clean_error(proc, 2, error)
    assert f"hint: {hint}" in proc.stderr
    assert "--pins" not in proc.stderr.split("hint: ", 1)[1]


def test_a_bad_requirement_is_one_line_and_a_hint(base: list[str]) -> None:
    # packaging's message is three lines (the text, a caret under it): the first is kept.
    for flag, ref in (("--with", "bad-requirement"), ("--override", "bad-override")):
        proc = envbisect(*base, "--package", "crashy", flag, "six>=", "--", "true")
        assert_clean_error(proc, 2, "'six>=' is not a")
        assert f"[{ref}]" in proc.stderr
        said = [ln for ln in proc.stderr.splitlines() if not ln.startswith("envbisect: ")]
        assert len(said) == 2 and "^" not in proc.stderr, proc.stderr  # error:, hint:


@pytest.mark.parametrize(
    ("text", "typo", "meant"),
    [
        ("[matrix]\nprobes = ['import:a']\npythn = ['3.11']\n[[axis]]\npackage = 'a'\n",
         "[matrix] pythn", "python"),
        ("[matrix]\nprobes = ['import:a']\n[[axis]]\npackge = 'a'\n", "packge", "package"),
    ],
)  # fmt: skip
def test_a_misspelt_matrix_key_gets_the_key_it_may_mean(
    tmp_path: Path, text: str, typo: str, meant: str
) -> None:
    path = tmp_path / "m.toml"
    path.write_text(text)
    proc = envbisect("matrix", str(path), "--dry-run", "--results", str(tmp_path), cwd=tmp_path)
    assert_clean_error(proc, 2, typo)
    assert f"hint: did you mean {meant}?" in proc.stderr and "[matrix-schema]" in proc.stderr
