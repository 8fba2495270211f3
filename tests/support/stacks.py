"""The shapes of a real Hugging Face stack, as packages on an index of their own (issue 38).

cpapp 1.0.0 (day 0) imports ``old_api`` from cp-lib, which dropped it in 2.0.0 (day 20), and
uses cp-helper, whose releases from 2.0.0 (day 25) require cp-lib>=2.0: a coupled pair, as
trl and transformers are. The newest environment (cp-lib 2.1.0, cp-helper 2.1.0) fails
naming cp-lib; holding cp-lib below 2.0.0 needs cp-helper held back with it (1.1.0).

wdapp 1.0.0 requires wd-hub<1 and wd-gr (uncapped): every wd-gr from 1.5.0 up pins its own
wd-gc, which requires wd-hub>=1. The only consistent environment has wd-gr 1.4.0; resolvelib
reaches it only by backtracking through every newer wd-gr, two rounds each (a test makes it
give up early), where uv's PubGrub answers at once.

bopin 1.0.0 (day 0) pins nothing but uses bo-lib, which dropped ``f`` in 2.0.0 (day 10);
bo-build 1.0.0+cpu, uploaded on day 200, is a build-only pin (a local version, as torch's
``+cpu``): the start of a lock must stay at bopin's day, not move to bo-build's upload.

ovapp 1.0.0 requires ov-lib<=1.5 and works with every ov-lib up to 2.0.0 (day 20); 2.5.0
(day 30) made ``f``, which ovapp calls, raise. Users run it off its pins (``--override``), as
LLaMA-Factory users run a newer transformers than their release allows.

djapp 1.0.0 requires dj-lib<=1.5 and dj-tok<0.5; dj-lib 2.0.0 (day 20) requires dj-tok>=0.6,
as transformers 4.48 needs a tokenizers LLaMA-Factory 0.9.1 caps lower. A report that lists
djapp 1.0.0 with dj-lib 2.0.0 (forced over the pins) and not dj-tok ran with the dj-tok pip
left after that install: dj-lib's requirement wins.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from pathlib import Path

from .index_server import IndexFile, LocalIndex
from .wheels import build_wheel

EPOCH = datetime(2024, 6, 1, tzinfo=timezone.utc)
GR_RELEASES = 60  # wd-gr 1.0.0 ... 1.59.0; the first five work with wd-hub<1


def build_stacks(root: Path) -> LocalIndex:
    root.mkdir(parents=True, exist_ok=True)
    index = LocalIndex()

    def add(
        name: str, version: str, day: float, body: str = "", requires: tuple[str, ...] = ()
    ) -> None:
        mod = name.replace("-", "_")
        path = build_wheel(root, name, version, {f"{mod}/__init__.py": body}, requires=requires)
        index.add(IndexFile(project=name, path=path, upload_time=EPOCH + timedelta(days=day)))

    add(
        "cpapp",
        "1.0.0",
        0,
        "from cp_lib import old_api\nimport cp_helper\n\n"
        "def run():\n    old_api()\n    cp_helper.go()\n",
        ("cp-lib", "cp-helper"),
    )
    old, new = "def old_api():\n    return 1\n", "def new_api():\n    return 2\n"
    for version, day, body in (("1.0.0", 0, old), ("1.5.0", 10, old), ("2.0.0", 20, new),
                               ("2.1.0", 30, new)):  # fmt: skip
        add("cp-lib", version, day, body)
    go = "def go():\n    return 1\n"
    helpers = [("1.0.0", 0, "cp-lib>=1.0"), ("1.1.0", 15, "cp-lib>=1.0")]
    helpers += [("2.0.0", 25, "cp-lib>=2.0"), ("2.1.0", 35, "cp-lib>=2.0")]
    for version, day, need in helpers:
        add("cp-helper", version, day, go, (need,))

    add(
        "wdapp", "1.0.0", 0, "import wd_gr\n\ndef run():\n    return wd_gr\n", ("wd-gr", "wd-hub<1")
    )
    add("wd-hub", "0.9.0", 0)
    add("wd-hub", "1.0.0", 1)
    for i in range(GR_RELEASES):
        if i < 5:
            add("wd-gr", f"1.{i}.0", i)
        else:
            add("wd-gr", f"1.{i}.0", i, requires=(f"wd-gc=={i}.0",))
            add("wd-gc", f"{i}.0", i, requires=("wd-hub>=1",))

    add("bopin", "1.0.0", 0, "from bo_lib import f\nimport bo_build\n\ndef run():\n    f()\n",
        ("bo-lib", "bo-build"))  # fmt: skip
    add("bo-lib", "1.0.0", 0, "def f():\n    return 1\n")
    add("bo-lib", "2.0.0", 10, "")
    add("bo-build", "1.0.0", 0)
    add("bo-build", "1.0.0+cpu", 200)

    add("ovapp", "1.0.0", 0, "from ov_lib import f\n\ndef run():\n    f()\n",
        ("ov-lib<=1.5",))  # fmt: skip
    f = "def f():\n    return 1\n"
    gone = "\n\n\ndef f():\n    raise RuntimeError('f was removed')\n"
    for version, day, body in (("1.0.0", 0, f), ("1.5.0", 10, f), ("2.0.0", 20, f),
                               ("2.5.0", 30, gone)):  # fmt: skip
        add("ov-lib", version, day, body)

    add("djapp", "1.0.0", 0, "import dj_lib, dj_tok\n\ndef run():\n    return 1\n",
        ("dj-lib<=1.5", "dj-tok<0.5"))  # fmt: skip
    add("dj-lib", "1.5.0", 0, "", ("dj-tok<0.5",))
    add("dj-lib", "2.0.0", 20, "", ("dj-tok>=0.6",))
    add("dj-tok", "0.4.0", 0)
    add("dj-tok", "0.6.0", 15)
    return index.start()
