"""The cases of the real-world suite (bench/realworld.py): real breakages from PyPI's history.

Each ``Case`` is what a user would type (a range with no ends, ends far from the answer, or the
project's own pins) and what the answer must be: the version (or the culprit, or the lock's
constraint) and the failure it names, verified by hand with plain uv: a fresh ``uv venv`` and
``uv pip install`` on each side of the truth, the repro run in each. A crash was also run under
gdb (``gdb -batch -ex run -ex bt --args PYTHON repro.py``); its ``Failure`` keeps the signal and
gdb's frame #0 line, which names the function and the library (the folder is cut: it was a
scratch venv). The one-package cases live in realworld_simple.py.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from envbisect.core.outcome import classify
from envbisect.env.forensics import parse_frame
from envbisect.model import Outcome, OutcomeKind, RawProbe


@dataclass(frozen=True, slots=True, kw_only=True)
class Failure:
    """A failure as verified by hand: ``kind`` "fail" with ``line`` the exception line Python
    printed, or "crash" with ``signal`` and ``line`` gdb's frame #0 of the crashing thread."""

    kind: str
    line: str
    signal: str | None = None

    def outcome(self) -> Outcome:
        """The failure as envbisect would classify it (the same Outcome fields that
        ``outcome.same_failure`` compares)."""
        if self.kind == "crash":
            parsed = parse_frame(self.line)
            assert parsed is not None, self.line
            name, library, _ = parsed
            function = None if name in ("??", "<signal handler called>") else name
            return Outcome(
                kind=OutcomeKind.CRASH,
                signal=self.signal,
                signature=f"{self.signal} in {library}",
                library=library,
                function=function,
            )
        frame = '  File "repro.py", line 1, in <module>'
        stderr = f"Traceback (most recent call last):\n{frame}\n{self.line}\n"
        return classify(RawProbe(returncode=1, timed_out=False, seconds=0.0, stderr_tail=stderr))

    def short(self) -> str:
        if self.kind == "crash":
            o = self.outcome()
            return f"{self.signal} in {o.library}" + (f" ({o.function})" if o.function else "")
        return self.line


@dataclass(frozen=True, slots=True, kw_only=True)
class Point:
    """Another breakpoint the answer must list (JSON ``breakpoints``): the release where
    ``failure`` starts, and (by date) its upload moment."""

    version: str
    failure: Failure
    uploaded: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class Held:
    """One constraint a lock case must hold, with the failure it answers."""

    package: str
    specifier: str
    failure: Failure


@dataclass(frozen=True, slots=True, kw_only=True)
class Case:
    """One real breakpoint, the command a user would run for it, and the verified answer.

    ``mode``: ``run`` (``--package``), ``by-date``, ``diff`` or ``lock``. ``truth``: for run
    the first bad version of ``package`` (``fix``: the first fixed one, ``--good`` newer than
    ``--bad``); by-date: the culprit release's version; diff: the culprit's first bad version;
    lock: the constraint's specifier (``<0.26.0``; ``held``: every one, when several).
    ``failure``: the failure that answer names (run: the first bad's; fix: the last broken's;
    lock: the one the constraint answers).
    ``breakpoints``: further breakpoints the answer must list; ``forced``: diff, packages that
    the culprit drags in (forced by it or moved with it, never culprits); ``yanked``: run,
    releases skipped as yanked that the JSON must name in ``yanked_between``. ``uploaded``:
    by-date, the culprit's upload moment. ``ends``: why the range is what a user would give.
    ``cost``: what the case downloads and keeps (where that is worth saying).
    """

    name: str
    kind: str
    mode: str
    package: str
    truth: str
    failure: Failure
    python: str
    args: tuple[str, ...]
    repro: tuple[str, ...]
    source: str
    verified: str
    ends: str
    files: dict[str, str] = field(default_factory=dict)
    fix: bool = False
    breakpoints: tuple[Point, ...] = ()
    forced: tuple[str, ...] = ()
    yanked: tuple[str, ...] = ()
    uploaded: str = ""
    cost: str = ""
    heavy: bool = False  # measure the uv cache's growth around it (torch)
    # lock: every constraint the lock must hold, when there are several (``package``,
    # ``truth`` and ``failure`` are then the first one's)
    held: tuple[Held, ...] = ()


