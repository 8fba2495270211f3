"""Real headless Chromium for the page tests: the DOM after the page's own script ran, a
screenshot, and a measuring frame.

No mock: Debian's chromium, started fresh (its own profile folder) with nothing that reaches
the network. ``measure`` loads a page into an iframe of a given width inside a small harness
page of the test's own, so the published page carries no test code: the harness reads the
frame's layout (its scroll width, the background its CSS chose, what a click hid) and writes
it as JSON into its DOM, which ``--dump-dom`` hands back.
"""

from __future__ import annotations

import json
import shutil
import struct
import subprocess
from pathlib import Path
from typing import Any

import pytest

FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update",
         "--disable-sync"]  # fmt: skip


def chromium() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None:
        pytest.skip("Chromium is not installed (.ci/run installs Debian's chromium)")
    return found


def _run(args: list[str], profile: Path) -> str:
    proc = subprocess.run(
        [chromium(), *FLAGS, f"--user-data-dir={profile}", *args],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout


def dom(url: str, profile: Path, *extra: str, budget_ms: int = 5000) -> str:
    """The page's DOM once its scripts ran (``#...`` in the URL drives its own handlers);
    ``budget_ms``: the virtual time its scripts get (a harness that loads many pages needs
    more)."""
    return _run([*extra, f"--virtual-time-budget={budget_ms}", "--dump-dom", url], profile)


def screenshot(url: str, out: Path, profile: Path, *, width: int, height: int) -> tuple[int, int]:
    """A PNG of the page at ``width`` x ``height``; returns the size the PNG says it has."""
    _run([f"--window-size={width},{height}", f"--screenshot={out}", url], profile)
    head = out.read_bytes()[:24]
    assert head[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    w, h = struct.unpack(">II", head[16:24])
    return int(w), int(h)


_HARNESS = """<!DOCTYPE html><html><body>
<iframe id="f" src="{src}" style="width:{width}px;height:900px;border:0"></iframe>
<pre id="out"></pre><script>
const f = document.getElementById("f");
f.addEventListener("load", () => {{
  const d = f.contentDocument, w = f.contentWindow;
  const cells = () => [...d.querySelectorAll("td[data-cell]")];
  const seen = () => cells().filter(td => td.offsetParent !== null &&
      w.getComputedStyle(td).visibility !== "hidden").length;
  const r = {{width: w.innerWidth, scrollWidth: d.documentElement.scrollWidth,
    background: w.getComputedStyle(d.body).backgroundColor,
    dark: w.matchMedia("(prefers-color-scheme: dark)").matches,
    cells: cells().length, seen: seen()}};
  const box = d.getElementById("hide-unresolvable");
  if (box && !box.disabled) {{
    box.click();
    r.seenAfterClick = seen();
    r.shownText = d.getElementById("shown").textContent;
  }}
  document.getElementById("out").textContent = JSON.stringify(r);
}});
</script></body></html>
"""


def measure(page: Path, profile: Path, *, width: int, dark: bool = False) -> dict[str, Any]:
    """The page's layout in a frame ``width`` pixels wide (and the filter clicked)."""
    harness = page.parent / f"harness-{width}.html"
    harness.write_text(_HARNESS.format(src=page.name, width=width), encoding="utf-8")
    extra = ["--allow-file-access-from-files", *(["--force-dark-mode"] if dark else [])]
    out = dom(harness.as_uri(), profile, *extra)
    harness.unlink()
    text = out.split('<pre id="out">', 1)[1].split("</pre>", 1)[0]
    assert text, "the harness wrote nothing: the frame did not load"
    result: dict[str, Any] = json.loads(text)
    return result
