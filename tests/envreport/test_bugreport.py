"""A bug report's repro and error, PEP 723 script metadata, and what envbisect repro answers.

Pure: report texts (kept here, never fetched) in; the repro, the reported outcome, what this
machine lacks, the answer and the next commands out.
"""

from __future__ import annotations

import pytest

from envbisect.core.envreport.bugreport import obstacles, read_bug_report, reported_outcome
from envbisect.core.outcome import same_failure
from envbisect.core.pins.scriptmeta import read_script_metadata
from envbisect.core.results.reproduce import ReproStatus, culprit, decide, next_commands
from envbisect.errors import UsageError
from envbisect.model import Outcome, OutcomeKind

TRACEBACK_REPORT = """\
### Reproduction

```python
import raisy
raisy.run()
```

I get:

```
Traceback (most recent call last):
  File "/home/me/repro.py", line 2, in <module>
    raisy.run()
  File "/home/me/.venv/lib/python3.11/site-packages/raisy/__init__.py", line 3, in run
    raise ValueError('raisy broke')
ValueError: raisy broke
```
"""

LLAMAFACTORY_REPORT = """\
### Reproduction

```bash
CUDA_VISIBLE_DEVICES=0 llamafactory-cli train examples/train_lora/qwen_lora_sft.yaml
```

qwen_lora_sft.yaml:

```yaml
model_name_or_path: Qwen/Qwen2.5-0.5B-Instruct
stage: sft
finetuning_type: lora
dataset: identity,alpaca_en_demo
```

```text
[INFO|2025-07-09 10:00:00] llamafactory.cli: ...
  File "/usr/lib/python3/dist-packages/transformers/trainer.py", line 2240, in train
    return inner_training_loop(
  File "/usr/lib/python3/dist-packages/transformers/trainer.py", line 2560, in _inner
    tr_loss_step = self.training_step(model, inputs, num_items_in_batch)
TypeError: CustomSeq2SeqTrainer.training_step() takes 3 positional arguments but 4 were given
```
"""

CRASH_REPORT = """\
```python
import crashy
crashy.run()
```

```
Fatal Python error: Segmentation fault

Current thread 0x00007f1c (most recent call first):
  File "/env/lib/python3.11/site-packages/crashy/__init__.py", line 4 in run
  File "/home/me/repro.py", line 2 in <module>
Segmentation fault (core dumped)
```
"""


def test_the_python_block_and_the_last_traceback() -> None:
    bug = read_bug_report(TRACEBACK_REPORT)
    assert bug.code == "import raisy\nraisy.run()\n" and bug.code_line == 4
    assert bug.error is not None and bug.error.startswith("Traceback (most recent call last):")
    assert bug.error_line == 16 and bug.signal is None
    expected = reported_outcome(bug)
    assert expected is not None
    assert (expected.kind, expected.exception) == (OutcomeKind.FAIL, "ValueError")
    assert expected.signature == "ValueError: raisy broke"
    # What a probe here prints for the same bug is the same failure, paths and lines aside.
    here = Outcome(kind=OutcomeKind.FAIL, exit_code=1, exception="ValueError",
                   signature="ValueError: raisy broke")  # fmt: skip
    assert same_failure(expected, here)
    assert decide(expected, here) is ReproStatus.REPRODUCED


def test_a_llamafactory_train_command_and_its_yaml() -> None:
    bug = read_bug_report(LLAMAFACTORY_REPORT)
    assert bug.code is None  # a bash block is no Python repro
    assert bug.command == ("llamafactory-cli", "train", "qwen_lora_sft.yaml")
    assert bug.config_name == "qwen_lora_sft.yaml" and bug.command_line == 4
    assert bug.config is not None and bug.config.startswith("model_name_or_path: Qwen/")
    # An exception line with the frames before it but no "Traceback" header (cut when pasted).
    expected = reported_outcome(bug)
    assert expected is not None and expected.exception == "TypeError"
    blocked = obstacles(bug, report_system="Linux", system="Linux", gpu=False,
                        allow_download=False, exists=lambda p: False)  # fmt: skip
    assert blocked == [
        "the repro downloads 'Qwen/Qwen2.5-0.5B-Instruct' from the Hugging Face Hub",
        "the config reads the data sets identity,alpaca_en_demo from data/ (LLaMA-Factory's "
        "folder), which is not here",
    ]
    assert obstacles(bug, report_system="Linux", system="Linux", gpu=False,
                     allow_download=True, exists=lambda p: p == "data") == []  # fmt: skip
    assert culprit(bug.error, {"llamafactory": "0.9.3", "transformers": "4.52.4"},
                   "llamafactory") == "transformers"  # fmt: skip


