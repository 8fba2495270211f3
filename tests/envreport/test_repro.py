"""``envbisect repro REPORT``, reports as pin sources and PEP 723 scripts, end to end.

Real uv environments from the local index (support/corpus.py: raisy raises from 1.5.0, crashy
segfaults from 1.7.0, mixed raises a TypeError at 1.4.0 and segfaults from 1.5.0), the real
CLI. The report texts are kept here, never fetched. Only what cannot exist on this machine is
stood in for: a GPU (``read_nvidia_smi``, patched in the tests that say so) and the PyTorch
index host (the local index serves its layout under /whl, as test_torch_index.py does).
"""

from __future__ import annotations

import json
import os
import shlex
import sys
from pathlib import Path
from typing import Any

import pytest

from envbisect.cli.main import main
from envbisect.env import envreport
from support.cli import assert_clean_error, envbisect
from support.index_server import LocalIndex
from support.options import flat_options

PY = f"{sys.version_info.major}.{sys.version_info.minor}"

TRACEBACK = """\
```
Traceback (most recent call last):
  File "/home/me/repro.py", line 2, in <module>
    {package}.run()
  File "/home/me/.venv/lib/python{py}/site-packages/{package}/__init__.py", line 3, in run
    raise {error}
{line}
```
"""


def report(pins: str, code: str, error: str = "", *, platform: str = "") -> str:
    """A GitHub issue's body: the environment (pip freeze), the repro, the error."""
    system = f"- Platform: {platform}\n- Python version: {PY}.4\n\n" if platform else ""
    return (f"### System Info\n\n{system}```text\n$ pip freeze\n{pins}```\n\n### Reproduction"
            f"\n\n```python\n{code}```\n\nIt fails:\n\n{error}")  # fmt: skip


def installed(row: dict[str, Any]) -> dict[str, str]:
    return {d["name"]: d["version"] for d in row["installed"]}


def raisy_report(version: str) -> str:
    error = TRACEBACK.format(package="raisy", py=PY, error="ValueError('raisy broke')",
                             line="ValueError: raisy broke")  # fmt: skip
    return report(f"raisy=={version}\nhelperlib==1.0.0\n", "import raisy\nraisy.run()\n", error)


@pytest.fixture
def base(index: LocalIndex, python: str, tmp_path: Path) -> list[str]:
    return ["--index-url", index.url, "--python", python, "--results", str(tmp_path / "r"),
            "--cache-dir", str(tmp_path / "c")]  # fmt: skip


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


@pytest.mark.slow
def test_reproduced_then_the_next_command_finds_the_first_bad_release(
    base: list[str], tmp_path: Path
) -> None:
    issue = write(tmp_path, "issue.md", raisy_report("1.5.0"))
    proc = envbisect("repro", str(issue), *base, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0] == "reproduced: the same failure: fail (ValueError: raisy broke)"
    assert "envbisect: " + str(issue) + ": pip freeze: 2 package(s)" in proc.stderr
    lock, run = (ln.removeprefix("next: ").split("   # ")[0] for ln in lines[1:3])
    assert lock.startswith("envbisect lock --with raisy==1.5.0 --with helperlib ")
    assert run.startswith(f"envbisect run --package raisy --pins {issue} --bad 1.5.0 ")
    repro_file = shlex.split(run)[-1]
    assert Path(repro_file).read_text() == "import raisy\nraisy.run()\n"
    # The command it printed runs as it is: the first bad release, the rest held at the
    # report's versions; the report's environment itself comes from the store.
    found = envbisect(*shlex.split(run)[1:], "--json", cwd=tmp_path)
    assert found.returncode == 0, found.stderr
    res = json.loads(found.stdout)
    assert (res["first_bad"], res["last_good"]) == ("1.5.0", "1.4.0")
    assert [r["version"] for r in res["reused"]] == ["1.5.0"]
    assert len(res["probes"]) <= 4  # 1.0.0 .. 1.4.0 below the bad end: in log time
    assert all(installed(r)["helperlib"] == "1.0.0" for r in res["probes"])


