"""What a failure's text names: typed evidence items, each with the line it came from.

Read from any failure text (a bug report, a probe's output, text on stdin), in the order the
text gives them:

- ``MissingName``: ``cannot import name 'X' from 'pkg.mod' (PATH)`` (also inside transformers'
  "Failed to import ... because of the following error" and without ``ImportError:`` before);
- ``MissingModule``: ``No module named 'pkg.sub'`` (a top-level module or a submodule);
- ``MissingAttr``: ``module 'pkg' has no attribute 'X'``, ``type object 'C' has no
  attribute 'x'``, ``'C' object has no attribute 'x'``;
- ``BadCall``: ``F() got an unexpected keyword argument 'k'``, ``F() takes N positional
  arguments but M were given``, ``F() missing N required positional arguments: 'a'``;
- ``MissingSymbolVersion``: ``version `GLIBC_2.NN' not found (required by PATH)``;
- ``MissingLibrary``: ``libcudart.so.11.0: cannot open shared object file`` (the module whose
  load failed: the extension the innermost installed frame imports, else that frame's).

Each item carries the traceback frames before it (innermost last): a frame's file under
``site-packages`` (or ``dist-packages``) names the import path of the module it is in, and so
the distribution (importnames.py). A module imported from anywhere else is the user's own
code, or a local file shadowing a package: ``Frame.installed`` says which. Pure.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from typing import Any

# -- frames -----------------------------------------------------------------------------------

# CPython's frame line, and rich's (LLaMA-Factory and others print rich tracebacks).
_FRAME = re.compile(r'^\s*File "(?P<path>[^"]+)", line (?P<line>\d+), in (?P<func>[\w<>.]+)')
_RICH_FRAME = re.compile(
    r"^[\s│|]*(?P<path>(?:[A-Za-z]:)?[\\/~.][^\s:]*\.py):(?P<line>\d+) in (?P<func>[\w<>.]+)"
)
# pytest's long traceback: "path.py:12: in func", the code line under it, "E   Error: ...".
_PYTEST_FRAME = re.compile(r"^\s*(?P<path>[^\s:\"]+\.py):(?P<line>\d+): in (?P<func>[\w<>.]+)\s*$")
_SITE = re.compile(r"[\\/](?:site|dist)-packages[\\/]")
_PYTHON_IN_PATH = re.compile(r"[\\/]python(3\.\d{1,2})[\\/](?:site|dist)-packages[\\/]")
_TRACEBACK = re.compile(r"Traceback \(most recent call last\)")


@dataclass(frozen=True, slots=True, kw_only=True)
class Frame:
    """One traceback frame: ``module`` is its import path where the file is installed (under
    site-packages), else None; ``source`` the code line printed under it, if any."""

    path: str
    line: int
    func: str
    module: str | None
    source: str = ""
    at: int = 0  # the line of the failure text it is on

    @property
    def installed(self) -> bool:
        return self.module is not None

    @property
    def top(self) -> str | None:
        return self.module.split(".")[0] if self.module else None

    def to_dict(self) -> dict[str, Any]:
        return {"path": self.path, "line": self.line, "func": self.func, "module": self.module}


def module_of(path: str) -> str | None:
    """``trl.trainer.sft_trainer`` for ``.../site-packages/trl/trainer/sft_trainer.py``; None
    for a file outside site-packages (the user's code, a checkout) or not a Python module."""
    parts = _SITE.split(path)
    if len(parts) < 2:
        return None
    rel = re.split(r"[\\/]", parts[-1])
    leaf = rel[-1]
    stem = leaf.split(".", 1)[0]  # mod.py, mod.cpython-311-x86_64-linux-gnu.so
    if not leaf.endswith((".py", ".so", ".pyd", ".pyx")) or not stem.isidentifier():
        return None
    names = [*rel[:-1], stem] if stem != "__init__" else rel[:-1]
    if not names or not all(n.isidentifier() for n in names):
        return None
    return ".".join(names)


# -- evidence items ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class Item:
    """What every evidence item has: the line of the text (1-based) and that line."""

    at: int
    text: str
    frames: tuple[Frame, ...] = ()

    @property
    def caller(self) -> Frame | None:
        """The innermost frame of a file (not importlib's ``<frozen ...>`` ones): where the
        import, the attribute or the call was made."""
        files = [f for f in self.frames if not f.path.startswith("<")]
        return files[-1] if files else None

    def base_dict(self, kind: str) -> dict[str, Any]:
        caller = self.caller
        return {
            "kind": kind,
            "line": self.at,
            "text": self.text,
            "caller": caller.to_dict() if caller is not None else None,
        }


@dataclass(frozen=True, slots=True, kw_only=True)
class MissingName(Item):
    """``from module import name`` failed; ``path``: the file the module was loaded from."""

    module: str
    name: str
    path: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            **self.base_dict("import-name"),
            "module": self.module,
            "name": self.name,
            "path": self.path,
        }


