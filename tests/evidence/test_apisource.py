"""One module's source judged (core/evidence/apisource.py): names defined, re-exported, in a
lazy table, served or refused by ``__getattr__``; what a function, a method of a base, a
dataclass accepts; whether a caller still makes an import or a call. Each source is the shape
a real package uses (named beside it)."""

from __future__ import annotations

import ast
import textwrap

import pytest

from envbisect.core.evidence import apisource as a
from envbisect.core.evidence import callers as calls
from envbisect.core.evidence import signatures as sig
from envbisect.core.evidence.apisource import Verdict
from envbisect.core.evidence.signatures import Bases, Params


def _has(source: str, name: str, module: str = "pkg", package: bool = True) -> a.Judged:
    return a.has_name(textwrap.dedent(source), module, name, is_package=package)


@pytest.mark.parametrize(
    "source",
    [
        "def name(): pass",
        "class name: pass",
        "name = 1",
        "name: int = 1",
        "a, (b, name) = 1, (2, 3)",
        "from .sub import other as name",
        "import name",
        "try:\n    from ._c import name\nexcept ImportError:\n    name = None",
        "if TYPE_CHECKING:\n    from .sub import name",
        # pyarrow/__init__.py: a parenthesised import list
        "from pyarrow.lib import (\n    ExtensionType,\n    name,\n)",
    ],
)
def test_defined_at_the_top(source: str) -> None:
    assert _has(source, "name").verdict is Verdict.PRESENT


def test_not_inside_a_function_or_class() -> None:
    source = "def f():\n    name = 1\nclass C:\n    name = 2\n"
    assert _has(source, "name") == a.Judged(verdict=Verdict.ABSENT)


def test_transformers_lazy_table_in_every_form() -> None:
    source = """
    _import_structure = {"models.llama": ["LlamaModel"], "trainer": ["Trainer"]}
    _import_structure["generation"] = ["GenerationMixin"]
    try:
        if not is_torch_available():
            raise OptionalDependencyNotAvailable()
    except OptionalDependencyNotAvailable:
        pass
    else:
        _import_structure["models.llama"].extend(["LlamaFlashAttention2"])
        _import_structure["trainer"].append("Seq2SeqTrainer")
    """
    for name in (
        "LlamaModel",
        "Trainer",
        "GenerationMixin",
        "LlamaFlashAttention2",
        "Seq2SeqTrainer",
    ):
        assert _has(source, name).verdict is Verdict.PRESENT, name
    assert _has(source, "top_k_top_p_filtering").verdict is Verdict.ABSENT
    assert sig.lazy_keys(
        a.parse(textwrap.dedent(source)) or ast.Module(body=[], type_ignores=[]), "Trainer"
    ) == ["trainer"]


def test_star_imports_are_followed_by_the_caller() -> None:
    judged = _has(
        "from .core import *\nfrom ..other import *\n", "x", module="pkg.sub", package=True
    )
    assert judged == a.Judged(verdict=Verdict.ABSENT, follow=("pkg.sub.core", "pkg.other"))
    assert a.public_names("__all__ = ['a', 'b']\n_c = 1\nd = 2") == {"a", "b"}
    assert a.public_names("_c = 1\nd = 2") == {"d"}


NUMPY_123 = """
__deprecated_attrs__ = {}
_type_info = [("object", ""), ("complex", "")]
__deprecated_attrs__.update({n: (1, m) for n, m in _type_info})
del _type_info
def __getattr__(attr):
    try:
        val, msg = __deprecated_attrs__[attr]
    except KeyError:
        pass
    else:
        return val
    raise AttributeError(attr)
"""
NUMPY_125 = """
_type_info = [("object", ""), ("complex", "")]
__former_attrs__ = {n: m for n, m in _type_info}
_type_info = [("bool8", ""), ("int0", "")]
__deprecated_attrs__ = {}
__deprecated_attrs__.update({n: (1, m) for n, m in _type_info})
def __getattr__(attr):
    try:
        val, msg = __deprecated_attrs__[attr]
    except KeyError:
        pass
    else:
        return val
    if attr in __former_attrs__:
        raise AttributeError(__former_attrs__[attr])
    raise AttributeError(attr)
"""
PILLOW_95 = """
def __getattr__(name):
    old_resampling = {"LINEAR": "BILINEAR", "ANTIALIAS": "LANCZOS"}
    if name in old_resampling:
        deprecate(name, 10)
        return Resampling[old_resampling[name]]
    raise AttributeError(name)
"""


def test_module_getattr_that_serves_or_refuses_a_name() -> None:
    assert _has(NUMPY_123, "complex").verdict is Verdict.PRESENT  # deprecated, still there
    assert _has(NUMPY_125, "complex").verdict is Verdict.ABSENT  # an error with a message
    assert _has(NUMPY_125, "bool8").verdict is Verdict.PRESENT
    assert _has(PILLOW_95, "ANTIALIAS").verdict is Verdict.PRESENT
    assert _has(PILLOW_95, "NEAREST").verdict is Verdict.ABSENT
    # a __getattr__ that names it in a way we cannot read: unknown, never absent
    assert _has("def __getattr__(n):\n    return lookup('name')\n", "name").verdict is (
        Verdict.UNKNOWN
    )


