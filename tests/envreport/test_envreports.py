"""Environment reports as people paste them: every format read into pins and facts.

The report texts live in tests/data/reports (never fetched): the System Info block of a real
LLaMA-Factory issue (hiyouga/LlamaFactory#8598), and outputs of transformers env (both of its
layouts), accelerate env, torch's collect_env with conda rows, pip freeze, uv pip freeze,
pip list (columns, legacy and json layouts) and conda list, shaped as those tools print them.
Pure: text in, pins out; ``releases`` stands in for the index.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from packaging.version import Version

from envbisect.core.envreport.facts import ReportFacts
from envbisect.core.envreport.read import is_freeze, read_report
from envbisect.core.envreport.report import segments
from envbisect.core.pins.from_report import (
    platform_note,
    python_request,
    report_pins,
    torch_backend,
)
from envbisect.core.pins.sources import PinSet
from envbisect.env.pinsource import load_pins
from envbisect.errors import UsageError

DATA = Path(__file__).parents[1] / "data" / "reports"


def pins_of(name: str, releases: dict[str, list[str]] | None = None) -> PinSet:
    text = (DATA / name).read_text(encoding="utf-8")
    report = read_report(text)
    assert report is not None, name
    lookup = None
    if releases is not None:
        table = {k: [Version(v) for v in vs] for k, vs in releases.items()}

        def lookup(n: str) -> list[Version] | None:
            return table.get(n)

    return report_pins(report, origin=name, releases=lookup)


def reqs(ps: PinSet) -> list[str]:
    return [str(p.requirement) for p in ps.requirements]


def facts(ps: PinSet) -> ReportFacts:
    assert ps.report is not None
    return ps.report


def test_llamafactory_cli_env_of_a_real_issue() -> None:
    ps = pins_of("llamafactory-env.txt", {"llamafactory": ["0.9.2", "0.9.3", "0.9.4rc1"]})
    f = facts(ps)
    assert f.formats == ("llamafactory-cli env",)
    assert reqs(ps) == ["llamafactory==0.9.3", "torch==2.7.1", "transformers==4.52.4",
                        "datasets==3.6.0", "accelerate==1.7.0", "peft==0.15.2",
                        "trl==0.9.6"]  # fmt: skip
    assert (f.python, f.report.system, f.report.machine) == ("3.10.6", "Linux", "x86_64")
    assert f.report.platform == "Linux-6.11.0-29-generic-x86_64-with-glibc2.39"
    assert f.variant == "cu126" and f.report.gpu == "NVIDIA GeForce RTX 2080 Ti"
    assert f.report.subject == "llamafactory" and ps.is_lock
    # Every pin says where it was read; a pin's line is the report's line.
    assert [p.origin for p in ps.requirements][:2] == ["llamafactory-env.txt:1",
                                                       "llamafactory-env.txt:4"]  # fmt: skip
    # The dev version: the nearest release below it (not 0.9.4rc1, a pre-release), a warning;
    # the commit the report names, with LLaMA-Factory's repository, recorded.
    dev, local = f.mapped
    assert (dev.name, dev.reported, dev.used, dev.warning) == (
        "llamafactory", "0.9.4.dev0", "llamafactory==0.9.3", True)  # fmt: skip
    assert "nearest release below it" in dev.why
    assert (local.reported, local.used, local.warning) == ("2.7.1+cu126", "torch==2.7.1", False)
    (commit,) = f.commits
    assert commit.commit == "cf1087d409b2513338f9f32a33b6d95919b96d91"
    assert commit.repository == "https://github.com/hiyouga/LLaMA-Factory"
    assert python_request(f) == "3.10"


def test_a_dev_version_without_an_index_and_one_the_index_has() -> None:
    ps = pins_of("llamafactory-env.txt")  # no index asked: the range below it
    assert reqs(ps)[0] == "llamafactory<0.9.4.dev0"
    ps = pins_of("llamafactory-env.txt", {"llamafactory": ["0.9.3", "0.9.4.dev0"]})
    assert reqs(ps)[0] == "llamafactory==0.9.4.dev0"  # on the index: kept as it is
    ps = pins_of("llamafactory-env.txt", {"llamafactory": ["0.9.5"]})
    assert reqs(ps)[0] == "llamafactory"  # nothing below: the newest, said
    assert "no release below it" in facts(ps).mapped[0].why


def test_transformers_env_both_layouts() -> None:
    ps = pins_of("transformers-env.txt")
    f = facts(ps)
    assert f.formats == ("transformers env",)
    # "not installed" rows (DeepSpeed, Tensorflow, Flax, Jax) are absent, not versions.
    assert reqs(ps) == ["transformers==4.52.4", "huggingface-hub==0.33.0", "safetensors==0.5.3",
                        "accelerate==1.7.0", "torch==2.7.1"]  # fmt: skip
    assert (f.python, f.variant, f.report.gpu) == ("3.11.13", "cu126", "NVIDIA A100-SXM4-80GB")
    old = pins_of("transformers-cli-env.txt")  # transformers-cli env, "(GPU?)" layout, macOS
    assert reqs(old) == ["transformers==4.36.2", "huggingface-hub==0.20.1",
                         "safetensors==0.4.1", "torch==2.1.2"]  # fmt: skip
    g = facts(old)
    assert (g.report.system, g.report.machine, g.variant, g.report.gpu) == (
        "Darwin", "arm64", None, None)  # fmt: skip


def test_accelerate_env_ignores_its_config_block() -> None:
    ps = pins_of("accelerate-env.txt")
    assert facts(ps).formats == ("accelerate env",)
    assert reqs(ps) == ["accelerate==0.27.2", "numpy==1.26.4", "torch==2.2.1"]
    assert facts(ps).variant == "cu121" and facts(ps).report.gpu == "NVIDIA A10G"


def test_collect_env_with_conda_rows() -> None:
    ps = pins_of("collect-env.txt")
    f = facts(ps)
    assert f.formats == ("torch collect_env",)
    # torch from "PyTorch version:"; pip3 rows; conda rows that are Python packages (conda's
    # pytorch is torch); pytorch-cuda and pytorch-mutex are parts of torch's build.
    assert reqs(ps) == ["torch==2.1.0", "numpy==1.26.1", "triton==2.1.0", "torchvision==0.16.0"]
    assert f.variant == "cu121"  # no local label: "CUDA used to build PyTorch: 12.1"
    assert (f.python, f.report.system, f.report.machine) == ("3.10.13", "Linux", "x86_64")
    assert f.report.gpu == "GPU 0: NVIDIA A100-SXM4-80GB"
    assert [x.split(":")[0] for x in f.report.left_out] == ["line 34", "line 35"]
    assert "blas 1.0 (a conda package, no Python distribution)" in f.report.left_out[0]


def test_pip_freeze_with_an_editable_a_vcs_url_and_a_local_torch() -> None:
    ps = pins_of("pip-freeze.txt", {"llamafactory": ["0.9.2", "0.9.3"]})
    f = facts(ps)
    assert f.formats == ("pip freeze",) and f.python is None
    assert reqs(ps) == ["accelerate==1.7.0", "datasets==3.6.0", "llamafactory==0.9.3",
                        "numpy==1.26.4", "peft==0.15.2", "torch==2.7.1", "transformers",
                        "trl==0.9.6"]  # fmt: skip
    # The editable's version comes from pip's comment above it; the VCS row has no version.
    by_name = {m.name: m for m in f.mapped}
    assert by_name["llamafactory"].reported == "0.9.4.dev0"
    assert by_name["transformers"].why == "installed from a URL, no version: the newest release"
    (commit,) = f.commits
    assert (commit.package, commit.commit[:7], commit.repository) == (
        "transformers", "0b1bd1f", "https://github.com/huggingface/transformers")  # fmt: skip
    assert f.variant == "cu126"
    assert not ps.is_lock  # transformers is not pinned


def test_uv_pip_freeze_and_an_editable_without_a_name() -> None:
    ps = pins_of("uv-pip-freeze.txt")
    assert reqs(ps) == ["certifi==2025.6.15", "numpy==2.3.1", "requests==2.32.4", "torch==2.7.1"]
    f = facts(ps)
    assert f.variant == "cpu"
    left = [m for m in f.mapped if m.used is None]
    assert [(m.reported, m.line) for m in left] == [("file:///home/user/src/myproj", 2)]


@pytest.mark.parametrize(
    ("name", "layout", "expected"),
    [
        ("pip-list.txt", "pip list", ["accelerate==1.7.0", "datasets==3.6.0",
                                      "llamafactory==0.9.3", "numpy==1.26.4", "torch==2.7.1",
                                      "transformers==4.52.4"]),
        ("pip-list-legacy.txt", "pip list (legacy layout)", ["accelerate==0.20.3",
                                                             "numpy==1.24.4", "pip==23.1.2",
                                                             "torch==2.0.1",
                                                             "transformers==4.30.2"]),
        ("pip-list.json", "pip list (json)", ["accelerate==1.7.0", "numpy==1.26.4",
                                              "llamafactory==0.9.3"]),
    ],
)  # fmt: skip
def test_pip_list_layouts(name: str, layout: str, expected: list[str]) -> None:
    ps = pins_of(name, {"llamafactory": ["0.9.3"]})
    assert facts(ps).formats == (layout,)
    assert reqs(ps) == expected


def test_conda_list_pip_and_conda_rows() -> None:
    ps = pins_of("conda-list.txt")
    f = facts(ps)
    assert f.formats == ("conda list",)
    # pypi-channel rows are pip's; numpy and pytorch are conda builds of Python packages;
    # python is the interpreter, not a pin; the C libraries are left out, each said.
    assert reqs(ps) == ["accelerate==0.30.1", "numpy==1.26.4", "torch==2.3.1",
                        "transformers==4.41.2"]  # fmt: skip
    assert f.python == "3.11.9" and f.variant == "cu121"
    assert len(f.report.left_out) == 3
    assert all("a conda package, no Python distribution" in x for x in f.report.left_out)


ISSUE = """\
### Reminder