@dataclass(frozen=True, slots=True, kw_only=True)
class MissingModule(Item):
    """``not_package``: the message adds ``'x' is not a package``: ``x`` was found as a
    plain module (a file ``x.py``), not the installed package."""

    module: str
    not_package: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            **self.base_dict("module-missing"),
            "module": self.module,
            "not_package": self.not_package,
        }


@dataclass(frozen=True, slots=True, kw_only=True)
class MissingAttr(Item):
    """``owner`` is a module path (``of_module``) or a class name (an instance's or the
    class's own attribute)."""

    owner: str
    name: str
    of_module: bool

    def to_dict(self) -> dict[str, Any]:
        return {
            **self.base_dict("attribute"),
            "owner": self.owner,
            "name": self.name,
            "of_module": self.of_module,
        }


@dataclass(frozen=True, slots=True, kw_only=True)
class BadCall(Item):
    """A call that does not fit the function it calls. ``callee``: the name the message gives
    (``Trainer.compute_loss`` from Python 3.10 on, ``compute_loss`` before); one of
    ``keyword`` (unexpected), ``given`` (positional arguments passed, with ``takes``), or
    ``missing`` (required arguments not passed) is set."""

    callee: str
    keyword: str | None = None
    given: int | None = None
    takes: int | None = None
    missing: tuple[str, ...] = ()

    @property
    def func(self) -> str:
        return self.callee.rsplit(".", 1)[-1]

    @property
    def owner(self) -> str | None:
        parts = self.callee.split(".")
        return parts[-2] if len(parts) > 1 and parts[-2] != "<locals>" else None

    def to_dict(self) -> dict[str, Any]:
        return {
            **self.base_dict("call"),
            "callee": self.callee,
            "keyword": self.keyword,
            "given": self.given,
            "takes": self.takes,
            "missing": list(self.missing),
        }


@dataclass(frozen=True, slots=True, kw_only=True)
class MissingSymbolVersion(Item):
    """``version 'GLIBC_2.32' not found (required by .../libX.so)``."""

    library: str  # GLIBC, GLIBCXX, CXXABI
    version: str
    required_by: str
    module: str | None = None  # the import path of the shared object's folder, when installed

    def to_dict(self) -> dict[str, Any]:
        return {
            **self.base_dict("symbol-version"),
            "library": self.library,
            "version": self.version,
            "required_by": self.required_by,
            "module": self.module,
        }


@dataclass(frozen=True, slots=True, kw_only=True)
class MissingLibrary(Item):
    """``libcudart.so.11.0: cannot open shared object file``: the loader did not find a
    library a binary links against; ``module``: the import path whose load failed, where the
    frames tell (``vllm._C`` for ``from vllm._C import ops``)."""

    library: str
    module: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {**self.base_dict("shared-library"), "library": self.library, "module": self.module}


Evidence = (
    MissingName | MissingModule | MissingAttr | BadCall | MissingSymbolVersion | MissingLibrary
)


