"""What a failure's text names (core/evidence/failure.py): every message kind, every frame
format (CPython's, pytest's, rich's), Windows paths, a log that repeats itself, an error quoted
before its cut-off traceback, and the Python a path shows. Texts copied from the corpus of
real reports (tests/data/failures/, each citing its issue) where one shows the case."""

from __future__ import annotations

from pathlib import Path

import pytest

from envbisect.core.evidence.failure import (
    BadCall,
    MissingAttr,
    MissingModule,
    MissingName,
    MissingSymbolVersion,
    module_of,
    read_failure,
)

DATA = Path(__file__).resolve().parents[1] / "data" / "failures"


def _text(name: str) -> str:
    return (DATA / name).read_text(encoding="utf-8")


@pytest.mark.parametrize(
    ("path", "module"),
    [
        ("/usr/lib/python3.10/site-packages/trl/trainer/sft_trainer.py", "trl.trainer.sft_trainer"),
        ("/x/dist-packages/transformers/__init__.py", "transformers"),
        ("C:\\venv\\Lib\\site-packages\\easyocr\\utils.py", "easyocr.utils"),
        (
            "/x/site-packages/tokenizers/tokenizers.cpython-37m-x86_64-linux-gnu.so",
            "tokenizers.tokenizers",
        ),
        ("/home/me/project/datasets.py", None),  # the user's own file
        ("/x/site-packages/some-dir/x.py", None),  # not an import path
        ("<frozen importlib._bootstrap>", None),
    ],
)
def test_a_files_import_path_where_it_is_installed(path: str, module: str | None) -> None:
    assert module_of(path) == module


def test_cannot_import_name_with_its_module_and_path() -> None:
    found = read_failure(_text("A-trl-1409-top-k-top-p-filtering.txt"))
    (item,) = found.items
    assert isinstance(item, MissingName)
    assert (item.module, item.name) == ("transformers", "top_k_top_p_filtering")
    assert item.path == "/usr/local/lib/python3.10/dist-packages/transformers/__init__.py"
    assert item.caller is None  # no traceback was pasted
    assert found.python == "3.10"  # from the path in the message


def test_the_innermost_frame_of_a_file_is_the_caller() -> None:
    text = (
        "Traceback (most recent call last):\n"
        '  File "/v/lib/python3.12/site-packages/peft/tuners/lora/model.py", line 5, in <module>\n'
        "    from transformers.utils import is_npu_available\n"
        '  File "<frozen importlib._bootstrap>", line 1176, in _find_and_load\n'
        "ImportError: cannot import name 'is_npu_available' from 'transformers.utils' "
        "(/v/lib/python3.12/site-packages/transformers/utils/__init__.py)\n"
    )
    found = read_failure(text)
    (item,) = found.items
    assert item.caller is not None and item.caller.module == "peft.tuners.lora.model"
    assert found.python == "3.12"


def test_pytest_frames_and_an_unclosed_quote() -> None:
    found = read_failure(_text("C-gensim-3525-triu.txt"))
    (item,) = found.items
    assert isinstance(item, MissingName)
    assert (item.module, item.name) == ("scipy.linalg", "triu")
    assert item.caller is not None and item.caller.module == "gensim.matutils"
    assert item.caller.source.startswith("from scipy.linalg import")
    assert found.python == "3.11"


def test_a_call_forwarding_kwargs_keeps_the_frames_in_order() -> None:
    (item,) = read_failure(_text("C-anthropic-766-httpx-proxies.txt")).items
    assert isinstance(item, BadCall)
    assert (item.callee, item.keyword, item.owner, item.func) == (
        "AsyncClient.__init__",
        "proxies",
        "AsyncClient",
        "__init__",
    )
    assert [f.line for f in item.frames] == [283, 1437, 1334]
    assert "**kwargs" in item.frames[-1].source


