"""The synthetic packages the tests bisect, with their known truth.

Each package's ``run()`` behaves by version: passes, segfaults (a real SIGSEGV through ctypes),
hangs, or raises. Upload times increase with the version, one day apart.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path

from .descent import add_descent_family
from .index_server import IndexFile, LocalIndex
from .wheels import build_sdist, build_wheel

PASS = "def run():\n    return 'ok'\n"
SEGFAULT = (
    "import ctypes\n\ndef run():\n    return ctypes.string_at(0)  # reads address 0: SIGSEGV\n"
)
HANG = "import time\n\ndef run():\n    while True:\n        time.sleep(0.05)\n"
RAISE = "def run():\n    raise ValueError('raisy broke')\n"
TYPE_ERROR = "def run():\n    raise TypeError('a different bug')\n"
# A real ImportError from the import system, its message naming the path of the environment.
IMPORT_ALPHA = "def run():\n    from importy import alpha  # 1.3 dropped it, 1.5 restored it\n"
IMPORT_BETA = "def run():\n    from importy import beta  # 1.6 dropped it\n"
FOREIGN_TAG = "cp27-cp27m-win32"  # a wheel no modern Linux target can install

EPOCH = datetime(2024, 1, 1, tzinfo=timezone.utc)


@dataclass(frozen=True)
class Version:
    version: str
    body: str
    requires: tuple[str, ...] = ()
    tag: str = "py3-none-any"
    sdist_only: bool = False
    yanked: bool = False
    requires_python: str | None = None


def _series(n: int, first_bad: int, bad_body: str, *, prefix: str = "1.") -> list[Version]:
    return [Version(f"{prefix}{i}.0", PASS if i < first_bad else bad_body) for i in range(n)]


def corpus() -> dict[str, list[Version]]:
    crashy = _series(12, 7, SEGFAULT)
    crashy = [
        Version(v.version, v.body, requires=("helperlib>=2" if i >= 9 else "helperlib<2",))
        for i, v in enumerate(crashy)
    ]
    crashy[4] = Version("1.4.0", PASS, sdist_only=True)
    crashy.append(Version("1.12.0", SEGFAULT, yanked=True))
    crashy.append(Version("2.0.0rc1", SEGFAULT))
    gappy = _series(9, 6, SEGFAULT)
    gappy[4] = Version("1.4.0", PASS, tag=FOREIGN_TAG)
    gappy[5] = Version("1.5.0", PASS, tag=FOREIGN_TAG)
    mixed = _series(9, 4, SEGFAULT)
    mixed[4] = Version("1.4.0", TYPE_ERROR)
    # Two ImportErrors of different names in one range: 1.3 and 1.4 cannot import alpha, 1.5
    # passes, 1.6 on cannot import beta (the bad end's bug, which 1.6.0 brought).
    importy = _series(9, 6, IMPORT_BETA)
    importy[3] = Version("1.3.0", IMPORT_ALPHA)
    importy[4] = Version("1.4.0", IMPORT_ALPHA)
    # The first bad release was yanked (as urllib3 2.0.0 and 2.0.1 were): 1.3.0 is yanked and
    # crashes, 1.4.0 is the first bad version a search can see.
    yanky = _series(6, 3, SEGFAULT)
    yanky[3] = Version("1.3.0", SEGFAULT, yanked=True)
    return {
        "yanky": yanky,
        "importy": importy,
        "helperlib": [Version("1.0.0", PASS), Version("2.0.0", PASS)],
        "crashy": crashy,
        "hangy": _series(6, 3, HANG),
        "raisy": _series(8, 5, RAISE),
        "fixy": [Version(f"1.{i}.0", RAISE if i < 3 else PASS) for i in range(6)],
        "gappy": gappy,
        "mixed": mixed,
        # sideapp 1.0.0 caps sidelib and sidetok below 2; sidelib 2.0.0 needs sidetok >= 2
        # (llamafactory 0.9.2, transformers 5 and tokenizers): outside_pins follows sidelib.
        "sidetok": [Version("1.0.0", PASS), Version("2.0.0", PASS)],
        "sidelib": [
            Version("1.0.0", PASS, requires=("sidetok<2",)),
            Version("2.0.0", PASS, requires=("sidetok>=2",)),
        ],
        "sideapp": [Version("1.0.0", PASS, requires=("sidelib<2", "sidetok<2"))],
        "py99": [
            Version("1.0.0", PASS),
            Version("1.1.0", PASS, requires_python=">=3.99"),
            Version("1.2.0", SEGFAULT),
        ],
    }


TORCH = (
    "__version__ = {version!r}\n"
    "from . import version\n"
    "def run():\n"
    "    if {broken}:\n"
    "        raise RuntimeError('CUDA error: an illegal memory access was encountered')\n"
)


def _torch_family(root: Path, index: LocalIndex) -> None:
    """torch / torchvision as PyPI has them (public versions, upload times) and as the
    PyTorch index has them (cpu and cu121 folders, local versions, no upload times).
    torch 2.3 is broken; torchvision X needs exactly its torch (their release pairing)."""
    pairs = [("2.1.0", "0.16.0"), ("2.2.0", "0.17.0"), ("2.3.0", "0.18.0")]
    for i, (tv, vv) in enumerate(pairs):
        when = EPOCH + timedelta(days=60 * i)
        for label, cuda in (("", None), ("+cpu", None), ("+cu121", "12.1")):
            torch = build_wheel(
                root / (label.strip("+") or "pypi"),
                "torch",
                tv + label,
                {
                    "torch/__init__.py": TORCH.format(version=tv + label, broken=tv == "2.3.0"),
                    "torch/version.py": f"__version__ = {tv + label!r}\ncuda = {cuda!r}\n",
                },
            )
            vision = build_wheel(
                root / (label.strip("+") or "pypi"),
                "torchvision",
                vv + label,
                {"torchvision/__init__.py": f"__version__ = {vv + label!r}\n"},
                requires=(f"torch=={tv}",),
            )
            for path, project in ((torch, "torch"), (vision, "torchvision")):
                if label:
                    index.variants.setdefault(label[1:], []).append(
                        IndexFile(project=project, path=path, upload_time=when)
                    )
                else:
                    index.add(IndexFile(project=project, path=path, upload_time=when))


def grid_truth(app: str, lib: str) -> str:
    """The known grid: gridapp >= 1.4 crashes with gridlib >= 1.3; gridapp 1.6 needs
    gridlib >= 1.2 (so two of its cells have no consistent environment)."""
    a, b = int(app.split(".")[1]), int(lib.split(".")[1])
    if a == 6 and b < 2:
        return "unresolvable"
    return "crash" if a >= 4 and b >= 3 else "pass"


def _grid_family(root: Path, index: LocalIndex) -> None:
    for i in range(6):
        path = build_wheel(root, "gridlib", f"1.{i}.0", {"gridlib/__init__.py": f"MINOR = {i}\n"})
        index.add(IndexFile(project="gridlib", path=path, upload_time=EPOCH + timedelta(days=i)))
    for i in range(7):
        body = (
            "import ctypes\nimport gridlib\n\n"
            "def run():\n"
            f"    if {i} >= 4 and gridlib.MINOR >= 3:\n"
            "        ctypes.string_at(0)\n"
        )
        requires = ("gridlib>=1.2",) if i == 6 else ("gridlib",)
        path = build_wheel(root, "gridapp", f"1.{i}.0", {"gridapp/__init__.py": body},
                           requires=requires)  # fmt: skip
        index.add(IndexFile(project="gridapp", path=path, upload_time=EPOCH + timedelta(days=i)))


def _bump_family(root: Path, index: LocalIndex) -> None:
    """bumplib 1.0 to 1.8: 1.3, 1.4 and 1.5 crash, the others pass (a non-monotone row)."""
    for i in range(9):
        body = SEGFAULT if 3 <= i <= 5 else PASS
        path = build_wheel(root, "bumplib", f"1.{i}.0", {"bumplib/__init__.py": body})
        index.add(IndexFile(project="bumplib", path=path, upload_time=EPOCH + timedelta(days=i)))


DATE_BREAK = 3  # datelib 1.3.0 (day 30) removes what dateapp uses


def _date_family(root: Path, index: LocalIndex) -> None:
    """A transitive break by date: dateapp 1.0.0 (pinned by the user) uses datelib.feature,
    which datelib 1.3.0 (day 30) removes; noiselib releases in between change nothing."""
    app = "import datelib\nimport noiselib\n\ndef run():\n    return datelib.feature()\n"
    path = build_wheel(root, "dateapp", "1.0.0", {"dateapp/__init__.py": app},
                       requires=("datelib", "noiselib"))  # fmt: skip
    index.add(IndexFile(project="dateapp", path=path, upload_time=EPOCH))
    for i in range(5):
        body = (
            "def feature():\n    return 1\n" if i < DATE_BREAK else "def other():\n    return 2\n"
        )
        path = build_wheel(root, "datelib", f"1.{i}.0", {"datelib/__init__.py": body})
        index.add(
            IndexFile(project="datelib", path=path, upload_time=EPOCH + timedelta(days=10 * i))
        )
    for i in range(5):  # days 0, 15, 25, 35, 45
        path = build_wheel(root, "noiselib", f"0.{i}.0", {"noiselib/__init__.py": ""})
        when = EPOCH + timedelta(days=10 * i + 5 if i else 0)
        index.add(IndexFile(project="noiselib", path=path, upload_time=when))


def _pair_family(root: Path, index: LocalIndex) -> None:
    """An interaction: pairapp fails only with pair-a >= 2 and pair-b >= 2 together."""
    app = (
        "import pair_a, pair_b\n\ndef run():\n"
        "    if pair_a.MAJOR >= 2 and pair_b.MAJOR >= 2:\n"
        "        raise RuntimeError('pair-a 2 and pair-b 2 disagree')\n"
    )
    path = build_wheel(root, "pairapp", "1.0.0", {"pairapp/__init__.py": app},
                       requires=("pair-a", "pair-b"))  # fmt: skip
    index.add(IndexFile(project="pairapp", path=path, upload_time=EPOCH))
    for name in ("pair-a", "pair-b"):
        mod = name.replace("-", "_")
        for major in (1, 2):
            path = build_wheel(
                root, name, f"{major}.0.0", {f"{mod}/__init__.py": f"MAJOR = {major}\n"}
            )
            when = EPOCH + timedelta(days=major)
            index.add(IndexFile(project=name, path=path, upload_time=when))


def _tied_family(root: Path, index: LocalIndex) -> None:
    """A dependency that forces another package to move: tiedlib 2.0 and 2.1 break what tiedapp
    calls; tiedapp 2.0 requires tiedlib>=2 (so asking for it brings the break along), 1.5
    requires tiedlib<2 (so tiedlib 2 cannot be had without tiedapp 2.0), 1.0 takes any."""
    lib = (
        "def run():\n    return 'ok'\n",
        "def run():\n    raise RuntimeError('tiedlib 2 broke')\n",
    )
    for i, version in enumerate(("1.0.0", "1.1.0", "2.0.0", "2.1.0")):
        path = build_wheel(root, "tiedlib", version, {"tiedlib/__init__.py": lib[i >= 2]})
        index.add(IndexFile(project="tiedlib", path=path, upload_time=EPOCH + timedelta(days=i)))
    app = "import tiedlib\n\ndef run():\n    return tiedlib.run()\n"
    for i, (version, req) in enumerate((("1.0.0", "tiedlib"), ("1.5.0", "tiedlib<2"),
                                        ("2.0.0", "tiedlib>=2"))):  # fmt: skip
        path = build_wheel(root, "tiedapp", version, {"tiedapp/__init__.py": app},
                           requires=(req,))  # fmt: skip
        index.add(IndexFile(project="tiedapp", path=path, upload_time=EPOCH + timedelta(days=i)))


SPAN_BROKE = "def run():\n    raise RuntimeError('span broke')\n"


def _span_family(root: Path, index: LocalIndex) -> None:
    """A version the planner would take from outside both ends: spanlib 1.3 breaks (the truth);
    spanlib 1.2 requires spandep<1, and only spandep 0.9 (older than either end, with an old
    bug that fails the same way) fits it."""
    for i, version in enumerate(("0.9.0", "1.0.0", "2.0.0")):
        body = SPAN_BROKE if i == 0 else PASS
        path = build_wheel(root, "spandep", version, {"spandep/__init__.py": body})
        index.add(IndexFile(project="spandep", path=path, upload_time=EPOCH + timedelta(days=i)))
    for i, version in enumerate(("1.0.0", "1.1.0", "1.2.0", "1.3.0", "2.0.0")):
        broken = "    raise RuntimeError('span broke')\n" if i >= 3 else ""
        body = f"import spandep\n\ndef run():\n    spandep.run()\n{broken}"
        req = "spandep<1" if version == "1.2.0" else "spandep"
        path = build_wheel(root, "spanlib", version, {"spanlib/__init__.py": body},
                           requires=(req,))  # fmt: skip
        index.add(IndexFile(project="spanlib", path=path, upload_time=EPOCH + timedelta(days=i)))


def _roots_family(root: Path, index: LocalIndex) -> None:
    """A new major version that drags new packages in. rootapp 2.0 requires rootlib (any:
    GOOD's 1.0 does), rootdep1 and rootdep2[fast]; rootdep2's extra ``fast`` requires
    rootdep3; rootdep1 requires rootlib>=1.1 only on Python 2 (a marker that never applies).
    rootapp 2.0's run() breaks alone; its pair() breaks only with rootlib 1.1 (MINOR 1).
    roothost 1.0 needs rootpeer<2, 2.0 needs rootpeer>=2; rootpeer 2.1 breaks, 2.0 does not."""
    app = {
        "1.0.0": "import rootlib\n\ndef run():\n    return 1\n\ndef pair():\n    return 1\n",
        "2.0.0": (
            "import rootlib, rootdep1, rootdep2\n\n"
            "def run():\n    raise RuntimeError('rootapp 2 broke')\n\n"
            "def pair():\n    if rootlib.MINOR >= 1:\n"
            "        raise RuntimeError('rootapp 2 and rootlib 1.1 disagree')\n"
        ),
    }
    wheels: list[tuple[str, str, dict[str, str], tuple[str, ...]]] = [
        ("rootapp", "1.0.0", {"rootapp/__init__.py": app["1.0.0"]}, ("rootlib",)),
        ("rootapp", "2.0.0", {"rootapp/__init__.py": app["2.0.0"]},
         ("rootlib", "rootdep1", "rootdep2[fast]")),
        ("rootlib", "1.0.0", {"rootlib/__init__.py": "MINOR = 0\n"}, ()),
        ("rootlib", "1.1.0", {"rootlib/__init__.py": "MINOR = 1\n"}, ()),
        ("rootdep1", "1.0.0", {"rootdep1/__init__.py": ""},
         ('rootlib>=1.1; python_version < "3"',)),
        ("rootdep2", "1.0.0", {"rootdep2/__init__.py": ""}, ('rootdep3; extra == "fast"',)),
        ("rootdep3", "1.0.0", {"rootdep3/__init__.py": ""}, ()),
        ("roothost", "1.0.0", {"roothost/__init__.py": "import rootpeer\n\ndef run():\n"
                               "    rootpeer.run()\n"}, ("rootpeer<2",)),
        ("roothost", "2.0.0", {"roothost/__init__.py": "import rootpeer\n\ndef run():\n"
                               "    rootpeer.run()\n"}, ("rootpeer>=2",)),
        ("rootpeer", "1.0.0", {"rootpeer/__init__.py": PASS}, ()),
        ("rootpeer", "2.0.0", {"rootpeer/__init__.py": PASS}, ()),
        ("rootpeer", "2.1.0", {"rootpeer/__init__.py": "def run():\n"
                               "    raise RuntimeError('rootpeer 2.1 broke')\n"}, ()),
    ]  # fmt: skip
    for day, (name, version, files, requires) in enumerate(wheels):
        path = build_wheel(root, name, version, files, requires=requires)
        index.add(IndexFile(project=name, path=path, upload_time=EPOCH + timedelta(days=day)))


FLAKY_FIRST_BAD = 7  # flakylib 1.7.0 and later crash on about half the runs


def flaky_crashes(version: str, run: int, seed: str) -> bool:
    """Whether flakylib ``version`` crashes on run ``run`` under FLAKY_SEED ``seed``: a fixed
    coin per (seed, version, run), heads half the time, so a test is the same every time."""
    import hashlib

    digest = hashlib.sha256(f"{seed}-{version}-{run}".encode()).digest()
    return digest[0] < 128


def _flaky_family(root: Path, index: LocalIndex) -> None:
    """flakylib 1.0 to 1.11: from 1.7.0 on, run() segfaults on about half the runs. The coin
    is the sha256 of FLAKY_SEED, the version and ENVBISECT_RUN (the run's number, which
    envbisect sets), so each test's outcomes are fixed but differ from seed to seed."""
    for i in range(12):
        version = f"1.{i}.0"
        body = PASS
        if i >= FLAKY_FIRST_BAD:
            body = (
                "import ctypes, hashlib, os\n\n"
                "def run():\n"
                "    seed = os.environ.get('FLAKY_SEED', '0')\n"
                "    run = os.environ.get('ENVBISECT_RUN', '0')\n"
                f"    coin = hashlib.sha256(f'{{seed}}-{version}-{{run}}'.encode()).digest()[0]\n"
                "    if coin < 128:\n"
                "        ctypes.string_at(0)  # SIGSEGV\n"
                "    return 'ok'\n"
            )
        path = build_wheel(root, "flakylib", version, {"flakylib/__init__.py": body})
        index.add(IndexFile(project="flakylib", path=path, upload_time=EPOCH + timedelta(days=i)))


def _lock_family(root: Path, index: LocalIndex) -> None:
    """What ``envbisect lock`` must untangle. lockapp 1.0.0 (pinned, day 0) uses
    lk_alpha.feature (gone from lk-alpha 1.3.0, day 3), lk_beta.thing (gone from lk-beta 2.0.0,
    day 4) and lk-fix (1.2.0, day 2, raises; 1.3.0, day 5, fixes it); lk-noise releases change
    nothing. lockone 1.0.0 needs lk-alpha alone. lockpair 1.0.0 fails only with lk-tie-a 2
    (day 2) and lk-tie-b 2 (day 3) together: an interaction."""
    app = (
        "import lk_alpha, lk_beta, lk_fix, lk_noise\n\ndef run():\n"
        "    lk_alpha.feature()\n    lk_beta.thing()\n    lk_fix.run()\n"
    )
    one = "import lk_alpha\n\ndef run():\n    lk_alpha.feature()\n"
    pair = (
        "import lk_tie_a, lk_tie_b\n\ndef run():\n"
        "    if lk_tie_a.MAJOR == 2 and lk_tie_b.MAJOR == 2:\n"
        "        raise RuntimeError('lk-tie-a 2 and lk-tie-b 2 disagree')\n"
    )
    for name, body, requires in (
        ("lockapp", app, ("lk-alpha", "lk-beta", "lk-fix", "lk-noise")),
        ("lockone", one, ("lk-alpha",)),
        ("lockpair", pair, ("lk-tie-a", "lk-tie-b")),
    ):
        mod = name.replace("-", "_")
        path = build_wheel(root, name, "1.0.0", {f"{mod}/__init__.py": body}, requires=requires)
        index.add(IndexFile(project=name, path=path, upload_time=EPOCH))
    series: dict[str, list[tuple[str, int, str]]] = {
        "lk-alpha": [(f"1.{i}.0", i, "def feature():\n    return 1\n" if i < 3 else "")
                     for i in range(5)],
        "lk-beta": [("1.0.0", 0, "def thing():\n    return 1\n"),
                    ("1.1.0", 1, "def thing():\n    return 1\n"),
                    ("2.0.0", 4, ""), ("2.1.0", 7, "")],
        "lk-fix": [(f"1.{i}.0", i if i < 3 else i + 2,
                    "def run():\n    raise ValueError('lk-fix 1.2 broke')\n" if i == 2
                    else "def run():\n    return 1\n") for i in range(5)],
        "lk-noise": [(f"0.{i}.0", i, "") for i in range(6)],
        "lk-tie-a": [("1.0.0", 0, "MAJOR = 1\n"), ("2.0.0", 2, "MAJOR = 2\n")],
        "lk-tie-b": [("1.0.0", 0, "MAJOR = 1\n"), ("2.0.0", 3, "MAJOR = 2\n")],
    }  # fmt: skip
    for name, versions in series.items():
        mod = name.replace("-", "_")
        for version, day, body in versions:
            path = build_wheel(root, name, version, {f"{mod}/__init__.py": body})
            when = EPOCH + timedelta(days=day, hours=1)
            index.add(IndexFile(project=name, path=path, upload_time=when))


TWO_A, TWO_B = 3, 8  # twolib 1.3.0 removes a(), 1.8.0 removes b()


def _two_family(root: Path, index: LocalIndex) -> None:
    """Two different failures in one range (issue 20): twoapp 1.0.0 (pinned, day 0) calls
    twolib.b() then twolib.a(); twolib 1.3.0 (day 9) removes a(), 1.8.0 (day 24) removes b().
    So 1.0-1.2 pass, 1.3-1.7 fail on a, 1.8-1.11 fail on b: the newest fails with b's
    error, the middle of the window with a's. twonoise releases every day change nothing."""
    app = "import twolib, twonoise\n\ndef run():\n    twolib.b()\n    twolib.a()\n"
    path = build_wheel(root, "twoapp", "1.0.0", {"twoapp/__init__.py": app},
                       requires=("twolib", "twonoise"))  # fmt: skip
    index.add(IndexFile(project="twoapp", path=path, upload_time=EPOCH + timedelta(hours=5)))
    for i in range(12):
        body = "".join(
            f"def {name}():\n    return 1\n"
            for name, gone in (("a", TWO_A), ("b", TWO_B))
            if i < gone
        )
        path = build_wheel(root, "twolib", f"1.{i}.0", {"twolib/__init__.py": body or "\n"})
        when = EPOCH + timedelta(days=3 * i, hours=1)
        index.add(IndexFile(project="twolib", path=path, upload_time=when))
    for j in range(40):
        path = build_wheel(root, "twonoise", f"0.{j}.0", {"twonoise/__init__.py": ""})
        when = EPOCH + timedelta(days=j, hours=1 if j == 0 else 13)
        index.add(IndexFile(project="twonoise", path=path, upload_time=when))


def _wheelgap_family(root: Path, index: LocalIndex) -> None:
    """A lock that cannot be installed as written here (as flask 2.2.2's lock of 2022 pins
    markupsafe 2.1.1, which has no wheel for Python 3.11): gapwheel 1.0.0 has only a wheel for
    another platform, 1.1.0 and 1.2.0 have one for every target; gapculprit 2.0.0 breaks."""
    for i, version in enumerate(("1.0.0", "1.1.0", "1.2.0")):
        tag = FOREIGN_TAG if i == 0 else "py3-none-any"
        path = build_wheel(root, "gapwheel", version, {"gapwheel/__init__.py": ""}, tag=tag)
        index.add(IndexFile(project="gapwheel", path=path, upload_time=EPOCH + timedelta(days=i)))
    for i, (version, body) in enumerate((("1.0.0", PASS), ("2.0.0", RAISE))):
        path = build_wheel(root, "gapculprit", version, {"gapculprit/__init__.py": body})
        when = EPOCH + timedelta(days=i)
        index.add(IndexFile(project="gapculprit", path=path, upload_time=when))


def build_index(root: Path) -> LocalIndex:
    root.mkdir(parents=True, exist_ok=True)
    for sub in ("pypi", "cpu", "cu121"):
        (root / sub).mkdir(exist_ok=True)
    index = LocalIndex()
    _torch_family(root, index)
    _grid_family(root, index)
    _bump_family(root, index)
    _date_family(root, index)
    _pair_family(root, index)
    _tied_family(root, index)
    _span_family(root, index)
    _roots_family(root, index)
    _flaky_family(root, index)
    _lock_family(root, index)
    _two_family(root, index)
    _wheelgap_family(root, index)
    add_descent_family(root, index, EPOCH)
    for project, versions in corpus().items():
        for i, v in enumerate(versions):
            when = EPOCH + timedelta(days=30 * i, hours=len(project))
            if v.sdist_only:
                path = build_sdist(root, project, v.version)
            else:
                path = build_wheel(
                    root,
                    project,
                    v.version,
                    {f"{project}/__init__.py": f"__version__ = {v.version!r}\n" + v.body},
                    requires=v.requires,
                    requires_python=v.requires_python,
                    tag=v.tag,
                )
            index.add(
                IndexFile(
                    project=project,
                    path=path,
                    upload_time=when,
                    yanked=v.yanked,
                    requires_python=v.requires_python,
                )
            )
    return index.start()