@dataclass(frozen=True, slots=True, kw_only=True)
class FailureText:
    """Everything read from one text: the items in order, and the Python the paths show."""

    items: tuple[Evidence, ...] = ()
    python: str | None = None  # 3.10, from a site-packages path's lib/python3.10
    frames: tuple[Frame, ...] = field(default=())

    def to_dict(self) -> dict[str, Any]:
        return {"python": self.python, "items": [i.to_dict() for i in self.items]}


# -- the messages -----------------------------------------------------------------------------

_Q = r"['\"\u2018\u2019`]"  # the quotes a message (or a retyped one) uses
_IMPORT_NAME = re.compile(
    rf"cannot import name {_Q}(?P<name>[\w.]+){_Q}"
    rf"(?: from (?!partially initialized){_Q}?(?P<module>[\w.]+){_Q}?)?"
    r"(?:\s*\((?P<path>[^)]*)\))?"
)
_NO_MODULE = re.compile(
    rf"No module named {_Q}(?P<module>[\w.]*\w){_Q}?"
    rf"(?:;\s*{_Q}(?P<plain>[\w.]+){_Q} is not a package)?"
)
# transformers' AutoConfig meeting a model type it does not know (CONFIG_MAPPING[key])
_MODEL_TYPE = re.compile(
    rf"(?<![A-Za-z0-9_.])KeyError:\s*{_Q}(?P<key>[a-z][a-z0-9_-]*){_Q}(?![\w.'])"
    r"|model type [`'\"](?P<said>[a-z][a-z0-9_-]*)[`'\"] but Transformers does not recognize"
)
_MODULE_ATTR = re.compile(
    rf"(?<!partially initialized )module {_Q}(?P<owner>[\w.]+){_Q} has no attribute "
    rf"{_Q}(?P<name>\w+){_Q}"
)
_CLASS_ATTR = re.compile(
    rf"(?:type object {_Q}(?P<cls>[\w.]+){_Q}|{_Q}(?P<inst>[\w.]+){_Q} object) has no attribute "
    rf"{_Q}(?P<name>\w+){_Q}"
)
_CALLEE = r"(?P<callee>[\w.<>]+)\(\)"
_UNEXPECTED_KW = re.compile(rf"{_CALLEE} got an unexpected keyword argument {_Q}(?P<kw>\w+){_Q}")
_TAKES = re.compile(
    rf"{_CALLEE} takes (?:from \d+ to )?(?P<takes>\d+) positional arguments? but (?P<given>\d+)"
    r" (?:were|was) given"
)
_MISSING_ARGS = re.compile(
    rf"{_CALLEE} missing \d+ required (?:positional|keyword-only) arguments?: "
    rf"(?P<names>{_Q}\w+{_Q}(?:(?:, | and |, and ){_Q}\w+{_Q})*)"
)
_SYMBOL_VERSION = re.compile(
    r"version [`'\"\u2018](?P<lib>GLIBC|GLIBCXX|CXXABI)_(?P<version>[\d.]+)['\"\u2019] not found"
    r" \(required by (?P<by>[^)\s]+)\)"
)
_QUOTED = re.compile(rf"{_Q}(\w+){_Q}")
_NO_LIBRARY = re.compile(
    r"(?<![\w.+-])(?P<lib>lib[\w+-]+(?:\.[\w+-]+)*?\.so(?:\.\d+)*): cannot open shared object file"
    # torch 2.0 and 2.1 looking for the nvidia-* wheels' libraries (_preload_cuda_deps)
    r"|(?P<glob>lib[\w+-]+\.so)\.\*\[0-9\][^ ]* not found in the system path"
)
_IMPORTING = re.compile(
    r"^\s*(?:from\s+(?P<frm>[\w.]+)\s+import\s+(?P<names>[\w, ()]+)|import\s+(?P<mod>[\w.]+))"
)