def py(code: str) -> tuple[str, ...]:
    return ("python", "-c", code)


def fail(line: str) -> Failure:
    return Failure(kind="fail", line=line)


def crash(signal: str, frame: str) -> Failure:
    return Failure(kind="crash", signal=signal, line=frame)


# Two lockfiles of one app, flask==2.2.2 on Python 3.11: ``uv pip compile`` of ``flask==2.2.2``
# with --exclude-newer 2023-01-01 (GOOD) and 2024-06-01 (BAD). Five packages differ.
FLASK_GOOD = """\
click==8.1.3
flask==2.2.2
itsdangerous==2.1.2
jinja2==3.1.2
markupsafe==2.1.1
werkzeug==2.2.2
"""
FLASK_BAD = """\
click==8.1.7
flask==2.2.2
itsdangerous==2.2.0
jinja2==3.1.4
markupsafe==2.1.5
werkzeug==3.0.3
"""

# ``uv pip compile --python 3.11 --exclude-newer 2026-01-20 --no-header --no-annotate`` of a
# requirements file naming ``transformers`` (GOOD), and the same with 2026-03-01 (BAD): 26
# differences, transformers 4.57.6 -> 5.2.0 dragging huggingface-hub 0.36.0 -> 1.5.0 and the
# 13 packages hub 1.x needs (httpx, typer...) in, requests and urllib3 out.
TRANSFORMERS_GOOD = """\
certifi==2026.1.4
charset-normalizer==3.4.4
filelock==3.20.3
fsspec==2026.1.0
hf-xet==1.2.0
huggingface-hub==0.36.0
idna==3.11
numpy==2.4.1
packaging==25.0
pyyaml==6.0.3
regex==2026.1.15
requests==2.32.5
safetensors==0.7.0
tokenizers==0.22.2
tqdm==4.67.1
transformers==4.57.6
typing-extensions==4.15.0
urllib3==2.6.3
"""
TRANSFORMERS_BAD = """\
annotated-doc==0.0.4
anyio==4.12.1
certifi==2026.2.25
click==8.3.1
filelock==3.25.0
fsspec==2026.2.0
h11==0.16.0
hf-xet==1.3.2
httpcore==1.0.9
httpx==0.28.1
huggingface-hub==1.5.0
idna==3.11
markdown-it-py==4.0.0
mdurl==0.1.2
numpy==2.4.2
packaging==26.0
pygments==2.19.2
pyyaml==6.0.3
regex==2026.2.28
rich==14.3.3
safetensors==0.7.0
shellingham==1.5.4
tokenizers==0.22.2
tqdm==4.67.3
transformers==5.2.0
typer==0.24.1
typer-slim==0.24.0
typing-extensions==4.15.0
"""

# The reproducer of abess-team/abess#496 (a linear regression fit), as filed.
ABESS_REPRO = """\
from abess.linear import LinearRegression
from abess.datasets import make_glm_data
import numpy as np

np.random.seed(12345)
data = make_glm_data(n=100, p=50, k=10, family="gaussian")
model = LinearRegression(support_size=10)
model.fit(data.x, data.y)
print(model.predict(data.x)[:4])
"""

# apache/arrow#41306, as filed: casting a slice of a fixed-size binary array to binary.
PYARROW_REPRO = """\
import pyarrow
print(pyarrow.__version__, flush=True)
arr = pyarrow.array(
    [b'a', b'b', b'c'],
    pyarrow.binary(1),
)
print(arr.slice(1).cast(pyarrow.binary()))
"""

# shapely/shapely#1971, as filed: concave_hull of five nearly coincident points.
SHAPELY_REPRO = """\
import shapely
print(shapely.__version__, shapely.geos_version, flush=True)
points = [
    [175682.210293, 505233.365178],
    [175682.210295, 505233.365177],
    [175684.375108, 505254.524644],
    [175684.375109, 505254.524642],
    [175683.226468, 505243.284373],
]
print(shapely.concave_hull(shapely.MultiPoint(points)))
"""