@pytest.mark.slow
def test_not_reproduced_and_a_different_failure(base: list[str], tmp_path: Path) -> None:
    passes = write(tmp_path, "passes.md", raisy_report("1.2.0"))
    proc = envbisect("repro", str(passes), *base, "--json", cwd=tmp_path)
    assert proc.returncode == 4, proc.stderr
    out = json.loads(proc.stdout)
    assert (out["status"], out["outcome"]["kind"], out["next"]) == ("not-reproduced", "pass", [])
    assert out["expected"]["signature"] == "ValueError: raisy broke"
    assert sorted(out["environment"]["requirements"]) == ["helperlib==1.0.0", "raisy==1.2.0"]
    # mixed 1.5.0 segfaults; the report shows a TypeError: both are shown, exit 4.
    error = TRACEBACK.format(package="mixed", py=PY, error="TypeError('a different bug')",
                             line="TypeError: a different bug")  # fmt: skip
    other = write(tmp_path, "other.md",
                  report("mixed==1.5.0\n", "import mixed\nmixed.run()\n", error))  # fmt: skip
    proc = envbisect("repro", str(other), *base, cwd=tmp_path)
    assert proc.returncode == 4, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0] == "a different failure"
    assert lines[1].startswith("  here:     crash (SIGSEGV")
    assert lines[2] == "  reported: fail (TypeError: a different bug)"
    assert lines[3].startswith("next: envbisect lock --with mixed==1.5.0")


@pytest.mark.slow
def test_a_crash_from_stdin_and_the_dry_run(base: list[str], tmp_path: Path) -> None:
    crash = (
        "```\nFatal Python error: Segmentation fault\n\nCurrent thread 0x00007f (most recent "
        'call first):\n  File "/x/site-packages/crashy/__init__.py", line 4 in run\n'
        '  File "/x/repro.py", line 2 in <module>\nSegmentation fault (core dumped)\n```\n'
    )
    text = report("crashy==1.8.0\nhelperlib==1.0.0\n", "import crashy\ncrashy.run()\n", crash)
    plan = envbisect("repro", "-", *base, "--dry-run", cwd=tmp_path, input=text)
    assert plan.returncode == 0, plan.stderr
    assert plan.stdout.splitlines()[0] == ("dry run: the report's environment planned, "
                                           "nothing built")  # fmt: skip
    assert "  crashy==1.8.0" in plan.stdout and "  helperlib==1.0.0" in plan.stdout
    assert not (tmp_path / "r" / ".envs").exists()  # nothing built
    proc = envbisect("repro", "-", *base, cwd=tmp_path, input=text)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("reproduced: the same failure: crash (SIGSEGV")
    # Standard input is read once and kept: the next commands name the copy.
    run = next(ln for ln in proc.stdout.splitlines() if "envbisect run" in ln)
    words = shlex.split(run.split("   # ")[0])
    copy = Path(words[words.index("--pins") + 1])
    assert copy.name == "report.md" and copy.read_text(encoding="utf-8") == text