def read_failure(text: str) -> FailureText:
    """Every evidence item in ``text``, in its order, each with the frames before it; the
    same failure printed twice (a log and its summary) is one item."""
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    items: list[Evidence] = []
    seen: set[tuple[Any, ...]] = set()
    frames: list[Frame] = []
    every: list[Frame] = []
    python = None
    dangling: list[Frame] = []  # a traceback block no error line followed (a cut-off paste)
    for number, line in enumerate(lines, 1):
        if _TRACEBACK.search(line):
            dangling = frames if frames and not _ended(items, frames) else dangling
            frames = []
            continue
        frame = _frame(line, lines, number)
        if frame is not None:
            frames.append(frame)
            every.append(frame)
            m = _PYTHON_IN_PATH.search(frame.path)
            if m and python is None:
                python = m.group(1)
            continue
        for item in _items(line, number, tuple(frames), text):
            key = _key(item)
            if key not in seen:
                seen.add(key)
                items.append(item)
    if frames and not _ended(items, frames):
        dangling = frames
    if python is None:  # a path in a message (``... from 'x' (/.../python3.10/...)``)
        m = _PYTHON_IN_PATH.search(text)
        python = m.group(1) if m else None
    if dangling:  # the error quoted before its (cut-off) traceback: that traceback is its
        items = [replace(i, frames=tuple(dangling)) if not i.frames else i for i in items]
    return FailureText(items=tuple(items), python=python, frames=tuple(every))


def _ended(items: list[Evidence], frames: list[Frame]) -> bool:
    """Whether an item was read after the last of ``frames`` (the block has its error)."""
    return any(i.at > frames[-1].at for i in items)


def _frame(line: str, lines: list[str], number: int) -> Frame | None:
    m = _FRAME.match(line) or _PYTEST_FRAME.match(line) or _RICH_FRAME.match(line)
    if m is None:
        return None
    source = ""
    if m.re is not _RICH_FRAME and number < len(lines):
        nxt = lines[number]  # the line after (lines are 1-based)
        if nxt.startswith("    ") and not _FRAME.match(nxt):
            source = nxt.strip()
    path = m.group("path")
    return Frame(
        path=path,
        line=int(m.group("line")),
        func=m.group("func"),
        module=module_of(path),
        source=source,
        at=number,
    )


def _items(line: str, number: int, frames: tuple[Frame, ...], whole: str) -> Iterator[Evidence]:
    text = line.strip()
    base: dict[str, Any] = {"at": number, "text": text[:300], "frames": frames}
    m = _IMPORT_NAME.search(line)
    if m:
        module = m.group("module") or _imported_from(frames, m.group("name"), whole)
        if module:
            yield MissingName(
                module=module, name=m.group("name"), path=(m.group("path") or None), **base
            )
        return
    m = _NO_MODULE.search(line)
    if m:
        yield MissingModule(module=m.group("module"), not_package=m.group("plain"), **base)
        return
    m = _MODEL_TYPE.search(line)
    if m and (m.group("said") or _from_auto_config(frames, whole)):
        model_type = (m.group("said") or m.group("key")).replace("-", "_")
        yield MissingModule(module=f"transformers.models.{model_type}", not_package=None, **base)
        return
    m = _MODULE_ATTR.search(line)
    if m:
        yield MissingAttr(owner=m.group("owner"), name=m.group("name"), of_module=True, **base)
        return
    m = _CLASS_ATTR.search(line)
    if m:
        owner = m.group("cls") or m.group("inst")
        yield MissingAttr(owner=owner, name=m.group("name"), of_module=False, **base)
        return
    m = _UNEXPECTED_KW.search(line)
    if m:
        yield BadCall(callee=m.group("callee"), keyword=m.group("kw"), **base)
        return
    m = _TAKES.search(line)
    if m:
        yield BadCall(
            callee=m.group("callee"),
            given=int(m.group("given")),
            takes=int(m.group("takes")),
            **base,
        )
        return
    m = _MISSING_ARGS.search(line)
    if m:
        names = tuple(_QUOTED.findall(m.group("names")))
        yield BadCall(callee=m.group("callee"), missing=names, **base)
        return
    m = _NO_LIBRARY.search(line)
    if m:
        before = whole.replace("\r\n", "\n").split("\n")[max(0, number - 2)]
        module = _loading(frames) or _loading((_bare_import(before),))
        if m.group("glob"):  # only torch's __init__ says this
            module = module or "torch"
        yield MissingLibrary(library=m.group("lib") or m.group("glob"), module=module, **base)
        return
    m = _SYMBOL_VERSION.search(line)
    if m:
        by = m.group("by")
        yield MissingSymbolVersion(
            library=m.group("lib"),
            version=m.group("version"),
            required_by=by,
            module=_folder_module(by),
            **base,
        )


