"""uv's own settings and conventions, honoured or refused aloud: ``UV_EXCLUDE_NEWER`` and
``UV_TORCH_BACKEND`` as the defaults of the flags they name, a PEP 723 script's ``[tool.uv]
exclude-newer``, cut-offs written as uv writes them (``7 days``, ``P7D``; months refused as
uv refuses them), ``-V`` and ``envbisect help CMD``. The real CLI; the plans on the tests'
local index (crashy's releases are 30 days apart from 2024-01-01, support/corpus.py)."""

from __future__ import annotations

import json
import os
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from envbisect import __version__
from envbisect.core.cutoff import parse_cutoff, stamp
from envbisect.errors import UsageError
from support.cli import assert_clean_error, envbisect
from support.corpus import EPOCH
from support.index_server import LocalIndex

NOW = datetime(2026, 12, 5, 12, 0, tzinfo=timezone.utc)


@pytest.mark.parametrize(
    ("text", "back"),
    [
        ("7 days", timedelta(days=7)),
        ("7days", timedelta(days=7)),
        ("3d", timedelta(days=3)),
        ("1 week 2 days", timedelta(days=9)),
        ("24 hours", timedelta(hours=24)),
        ("30 days ago", timedelta(days=30)),
        ("5 minutes", timedelta(minutes=5)),
        ("P7D", timedelta(days=7)),
        ("PT24H", timedelta(hours=24)),
        ("P1W", timedelta(weeks=1)),
        ("P1DT12H", timedelta(days=1, hours=12)),
    ],
)
def test_spans_as_uv_writes_them(text: str, back: timedelta) -> None:
    assert parse_cutoff(text, NOW) == NOW - back


def test_dates_and_what_uv_refuses() -> None:
    assert parse_cutoff("2024-03-01", NOW) == datetime(2024, 3, 1, tzinfo=timezone.utc)
    assert stamp(parse_cutoff("2024-03-01T10:00:00+02:00", NOW)) == "2024-03-01T08:00:00Z"
    for months in ("1 month", "P1M", "2 years", "P1Y"):
        with pytest.raises(UsageError, match="no fixed length") as e:
            parse_cutoff(months, NOW)
        assert "days" in (e.value.hint or "")
    for junk in ("yesterday", "7 Days", "1.5 days", "P", "7 fortnights", ""):
        with pytest.raises(UsageError, match="is not a date"):
            parse_cutoff(junk, NOW)


def _plan(
    index: LocalIndex, tmp_path: Path, *extra: str, env: dict[str, str] | None = None
) -> tuple[str, str]:
    proc = envbisect("probe", "--with", "crashy", "--dry-run", "--json", "--index-url",
                     index.url, "--results", str(tmp_path / "r"), "--no-config", *extra, "--",
                     "true", env={**os.environ, **(env or {})})  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    (plan,) = json.loads(proc.stdout)["plans"]
    return plan["pins"]["crashy"], proc.stderr


@pytest.mark.slow
def test_uv_exclude_newer_is_the_default_cutoff_and_said(
    index: LocalIndex, python: str, tmp_path: Path
) -> None:
    day = (EPOCH + timedelta(days=95)).strftime("%Y-%m-%dT%H:%M:%SZ")
    pins, err = _plan(index, tmp_path, "--python", python, env={"UV_EXCLUDE_NEWER": day})
    assert pins == "1.3.0" and f"--exclude-newer {day} from UV_EXCLUDE_NEWER" in err
    typed, err = _plan(index, tmp_path, "--python", python, "--exclude-newer",
                       (EPOCH + timedelta(days=35)).date().isoformat(),
                       env={"UV_EXCLUDE_NEWER": day})  # fmt: skip
    assert typed == "1.1.0" and "UV_EXCLUDE_NEWER" not in err  # the flag wins
    span = (datetime.now(timezone.utc) - EPOCH - timedelta(days=65)).days
    spanned, err = _plan(index, tmp_path, "--python", python, "--exclude-newer", f"{span} days")
    assert spanned == "1.2.0" and f"--exclude-newer {span} days: 2024-03-0" in err