@pytest.mark.slow
def test_pins_from_a_report_on_stdin_and_in_markdown(index: LocalIndex, tmp_path: Path) -> None:
    """The report's Python is the target when --python is not given; a dev version is mapped
    to the release below it on the index; a report from another OS is said, and used."""
    text = (f"- `raisy` version: 1.5.0.dev0\n- Platform: Windows-10-10.0.22631-SP0\n"
            f"- Python version: {PY}.9\n- Helperlib version: 1.0.0\n")  # fmt: skip
    args = ["--index-url", index.url, "--cache-dir", str(tmp_path / "c"), "--json"]
    proc = envbisect("pins", "-", *args, cwd=tmp_path, input=text)
    assert proc.returncode == 0, proc.stderr
    pins = json.loads(proc.stdout)
    assert [(r["name"], r["specifier"]) for r in pins["requirements"]] == [
        ("raisy", "==1.4.0"), ("helperlib", "==1.0.0")]  # fmt: skip
    assert pins["report"]["python"] == f"{PY}.9"
    err = proc.stderr
    assert f"envbisect: Python {PY}, the report's ({PY}.9); --python chooses another" in err
    assert "the report is from Windows (Windows-10-10.0.22631-SP0)" in err
    assert ("warning: stdin:1: raisy 1.5.0.dev0: a development version, not on the index: "
            "1.4.0, the nearest release below it") in err  # fmt: skip
    md = write(tmp_path, "issue.md", f"### System Info\n\n{text}\n### Reproduction\n\nx\n")
    shown = envbisect("pins", str(md), *args[:-1], cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    assert f"(for cp{PY.replace('.', '')}-" in shown.stdout and "\nraisy==1.4.0\n" in shown.stdout


@pytest.mark.slow
def test_a_pep723_script_bisected_with_no_other_pins(index: LocalIndex, tmp_path: Path) -> None:
    script = write(tmp_path, "script.py", (
        f"# /// script\n# requires-python = \"=={PY}.*\"\n"
        "# dependencies = [\"raisy>=1.1\", \"helperlib<2\"]\n# ///\n"
        "import raisy, helperlib\nraisy.run()\n"
    ))  # fmt: skip
    proc = envbisect("run", "--package", "raisy", "--repro", str(script), "--index-url",
                     index.url, "--results", str(tmp_path / "r"), "--cache-dir",
                     str(tmp_path / "c"), "--json", cwd=tmp_path)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    res = json.loads(proc.stdout)
    assert (res["first_bad"], res["last_good"]) == ("1.5.0", "1.4.0")
    assert f"envbisect: {script}: its script metadata adds --with helperlib<2" in proc.stderr
    assert "raisy>=1.1 left to the search (--package raisy)" in proc.stderr
    assert f"envbisect: {script}: Python =={PY}.*, its requires-python" in proc.stderr
    assert all(installed(r)["helperlib"] == "1.0.0" for r in res["probes"])
    assert len(res["probes"]) <= 5  # 8 versions: the ends and ceil(log2 8) between
    assert res["target"].startswith(f"cp{PY.replace('.', '')}-")


@pytest.mark.slow
def test_bad_reports_get_one_line_and_a_hint(base: list[str], tmp_path: Path) -> None:
    empty = write(tmp_path, "empty.md", "\n\n")
    assert_clean_error(envbisect("repro", str(empty), *base), 2, f"the report {empty} is empty",
                       "[repro-empty]")  # fmt: skip
    bare = write(tmp_path, "bare.md", "### Bug\n\n```python\nimport raisy\n```\n")
    proc = envbisect("repro", str(bare), *base)
    assert_clean_error(proc, 2, f"the report {bare} names no package versions")
    assert "hint: add the reporter's environment to it: the output of pip freeze" in proc.stderr
    nocode = write(tmp_path, "nocode.md", "```text\nraisy==1.5.0\n```\nIt breaks.\n")
    proc = envbisect("repro", str(nocode), *base)
    assert_clean_error(proc, 2, f"the report {nocode} has no code block to run")
    assert "hint: put the repro in a ```python block" in proc.stderr
    # The same files as --pins.
    probe = ["probe", *base, "--", "python", "-c", "pass"]
    assert_clean_error(envbisect(*probe[:1], "--pins", str(empty), *probe[1:]), 2,
                       f"{empty} is empty", "[pins-empty]")  # fmt: skip
    assert_clean_error(envbisect(*probe[:1], "--pins", str(bare), *probe[1:]), 2,
                       "names no package versions", "[pins-no-versions]")  # fmt: skip
    # Invalid script metadata: the line, and a hint.
    bad = write(tmp_path, "bad.py", "import os\n# /// script\n# dependencies = [\"raisy>>1\"]\n"
                "# ///\n")  # fmt: skip
    proc = envbisect("run", "--package", "raisy", "--repro", str(bad), *base)
    assert_clean_error(proc, 2, f"{bad}:3: invalid requirement 'raisy>>1'", "[script-metadata]")
    assert "hint: inline script metadata is TOML between" in proc.stderr


@pytest.mark.slow
def test_what_cannot_be_reproduced_here_is_said_in_one_line(
    base: list[str], tmp_path: Path
) -> None:
    cases = {
        "cuda.md": (report("raisy==1.5.0\n", "import raisy\nraisy.run().cuda()\n"),
                    "cannot reproduce here: the repro needs a CUDA GPU ('.cuda('); this machine "
                    "has none", "hint: run envbisect repro on a machine with an NVIDIA GPU"),
        "windows.md": (report("raisy==1.5.0\n", "import raisy\n",
                              platform="Windows-10-10.0.22631-SP0"),
                       "cannot reproduce here: the report is from Windows",
                       "hint: run envbisect repro on the reporter's operating system"),
        "hub.md": (report("raisy==1.5.0\n", "from transformers import AutoModel\n"
                          "AutoModel.from_pretrained('Qwen/Qwen2.5-0.5B')\n"),
                   "cannot reproduce here: the repro downloads 'Qwen/Qwen2.5-0.5B' from the "
                   "Hugging Face Hub", "hint: pass --allow-download"),
    }  # fmt: skip
    # No GPU on this machine, whatever the machine the tests run on: nvidia-smi is stood in
    # for by PATH without it.
    env = {**os.environ, "PATH": str(Path(sys.executable).parent)}
    for name, (text, said, hint) in cases.items():
        proc = envbisect("repro", str(write(tmp_path, name, text)), *base, env=env)
        assert proc.returncode == 1, proc.stderr
        assert proc.stdout.splitlines()[0].startswith(said), proc.stdout
        assert len(proc.stdout.splitlines()) == 1
        assert hint in proc.stderr and "Traceback" not in proc.stderr
    assert not (tmp_path / "r" / ".envs").exists()  # nothing was built


FREEZE = "torch==2.2.0+cu121\ntorchvision==0.17.0+cu121\n"
CHECK = ("import torch, torchvision\nfrom torch import version\n"
         "print(torch.__version__, version.cuda)\n")  # fmt: skip


@pytest.mark.parametrize(
    ("smi", "installed", "said"),
    [
        ({"driver": "550.54", "cuda": "12.4", "gpus": [{"name": "NVIDIA H100", "memory_gib": 80}]},
         "2.2.0+cu121", "torch: the report's cu121 build (this driver supports CUDA 12.4)"),
        (None, "2.2.0+cpu", "this machine has no GPU: the CPU build (PyTorch's cpu index)"),
    ],
)  # fmt: skip
def test_a_local_torch_version_takes_the_variant_this_machine_can_run(
    index: LocalIndex, python: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str], smi: dict[str, Any] | None, installed: str, said: str,
) -> None:  # fmt: skip
    """A report's ``+cu121`` torch: PyTorch's cu121 index with a GPU, its CPU build without.
    The GPU is stood in for (``read_nvidia_smi`` patched: this machine has none) and so is the
    PyTorch host (the local index's /whl folders, laid out as download.pytorch.org's)."""
    monkeypatch.setattr(envreport, "read_nvidia_smi", lambda: smi)
    freeze = write(tmp_path, "freeze.txt", FREEZE)
    check = write(tmp_path, "check.py", CHECK)
    code = main(["probe", "--pins", str(freeze), "--index-url", index.url, "--torch-index-url",
                 f"{index.base}/whl", "--python", python, "--results", str(tmp_path / "r"),
                 "--cache-dir", str(tmp_path / "c"), "--repro", str(check), "--json"])  # fmt: skip
    out, err = capsys.readouterr()
    assert code == 0, err
    got = {d["name"]: d["version"] for d in json.loads(out)["installed"]}
    vision = installed.replace("2.2.0", "0.17.0")
    assert (got["torch"], got["torchvision"]) == (installed, vision)
    assert said in err
    assert "freeze.txt:1: torch 2.2.0+cu121: the cu121 build: public version 2.2.0" in err