def _from_auto_config(frames: tuple[Frame, ...], whole: str) -> bool:
    """A bare ``KeyError: 'qwen2'`` is transformers' model types' table where the innermost
    installed frame is its auto configuration, or, with no frame at all, where the text is
    about transformers (a question whose answer the releases' module lists still decide)."""
    inner = [f for f in frames if f.module is not None]
    if inner:
        return (inner[-1].module or "").startswith("transformers.models.auto")
    return not frames and "transformers" in whole.lower()


def _imported_from(frames: tuple[Frame, ...], name: str, whole: str) -> str | None:
    """The module of ``from MODULE import ..., name`` on the innermost frame's code line
    (Python before 3.8 does not say where from), else anywhere in the text (a report that
    quotes the failing import)."""
    lines = [frames[-1].source] if frames else []
    for line in [*lines, *whole.splitlines()]:
        for m in re.finditer(r"from\s+([\w.]+)\s+import\s+([\w, ()]+)", line):
            if re.search(rf"\b{re.escape(name)}\b", m.group(2)):
                return m.group(1)
    return None


def _bare_import(line: str) -> Frame:
    """The import line just above an error quoted without its traceback (``from vllm import
    cuda_utils``), as a frame of that package: its import names the module that failed."""
    m = _IMPORTING.match(line)
    top = (m.group("frm") or m.group("mod") or "").split(".")[0] if m else ""
    module = top if top.isidentifier() else None
    return Frame(path="", line=0, func="", module=module, source=line.strip() if m else "")


def _loading(frames: tuple[Frame, ...]) -> str | None:
    """The module whose load failed: what the innermost installed frame's code line imports
    (``from vllm._C import ops``: ``vllm._C``, resolved against the frame's package where it
    is relative), else that frame's own module (``torch/__init__.py``'s ``_load_global_deps``)."""
    inner = [f for f in frames if f.module is not None]
    if not inner:
        return None
    frame = inner[-1]
    m = _IMPORTING.match(frame.source)
    if m is None:
        return frame.module
    if m.group("mod"):
        return m.group("mod")
    frm = m.group("frm")
    if frm.startswith("."):
        package = (frame.module or "").split(".")
        if not frame.path.endswith("__init__.py"):
            package = package[:-1]
        dots = len(frm) - len(frm.lstrip("."))
        package = package[: len(package) - (dots - 1)] if dots > 1 else package
        rest = frm.lstrip(".") or m.group("names").split(",")[0].strip(" ()").split(" ")[0]
        frm = ".".join([*package, rest]).strip(".")
    return frm


def _folder_module(path: str) -> str | None:
    """The import path of the folder a shared object lies in, when it is installed
    (``torch.lib`` for ``.../site-packages/torch/lib/libtorch.so``)."""
    parts = _SITE.split(path)
    if len(parts) < 2:
        return None
    folders = re.split(r"[\\/]", parts[-1])[:-1]
    return ".".join(folders) if folders and all(f.isidentifier() for f in folders) else None


def _key(item: Evidence) -> tuple[Any, ...]:
    d = item.to_dict()
    return tuple(sorted((k, str(v)) for k, v in d.items() if k not in ("line", "text", "caller")))
