"""Which distribution ships an import name, and what a wheel's file list says.

A traceback names import paths (``yaml``, ``sklearn.utils``, ``google.protobuf``); the index
knows distributions (PyYAML, scikit-learn, protobuf). The candidates for a name, in order: the
distributions the report lists whose wheels ship that top-level name (the caller reads their
file lists: ``top_levels``), the well-known names whose distribution is called otherwise
(``KNOWN``, checked against the wheel's files as well), and the import name itself as a
project name. A wheel's file list also answers whether a module exists in that release
(``has_module``) and whether a release ships its own top-level package at all. Pure.
"""

from __future__ import annotations

from collections.abc import Iterable

from packaging.utils import canonicalize_name

# Import names whose distribution has another name (the common ones of the ML stack and their
# dependencies; each is checked against the wheel's own files before it is believed).
KNOWN: dict[str, tuple[str, ...]] = {
    "yaml": ("pyyaml",),
    "sklearn": ("scikit-learn",),
    "skimage": ("scikit-image",),
    "cv2": ("opencv-python", "opencv-python-headless", "opencv-contrib-python"),
    "PIL": ("pillow",),
    "google": ("protobuf",),
    "attr": ("attrs",),
    "dateutil": ("python-dateutil",),
    "dotenv": ("python-dotenv",),
    "jwt": ("pyjwt",),
    "bs4": ("beautifulsoup4",),
    "Crypto": ("pycryptodome",),
    "OpenSSL": ("pyopenssl",),
    "huggingface_hub": ("huggingface-hub",),
    "llamafactory": ("llamafactory",),
    "llmtuner": ("llmtuner",),
    "flash_attn": ("flash-attn",),
    "flash_attn_2_cuda": ("flash-attn",),
    "apex": ("apex",),
    "deepspeed": ("deepspeed",),
    "bitsandbytes": ("bitsandbytes",),
    "sentence_transformers": ("sentence-transformers",),
    "auto_gptq": ("auto-gptq",),
    "awq": ("autoawq",),
    "lightning": ("lightning",),
    "pytorch_lightning": ("pytorch-lightning",),
    "torchvision": ("torchvision",),
    "torchaudio": ("torchaudio",),
    "triton": ("triton",),
    "xformers": ("xformers",),
    "vllm": ("vllm",),
    "pkg_resources": ("setuptools",),
    "setuptools": ("setuptools",),
    "distutils": ("setuptools",),
    "typing_extensions": ("typing-extensions",),
    "multipart": ("python-multipart",),
    "magic": ("python-magic",),
    "faiss": ("faiss-cpu", "faiss-gpu"),
    "tensorflow": ("tensorflow",),
    "jax": ("jax",),
    "jaxlib": ("jaxlib",),
    "onnxruntime": ("onnxruntime", "onnxruntime-gpu"),
    "modelscope": ("modelscope",),
    "nltk": ("nltk",),
    "rouge_chinese": ("rouge-chinese",),
    "jieba": ("jieba",),
    "fire": ("fire",),
    "docstring_parser": ("docstring-parser",),
    "mpl_toolkits": ("matplotlib",),
}


def candidates(top: str, listed: Iterable[str] = ()) -> list[str]:
    """Distributions that may ship the top-level import name ``top``, most likely first:
    a listed distribution whose name is the import name's, then the well-known ones, then the
    import name itself (``_`` read as ``-``). The listed ones with other names are the
    caller's to check by their file lists."""
    listed_names = [canonicalize_name(n) for n in listed]
    own = canonicalize_name(top)
    out: list[str] = []
    if own in listed_names:
        out.append(own)
    out += [canonicalize_name(d) for d in KNOWN.get(top, ())]
    out.append(own)
    return list(dict.fromkeys(out))


def top_levels(members: Iterable[str]) -> set[str]:
    """The top-level import names a wheel ships, read from its file list (a package folder,
    a module file, an extension module); ``.dist-info`` and ``.data`` folders left out."""
    out = set()
    for m in members:
        first, _, rest = m.partition("/")
        if first.endswith((".dist-info", ".data")):
            continue
        if rest:
            if first.isidentifier():
                out.add(first)
        else:
            stem = first.split(".", 1)[0]
            if first.endswith((".py", ".so", ".pyd")) and stem.isidentifier():
                out.add(stem)
    return out


def module_files(module: str) -> tuple[str, ...]:
    """The wheel members a module may be: ``a/b.py``, ``a/b/__init__.py``."""
    path = module.replace(".", "/")
    return (f"{path}.py", f"{path}/__init__.py")


def has_module(members: Iterable[str], module: str) -> bool:
    """Whether a wheel with these members holds ``module``: its source, a package folder
    (a namespace package too) or an extension module (``b.cpython-311-x86_64-linux-gnu.so``)."""
    path = module.replace(".", "/")
    folder = path + "/"
    for m in members:
        if m.startswith(folder):
            return True
        if (
            m.startswith(path + ".")
            and m.endswith((".py", ".so", ".pyd"))
            and "/" not in m[len(path) :]
        ):
            return True
    return False


def member_of(members: Iterable[str], module: str) -> str | None:
    """The source member of ``module`` in the wheel (``a/b.py`` or ``a/b/__init__.py``), or
    None where it has none (an extension module, or not there)."""
    have = set(members)
    for m in module_files(module):
        if m in have:
            return m
    return None


def frame_distributions(tops: Iterable[str]) -> list[str]:
    """The distributions the top-level import names of a traceback's installed frames most
    likely belong to (the well-known name where the import name differs: ``yaml`` is
    pyyaml), in order, each once: what the environment that failed had installed, listed or
    not (the index confirms each before it is used)."""
    return list(dict.fromkeys(candidates(t)[0] for t in tops if t and t.isidentifier()))
