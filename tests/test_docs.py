"""The docs site: the generated reference pages cover the code, and the built site reads in a
real browser.

The pages generated at build time (docs/hooks.py) are checked against the code by other
means than the generator's own: every flag of every subcommand is read here from the parser
and looked for on the CLI page; every ``ref="..."`` literal in the source is found here with a
plain pattern and looked for on the errors page (the environment checks' references on the
built-in probes page); every exit code of the error classes is on the exit-code table.

The built site is made as ``nox -s docs`` and ``.ci/run`` make it (``mkdocs build --strict``)
and opened in headless Chromium (tests/support/browser.py): a harness page loads every page
of the site into a frame and reads its links and ids after the page's own scripts ran; every
link to a page or an anchor of the site must resolve, and the CLI page must list ``lock``.
Those tests skip, saying why, without MkDocs and Material (the docs group) or Chromium.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any
from urllib.parse import unquote, urlsplit

import pytest

import envbisect
from envbisect import errors
from envbisect.cli.main import main
from envbisect.cli.parser import build_parser
from support import browser

ROOT = Path(__file__).resolve().parents[1]
SRC = Path(envbisect.__file__).parent
DOCS = ROOT / "docs"
# The path of mkdocs.yml's site_url ("envbisect/" for https://envbisect.github.io/envbisect/).
SITE_PATH = urlsplit(
    re.search(r"^site_url: (\S+)$", (ROOT / "mkdocs.yml").read_text(), re.M).group(1)  # type: ignore[union-attr]
).path.lstrip("/")


def _hooks() -> ModuleType:
    spec = importlib.util.spec_from_file_location("envbisect_docs_hooks", DOCS / "hooks.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


HOOKS = _hooks()


def _sections(markdown: str) -> dict[str, str]:
    """The CLI page's sections by subcommand (``## envbisect NAME {#NAME}``)."""
    parts = re.split(r"^## envbisect ([\w-]+) \{#[\w-]+\}$", markdown, flags=re.MULTILINE)
    return dict(zip(parts[1::2], parts[2::2], strict=True))


def _flags_in_table(section: str) -> set[str]:
    """The flags and argument names in the first cell of each table row of a section."""
    found: set[str] = set()
    for line in section.splitlines():
        if line.startswith("| `"):
            first = line.split(" | ", 1)[0]
            found.update(re.findall(r"(?<![\w-])(-{1,2}[\w-]+|[A-Z][A-Z_]*|[a-z]+)", first))
    return found


def test_cli_page_lists_every_flag_of_every_subcommand() -> None:
    page = HOOKS.cli_markdown()
    sections = _sections(page)
    parser = build_parser()
    subs = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    assert list(sections) == list(subs.choices)  # every subcommand, in --help's order
    checked = 0
    for name, sub in subs.choices.items():
        documented = _flags_in_table(sections[name])
        for action in sub._actions:
            if action.help is argparse.SUPPRESS:
                continue
            wanted = action.option_strings or [str(action.metavar or action.dest)]
            for flag in wanted:
                assert flag in documented, f"envbisect {name}: {flag} is not on the CLI page"
                checked += 1
            if action.help and action.option_strings:
                help_words = " ".join(str(action.help).split()[:4])
                assert HOOKS.text(help_words) in sections[name], (name, action.option_strings)
    assert checked > 200  # the walk saw the parser, not an empty table
    assert "`--from LOCK`" in sections["lock"] and "`--by-date`" in sections["run"]


