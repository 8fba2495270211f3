"""``--override``, as uv's, in every mode (tests/support/stacks.py: ovapp 1.0.0 requires
ov-lib<=1.5 but works with 2.0.0 too; 2.5.0 breaks it). Real uv environments on the local
index, the real CLI."""

from __future__ import annotations

import json
import shlex
import subprocess
from pathlib import Path

import pytest

from conftest import write_repro
from envbisect.env.uv import Uv, find_uv
from support.cli import assert_clean_error, envbisect
from support.index_server import LocalIndex
from support.locks import locked

pytestmark = pytest.mark.slow


def common(stacks: LocalIndex, python: str, tmp: Path) -> list[str]:
    return ["--index-url", stacks.url, "--python", python, "--results", str(tmp / "r"),
            "--cache-dir", str(tmp / "c"), "--no-config"]  # fmt: skip


def test_probe_builds_the_environment_off_the_pins(
    stacks: LocalIndex, python: str, tmp_path: Path
) -> None:
    repro = write_repro(tmp_path, "ovapp")
    args = ["probe", "--with", "ovapp==1.0.0", "--repro", str(repro), "--json",
            *common(stacks, python, tmp_path)]  # fmt: skip
    on = envbisect(*args)  # on the pins: ov-lib 1.5.0
    assert on.returncode == 0, on.stderr
    assert {d["name"]: d["version"] for d in json.loads(on.stdout)["installed"]}[
        "ov-lib"
    ] == "1.5.0"
    off = envbisect(*args, "--override", "ov-lib==2.5.0")
    assert off.returncode == 4, off.stderr  # the probe failed
    data = json.loads(off.stdout)
    assert data["outcome"]["signature"] == "RuntimeError: f was removed"
    assert {d["name"]: d["version"] for d in data["installed"]}["ov-lib"] == "2.5.0"
    assert "overrides: ov-lib==2.5.0" in off.stderr
    # The same from a file, and planned the same without building anything.
    listed = tmp_path / "over.txt"
    listed.write_text("# off the pins\nov-lib==2.0.0\n")
    dry = envbisect(*args, "--override", str(listed), "--dry-run")
    assert dry.returncode == 0, dry.stderr
    (plan,) = json.loads(dry.stdout)["plans"]
    assert plan["pins"]["ov-lib"] == "2.0.0" and plan["pins"]["ovapp"] == "1.0.0"
    built = envbisect(*args, "--override", str(listed))
    assert built.returncode == 0, built.stderr  # 2.0.0, above the cap, works


def test_run_bisects_versions_above_the_cap(
    stacks: LocalIndex, python: str, tmp_path: Path
) -> None:
    """Every ov-lib is a candidate once the cap is overridden; the candidate's own pin wins
    over the override (``ov-lib>=1.0``) in each environment."""
    repro = write_repro(tmp_path, "ovapp")
    out = envbisect("run", "--package", "ov-lib", "--with", "ovapp==1.0.0", "--good", "2.0.0",
                    "--bad", "2.5.0", "--override", "ov-lib>=1.0", "--repro", str(repro),
                    "--json", *common(stacks, python, tmp_path))  # fmt: skip
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert data["first_bad"] == "2.5.0" and data["overrides"] == ["ov-lib>=1.0"]
    report = Path(data["report"]).read_text()
    assert "overrides (every requirement on these takes these versions): `ov-lib>=1.0`" in report
    without = envbisect("run", "--package", "ov-lib", "--with", "ovapp==1.0.0", "--good",
                        "2.0.0", "--bad", "2.5.0", "--repro", str(repro), "--json",
                        *common(stacks, python, tmp_path / "w"))  # fmt: skip
    assert without.returncode != 0  # both ends lie above ovapp's cap: neither can be built


def test_lock_off_the_pins_installs_as_listed(
    stacks: LocalIndex, python: str, tmp_path: Path
) -> None:
    repro = write_repro(tmp_path, "ovapp")
    out = envbisect("lock", "--with", "ovapp==1.0.0", "--override", "ov-lib>=2.0", "--repro",
                    str(repro), "--json", *common(stacks, python, tmp_path))  # fmt: skip
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    (c,) = data["constraints"]
    assert (c["package"], c["first_bad"], c["last_good"]) == ("ov-lib", "2.5.0", "2.0.0")
    assert locked(data["lock"]) == {"ovapp": "1.0.0", "ov-lib": "2.0.0"}
    text = Path(data["lock"]).read_text()
    assert "uv pip install --no-deps --require-hashes -r requirements.txt" in text
    uv = find_uv()
    env = Uv(binary=uv, offline=False).env()
    venv = tmp_path / "venv"
    subprocess.run([uv, "venv", "-q", "--python", python, str(venv)], check=True, env=env)
    subprocess.run([uv, "pip", "install", "-q", "--no-config", "--python", str(venv / "bin" /
                    "python"), "--no-deps", "--require-hashes", "-r", data["lock"]], check=True,
                   env=env)  # fmt: skip
    ran = subprocess.run([str(venv / "bin" / "python"), str(repro)], capture_output=True,
                         text=True)  # fmt: skip
    assert ran.returncode == 0, ran.stderr


