"""Built-in probes, crash forensics and the environment report, on real processes.

Hermetic: environments come from the local index (tests/support); the crashing extension is
compiled here with gcc. gdb is used when installed (the forensics tests say so when not).
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from envbisect.env import envreport
from envbisect.env.forensics import parse_gdb
from envbisect.env.repro import BUILTINS, builtin_step
from envbisect.errors import UsageError
from envbisect.store import SCHEMA_VERSION, Store
from support.cli import assert_clean_error, envbisect
from support.index_server import LocalIndex
from support.wheels import build_c_extension_wheel

needs_gdb = pytest.mark.skipif(shutil.which("gdb") is None, reason="gdb is not installed")


def probe_args(index: LocalIndex, python: str, tmp_path: Path) -> list[str]:
    return ["probe", "--index-url", index.url, "--python", python,
            "--results", str(tmp_path / "r")]  # fmt: skip


@needs_gdb
def test_crash_in_a_compiled_extension_names_the_library(
    index: LocalIndex, python: str, tmp_path: Path
) -> None:
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    build_c_extension_wheel(wheels, tmp_path / "build", python)
    proc = envbisect(*probe_args(index, python, tmp_path), "--find-links", str(wheels),
                     "--with", "crashext==1.0", "--json", "--",
                     "python", "-c", "import crashext; crashext.boom()")  # fmt: skip
    assert proc.returncode == 4, proc.stderr  # envbisect probe: the environment does not pass
    out = json.loads(proc.stdout)["outcome"]
    assert out["kind"] == "crash" and out["signal"] == "SIGSEGV"
    assert out["library"].startswith("_crashext.cpython-")
    assert out["signature"].startswith("SIGSEGV in _crashext.cpython-")
    assert "(boom)" in out["signature"]


@needs_gdb
def test_ctypes_crash_faults_in_libc(index: LocalIndex, python: str, tmp_path: Path) -> None:
    repro = tmp_path / "repro.py"
    repro.write_text("import crashy\ncrashy.run()\n")
    proc = envbisect(*probe_args(index, python, tmp_path), "--with", "crashy==1.8.0",
                     "--repro", str(repro), "--json")  # fmt: skip
    out = json.loads(proc.stdout)["outcome"]
    assert out["library"] == "libc.so.6"
    # Native side (library, function) and the innermost Python frame, from faulthandler.
    assert out["signature"].startswith("SIGSEGV in libc.so.6 (")
    line = out["signature"].rsplit(":", 1)[1]
    assert out["signature"].endswith(f"at string_at (ctypes/__init__.py:{line}")
    with Store(tmp_path / "r") as store:
        (rec,) = list(store.all())
    assert "native backtrace (gdb)" in rec.outcome.detail
    assert rec.env_report is not None
    assert rec.env_report["installed"]["crashy"] == "1.8.0"


@pytest.mark.slow
def test_gdb_missing_is_said_once_and_the_run_goes_on(
    index: LocalIndex, python: str, tmp_path: Path
) -> None:
    repro = tmp_path / "repro.py"
    repro.write_text("import crashy\ncrashy.run()\n")
    # A PATH without gdb (envbisect finds uv through its package, Python by path).
    env = {**os.environ, "PATH": str(tmp_path / "empty-bin")}
    proc = envbisect("run", "--package", "crashy", "--index-url", index.url, "--python", python,
                     "--results", str(tmp_path / "r2"), "--good", "1.5.0", "--bad", "1.9.0",
                     "--repro", str(repro), env=env)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.count("gdb is not installed") == 1
    assert "first bad version of crashy: 1.7.0" in proc.stdout


def test_probe_without_its_packages_is_untestable(
    index: LocalIndex, python: str, tmp_path: Path
) -> None:
    proc = envbisect(*probe_args(index, python, tmp_path), "--with", "crashy==1.0.0",
                     "--probe", "lora-step", "--json")  # fmt: skip
    out = json.loads(proc.stdout)["outcome"]
    assert out["kind"] == "untestable"
    assert out["signature"] == "not installed in this environment: torch, transformers, peft"


def test_llamafactory_probes_without_llamafactory_are_untestable(
    index: LocalIndex, python: str, tmp_path: Path
) -> None:
    proc = envbisect(*probe_args(index, python, tmp_path), "--with", "crashy==1.0.0",
                     "--probe", "llamafactory", "--json")  # fmt: skip
    out = json.loads(proc.stdout)["outcome"]
    assert out["kind"] == "untestable" and out["step"] == "llamafactory"
    assert out["signature"] == "not installed in this environment: llamafactory (nor llmtuner)"


def test_a_bad_llamafactory_stage_is_a_usage_error(
    index: LocalIndex, python: str, tmp_path: Path
) -> None:
    proc = envbisect(*probe_args(index, python, tmp_path), "--with", "crashy==1.0.0",
                     "--probe", "llamafactory-train:ppo",
                     "--probe", "llamafactory-train:sftt")  # fmt: skip
    assert_clean_error(proc, 2, "--probe llamafactory-train: no STAGE named 'sftt'")
    hint = "hint: --probe llamafactory-train[:STAGE], STAGE one of: sft, pt, rm, dpo, kto, ppo"
    assert hint in proc.stderr


def test_probe_arguments_are_checked_before_anything_runs() -> None:
    # An optional argument: none, the default named, or a choice.
    assert builtin_step("llamafactory-train").args == ()
    assert builtin_step("llamafactory-train:sft") == builtin_step("llamafactory-train")
    ppo = builtin_step("llamafactory-train:ppo")
    assert ppo.args == ("ppo",) and ppo.label == "llamafactory-train:ppo"
    assert {
        s: builtin_step(f"llamafactory-train:{s}").args for s in ("pt", "rm", "dpo", "kto")
    } == {s: (s,) for s in ("pt", "rm", "dpo", "kto")}
    for spec, message, hint in [
        ("llamafactory-train:SFT", "no STAGE named 'SFT'", "one of: sft, pt, rm, dpo, kto, ppo"),
        ("import", "--probe import needs an argument", "e.g. --probe import:datasets,pyarrow"),
        ("llamafactory:0.9.3", "--probe llamafactory takes no argument", "--probe llamafactory"),
        ("lora-step:cuda", "--probe lora-step takes no argument", "--probe lora-step"),
    ]:
        with pytest.raises(UsageError) as err:
            builtin_step(spec)
        assert message in err.value.message and hint in (err.value.hint or ""), spec
        assert err.value.exit_code == 2 and err.value.ref == "probe-argument"
    assert builtin_step("llamafactory").file == Path("llamafactory_import.py")
    assert {n: b.usage(n) for n, b in BUILTINS.items()} == {
        "import": "import:PKG[,PKG...]",
        "datasets-json": "datasets-json",
        "lora-step": "lora-step",
        "llamafactory": "llamafactory",
        "llamafactory-train": "llamafactory-train[:STAGE]",
        "sft-step": "sft-step[:lora]",
        "dpo-step": "dpo-step[:lora]",
        "trainer-step": "trainer-step[:resume|lora|lora-resume]",
    }


def test_unknown_probe_hint_lists_the_llamafactory_probes(
    index: LocalIndex, python: str, tmp_path: Path
) -> None:
    proc = envbisect(*probe_args(index, python, tmp_path), "--with", "crashy==1.0.0",
                     "--probe", "llamafactory-tarin")  # fmt: skip
    assert_clean_error(proc, 2, "no built-in probe named 'llamafactory-tarin'")
    assert "llamafactory, llamafactory-train[:STAGE]" in proc.stderr


def test_import_probe_maps_distribution_names(
    index: LocalIndex, python: str, tmp_path: Path
) -> None:
    proc = envbisect(*probe_args(index, python, tmp_path), "--with", "crashy==1.8.0",
                     "--probe", "import:crashy,helperlib", "--json")  # fmt: skip
    data = json.loads(proc.stdout)
    assert data["outcome"]["kind"] == "pass"
    modules = data["reports"][0]["modules"]
    assert modules["crashy"]["version"] == "1.8.0"


def test_combined_steps_stop_at_the_first_failure(
    index: LocalIndex, python: str, tmp_path: Path
) -> None:
    proc = envbisect(*probe_args(index, python, tmp_path), "--with", "raisy==1.6.0",
                     "--probe", "import:raisy", "--json", "--native-backtrace", "never", "--",
                     "python", "-c", "import raisy; raisy.run()")  # fmt: skip
    out = json.loads(proc.stdout)["outcome"]
    assert out["kind"] == "fail" and out["signature"] == "ValueError: raisy broke"
    assert out["step"] == "python -c 'import raisy; raisy.run()'"


def test_parse_gdb_output() -> None:
    text = """
