"""Planning for a Python this machine does not have: ``pins``, ``versions`` and dry runs take
the target from the version alone (CPython X.Y on this platform), as ``uv pip compile
--python-version`` does; only a build needs the interpreter, and then the error says how to get
one. Python 3.14 is the version: uv finds none here (the tests forbid downloads); where a
machine has one, the commands still answer, for it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from envbisect.core.target import for_version, version_request
from envbisect.env.uv import find_uv
from envbisect.errors import UsageError
from support.cli import assert_clean_error, envbisect
from support.index_server import LocalIndex
from support.options import flat_options

MISSING = "3.14"
REPORT = """### System Info

```
- `transformers` version: 4.57.1
- Platform: Linux-6.8.0-x86_64-with-glibc2.39
- Python version: 3.14.0
- Huggingface_hub version: 0.36.0
- PyTorch version (accelerator?): not installed (NA)
```

### Reproduction

```python
import transformers
```
"""


def missing() -> bool:
    import subprocess

    found = subprocess.run([find_uv(), "python", "find", "--no-config", MISSING],
                           capture_output=True, env=None)  # fmt: skip
    return found.returncode != 0


def test_a_version_request_and_its_target() -> None:
    assert version_request("3.10") == (3, 10)
    assert version_request("cp310") == (3, 10)
    assert version_request("python3.12") == (3, 12)
    assert version_request("/usr/bin/python3") is None and version_request(None) is None
    from envbisect.core.target import Target

    host = Target(
        executable="/x/python", implementation="cpython", version=(3, 11, 7), abiflags="",
        platform="linux-x86_64", glibc=(2, 36), macos=None,
        markers=(("python_version", "3.11"), ("sys_platform", "linux")),
    )  # fmt: skip
    t = for_version(host, 3, 10)
    assert t.interpreter_tag == "cp310" and t.glibc == (2, 36)
    assert t.marker_environment()["python_version"] == "3.10"
    assert t.marker_environment()["python_full_version"] == "3.10.0"
    assert t.marker_environment()["sys_platform"] == "linux"


def test_pins_of_a_bug_report_made_on_a_python_this_machine_lacks(
    index: LocalIndex, tmp_path: Path
) -> None:
    report = tmp_path / "REPORT.md"
    report.write_text(REPORT)
    out = envbisect("pins", str(report), "--index-url", index.url, "--cache-dir",
                    str(tmp_path / "c"), cwd=tmp_path)  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert "transformers" in out.stdout and "Python 3.14" in out.stdout
    if missing():
        assert "no Python 3.14 here: planning for CPython 3.14" in out.stderr


def test_versions_and_a_dry_run_plan_for_it_and_a_build_says_how_to_get_it(
    index: LocalIndex, tmp_path: Path
) -> None:
    if not missing():
        pytest.skip(f"this machine has a Python {MISSING}: nothing is missing")
    common = ["--index-url", index.url, "--python", MISSING, "--cache-dir", str(tmp_path / "c")]
    out = envbisect("versions", "raisy", *common, "--json", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert "cp314" in json.loads(out.stdout)["target"]
    common += ["--results", str(tmp_path / "r")]
    rep = tmp_path / "r.py"
    rep.write_text("import raisy\nraisy.run()\n")
    dry = envbisect("lock", "--with", "raisy==1.0.0", *common, "--repro", str(rep),
                    "--dry-run", "--json", cwd=tmp_path)  # fmt: skip
    assert dry.returncode == 0, dry.stderr
    assert json.loads(dry.stdout)["plans"][0]["pins"] == {"raisy": "1.0.0"}
    built = envbisect("lock", "--with", "raisy==1.0.0", *common, "--repro", str(rep),
                      cwd=tmp_path)  # fmt: skip
    assert_clean_error(built, 2, "3.14")
    assert "[python-not-found]" in built.stderr
    assert "uv python install 3.14" in built.stderr


def test_a_build_session_never_plans_for_a_missing_python(tmp_path: Path) -> None:
    """Only a planning session stands a version in for an interpreter."""
    if not missing():
        pytest.skip(f"this machine has a Python {MISSING}")
    from envbisect.modes.session import Session

    opts = flat_options(python=MISSING, results=tmp_path / "r", cache_dir=tmp_path / "c")
    with Session(opts) as s, pytest.raises(UsageError) as e:
        s.target  # noqa: B018
    assert e.value.ref == "python-not-found"
    with Session(opts, plan_only=True) as s:
        assert s.target.interpreter_tag == "cp314"