def test_help_ends_with_where_the_docs_are(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as ended:
        main(["--help"])
    assert ended.value.code == 0
    tail = " ".join(capsys.readouterr().out.split()[-16:])
    assert tail.endswith("docs: https://envbisect.github.io/envbisect/ (or docs/ in the source: "
                         "nox -s docs, mkdocs serve)")  # fmt: skip
    assert "nox -s docs" in HOOKS.cli_markdown()  # and the CLI page says it too


def _literal_refs(path: Path) -> set[str]:
    return set(re.findall(r'\bref="([a-z0-9-]+)"', path.read_text(encoding="utf-8")))


@pytest.mark.slow
def test_errors_page_lists_every_reference_the_source_raises() -> None:
    page = HOOKS.errors_markdown()
    on_page = set(re.findall(r"^### `([a-z0-9-]+)` \{#\1\}$", page, flags=re.MULTILINE))
    checks = _literal_refs(SRC / "env" / "envreport.py")  # envbisect env's checks, not errors
    in_source = set().union(*(_literal_refs(p) for p in SRC.rglob("*.py"))) - checks
    classes = {c.ref for c in vars(errors).values()
               if isinstance(c, type) and issubclass(c, errors.EnvbisectError)}  # fmt: skip
    assert len(in_source) > 60 and "lock-nothing" in in_source
    assert sorted(in_source - on_page) == []
    assert sorted(classes - on_page) == []
    # a ref passed to a helper as an argument is traced to the callers' literals
    assert "metadata-hash-mismatch" in on_page
    assert HOOKS.collect_refs().unresolved == []
    probes_page = (DOCS / "how-to" / "probes.md").read_text(encoding="utf-8")
    assert sorted(r for r in checks if f"`{r}`" not in probes_page) == []


def test_errors_page_shows_each_raise_site_with_its_message_and_hint() -> None:
    refs = HOOKS.collect_refs()
    sites = refs.sites["lock-nothing"]
    assert [s.path for s in sites] == ["modes/lock/common.py"]
    assert sites[0].message and sites[0].hint  # literals at that raise site
    page = HOOKS.errors_markdown(refs)
    row = next(
        line
        for line in page.splitlines()
        if line.startswith(f"| `modes/lock/common.py:{sites[0].line}`")
    )
    assert HOOKS.code(sites[0].message) in row and HOOKS.code(sites[0].hint) in row
    # an f-string's values stand as {expression}
    assert any("{" in (s.message or "") for s in refs.sites["no-answer"])


def test_exit_code_table_has_every_code() -> None:
    table = HOOKS.exit_codes_markdown()
    codes = {int(c) for c in re.findall(r"^\| (\d+) \|", table, flags=re.MULTILINE)}
    classes = {c.exit_code for c in vars(errors).values()
               if isinstance(c, type) and issubclass(c, errors.EnvbisectError)}  # fmt: skip
    assert classes <= codes
    assert codes == {0, 1, 2, 3, 4, 129, 130, 141, 143}


def test_matrix_schema_page_names_every_key() -> None:
    from envbisect.core.living import spec

    page = HOOKS.matrix_schema_markdown()
    block = page.split("```toml\n", 1)[1].split("```", 1)[0]  # the schema, as the module has it
    for key in spec._MATRIX_KEYS | spec._AXIS_KEYS:
        assert f"`{key}`" in page and re.search(rf"\b{key}\b", block), key
    assert "`minor-latest`" in page and "`contemporary`" in page


def test_every_marker_in_the_docs_has_a_generator() -> None:
    markers = {m for p in DOCS.rglob("*.md") for m in HOOKS.MARKER.findall(p.read_text("utf-8"))}
    assert markers == set(HOOKS.GENERATORS)


# -- the built site, in Chromium ---------------------------------------------------------------

_HARNESS = """<!DOCTYPE html><html><body>
<iframe id="f" style="width:1200px;height:900px;border:0"></iframe>
<pre id="out"></pre><script>
const pages = {pages};
const seen = {{}};
const f = document.getElementById("f");
let i = 0;
function next() {{
  if (i === pages.length) {{
    document.getElementById("out").textContent = JSON.stringify(seen);
    return;
  }}
  f.src = pages[i];
}}
f.addEventListener("load", () => {{
  const d = f.contentDocument;
  seen[pages[i]] = {{
    hrefs: [...d.querySelectorAll("a[href]")].map(a => a.href),
    ids: [...d.querySelectorAll("[id]")].map(e => e.id),
    h2: [...d.querySelectorAll("h2")].map(h => h.textContent.trim()),
  }};
  i += 1;
  next();
}});
next();
</script></body></html>
"""


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    pytest.importorskip(
        "mkdocs",
        reason="the docs group is not installed (pip install -U pip && pip install --group docs)",
    )
    pytest.importorskip("material", reason="mkdocs-material is not installed (the docs group)")
    out = tmp_path_factory.mktemp("docs") / "site"
    proc = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)],
        cwd=ROOT, capture_output=True, text=True, timeout=300,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    return out


@pytest.fixture(scope="module")
def seen(site: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Every page of the built site as Chromium saw it: its links, ids and h2 headings."""
    profile = tmp_path_factory.mktemp("chromium")
    pages = sorted(p.relative_to(site).as_posix() for p in site.rglob("*.html"))
    harness = site / "harness.html"
    harness.write_text(_HARNESS.format(pages=json.dumps(pages)), encoding="utf-8")
    try:
        out = browser.dom(harness.as_uri(), profile, "--allow-file-access-from-files",
                          budget_ms=60000)  # fmt: skip
    finally:
        harness.unlink()
    text = out.split('<pre id="out">', 1)[1].split("</pre>", 1)[0]
    assert text, "the harness wrote nothing: a page did not load"
    found: dict[str, Any] = json.loads(text.replace("&amp;", "&").replace("&lt;", "<")
                                      .replace("&gt;", ">").replace("&quot;", '"'))  # fmt: skip
    assert sorted(found) == pages
    return found


def test_built_site_has_no_broken_internal_link(site: Path, seen: dict[str, Any]) -> None:
    root = site.resolve().as_uri() + "/"
    broken: list[str] = []
    checked = 0
    for page, found in seen.items():
        for href in found["hrefs"]:
            if page == "404.html" and href.startswith("file:///"):
                # served at any path, so its links start at the site's root: site_url's path
                # ("/envbisect/index.html")
                href = root + href.removeprefix("file:///").removeprefix(SITE_PATH)
            if not href.startswith(root):
                assert not href.startswith("file:"), f"{page} links outside the site: {href}"
                continue  # another site (the uv docs, PyPI): not ours to check
            parts = urlsplit(href)
            target = unquote(parts.path)[len(urlsplit(root).path) :] or "index.html"
            if target.endswith("/"):
                target += "index.html"
            checked += 1
            if target not in seen and not (site / target).is_file():
                broken.append(f"{page}: {href} (no such file)")
            elif parts.fragment and target in seen and parts.fragment not in seen[target]["ids"]:
                broken.append(f"{page}: {href} (no such anchor)")
    assert broken == []
    assert checked > 500  # the harness read the navigation and the pages' own links
    assert "reference/errors.html" in seen and "explanation/figures.html" in seen


def test_built_cli_page_lists_lock(seen: dict[str, Any]) -> None:
    cli = seen["reference/cli.html"]
    assert "lock" in cli["ids"] and "run" in cli["ids"]
    assert any(h.startswith("envbisect lock") for h in cli["h2"])
    assert "lock-nothing" in seen["reference/errors.html"]["ids"]