def test_a_source_this_python_cannot_parse() -> None:
    assert _has("def name(:\n", "name").verdict is Verdict.PRESENT  # a plain def still says
    assert _has("x = (\n", "name").verdict is Verdict.UNKNOWN


def test_signatures() -> None:
    source = textwrap.dedent("""
    def f(a, /, b, c=1, *args, d, e=2, **kw): pass
    class Trainer:
        def __init__(self, model, tokenizer=None): pass
    class Sub(Trainer):
        pass
    """)
    p = sig.signature(source, "m", "f", is_package=False)
    assert p == Params(
        positional=("a", "b", "c"),
        keyword_only=("d", "e"),
        positional_only=("a",),
        required=("a", "b", "d"),
        varargs=True,
        varkw=True,
    )
    init = sig.signature(source, "m", "Trainer.__init__", is_package=False)
    assert isinstance(init, Params) and init.accepts_keyword("tokenizer")
    assert not init.accepts_keyword("processing_class") and not init.accepts_positional(4)
    assert sig.signature(source, "m", "Trainer", is_package=False) == init  # Class(): __init__
    assert sig.signature(source, "m", "Sub.__init__", is_package=False) == Bases(
        bases=(("m", "Trainer"),)
    )
    assert sig.signature(source, "m", "Nope.__init__", is_package=False) is None


def test_a_dataclass_init_is_its_fields() -> None:
    source = textwrap.dedent("""
    from dataclasses import dataclass, field
    from .config import PeftConfig
    @dataclass
    class LoraConfig(PeftConfig):
        r: int = 8
        layer_replication: list | None = field(default=None)
        _hidden: int = field(default=0, init=False)
        KIND: ClassVar[str] = "lora"
    """)
    found = sig.signature(
        source, "peft.tuners.lora.config", "LoraConfig.__init__", is_package=False
    )
    assert found == Bases(
        bases=(("peft.tuners.lora.config", "PeftConfig"),),
        fields=(("r", True), ("layer_replication", True)),
    )
    assert found.bases[0][0] == "peft.tuners.lora.config"  # imported relatively: resolved below
    merged = sig.merge_fields([("peft_type", True), ("r", False)], found.fields or ())
    assert merged == [("peft_type", True), ("r", True), ("layer_replication", True)]
    assert sig.dataclass_params(merged).accepts_keyword("layer_replication")


def test_the_caller_side() -> None:
    caller = textwrap.dedent("""
    from transformers import top_k_top_p_filtering
    try:
        from transformers import gone
    except ImportError:
        gone = None
    import pyarrow as pa
    def features():
        return pa.PyExtensionType
    class Trainer:
        def training_step(self, model, inputs):
            return self.compute_loss(model, inputs, num_items_in_batch=3)
    """)
    assert (
        calls.imports_name(
            caller, "trl.core", "transformers", "top_k_top_p_filtering", is_package=False
        )
        is Verdict.PRESENT
    )
    assert (
        calls.imports_name(caller, "trl.core", "transformers", "gone", is_package=False)
        is Verdict.ABSENT
    )  # guarded: not a failure
    assert calls.uses_attribute(caller, "pyarrow", "PyExtensionType") is Verdict.PRESENT
    assert calls.uses_attribute(caller, "pyarrow", "ExtensionType") is Verdict.ABSENT
    assert (
        calls.passes(caller, "training_step", "compute_loss", keyword="num_items_in_batch")
        is Verdict.PRESENT
    )
    # two positional arguments and self: 3 given (a keyword is not one)
    assert calls.passes(caller, "training_step", "compute_loss", given=3) is Verdict.PRESENT
    assert calls.passes(caller, "training_step", "compute_loss", given=4) is Verdict.ABSENT
    assert calls.passes(caller, "nowhere", "compute_loss", keyword="x") is Verdict.UNKNOWN
    assert calls.imports_module(caller, "trl.core", "transformers", is_package=False) is (
        Verdict.PRESENT
    )
    assert calls.imports_module(caller, "trl.core", "torch", is_package=False) is Verdict.ABSENT


@pytest.mark.parametrize(
    ("module", "package", "level", "name", "expected"),
    [
        ("a.b.c", False, 1, "d", "a.b.d"),
        ("a.b", True, 1, "d", "a.b.d"),
        ("a.b.c", False, 2, None, "a"),
        ("a.b.c", False, 0, "x.y", "x.y"),
    ],
)
def test_relative_imports_resolved(
    module: str, package: bool, level: int, name: str | None, expected: str
) -> None:
    assert a.resolve(module, package, level, name) == expected