# torch 2.6.0 flipped torch.load's weights_only default to True: a pickled object of the
# script's own class no longer loads.
TORCH_REPRO = """\
import os, tempfile
import torch


class Config:
    def __init__(self):
        self.lr = 0.1


path = os.path.join(tempfile.mkdtemp(), "ckpt.pt")
torch.save({"config": Config(), "w": torch.ones(2)}, path)
ckpt = torch.load(path)
print(torch.__version__, type(ckpt["config"]).__name__, ckpt["w"].sum().item())
"""

ABESS_046 = crash(
    "SIGILL",
    "#0  0x00007fffe65b4e5b in Normalize(Eigen::Matrix<double, -1, -1, 0, -1, -1>&, "
    "Eigen::Matrix<double, -1, 1, 0, -1, 1>&, Eigen::Matrix<double, -1, 1, 0, -1, 1>&, "
    "Eigen::Matrix<double, -1, 1, 0, -1, 1>&, double&, Eigen::Matrix<double, -1, 1, 0, -1, 1>&)"
    " () from .../site-packages/abess/pybind_cabess.cpython-38-x86_64-linux-gnu.so",
)
ABESS_047 = crash(
    "SIGILL",
    "#0  0x00007fffe6615093 in ?? () from"
    " .../site-packages/abess/pybind_cabess.cpython-38-x86_64-linux-gnu.so",
)
HUB_A = fail(
    "ImportError: cannot import name 'cached_download' from 'huggingface_hub'"
    " (.../site-packages/huggingface_hub/__init__.py)"
)
HUB_B = fail(
    "ImportError: cannot import name 'hf_cache_home' from 'huggingface_hub.constants'"
    " (.../site-packages/huggingface_hub/constants.py)"
)
URL_QUOTE = fail(
    "ImportError: cannot import name 'url_quote' from 'werkzeug.urls'"
    " (.../site-packages/werkzeug/urls.py)"
)
HUB_VERIFIED = (
    "probe.sh-style fresh venvs of diffusers==0.24.0 + huggingface-hub==V, `import diffusers`:"
    " 0.19.4, 0.23.5, 0.25.2 pass; 0.26.0 and 0.36.2 (below 1.0.0 in version order):"
    " ImportError cached_download (A: 0.26.0 removed it); 1.0.0 and 2.4.0 (newest):"
    " ImportError hf_cache_home from huggingface_hub.constants (B: 1.0.0 removed it; raised"
    " earlier in the import, so A is never reached); diffusers==0.24.0 + huggingface-hub<0.26"
    " (0.25.2, everything else newest) passes. Pre-releases (0.26.0rc0, 1.0.0rc0..rc7) left out"
)
HUB_SOURCE = (
    "https://github.com/easydiffusion/easydiffusion/issues/1851 (A);"
    " https://github.com/huggingface/huggingface_hub/releases/tag/v1.0.0 (B)"
)


# Old pins on CPython 3.11: as of the pin's upload no environment installs here from wheels (a
# compiled dependency had no cp311 wheel then), and by the first release moment at which one
# does, several dependencies had dropped names the pin imports, each failure hiding the next.
# Verified by hand with plain uv, wheels only (``uv pip install --only-binary :all:``): with
# ``--exclude-newer`` the pin's upload day does not install (markupsafe, pandocfilters, pyrsistent
# have no cp311 wheel then); with every constraint the import passes; without any one of them it
# fails with that constraint's failure; with the first bad release alone (``==``) it fails so.
JINJA_MARKUP = fail(
    "ImportError: cannot import name 'Markup' from 'jinja2' (.../jinja2/__init__.py)"
)
JINJA_ESCAPE = fail(
    "ImportError: cannot import name 'escape' from 'jinja2' (.../jinja2/__init__.py)"
)
JINJA_CONTEXTFILTER = fail(
    "ImportError: cannot import name 'contextfilter' from 'jinja2' (.../jinja2/__init__.py)"
)
ITSDANGEROUS_JSON = fail(
    "ImportError: cannot import name 'json' from 'itsdangerous' (.../itsdangerous/__init__.py)"
)
WERKZEUG_BASERESPONSE = fail(
    "ImportError: cannot import name 'BaseResponse' from 'werkzeug.wrappers'"
    " (.../werkzeug/wrappers/__init__.py)"
)
NO_GENUTILS = fail("ModuleNotFoundError: No module named 'ipython_genutils'")
OLD_PIN_ENDS = (
    "the project's pins alone: no --good-date (the pin's own day does not build here, and no"
    " later moment both builds and passes)"
)