def test_diff_between_two_off_pin_locks(stacks: LocalIndex, python: str, tmp_path: Path) -> None:
    good, bad = tmp_path / "good.txt", tmp_path / "bad.txt"
    good.write_text("ovapp==1.0.0\nov-lib==2.0.0\n")
    bad.write_text("ovapp==1.0.0\nov-lib==2.5.0\n")
    repro = write_repro(tmp_path, "ovapp")
    out = envbisect("diff", str(good), str(bad), "--override", "ov-lib>=2.0", "--repro",
                    str(repro), "--json", *common(stacks, python, tmp_path))  # fmt: skip
    assert out.returncode == 0, out.stderr
    (culprit,) = json.loads(out.stdout)["culprits"]
    assert (culprit["package"], culprit["bad_version"]) == ("ov-lib", "2.5.0")


def test_a_bad_override_is_a_usage_error(stacks: LocalIndex, python: str, tmp_path: Path) -> None:
    def probe(*over: str) -> subprocess.CompletedProcess[str]:
        return envbisect("probe", "--with", "ovapp==1.0.0", *over,
                         *common(stacks, python, tmp_path), "--", "true")  # fmt: skip

    assert_clean_error(probe("--override", "ov-lib[x]==2"), 2, "name and versions")
    assert_clean_error(probe("--override", "not a req!"), 2, "not a requirement")
    assert_clean_error(probe("--override", "ov-lib==1", "--override", "ov-lib==2"), 2,
                       "overridden twice")  # fmt: skip
    assert_clean_error(probe("--override", str(tmp_path / "none.txt")), 2, "cannot read it")


REPORT = """\
### System Info

```text
$ pip freeze
ovapp==1.0.0
ov-lib==2.5.0
```

### Reproduction

```python
import ovapp
ovapp.run()
```

It fails:

```
Traceback (most recent call last):
  File "/home/me/repro.py", line 2, in <module>
    ovapp.run()
  File "/home/me/.venv/lib/python3.11/site-packages/ovapp/__init__.py", line 5, in run
    f()
  File "/home/me/.venv/lib/python3.11/site-packages/ov_lib/__init__.py", line 4, in f
    raise RuntimeError('f was removed')
RuntimeError: f was removed
```
"""


def test_repro_builds_an_off_pin_report_as_listed_and_run_bisects_from_it(
    stacks: LocalIndex, python: str, tmp_path: Path
) -> None:
    """The report runs ov-lib 2.5.0 under ovapp 1.0.0, which requires ov-lib<=1.5: repro
    builds exactly that (said: off the pins), reproduces the failure, and the run it prints
    (overriding the same) finds 2.5.0, 2.0.0 passing, above the cap."""
    issue = tmp_path / "issue.md"
    issue.write_text(REPORT)
    out = envbisect("repro", str(issue), *common(stacks, python, tmp_path), cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0].startswith("reproduced: the same failure")
    assert "off the pins: ov-lib 2.5.0 (ovapp 1.0.0 requires <=1.5)" in lines[1]
    assert "envbisect: off the pins: ov-lib 2.5.0 (ovapp 1.0.0 requires <=1.5)" in out.stderr
    runs = [ln for ln in lines if ln.startswith("next: envbisect run")]
    # First: back across the cap, from the newest ov-lib the pins allow to the report's.
    across = shlex.split(runs[0].removeprefix("next: ").split("   # ")[0])
    assert across[across.index("--good") + 1] == "1.5.0" and "--rest" in across
    assert across[across.index("--override") + 1] == "ov-lib"
    assert "past the pins" in runs[0]
    found = envbisect(*across[1:], "--json", cwd=tmp_path)
    assert found.returncode == 0, found.stderr
    data = json.loads(found.stdout)
    assert (data["first_bad"], data["last_good"], data["package"]) == ("2.5.0", "2.0.0", "ov-lib")
    # Then the culprit's own run, the report's versions overridden as listed.
    argv = shlex.split(runs[1].removeprefix("next: ").split("   # ")[0])
    assert "--override" in argv and argv[argv.index("--override") + 1] == "ov-lib==2.5.0"
    found = envbisect(*argv[1:], "--json", cwd=tmp_path)
    assert found.returncode == 0, found.stderr
    data = json.loads(found.stdout)
    assert (data["first_bad"], data["last_good"]) == ("2.5.0", "2.0.0")
    assert "2.5.0" in [r["version"] for r in data["reused"]]  # the report's, from the store
    # Without the override the report's environment cannot be built at all.
    plain = envbisect("probe", "--pins", str(issue), "--dry-run", "--json",
                      *common(stacks, python, tmp_path / "p"), "--", "true")  # fmt: skip
    assert "ov-lib" in plain.stdout and (
        "unresolvable" in plain.stdout or "conflict" in plain.stdout
    )