Program received signal SIGSEGV, Segmentation fault.
0x00007ffff0a1b2c3 in arrow::Foo::Bar() () from /v/pyarrow/libarrow.so.1500
ENVBISECT-SYMBOL
_ZN5arrow3Foo3BarEv + 19 in section .text of /v/pyarrow/libarrow.so.1500
ENVBISECT-BT
#0  0x00007ffff0a1b2c3 in arrow::Foo::Bar() () from /v/pyarrow/libarrow.so.1500
#1  0x00007ffff0a1c000 in ?? () from /v/pyarrow/lib.cpython-311-x86_64-linux-gnu.so
#2  0x00005555556b1234 in _PyEval_EvalFrameDefault (tstate=0x1, frame=0x2) at Python/ceval.c:4769
"""
    trace = parse_gdb(text)
    assert trace.signal == "SIGSEGV"
    assert trace.library == "libarrow.so.1500"
    assert trace.frames[0] == "arrow::Foo::Bar" or trace.frames[0].startswith("arrow::Foo::Bar")
    assert trace.frames[2] == "_PyEval_EvalFrameDefault"


@pytest.mark.slow
def test_env_report_of_a_real_interpreter() -> None:
    proc = envbisect("env", "--python", sys.executable, "--json")
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["python"] == ".".join(map(str, sys.version_info[:3]))
    assert data["installed"]["pytest"]
    assert isinstance(data["checks"], list)
    text = envbisect("env", "--python", sys.executable, "--quick")
    assert "- Python: " in text.stdout and "checks:" in text.stdout


def _dist(site: Path, name: str, version: str, record: list[str], files: dict[str, str]) -> None:
    info = site / f"{name}-{version}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
    (info / "WHEEL").write_text("Wheel-Version: 1.0\nTag: cp311-cp311-linux_x86_64\n")
    (info / "RECORD").write_text("".join(f"{line}\n" for line in record))
    for rel, text in files.items():
        (site / rel).parent.mkdir(parents=True, exist_ok=True)
        (site / rel).write_text(text)


def test_env_report_reads_record_and_torch_build(tmp_path: Path) -> None:
    """The report script reads RECORD as text (d.files was most of its time): the same
    top-level modules, torch's CUDA build from torch/version.py, and a RECORD with a quoted
    path (a comma in it) still read through importlib.metadata."""
    from envbisect.env.uv import find_uv

    venv = tmp_path / "v"
    subprocess.run([find_uv(), "venv", "-q", "--no-config", "--python", sys.executable, str(venv)],
                   check=True)  # fmt: skip
    python = venv / "bin" / "python"
    site = Path(subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_path("
                                "'purelib'))"], capture_output=True, text=True,
                               check=True).stdout.strip())  # fmt: skip
    _dist(site, "torch", "2.1.0+cu121",
          ["torch/__init__.py,sha256=x,1", "torch/version.py,sha256=y,2",
           "torch/lib/libtorch.so,,", "functorch/__init__.py,,",
           "torch-2.1.0+cu121.dist-info/RECORD,,", "../../bin/torchrun,,"],
          {"torch/__init__.py": "", "torch/version.py": "__version__ = '2.1.0+cu121'\n"
           "cuda: Optional[str] = '12.1'\nhip = None\n"})  # fmt: skip
    _dist(site, "odd", "1.0", ['"odd/a,b.py",,', "odd/__init__.py,,", "odd_ext.cpython-311.so,,",
                               "single.py,,"],
          {"odd/__init__.py": ""})  # fmt: skip
    report = envreport.collect(str(python), deep=False, timeout=60)
    assert report["packages"]["torch"] == "2.1.0+cu121"
    assert report["installed"]["odd"] == "1.0"
    assert report["torch"]["cuda"] == "12.1"
    assert report["wheel_tags"]["torch"] == {"version": "2.1.0+cu121",
                                             "tags": ["cp311-cp311-linux_x86_64"]}  # fmt: skip
    mods = report["modules"]
    assert mods["torch"] == "torch" and mods["functorch"] == "torch"
    assert mods["odd"] == "odd" and mods["odd_ext"] == "odd" and mods["single"] == "odd"
    assert not any(m.endswith("-info") or m == ".." for m in mods)
    pending = envreport.Pending(str(python))
    assert pending.result() == {**report, "envbisect": report["envbisect"]}
    # Read from the files in this process, as a probe reads it: the same report.
    assert envreport.read_venv(python) == report
    # A .pth line that adds a folder (an editable install): only the interpreter can say.
    (tmp_path / "src").mkdir()
    (site / "__editable__.odd.pth").write_text(f"import os\n{tmp_path / 'src'}\n")
    assert envreport.read_venv(python) is None
    (site / "__editable__.odd.pth").write_text("import os; os.environ.get('X')\n# a comment\n")
    assert envreport.read_venv(python) == report  # lines that run code add no folder
    # A file its RECORD names is gone: the script fails on it, and so the read gives way to
    # the interpreter (whose failure the probe survives: no report, as before).
    (site / "torch" / "version.py").unlink()
    assert envreport.read_venv(python) is None
    assert envreport.Pending(str(python)).result() is None


def test_env_report_read_in_process_for_another_python(tmp_path: Path) -> None:
    """A venv of another Python than envbisect's: its version comes from pyvenv.cfg, the
    report equals what its own interpreter prints. Skipped where pyenv has no 3.12."""
    from envbisect.env.uv import find_uv

    other = sorted(Path.home().glob(".pyenv/versions/3.12*/bin/python3.12"))
    if not other:
        pytest.skip("no Python 3.12 under ~/.pyenv here")
    venv = tmp_path / "v"
    subprocess.run([find_uv(), "venv", "-q", "--no-config", "--python", str(other[0]), str(venv)],
                   check=True)  # fmt: skip
    python = venv / "bin" / "python"
    site = next(venv.glob("lib/python3.12/site-packages"))
    _dist(site, "transformers", "4.51.3", ["transformers/__init__.py,,"],
          {"transformers/__init__.py": ""})  # fmt: skip
    report = envreport.collect(str(python), deep=False, timeout=60)
    assert report["markers"]["python_version"] == "3.12"
    assert envreport.read_venv(python) == report
    (venv / "pyvenv.cfg").write_text("home = /nowhere\ninclude-system-site-packages = true\n")
    assert envreport.read_venv(python) is None  # the system's packages: the interpreter's word


def test_env_bad_interpreter() -> None:
    proc = envbisect("env", "--python", "/no/such/python")
    assert proc.returncode == 2 and proc.stderr.startswith("error: cannot run /no/such/python")
    assert "hint: " in proc.stderr


# -- checks over synthetic reports -------------------------------------------------------------


def base_report(**over: object) -> dict[str, object]:
    report: dict[str, object] = {
        "glibc": "2.31",
        "markers": {"sys_platform": "linux", "python_version": "3.11", "platform_system": "Linux",
                    "platform_machine": "x86_64", "os_name": "posix",
                    "implementation_name": "cpython", "python_full_version": "3.11.7",
                    "platform_python_implementation": "CPython"},
        "packages": {"numpy": "1.26.4"},
        "installed": {},
        "wheel_tags": {},
        "requires": {},
        "torch": None,
        "nvidia": None,
        "numpy_abi": [],
    }  # fmt: skip
    report.update(over)
    return report


def refs(report: dict[str, object]) -> list[tuple[str, str]]:
    return [(c.ref, c.severity) for c in envreport.checks(report)]


def test_check_cuda_build_against_driver() -> None:
    nvidia = {"driver": "470.82", "cuda": "11.4", "gpus": []}
    assert refs(base_report(torch={"version": "2.1.0+cu121", "cuda": "12.1"}, nvidia=nvidia)) == [
        ("cuda-build-newer-than-driver", "error")
    ]
    newer_minor = {"driver": "535.104", "cuda": "12.2", "gpus": []}
    assert refs(base_report(torch={"version": "2.4.0", "cuda": "12.4"}, nvidia=newer_minor)) == [
        ("cuda-build-newer-than-driver", "warning")
    ]
    ok = {"driver": "550.54", "cuda": "12.4", "gpus": []}
    assert refs(base_report(torch={"version": "2.1.0", "cuda": "12.1"}, nvidia=ok)) == []
    assert refs(base_report(torch={"version": "2.1.0+cpu", "cuda": None}, nvidia=ok)) == []


def test_check_glibc_against_wheel_tags() -> None:
    tags = {
        "pyarrow": {"version": "21.0.0", "tags": ["cp311-cp311-manylinux_2_28_x86_64"]},
        "numpy": {
            "version": "1.26.4",
            "tags": ["cp311-cp311-manylinux_2_17_x86_64", "cp311-cp311-manylinux2014_x86_64"],
        },
    }
    found = envreport.checks(base_report(glibc="2.27", wheel_tags=tags))
    assert [(c.ref, c.message) for c in found] == [
        ("glibc-too-old", "pyarrow 21.0.0 is a manylinux_2_28 wheel; this system has glibc 2.27")
    ]
    assert envreport.checks(base_report(glibc="2.35", wheel_tags=tags)) == []


def test_check_packages_outside_llamafactory_pins() -> None:
    report = base_report(
        requires={"llamafactory": ["transformers<=4.57.1,>=4.49.0,!=4.52.0",
                                   "datasets<=4.0.0,>=2.16.0",
                                   "bitsandbytes>=0.39.0; sys_platform == 'darwin'",
                                   "nltk; extra == 'metrics'"]},
        installed={"transformers": "4.52.0", "datasets": "3.6.0", "bitsandbytes": "0.30.0",
                   "nltk": "1.0"},
    )  # fmt: skip
    found = envreport.checks(report)
    assert [c.message for c in found] == [
        "transformers 4.52.0 is outside LLaMA-Factory's pins (!=4.52.0,<=4.57.1,>=4.49.0)"
    ]
    assert "pip install 'transformers" in found[0].fix


def test_check_numpy2_with_numpy1_builds() -> None:
    bad = [{"package": "pyarrow", "version": "14.0.2", "module": "pyarrow"}]
    found = refs(base_report(packages={"numpy": "2.1.0"}, numpy_abi=bad))
    assert found == [("numpy2-abi", "error")]
    assert refs(base_report(packages={"numpy": "1.26.4"}, numpy_abi=bad)) == []


def test_nvidia_smi_parsing() -> None:
    head = "| NVIDIA-SMI 550.54.15   Driver Version: 550.54.15   CUDA Version: 12.4     |"
    info = envreport.parse_nvidia_smi(head, "NVIDIA H200, 143771\nNVIDIA H200, 143771\n")
    assert info == {"driver": "550.54.15", "cuda": "12.4",
                    "gpus": [{"name": "NVIDIA H200", "memory_gib": 140.4}] * 2}  # fmt: skip


def test_store_migrates_schema_1(tmp_path: Path) -> None:
    db = sqlite3.connect(tmp_path / "envbisect.db")
    db.executescript(
        "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);"
        "INSERT INTO meta VALUES ('schema', '1');"
        "CREATE TABLE probes (id INTEGER PRIMARY KEY, env_id TEXT NOT NULL, repro_id TEXT NOT NULL,"
        " spec TEXT NOT NULL, installed TEXT NOT NULL, installed_hash TEXT NOT NULL,"
        " kind TEXT NOT NULL, signal TEXT, exit_code INTEGER, signature TEXT NOT NULL,"
        " exception TEXT, detail TEXT NOT NULL, stdout_tail TEXT NOT NULL,"
        " stderr_tail TEXT NOT NULL, build_seconds REAL NOT NULL, probe_seconds REAL NOT NULL,"
        " timeout REAL, started_at TEXT NOT NULL, envbisect_version TEXT NOT NULL,"
        " UNIQUE (env_id, repro_id));"
        "INSERT INTO probes (env_id, repro_id, spec, installed, installed_hash, kind, signature,"
        " detail, stdout_tail, stderr_tail, build_seconds, probe_seconds, started_at,"
        " envbisect_version) VALUES ('e', 'r', '{}', '[]', 'h', 'crash', 'SIGSEGV', '', '', '',"
        " 1.0, 2.0, '2026-01-01', '0.1.0');"
    )
    db.close()
    with Store(tmp_path) as store:
        rec = store.get("e", "r")
        assert rec is not None and rec.outcome.signature == "SIGSEGV" and rec.env_report is None
    db = sqlite3.connect(tmp_path / "envbisect.db")
    row = db.execute("SELECT value FROM meta WHERE key='schema'").fetchone()
    assert row == (str(SCHEMA_VERSION),)


@pytest.mark.slow
def test_probe_a_lockfile_and_pins(index: LocalIndex, python: str, tmp_path: Path) -> None:
    lock = tmp_path / "lock.txt"
    lock.write_text("crashy==1.8.0\nhelperlib==1.0.0\n")
    proc = envbisect(*probe_args(index, python, tmp_path), "--lock", str(lock),
                     "--probe", "import:crashy", "--json")  # fmt: skip
    data = json.loads(proc.stdout)
    assert {d["name"]: d["version"] for d in data["installed"]} == {
        "crashy": "1.8.0",
        "helperlib": "1.0.0",
    }
    ranges = tmp_path / "requirements.txt"
    ranges.write_text("crashy>=1.9,<1.11\nraisy; sys_platform == 'win32'\n")
    proc = envbisect(*probe_args(index, python, tmp_path), "--pins", str(ranges),
                     "--probe", "import:crashy", "--json")  # fmt: skip
    installed = {d["name"]: d["version"] for d in json.loads(proc.stdout)["installed"]}
    assert installed == {"crashy": "1.10.0", "helperlib": "2.0.0"}  # raisy: not on linux
    not_a_lock = envbisect(*probe_args(index, python, tmp_path), "--lock", str(ranges),
                           "--probe", "import:crashy")  # fmt: skip
    assert not_a_lock.returncode == 2 and "does not pin every requirement" in not_a_lock.stderr


def test_the_probe_flag_help_names_every_built_in_probe() -> None:
    from envbisect.cli.flags import PROBES
    from envbisect.env.repro import probe_usage

    assert probe_usage() == PROBES