OLD_PINS = (
    Case(
        name="lock-oldpin-flask112-py311",
        kind="old pin on a new Python, three masked failures, lock",
        mode="lock",
        package="jinja2",
        truth="<3.1.0",
        failure=JINJA_ESCAPE,
        python="3.11",
        args=("--with", "flask==1.1.2", "--probe", "import:flask"),
        repro=(),
        source="https://github.com/mobidic/SEAL/issues/20",
        verified="flask 1.1.2 with jinja2<3.1, itsdangerous<2.1, werkzeug<2.1 imports; without"
        " jinja2<3.1: escape; without itsdangerous<2.1: json; without werkzeug<2.1:"
        " BaseResponse; --exclude-newer 2020-04-04: markupsafe has no wheel; 2023-01-19 (the"
        " first cp311 markupsafe): escape",
        ends=OLD_PIN_ENDS,
        held=(
            Held(package="jinja2", specifier="<3.1.0", failure=JINJA_ESCAPE),
            Held(package="itsdangerous", specifier="<2.1.0", failure=ITSDANGEROUS_JSON),
            Held(package="werkzeug", specifier="<2.1.0", failure=WERKZEUG_BASERESPONSE),
        ),
    ),
    Case(
        name="lock-oldpin-flask0125-py311",
        kind="old pin on a new Python, two masked failures, lock",
        mode="lock",
        package="jinja2",
        truth="<3.1.0",
        failure=JINJA_MARKUP,
        python="3.11",
        args=("--with", "flask==0.12.5", "--probe", "import:flask"),
        repro=(),
        source="https://jinja.palletsprojects.com/en/3.1.x/changes/#version-3-1-0",
        verified="flask 0.12.5 with jinja2<3.1, itsdangerous<2.1 imports; without either:"
        " Markup, json; jinja2==3.1.0: Markup; --exclude-newer 2020-02-11: markupsafe has no"
        " wheel",
        ends=OLD_PIN_ENDS,
        held=(
            Held(package="jinja2", specifier="<3.1.0", failure=JINJA_MARKUP),
            Held(package="itsdangerous", specifier="<2.1.0", failure=ITSDANGEROUS_JSON),
        ),
    ),
    Case(
        name="lock-oldpin-nbconvert561-py311",
        kind="old pin on a new Python, a module no longer brought in, lock",
        mode="lock",
        package="nbformat",
        truth="<5.2.0",
        failure=NO_GENUTILS,
        python="3.11",
        args=("--with", "nbconvert==5.6.1", "--probe", "import:nbconvert"),
        repro=(),
        source="https://github.com/jupyter/nbconvert/issues/1725",
        verified="nbconvert 5.6.1 with nbformat<5.2, jinja2<3.1 imports; with jinja2<3.1 alone:"
        " No module named 'ipython_genutils' (nbformat 5.2 stopped requiring it); with"
        " nbformat<5.2 alone: contextfilter; --exclude-newer 2019-07-31: no wheels",
        ends=OLD_PIN_ENDS,
        held=(
            Held(package="nbformat", specifier="<5.2.0", failure=NO_GENUTILS),
            Held(package="jinja2", specifier="<3.1.0", failure=JINJA_CONTEXTFILTER),
        ),
    ),
)