def test_a_partial_report_is_rebuilt_as_of_its_day(
    stacks: LocalIndex, python: str, tmp_path: Path
) -> None:
    """A ``llamafactory-cli env``-style block names a few packages: the others are taken as
    of the newest upload among those it names (cpapp 1.0.0's day: cp-lib 1.0.0, which has
    ``old_api``), not today's (cp-lib 2.1.0, which does not); said. --exclude-newer wins."""
    issue = tmp_path / "issue.md"
    issue.write_text("- `cpapp` version: 1.0.0\n- Python version: 3.11.7\n\n"
                     "```python\nimport cpapp\ncpapp.run()\n```\n")  # fmt: skip
    out = envbisect("repro", str(issue), "--json", *common(stacks, python, tmp_path),
                    cwd=tmp_path)  # fmt: skip
    data = json.loads(out.stdout)
    got = {d["name"]: d["version"] for d in data["environment"]["installed"]}
    assert got["cp-lib"] == "1.0.0", out.stderr
    assert data["outcome"]["kind"] == "pass"
    assert "the rest as of 2024-06-01T00:00:01Z, the newest upload among them (cpapp" in out.stderr
    today = envbisect("repro", str(issue), "--json", "--exclude-newer", "2030-01-01",
                      *common(stacks, python, tmp_path / "t"), cwd=tmp_path)  # fmt: skip
    data = json.loads(today.stdout)
    assert {d["name"]: d["version"] for d in data["environment"]["installed"]}["cp-lib"] == "2.1.0"
    assert data["outcome"]["kind"] == "fail"


def test_a_partial_report_takes_a_package_with_no_file_that_day_forward(
    index: LocalIndex, python: str, tmp_path: Path
) -> None:
    """The report's day has fwd-helper 1.0.0 only, with no wheel for this machine (as fire had
    none until 2025, under every LLaMA-Factory release before it): the rest is planned as of
    the day and fwd-helper taken at its first release that installs (said), not "uv failed
    installing: No solution found"."""
    issue = tmp_path / "issue.md"
    issue.write_text("- `fwdapp` version: 1.0.0\n- `fwd-lib` version: 1.0.0\n"
                     "- Python version: 3.11.7\n\n"
                     "```python\nimport fwdapp\nfwdapp.run()\n```\n")  # fmt: skip
    out = envbisect("repro", str(issue), "--json", *common(index, python, tmp_path), cwd=tmp_path)
    data = json.loads(out.stdout)
    got = {d["name"]: d["version"] for d in data["environment"]["installed"]}
    assert got["fwd-helper"] == "1.1.0" and got["fwd-lib"] == "1.0.0", out.stderr
    assert data["outcome"]["kind"] == "pass"
    assert "taken at their first release that installs: fwd-helper 1.1.0" in out.stderr


def test_a_package_the_report_does_not_list_is_taken_as_pip_left_it(
    stacks: LocalIndex, python: str, tmp_path: Path
) -> None:
    """djapp 1.0.0 caps dj-tok below 0.5; the report forced dj-lib 2.0.0 over the pins, which
    needs dj-tok>=0.6, and does not list dj-tok: two listed versions need disjoint dj-tok.
    pip, installing dj-lib 2.0.0, left dj-tok at what dj-lib needs: repro builds that, and
    says so (before, "cannot be built here")."""
    issue = tmp_path / "issue.md"
    issue.write_text("- `djapp` version: 1.0.0\n- `dj-lib` version: 2.0.0\n"
                     "- Python version: 3.11.7\n\n"
                     "```python\nimport djapp\ndjapp.run()\n```\n")  # fmt: skip
    out = envbisect("repro", str(issue), "--json", *common(stacks, python, tmp_path),
                    cwd=tmp_path)  # fmt: skip
    data = json.loads(out.stdout)
    got = {d["name"]: d["version"] for d in data["environment"]["installed"]}
    assert (got["dj-lib"], got["dj-tok"], got["djapp"]) == ("2.0.0", "0.6.0", "1.0.0"), out.stderr
    assert data["outcome"]["kind"] == "pass"
    assert "as pip leaves them after installing dj-lib==2.0.0 over the pins: dj-tok>=0.6" in (
        out.stderr
    )


def test_a_package_the_traceback_shows_installed_is_built_too(
    stacks: LocalIndex, python: str, tmp_path: Path
) -> None:
    """The block lists djapp and dj-lib; the traceback's frames run through ov_lib, installed
    though not listed: repro builds it too (as of the report's day), and says so."""
    issue = tmp_path / "issue.md"
    issue.write_text(
        "- `djapp` version: 1.0.0\n- `dj-lib` version: 1.5.0\n- Python version: 3.11.7\n\n"
        "```python\nimport djapp\ndjapp.run()\n```\n\n"
        "```\nTraceback (most recent call last):\n"
        '  File "/srv/me/.venv/lib/python3.11/site-packages/ov_lib/__init__.py", line 4, in f\n'
        "RuntimeError: boom\n```\n"
    )
    out = envbisect("repro", str(issue), "--json", *common(stacks, python, tmp_path),
                    cwd=tmp_path)  # fmt: skip
    data = json.loads(out.stdout)
    got = {d["name"]: d["version"] for d in data["environment"]["installed"]}
    assert "ov-lib" in got and got["dj-lib"] == "1.5.0", out.stderr
    assert "the traceback's frames show ov-lib installed, which the report does not list" in (
        out.stderr
    )