@pytest.mark.slow
def test_a_scripts_tool_uv_exclude_newer_and_uv_torch_backend(
    index: LocalIndex, python: str, tmp_path: Path
) -> None:
    script = tmp_path / "repro.py"
    day = (EPOCH + timedelta(days=35)).strftime("%Y-%m-%dT%H:%M:%SZ")
    script.write_text(f'# /// script\n# dependencies = []\n# [tool.uv]\n# exclude-newer = "{day}"\n'
                      "# ///\nimport crashy\n")  # fmt: skip
    proc = envbisect("probe", "--with", "crashy", "--dry-run", "--json", "--index-url",
                     index.url, "--python", python, "--results", str(tmp_path / "r"),
                     "--no-config", "--repro", str(script))  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["plans"][0]["pins"]["crashy"] == "1.1.0"
    assert f"repro.py: --exclude-newer {day}, its [tool.uv]" in proc.stderr
    torch = envbisect("probe", "--with", "torch", "--dry-run", "--index-url", index.url,
                      "--python", python, "--results", str(tmp_path / "t"), "--no-config",
                      "--", "true", env={**os.environ, "UV_TORCH_BACKEND": "cpu"})  # fmt: skip
    assert "--torch-backend cpu from UV_TORCH_BACKEND" in torch.stderr


def test_version_short_flag_and_help_command() -> None:
    assert envbisect("-V").stdout.strip() == f"envbisect {__version__}"
    run = envbisect("help", "run")
    assert run.returncode == 0 and run.stdout.startswith("usage: envbisect run")
    top = envbisect("help")
    assert top.returncode == 0 and "usage: envbisect" in top.stdout
    assert_clean_error(envbisect("help", "nosuch"), 2, "there is no command 'nosuch'")


def test_months_are_refused_as_uv_refuses_them(tmp_path: Path) -> None:
    proc = envbisect("probe", "--with", "six", "--exclude-newer", "1 month", "--dry-run",
                     "--results", str(tmp_path / "r"), "--", "true")  # fmt: skip
    assert_clean_error(proc, 2, "uses months, which have no fixed length", "[bad-date]")


WANTED = "3.14.0"  # a Python uv can install that this machine does not have


def _no_python(*extra: str, env: dict[str, str], tmp_path: Path) -> tuple[int, str]:
    proc = envbisect("probe", "--with", "six", "--python", WANTED, "--no-config", "--results",
                     str(tmp_path / "r"), *extra, "--", "python", "-c", "pass",
                     env={**os.environ, **env})  # fmt: skip
    return proc.returncode, proc.stderr


def test_a_missing_python_is_asked_of_uv_and_refused_where_the_user_says(tmp_path: Path) -> None:
    """``--python X.Y`` this machine lacks: envbisect runs ``uv python install X.Y`` (said);
    its failure is one error with uv's reason. The download host is a closed port on
    127.0.0.1 (uv's UV_PYTHON_INSTALL_MIRROR): nothing leaves the machine. --no-python-downloads
    and UV_PYTHON_DOWNLOADS=never ask uv nothing."""
    from envbisect.env.interp import find_python
    from envbisect.env.uv import Uv, find_uv

    try:
        find_python(Uv(binary=find_uv(), offline=False), WANTED)
        pytest.skip(f"this machine has a Python {WANTED}")
    except UsageError:
        pass
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    # The suite sets UV_PYTHON_DOWNLOADS=never (conftest): this test allows them, to a port.
    mirror = {
        "UV_PYTHON_INSTALL_MIRROR": f"http://127.0.0.1:{port}",
        "UV_PYTHON_DOWNLOADS": "automatic",
    }
    code, err = _no_python(env=mirror, tmp_path=tmp_path)
    assert code == 2 and f"no Python {WANTED} here: uv python install {WANTED}" in err
    assert f"error: uv could not install Python {WANTED}: " in err and "Traceback" not in err
    assert "--no-python-downloads" in err  # the hint
    for extra, env, said in (
        (("--no-python-downloads",), mirror, ""),
        ((), {**mirror, "UV_PYTHON_DOWNLOADS": "never"}, "UV_PYTHON_DOWNLOADS=never"),
    ):
        code, err = _no_python(*extra, env=env, tmp_path=tmp_path)
        assert code == 2 and "uv python install" not in err.split("hint:")[0], err
        assert "[python-not-found]" in err and said in err
