"""What lock's descent must untangle (issue: an old pin on a newer Python, failures that hide
each other), as packages on the tests' index.

oldapp 1.0.0 (pinned, day 0) imports ``fa`` from od-a, ``fb`` from od-b and ``fc`` from od-c,
in that order, and uses od-helper and od-ok. As of its day the environment cannot be built
here: od-helper 1.0.0, the only release then, has a wheel for another platform only, and its
first release with a wheel for every target, 2.0.0 (day 40), needs od-base 2 (day 35, its
first release: nothing of it existed on day 0, so nothing moves forward to it). By day 40
every one of the three had dropped its name (od-a 1.2.0 day 20, od-b 2.0.0 day 25, od-c 1.1.0
day 30), so no moment in time both builds here and passes; and each failure hides the
next (the newest fails on ``fa`` alone). od-ok's newest works: it is never held back.

tdapp 1.0.0 uses td-mid, which calls td-deep; td-deep 2.0.0 raises inside its own code (a
message that names nothing): the frame says who. allbad 1.0.0 fails with every release of
ab-lib.

fwdapp 1.0.0 (day 0) needs fwd-helper, whose release of that day has no wheel for this
target (its first that has one: 1.1.0, day 40), and fwd-lib, which dropped ``f`` in 2.0.0
(day 20): the environment of day 0 with fwd-helper moved forward to 1.1.0 passes, and the
search by date holds fwd-lib below 2.0.0.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path

from .index_server import IndexFile, LocalIndex
from .wheels import build_wheel

OLD_HELD = {"od-a": ("1.2.0", "1.1.0"), "od-b": ("2.0.0", "1.2.0"), "od-c": ("1.1.0", "1.0.0")}
FOREIGN_TAG = "cp27-cp27m-win32"


def add_descent_family(root: Path, index: LocalIndex, epoch: datetime) -> None:
    def add(
        name: str,
        version: str,
        day: float,
        body: str,
        *,
        tag: str = "py3-none-any",
        requires: tuple[str, ...] = (),
    ) -> None:
        mod = name.replace("-", "_")
        files = {f"{mod}/__init__.py": body}
        path = build_wheel(root, name, version, files, requires=requires, tag=tag)
        when = epoch + timedelta(days=day, hours=1)
        index.add(IndexFile(project=name, path=path, upload_time=when))

    def add_app(name: str, body: str, requires: tuple[str, ...]) -> None:
        """An application, pinned by the tests, uploaded at the epoch (day 0)."""
        path = build_wheel(root, name, "1.0.0", {f"{name}/__init__.py": body}, requires=requires)
        index.add(IndexFile(project=name, path=path, upload_time=epoch))

    app = (
        "from od_a import fa\nfrom od_b import fb\nfrom od_c import fc\n"
        "import od_helper, od_ok\n\ndef run():\n    fa(); fb(); fc(); od_ok.go()\n"
    )
    add_app("oldapp", app, ("od-helper", "od-a", "od-b", "od-c", "od-ok"))
    add("od-helper", "1.0.0", 0, "", tag=FOREIGN_TAG)
    add("od-helper", "2.0.0", 40, "", requires=("od-base>=2",))
    add("od-base", "2.0.0", 35, "")
    fa, fb, fc = (
        "def fa():\n    return 1\n",
        "def fb():\n    return 1\n",
        "def fc():\n    return 1\n",
    )
    for version, day, body in (
        ("1.0.0", 0, fa),
        ("1.1.0", 10, fa),
        ("1.2.0", 20, ""),
        ("1.3.0", 50, ""),
    ):
        add("od-a", version, day, body)
    for version, day, body in (
        ("1.0.0", 0, fb),
        ("1.1.0", 5, fb),
        ("1.2.0", 15, fb),
        ("2.0.0", 25, ""),
        ("2.1.0", 60, ""),
    ):
        add("od-b", version, day, body)
    for version, day, body in (("1.0.0", 0, fc), ("1.1.0", 30, ""), ("1.2.0", 45, "")):
        add("od-c", version, day, body)
    for i in range(5):
        add("od-ok", f"0.{i}.0", 12 * i, "def go():\n    return 1\n")

    add_app("tdapp", "import td_mid\n\ndef run():\n    td_mid.work()\n", ("td-mid",))
    mid = "import td_deep\n\ndef work():\n    return td_deep.compute('fast')\n"
    for i in range(3):
        add("td-mid", f"1.{i}.0", i, mid, requires=("td-deep",))
    good = "def compute(mode):\n    return mode\n"
    bad = (
        "def compute(mode):\n    if mode != 'safe':\n"
        "        raise ValueError('unsupported mode')\n    return mode\n"
    )
    for i, (version, body) in enumerate(
        (("1.0.0", good), ("1.1.0", good), ("2.0.0", bad), ("2.1.0", bad))
    ):
        add("td-deep", version, i + 1, body)

    add_app("allbad", "import ab_lib\n\ndef run():\n    ab_lib.go()\n", ("ab-lib",))
    for i in range(4):
        add("ab-lib", f"0.{i}.0", i, "def go():\n    raise RuntimeError('ab-lib never worked')\n")

    add_app(
        "fwdapp",
        "import fwd_helper\nfrom fwd_lib import f\n\ndef run():\n    f()\n",
        ("fwd-helper", "fwd-lib"),
    )
    add("fwd-helper", "1.0.0", 0, "", tag=FOREIGN_TAG)
    add("fwd-helper", "1.1.0", 40, "")
    add("fwd-lib", "1.0.0", 0, "def f():\n    return 1\n")
    add("fwd-lib", "2.0.0", 20, "")