- [x] I have read the above rules and searched the existing issues.

### System Info

- `llamafactory` version: 0.9.4.dev0
- Platform: Linux-6.11.0-29-generic-x86_64-with-glibc2.39
- Python version: 3.10.6
- PyTorch version: 2.7.1+cu126 (GPU)
- Transformers version: 4.52.4

and my pip list, in case:

```text
Package      Version
------------ -------
peft         0.15.2
trl          0.9.6
```

### Reproduction

```python
import transformers==4.52.4
x==1
```
"""


def test_a_report_inside_markdown() -> None:
    report = read_report(ISSUE)
    assert report is not None
    assert report.formats == ("llamafactory-cli env", "pip list")
    ps = report_pins(report, origin="issue.md")
    # Lines of the Python block are code, never pins; the bullets of the template are prose.
    assert reqs(ps) == ["llamafactory<0.9.4.dev0", "torch==2.7.1", "transformers==4.52.4",
                        "peft==0.15.2", "trl==0.9.6"]  # fmt: skip
    assert [p.origin for p in ps.requirements][-1] == "issue.md:19"
    assert [s.lang for s in segments(ISSUE)] == [None, "text", None, "python"]


def test_a_freeze_is_told_from_a_requirements_file(tmp_path: Path) -> None:
    assert is_freeze("numpy==1.26.4\n# Editable install with no version control (x==1)\n-e /x\n")
    assert not is_freeze("numpy==1.26.4\n--index-url https://example.org/simple\n")
    assert not is_freeze("numpy>=1.26\n")
    assert not is_freeze("numpy==1.26.4  # via pandas\n")
    freeze, reqfile = tmp_path / "freeze.txt", tmp_path / "requirements.txt"
    freeze.write_text("torch==2.2.0+cu121\nnumpy==1.26.4\n")
    reqfile.write_text("torch==2.2.0+cu121\nnumpy>=1.26\n")
    read = load_pins(str(freeze), cwd=tmp_path)
    assert read.report is not None and reqs(read) == ["torch==2.2.0", "numpy==1.26.4"]
    kept = load_pins(str(reqfile), cwd=tmp_path)  # a requirements file: as written
    assert kept.report is None and reqs(kept) == ["torch==2.2.0+cu121", "numpy>=1.26"]


def test_markdown_and_stdin_must_name_versions(tmp_path: Path) -> None:
    empty, prose = tmp_path / "empty.md", tmp_path / "prose.md"
    empty.write_text("\n  \n")
    prose.write_text("### Bug\n\nIt crashes when I train.\n")
    with pytest.raises(UsageError) as e:
        load_pins(str(empty), cwd=tmp_path)
    assert (e.value.ref, e.value.message) == ("pins-empty", f"{empty} is empty")
    with pytest.raises(UsageError) as e:
        load_pins(str(prose), cwd=tmp_path)
    assert e.value.ref == "pins-no-versions" and "pip freeze" in (e.value.hint or "")


def test_what_the_facts_mean_here() -> None:
    mac = facts(pins_of("transformers-cli-env.txt"))
    note = platform_note(mac, system="Linux", machine="x86_64")
    assert note is not None and "the report is from Darwin" in note and "are used" in note
    linux = facts(pins_of("transformers-env.txt"))
    assert platform_note(linux, system="Linux", machine="x86_64") is None
    arm = platform_note(linux, system="Linux", machine="aarch64")
    assert arm is not None and "x86_64 machine" in arm
    assert platform_note(facts(pins_of("pip-freeze.txt")), system="Linux", machine="x") is None
    # torch's build: the same CUDA where the driver supports it, the newest it supports where
    # it does not, the CPU build without a GPU.
    assert torch_backend("cu126", driver_cuda="12.8")[0] == "cu126"
    assert torch_backend("cu126", driver_cuda="12.4")[0] == "cu124"
    assert torch_backend("cu126", driver_cuda="11.0")[0] == "cpu"
    backend, why = torch_backend("cu126", driver_cuda=None)
    assert backend == "cpu" and "no GPU" in why and "CPU build" in why
    assert torch_backend("rocm6.2", driver_cuda=None)[0] == "cpu"
    assert torch_backend(None, driver_cuda="12.4") == (None, "")


def test_what_names_no_package_is_left_out_and_said() -> None:
    text = (
        "- `llamafactory` version: 0.9.3\n- CUDA runtime version: 12.1\n"
        "- GPU driver version: 535.104\n- Weird$Name version: 1.0\n- PEFT version: 0.15.2\n\n"
        "Package    Version\n---------- -------\nfoo@bar    1.0\nnumpy      1.26.4\n"
    )
    report = read_report(text)
    assert report is not None
    ps = report_pins(report, origin="r.md")
    # Keys of several words are no package's label; a row whose name is no project name is
    # left out with why, never turned into a requirement.
    assert reqs(ps) == ["llamafactory==0.9.3", "peft==0.15.2", "numpy==1.26.4"]
    assert [(m.name, m.used, m.why) for m in facts(ps).mapped] == [
        ("foo@bar", None, "not a project name: left out")]  # fmt: skip


def test_a_fence_in_a_list_item_or_a_quote_is_a_fenced_block() -> None:
    """Bug reports nest their blocks: a pip freeze under "1. my environment:", a traceback in
    a quoted reply. CommonMark (markdown-it-py) reads them; a line-by-line match missed both."""
    text = (
        "Steps:\n\n"
        "1. my environment:\n\n"
        "   ```text\n"
        "   torch==2.5.1\n"
        "   datasets==3.1.0\n"
        "   ```\n\n"
        "> it crashes for me too:\n"
        "> ~~~python\n"
        "> import datasets\n"
        "> ~~~\n"
        "unclosed:\n"
        "```\n"
        "pyarrow==18.0.0\n"
    )
    segs = segments(text)
    fenced = [(s.lang, s.lines, s.start) for s in segs if s.lang is not None]
    assert fenced == [
        ("text", ("torch==2.5.1", "datasets==3.1.0"), 6),  # the line of its first line
        ("python", ("import datasets",), 12),
        ("", ("pyarrow==18.0.0",), 16),
    ]
    prose = [line for s in segs if s.lang is None for line in s.lines]
    assert "it crashes for me too:" in prose and "torch==2.5.1" not in " ".join(prose)


def test_conda_env_export_and_a_yaml_block_that_is_a_config() -> None:
    """``conda env export``: conda's builds of Python packages and its pip: list, the C
    libraries left out, torch's CUDA from its build; the same in a Markdown YAML block; a
    training config's YAML block (LLaMA-Factory's) is no environment."""
    text = (DATA / "conda-env-export.yml").read_text()
    for report in (read_report(text), read_report(f"### System Info\n\n```yaml\n{text}```\n")):
        assert report is not None and report.formats == ("conda env export",)
        got = {r.key: (r.version, r.kind) for r in report.rows}
        assert got == {
            "numpy": ("1.26.4", "conda"),
            "torch": ("2.3.1", "conda"),
            "accelerate": ("0.30.1", "pip"),
            "transformers": ("4.41.2", "pip"),
        }
        assert report.python == "3.10.14" and report.torch_cuda == "12.1"
        assert len(report.left_out) == 2  # ca-certificates, libgcc-ng (_libgcc_mutex: no version)
    config = "```yaml\nmodel_name_or_path: x\nstage: sft\ndataset: alpaca_en_demo\n```\n"
    assert read_report(config) is None
    # written by hand, no builds
    hand = "dependencies:\n  - python=3.10\n  - pytorch=2.1\n  - pip:\n    - peft==0.7.1\n"
    hand = "name: train\n" + hand
    report = read_report(hand)
    assert report is not None
    assert {r.key: r.version for r in report.rows} == {"torch": "2.1", "peft": "0.7.1"}