def test_the_error_quoted_before_its_cut_off_traceback_takes_that_traceback() -> None:
    (item,) = read_failure(_text("C-easyocr-1077-antialias.txt")).items
    assert isinstance(item, MissingAttr) and item.of_module
    assert (item.owner, item.name) == ("PIL.Image", "ANTIALIAS")
    assert item.caller is not None and item.caller.module == "easyocr.utils"


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("ModuleNotFoundError: No module named 'trl.commands'", ("trl.commands", None)),
        (
            "No module named 'gradio.data_classes'; 'gradio' is not a package",
            ("gradio.data_classes", "gradio"),
        ),
        (
            "(ModuleNotFoundError: No module named 'torchvision.transforms.functional_tensor)",
            ("torchvision.transforms.functional_tensor", None),
        ),
    ],
)
def test_module_not_found(line: str, expected: tuple[str, str | None]) -> None:
    (item,) = read_failure(line).items
    assert isinstance(item, MissingModule)
    assert (item.module, item.not_package) == expected


@pytest.mark.parametrize(
    ("line", "kw", "given", "takes", "missing"),
    [
        (
            "TypeError: Trainer.__init__() got an unexpected keyword argument 'tokenizer'",
            "tokenizer",
            None,
            None,
            (),
        ),
        ("TypeError: compute_loss() takes 3 positional arguments but 4 were given", None, 4, 3, ()),
        ("TypeError: f() takes from 1 to 2 positional arguments but 3 were given", None, 3, 2, ()),
        (
            "TypeError: Foo.bar() missing 2 required positional arguments: 'a' and 'b'",
            None,
            None,
            None,
            ("a", "b"),
        ),
    ],
)
def test_calls_that_do_not_fit(
    line: str, kw: str | None, given: int | None, takes: int | None, missing: tuple[str, ...]
) -> None:
    (item,) = read_failure(line).items
    assert isinstance(item, BadCall)
    assert (item.keyword, item.given, item.takes, item.missing) == (kw, given, takes, missing)


def test_attributes_of_a_class_and_of_an_instance() -> None:
    text = (
        "AttributeError: type object 'Image' has no attribute 'ANTIALIAS'\n"
        "AttributeError: 'Trainer' object has no attribute 'do_grad_scaling'\n"
    )
    a, b = read_failure(text).items
    assert isinstance(a, MissingAttr) and (a.owner, a.name, a.of_module) == (
        "Image",
        "ANTIALIAS",
        False,
    )
    assert isinstance(b, MissingAttr) and (b.owner, b.name, b.of_module) == (
        "Trainer",
        "do_grad_scaling",
        False,
    )


def test_a_glibc_symbol_version_names_the_shared_objects_package() -> None:
    text = (
        "ImportError: /lib64/libc.so.6: version `GLIBC_2.32' not found (required by "
        "/opt/venv/lib/python3.11/site-packages/pyarrow/libarrow.so.1500)"
    )
    (item,) = read_failure(text).items
    assert isinstance(item, MissingSymbolVersion)
    assert (item.library, item.version, item.module) == ("GLIBC", "2.32", "pyarrow")


def test_rich_frames_locate_the_caller() -> None:
    text = (
        "│ /usr/local/lib/python3.10/site-packages/llamafactory/train/sft/workflow.py:92 in run_sft"
        " │\n"
        "ImportError: cannot import name 'Seq2SeqTrainer' from 'transformers' (unknown location)\n"
    )
    (item,) = read_failure(text).items
    assert isinstance(item, MissingName) and item.path == "unknown location"
    assert item.caller is not None and item.caller.module == "llamafactory.train.sft.workflow"


def test_a_log_that_repeats_one_failure_says_it_once() -> None:
    line = "ImportError: cannot import name 'X' from 'pkg.mod' (/x/site-packages/pkg/mod.py)\n"
    assert len(read_failure(line * 50).items) == 1


def test_a_module_named_only_by_the_quoted_import() -> None:
    text = (
        "The `ImportError: cannot import name 'log'` error comes from deepspeed: "
        "`from torch.distributed.elastic.agent.server.api import log, _get_socket_with_port`"
    )
    (item,) = read_failure(text).items
    assert isinstance(item, MissingName)
    assert item.module == "torch.distributed.elastic.agent.server.api"


def test_text_with_nothing_to_go_on() -> None:
    assert read_failure("torch.cuda.OutOfMemoryError: CUDA out of memory.").items == ()
    assert read_failure("").items == ()