CASES: tuple[Case, ...] = (
    Case(
        name="abess-crash",
        kind="native crash (released wheel)",
        mode="run",
        package="abess",
        truth="0.4.6",
        failure=ABESS_046,
        python="3.8",
        args=("--package", "abess", "--good", "0.4.4", "--bad", "0.4.7", "--repro", "{repro.py}"),
        repro=(),
        source="https://github.com/abess-team/abess/issues/496",
        verified="0.4.4 and 0.4.5 print predictions; 0.4.6 and 0.4.7 die with SIGILL (exit"
        " 132) in pybind_cabess.cpython-38-x86_64-linux-gnu.so (gdb: 0.4.6 in Normalize(...),"
        " 0.4.7 in a stripped `??` frame: AVX-512 instructions, and this CPU has AVX2 only; the"
        " issue reports a SIGSEGV on Azure); `import abess` alone passes",
        ends="0.4.4 (2022-03-12) is 10 months before 0.4.6, 0.4.7 (2023-09-12) 8 months after;"
        " no wider: 0.4.2 and 0.4.3 die the same way, 0.4.8 is fixed",
        files={"repro.py": ABESS_REPRO},
    ),
    Case(
        name="abess-crash-fixed",
        kind="native crash, fix search",
        mode="run",
        package="abess",
        truth="0.4.8",
        failure=ABESS_047,
        python="3.8",
        args=(
            "--package",
            "abess",
            "--good",
            "0.4.11",
            "--bad",
            "0.4.6",
            "--repro",
            "{repro.py}",
        ),
        repro=(),
        source="https://github.com/abess-team/abess/issues/496",
        verified="0.4.6 and 0.4.7 SIGILL as in abess-crash (0.4.7rc1 is a pre-release, left"
        " out; 0.4.7's frame is a stripped `??` in pybind_cabess); 0.4.8 and 0.4.11 pass"
        " (0.4.11 prints [ -91.02169383  100.7302593  -226.99517096    9.47389912])",
        ends="0.4.11 (2026-03-04, the only release after 0.4.8 with cp38 wheels) is 22 months"
        " after 0.4.8; 0.4.6 (2023-01-14) 15 months before",
        files={"repro.py": ABESS_REPRO},
        fix=True,
    ),
    Case(
        name="pyarrow-fsb-slice-cast-crash",
        kind="native crash (versioned soname), fix search",
        mode="run",
        package="pyarrow",
        truth="17.0.0",
        failure=crash(
            "SIGSEGV",
            "#0  0x00007ffff455662c in void arrow::internal::TransferBitmap"
            "<(arrow::internal::TransferMode)0>(unsigned char const*, long, long, long,"
            " unsigned char*) () from .../site-packages/pyarrow/libarrow.so.1601",
        ),
        python="3.11",
        args=(
            "--package",
            "pyarrow",
            "--with",
            "numpy<2",
            "--good",
            "19.0.0",
            "--bad",
            "12.0.1",
            "--repro",
            "{repro.py}",
        ),
        repro=(),
        source="https://github.com/apache/arrow/issues/41306",
        verified="with numpy<2 (1.26.4): 10.0.1 .. 16.1.0 (13 releases) print the version and"
        " die with SIGSEGV (exit 139), frame #0 arrow::internal::TransferBitmap<...> in"
        " libarrow.so.NNNN (1000, 1300, 1500, 1601: the soname changes every release);"
        " 17.0.0 .. 22.0.0 print [62, 63]; five runs each of 12.0.1, 16.1.0, 17.0.0 agree",
        ends="19.0.0 (2025-01-16) is 6 months after 17.0.0; 12.0.1 (2023-06-13) 13 months and"
        " 10 releases before; last broken 16.1.0",
        files={"repro.py": PYARROW_REPRO},
        fix=True,
    ),
    Case(
        name="shapely-geos-concave-hull-crash",
        kind="native crash (vendored, hashed soname), fix search",
        mode="run",
        package="shapely",
        truth="2.0.5",
        failure=crash(
            "SIGSEGV",
            "#0  0x00007ffff7221d80 in geos::triangulate::tri::Tri::getIndex"
            "(geos::triangulate::tri::Tri const*) const () from"
            " .../site-packages/shapely/../shapely.libs/libgeos-f99bd675.so.3.11.3",
        ),
        python="3.11",
        args=(
            "--package",
            "shapely",
            "--with",
            "numpy<2",
            "--good",
            "2.1.0",
            "--bad",
            "2.0.0",
            "--repro",
            "{repro.py}",
        ),
        repro=(),
        source="https://github.com/shapely/shapely/issues/1971",
        verified="with numpy<2: 2.0.0 .. 2.0.4 die with SIGSEGV (exit 139) in"
        " geos::triangulate::tri::Tri::getIndex in libgeos-ee7a1634.so.3.11.1 (2.0.0, 2.0.1),"
        " libgeos-9061d950.so.3.11.2 (2.0.2), libgeos-f99bd675.so.3.11.3 (2.0.3, 2.0.4): soname"
        " and auditwheel hash both change; 2.0.5 .. 2.2.0 (GEOS 3.11.4 and later) print the"
        " POLYGON; five runs each of 2.0.0, 2.0.4, 2.0.5 agree",
        ends="2.1.0 (2025-04-03) is 9 months after 2.0.5; 2.0.0 (2022-12-12) 19 months before"
        " (concave_hull is new in 2.0: there is no earlier good release); last broken 2.0.4",
        files={"repro.py": SHAPELY_REPRO},
        fix=True,
    ),
    Case(
        name="hfhub-diffusers024-two-failures",
        kind="two failures in one range (app pinned)",
        mode="run",
        package="huggingface-hub",
        truth="1.0.0",
        failure=HUB_B,
        python="3.11",
        args=("--package", "huggingface-hub", "--with", "diffusers==0.24.0"),
        repro=py("import diffusers"),
        source=HUB_SOURCE,
        verified=HUB_VERIFIED,
        ends="no ends: 0.19.4 (the lowest diffusers allows) passes, 2.4.0 (newest) fails B; the"
        " first bad is where the bad end's failure starts (1.0.0), and 0.26.0, where A starts,"
        " must be among the breakpoints",
        breakpoints=(Point(version="0.26.0", failure=HUB_A),),
    ),
    Case(
        name="hfhub-diffusers024-any-failure",
        kind="two failures, --any-failure",
        mode="run",
        package="huggingface-hub",
        truth="0.26.0",
        failure=HUB_A,
        python="3.11",
        args=("--package", "huggingface-hub", "--with", "diffusers==0.24.0", "--any-failure"),
        repro=py("import diffusers"),
        source=HUB_SOURCE,
        verified=HUB_VERIFIED,
        ends="no ends, as hfhub-diffusers024-two-failures; with --any-failure the first bad is"
        " the first failure of any kind, 0.26.0",
    ),
    Case(
        name="by-date-hfhub-diffusers024",
        kind="two failures, by date",
        mode="by-date",
        package="huggingface-hub",
        truth="1.0.0",
        failure=HUB_B,
        python="3.11",
        args=("--with", "diffusers==0.24.0", "--good", "2024-06-01", "--bad", "2026-12-01"),
        repro=py("import diffusers"),
        source=HUB_SOURCE,
        verified=HUB_VERIFIED + "; by date (--exclude-newer D): 2024-06-01 (hub 0.23.2) and"
        " 2024-10-17 (0.25.2) pass, 2024-10-19 (0.26.0), 2025-06-01, 2025-10-27T13:00Z: A;"
        " 2025-10-28 (1.0.1), 2026-03-01: B",
        ends="--good 2024-06-01 is 4.5 months before 0.26.0's upload, --bad the day the suite"
        " was written (2026-12-01), 13 months after 1.0.0's",
        breakpoints=(Point(version="0.26.0", failure=HUB_A, uploaded="2024-10-18T08:01:21Z"),),
        uploaded="2025-10-27T13:29:50Z",
    ),
    Case(
        name="lock-hfhub-diffusers024",
        kind="two failures, lock",
        mode="lock",
        package="huggingface-hub",
        truth="<0.26.0",
        failure=HUB_A,
        python="3.11",
        args=("--with", "diffusers==0.24.0", "--probe", "import:diffusers"),
        repro=(),
        source=HUB_SOURCE,
        verified=HUB_VERIFIED + "; held below 1.0.0 alone (0.36.2) it still fails A",
        ends="the project's pins: diffusers==0.24.0 (its upload, 2023-11-29, is the good"
        " date); the lock must hold huggingface-hub below the first failure, 0.26.0",
    ),
    Case(
        name="diff-flask-locks",
        kind="two lockfiles (diff)",
        mode="diff",
        package="werkzeug",
        truth="3.0.0",
        failure=URL_QUOTE,
        python="3.11",
        args=("{good.txt}", "{bad.txt}"),
        repro=py("import flask"),
        source="https://github.com/pallets/werkzeug/issues/2789",
        verified="GOOD installs and imports; BAD: ImportError: cannot import name 'url_quote';"
        " werkzeug 2.3.8 / 3.0.0 with flask 2.2.2 as in werkzeug3-flask222",
        ends="two lockfiles a user had: werkzeug 2.2.2 in GOOD, 3.0.3 in BAD",
        files={"good.txt": FLASK_GOOD, "bad.txt": FLASK_BAD},
    ),
    Case(
        name="diff-transformers5-vision2seq",
        kind="two lockfiles, a major drags packages in (diff)",
        mode="diff",
        package="transformers",
        truth="5.0.0",
        failure=fail(
            "ImportError: cannot import name 'AutoModelForVision2Seq' from 'transformers'"
            " (.../site-packages/transformers/__init__.py)"
        ),
        python="3.11",
        args=("{good.txt}", "{bad.txt}"),
        repro=py("from transformers import AutoModelForVision2Seq"),
        source="https://github.com/huggingface/transformers/issues/45278",
        verified="GOOD passes, BAD: ImportError AutoModelForVision2Seq (renamed in 5.0); GOOD"
        " with transformers 5.2.0 alone or huggingface-hub 1.5.0 alone is unresolvable"
        " (5.2.0 requires hub>=1.3.0,<2.0; 4.57.6 requires hub<1.0); GOOD minus both + 5.2.0 +"
        " hub 1.5.0 fails the same way; BAD with 4.57.6 + hub 0.36.0 passes; transformers"
        " alone: 4.57.6 passes, 5.0.0 fails (first bad)",
        ends="two lockfiles (compiled 2026-01-20 and 2026-03-01): transformers 4.57.6 in GOOD,"
        " 5.2.0 in BAD; the culprit is transformers alone, huggingface-hub forced by it",
        files={"good.txt": TRANSFORMERS_GOOD, "bad.txt": TRANSFORMERS_BAD},
        forced=("huggingface-hub",),
    ),
    Case(
        name="torch26-load-weights-only",
        kind="behaviour change (torch itself, CUDA wheels on CPU)",
        mode="run",
        package="torch",
        truth="2.6.0",
        failure=fail(
            "_pickle.UnpicklingError: Weights only load failed. This file can still be loaded,"
            " to do so you have two options, \x1b[1mdo those steps only if you trust the source"
            " of the checkpoint\x1b[0m."
        ),
        python="3.11",
        args=("--package", "torch", "--good", "2.4.1", "--bad", "2.7.1", "--repro", "{repro.py}"),
        repro=(),
        source="https://github.com/pytorch/pytorch/releases/tag/v2.6.0",
        verified="2.4.1 (+cu121) and 2.5.1 (+cu124) load the checkpoint (2.5.1 warns that the"
        " default will flip); 2.6.0 and 2.7.1: _pickle.UnpicklingError: Weights only load"
        " failed (Unsupported global: GLOBAL __main__.Config)",
        ends="2.4.1 (2024-09-04) is 5 months before 2.6.0, 2.7.1 (2025-06-04) 4 months after",
        files={"repro.py": TORCH_REPRO},
        cost="this search probes 2.4.1, 2.7.1, 2.5.1, 2.6.0: 56 distinct wheels, 8.70 GiB"
        " (2.65, 2.78, 2.18, 1.09 GiB new at each probe: a new CUDA minor costs ~2.7 GiB, one"
        " that shares its CUDA libs ~1.1 GiB), ~18 GB of uv cache once unpacked; a venv is ~5 GB"
        " apparent but ~5 MB of its own (hard links into the cache); importing the CUDA build"
        " takes 10-15 s a probe; with a warm cache nothing is downloaded",
        heavy=True,
    ),
    *OLD_PINS,
)