def test_a_cuda_torch_without_a_gpu_takes_the_cpu_build_of_a_folder_at_hand(
    index: LocalIndex, python: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    """No GPU (``read_nvidia_smi`` patched), no PyTorch index to reach: the report's
    ``+cu121`` torch becomes the CPU build of the same version from the user's folder of
    wheels (--find-links), torchvision's too, and no --torch-backend is set."""
    monkeypatch.setattr(envreport, "read_nvidia_smi", lambda: None)
    folder = index.variants["cpu"][0].path.parent
    freeze = write(tmp_path, "freeze.txt", FREEZE)
    check = write(tmp_path, "check.py", CHECK)
    code = main(["probe", "--pins", str(freeze), "--index-url", index.url, "--find-links",
                 str(folder), "--python", python, "--results", str(tmp_path / "r"),
                 "--cache-dir", str(tmp_path / "c"), "--repro", str(check), "--json"])  # fmt: skip
    out, err = capsys.readouterr()
    assert code == 0, err
    got = {d["name"]: d["version"] for d in json.loads(out)["installed"]}
    assert (got["torch"], got["torchvision"]) == ("2.2.0+cpu", "0.17.0+cpu")
    assert f"the CPU build of the same version, from {folder} (find-links)" in err
    assert "PyTorch's cpu index" not in err


def test_a_llamafactory_train_repro_runs_its_yaml_from_the_results_folder(
    tmp_path: Path,
) -> None:
    """The command and its config become a step: the YAML written under RESULTS/repro/, its
    relative data set folder made absolute when it lies here (each probe runs in a folder
    of its own), the command's argument pointing at the copy."""
    from envbisect.core.envreport.bugreport import read_bug_report
    from envbisect.modes.reproduce import ReproOptions, _folder, _repro

    (tmp_path / "data").mkdir()
    text = ("```bash\nllamafactory-cli train examples/qwen.yaml\n```\n\nqwen.yaml:\n\n"
            "```yaml\nstage: sft\ndataset: identity\n```\n")  # fmt: skip
    opts = ReproOptions(report="x.md", common=flat_options(results=tmp_path / "r"), cwd=tmp_path)
    repro, files, args = _repro(read_bug_report(text), _folder(opts, text), opts)
    (config,) = files
    assert Path(config).parent.parent == tmp_path / "r" / "repro"
    data = (tmp_path / "data").resolve()
    assert Path(config).read_text() == f"stage: sft\ndataset: identity\ndataset_dir: {data}\n"
    (step,) = repro.steps
    assert step.argv == ("llamafactory-cli", "train", config)
    assert args == ["--", "llamafactory-cli", "train", config]
    assert dict(repro.extra_env) == {"DISABLE_VERSION_CHECK": "1"}