def test_a_signal_and_faulthandlers_frames() -> None:
    bug = read_bug_report(CRASH_REPORT)
    assert bug.signal == "SIGSEGV"
    expected = reported_outcome(bug)
    assert expected is not None and expected.kind is OutcomeKind.CRASH
    assert expected.signal == "SIGSEGV" and "run (crashy/__init__.py:4)" in expected.signature
    here = Outcome(kind=OutcomeKind.CRASH, signal="SIGSEGV", signature="SIGSEGV in run (x:9)")
    assert decide(expected, here) is ReproStatus.REPRODUCED
    other = Outcome(kind=OutcomeKind.CRASH, signal="SIGABRT", signature="SIGABRT")
    assert decide(expected, other) is ReproStatus.DIFFERENT
    assert decide(expected, Outcome(kind=OutcomeKind.PASS)) is ReproStatus.PASSES
    skipped = Outcome(kind=OutcomeKind.UNTESTABLE, signature="unresolvable")
    assert decide(expected, skipped) is ReproStatus.UNTESTABLE
    assert decide(None, here) is ReproStatus.FAILS


@pytest.mark.parametrize(
    ("code", "gpu", "system", "said"),
    [
        ("import torch\nx = torch.ones(2).cuda()\n", False, "Linux", "needs a CUDA GPU"),
        ("import torch\nx = torch.ones(2).cuda()\n", True, "Linux", None),
        ("import torch\nprint(torch.cuda.is_available())\n", False, "Linux", None),
        ("from transformers import AutoModel\nAutoModel.from_pretrained('gpt2')\n", True,
         "Linux", "downloads 'gpt2'"),
        ("from datasets import load_dataset\nload_dataset('json', data_files='a.json')\n",
         True, "Linux", None),
        ("import os\n", True, "Darwin", "the report is from Linux and this machine runs Darwin"),
    ],
)  # fmt: skip
def test_what_this_machine_lacks(code: str, gpu: bool, system: str, said: str | None) -> None:
    bug = read_bug_report(f"```python\n{code}```\n")
    found = obstacles(bug, report_system="Linux", system=system, gpu=gpu, allow_download=False,
                      exists=lambda p: False)  # fmt: skip
    if said is None:
        assert found == []
    else:
        assert len(found) == 1 and said in found[0]


def test_no_repro_no_error() -> None:
    bug = read_bug_report("It crashes.\n\n```text\nnumpy==1.26\n```\n")
    assert not bug.has_repro and bug.error is None and reported_outcome(bug) is None


def test_next_commands_hold_the_rest_and_bisect_the_culprit() -> None:
    pins = {"llamafactory": "0.9.3", "transformers": "4.52.4", "torch": "2.7.1"}
    lock, run = next_commands(
        report="issue.md", pins=pins, error=read_bug_report(LLAMAFACTORY_REPORT).error,
        subject="llamafactory", repro_args=["--repro", "r.py"],
        flags=["--python", "3.10", "--torch-backend", "cpu"], named=3,
    )  # fmt: skip
    assert lock[0] == ("envbisect lock --with llamafactory==0.9.3 --with transformers --with "
                       "torch --python 3.10 --torch-backend cpu --repro r.py")  # fmt: skip
    assert run[0] == ("envbisect run --package transformers --pins issue.md --bad 4.52.4 "
                      "--python 3.10 --torch-backend cpu --repro r.py")  # fmt: skip
    assert run[1] == "the first transformers release that fails"


SCRIPT = """\
#!/usr/bin/env python
# /// script
# requires-python = ">=3.10"
# dependencies = [
#   "raisy",
#   "helperlib<2",
# ]
# ///
import raisy
raisy.run()
"""


def test_pep723_script_metadata() -> None:
    meta = read_script_metadata(SCRIPT, origin="s.py")
    assert meta is not None
    assert meta.dependencies == ("raisy", "helperlib<2")
    assert (meta.requires_python, meta.line) == (">=3.10", 2)
    assert read_script_metadata("import os\n", origin="s.py") is None
    # A block of another type is not the script's.
    assert read_script_metadata("# /// pyproject\n# x = 1\n# ///\n", origin="s.py") is None


@pytest.mark.parametrize(
    ("text", "where", "words"),
    [
        ("# /// script\n# dependencies = [\"raisy\"\n# ///\n", "s.py:2:", "invalid TOML"),
        ("# /// script\n# dependencies = [\"raisy>>1\"]\n# ///\n", "s.py:2:",
         "invalid requirement 'raisy>>1'"),
        ("# /// script\n# dependencies = \"raisy\"\n# ///\n", "s.py:2:", "not a list of strings"),
        ("# /// script\n# requires-python = \"3.11\"\n# ///\n", "s.py:2:", "not a specifier"),
        ("x = 1\n# /// script\n# dependencies = []\n", "s.py:2:", "never closed"),
        ("# /// script\n# dependencies = []\n# ///\n# /// script\n# dependencies = []\n# ///\n",
         "s.py:4:", "a second '# /// script' block"),
    ],
)  # fmt: skip
def test_invalid_script_metadata_names_the_line(text: str, where: str, words: str) -> None:
    with pytest.raises(UsageError) as e:
        read_script_metadata(text, origin="s.py")
    assert e.value.ref == "script-metadata"
    assert e.value.message.startswith(where) and words in e.value.message, e.value.message
    assert "PEP 723" in (e.value.hint or "")
