"""Write the data ``envbisect check`` ships (src/envbisect/data/checkdb.json), from PyPI and
from the published tables.

    python bench/make_check_data.py                 # everything (PyPI, a few minutes)
    python bench/make_check_data.py --published     # only the tables' part, from results/

What it reads, and why each part is what ``check`` needs (core/checks/):

- ``releases``: every release of llamafactory and llmtuner, and of the packages whose own pins
  bite in LLaMA-Factory's environments (transformers, trl, peft, accelerate, datasets) from
  2023 on: each release's Requires-Dist as PyPI serves it (extras kept, with their markers).
  For llamafactory and llmtuner also the versions their own code checks at run time: every
  ``require_version("...")`` / ``check_version("...")`` call with a version range, read from
  the release's wheel with ``ast``, with where it is (``extras/misc.py:check_dependencies``),
  the stage it applies to (a call under ``train/<stage>/``, or under an ``if ... stage ==
  "ppo"``; else every stage) and whether ``DISABLE_VERSION_CHECK=1`` skips it (a
  ``check_version`` that is not mandatory, or a call under an ``if`` that reads that
  variable). Calls elsewhere (one model's patch, a quantisation method) are left out: a
  report rarely says whether they ran. For transformers, the packages its import checks
  (``dependency_versions_check.py``'s ``pkgs_to_check_at_runtime``), read from the wheel.
- ``bitsandbytes``: for each release from 0.39 (PyPI), the CUDA versions its wheels carry a
  binary for, per platform (``libbitsandbytes_cuda124.so`` / ``.dll``), read from the wheels'
  file lists with HTTP range requests (no wheel is downloaded whole).
- ``published``: the measured cells of the published tables (results/*/results.json): the
  versions, the outcome and, for a failure, its signature; cells that were never built
  (outside the pins) are left out.

Nothing here runs at ``check`` time: check reads the file the package carries (offline).
"""

from __future__ import annotations

import argparse
import ast
import io
import json
import re
import sys
import zipfile
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timezone
from pathlib import Path
from typing import Any
from urllib.parse import urljoin

import httpx
from packaging.requirements import InvalidRequirement, Requirement
from packaging.version import InvalidVersion, Version

from envbisect.core.checks.published import table_of
from envbisect.modes.living.checkdata import write_published

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "src" / "envbisect" / "data" / "checkdb.json"
PYPI = "https://pypi.org/pypi"

# The projects whose code is read for its checks, every release.
WITH_CODE = ("llamafactory", "llmtuner")
# Requires-Dist only, releases uploaded from this day (LLaMA-Factory's first release: 2023-07).
DECLARED = ("transformers", "trl", "peft", "accelerate", "datasets")
SINCE = "2023-01-01"
STAGES = ("sft", "pt", "rm", "dpo", "kto", "ppo")
_CHECK_CALLS = ("require_version", "check_version")


class RemoteFile(io.RawIOBase):
    """A file on an HTTP server read through range requests: enough for ``zipfile`` to read
    a wheel's file list and one member without downloading the whole wheel."""

    def __init__(self, client: httpx.Client, url: str) -> None:
        self.client, self.url, self.pos = client, url, 0
        head = client.head(url, follow_redirects=True)
        head.raise_for_status()
        self.size = int(head.headers["content-length"])

    def seekable(self) -> bool:
        return True

    def readable(self) -> bool:
        return True

    def tell(self) -> int:
        return self.pos

    def seek(self, offset: int, whence: int = 0) -> int:
        base = {0: 0, 1: self.pos, 2: self.size}[whence]
        self.pos = base + offset
        return self.pos

    def read(self, n: int = -1) -> bytes:
        end = self.size if n is None or n < 0 else min(self.size, self.pos + n)
        if end <= self.pos:
            return b""
        r = self.client.get(
            self.url, headers={"Range": f"bytes={self.pos}-{end - 1}"}, follow_redirects=True
        )
        r.raise_for_status()
        self.pos += len(r.content)
        return r.content

    def readinto(self, b: Any) -> int:
        data = self.read(len(b))
        b[: len(data)] = data
        return len(data)


def releases(client: httpx.Client, project: str) -> dict[str, Any]:
    """Every release's files, their URLs absolute (a mirror serves them relative)."""
    page = f"{PYPI}/{project}/json"
    r = client.get(page)
    r.raise_for_status()
    out: dict[str, Any] = r.json()["releases"]
    for files in out.values():
        for f in files:
            f["url"] = urljoin(page, f["url"])
    return out


def wheel_requires(z: zipfile.ZipFile) -> list[str]:
    """A wheel's Requires-Dist (its METADATA: PyPI's per-version JSON and PEP 658 files are
    not served everywhere, the wheel always is)."""
    meta = next(n for n in z.namelist() if re.fullmatch(r"[^/]+\.dist-info/METADATA", n))
    text = z.read(meta).decode("utf-8", "replace").split("\n\n", 1)[0]
    return _requires(re.findall(r"^Requires-Dist:\s*(.+?)\s*$", text, re.MULTILINE))


def _wheel(files: list[Any]) -> dict[str, Any] | None:
    """The release's pure-Python wheel, else its first wheel."""
    wheels = [f for f in files if f["packagetype"] == "bdist_wheel"]
    return next((f for f in wheels if f["filename"].endswith("-any.whl")), None) or (
        wheels[0] if wheels else None
    )


def _public(versions: dict[str, Any], since: str | None) -> Iterator[tuple[str, list[Any]]]:
    for v, files in versions.items():
        try:
            parsed = Version(v)
        except InvalidVersion:
            continue
        if parsed.is_prerelease or not files or all(f.get("yanked") for f in files):
            continue
        if since and min(f["upload_time"] for f in files) < since:
            continue
        yield v, files


def _requires(raw: list[str] | None) -> list[str]:
    out = []
    for text in raw or []:
        try:
            out.append(str(Requirement(text)))
        except InvalidRequirement:
            continue
    return out


def _declared(requires: list[str]) -> list[str]:
    """What a release declares for every install: its requirements without an extra, and
    those of its ``torch`` extra (what transformers asks of accelerate when it is there)."""
    out = []
    for text in requires:
        marker = Requirement(text).marker
        if marker is None or "extra" not in str(marker) or str(marker) == 'extra == "torch"':
            out.append(text)
    return out


# -- the checks a release's own code makes --------------------------------------------------


def _trees(wheel: bytes, prefix: str) -> Iterator[tuple[str, ast.Module]]:
    """Each Python module of the wheel under ``prefix``, parsed, in name order (one that does
    not parse left out)."""
    with zipfile.ZipFile(io.BytesIO(wheel)) as z:
        for name in sorted(z.namelist()):
            if not name.startswith(prefix) or not name.endswith(".py"):
                continue
            try:
                yield name, ast.parse(z.read(name).decode("utf-8", "replace"))
            except SyntaxError:
                continue


def code_checks(wheel: bytes, package: str) -> list[dict[str, Any]]:
    """Every version check of the release's code that applies to a stage or to all (module
    doc), in the order of its files."""
    found: list[dict[str, Any]] = []
    for name, tree in _trees(wheel, f"{package}/"):
        rel = name[len(package) + 1 :]
        for call, defs, conds in _calls(tree, [], []):
            one = _classify(call, rel, defs, conds)
            if one is not None and one not in found:
                found.append(one)
    return found


def arguments(wheel: bytes, package: str) -> list[str]:
    """Every field of the dataclasses in the release's ``hparams`` package: the keys its
    HfArgumentParser accepts in a config (``Some keys are not used by the HfArgumentParser:
    ['enable_liger_kernel']`` names a key the release does not define)."""
    found: set[str] = set()
    for _, tree in _trees(wheel, f"{package}/hparams/"):
        for cls in ast.walk(tree):
            if isinstance(cls, ast.ClassDef):
                found.update(
                    s.target.id
                    for s in cls.body
                    if isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name)
                )
    return sorted(found)


def _calls(
    node: ast.AST, defs: list[str], conds: list[str]
) -> Iterator[tuple[ast.Call, list[str], list[str]]]:
    """Each call in ``node`` with the functions and ``if`` tests it sits under."""
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            yield from _calls(child, [*defs, child.name], conds)
        elif isinstance(child, ast.If):
            test = ast.unparse(child.test)
            yield from _calls(child.test, defs, conds)
            for stmt in child.body:
                yield from _calls(_module(stmt), defs, [*conds, test])
            for stmt in child.orelse:
                yield from _calls(_module(stmt), defs, [*conds, f"not ({test})"])
        else:
            if isinstance(child, ast.Call):
                yield child, defs, conds
            yield from _calls(child, defs, conds)


def _module(stmt: ast.stmt) -> ast.Module:
    return ast.Module(body=[stmt], type_ignores=[])


def _classify(call: ast.Call, rel: str, defs: list[str], conds: list[str]) -> dict[str, Any] | None:
    f = call.func
    name = f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else ""
    if name not in _CHECK_CALLS or not call.args:
        return None
    first = call.args[0]
    if not (isinstance(first, ast.Constant) and isinstance(first.value, str)):
        return None
    try:
        req = Requirement(first.value)
    except InvalidRequirement:
        return None
    if not req.specifier:
        return None  # "must be installed": a report does not list what is missing
    joined = " and ".join(conds)
    folder = re.match(r"train/(\w+)/", rel)
    stages = re.findall(r"stage\s*==\s*['\"](\w+)['\"]", joined)
    if folder and folder.group(1) in STAGES:
        stage: str | None = folder.group(1)
    elif stages:
        stage = stages[0]
    elif "check_dependencies" in defs:
        stage = None
    else:
        return None  # one model's or one method's check: left out (module doc)
    mandatory = any(
        k.arg == "mandatory" and isinstance(k.value, ast.Constant) and bool(k.value.value)
        for k in call.keywords
    )
    skippable = (name == "check_version" and not mandatory) or "DISABLE_VERSION_CHECK" in joined
    return {
        "req": str(req),
        "stage": stage,
        "where": f"{rel}:{'.'.join(defs) or '<module>'}",
        "skippable": skippable,
    }


def runtime_checked(z: zipfile.ZipFile) -> list[str]:
    """transformers' ``pkgs_to_check_at_runtime``, read from its wheel."""
    try:
        text = z.read("transformers/dependency_versions_check.py").decode()
    except KeyError:
        return []
    m = re.search(r"pkgs_to_check_at_runtime\s*=\s*(\[[^\]]*\]|\"[^\"]*\"\.split\(\))", text)
    if m is None:
        return []
    expr = m.group(1)
    if expr.endswith(".split()"):
        return expr[1:-9].split()
    return [str(x) for x in ast.literal_eval(expr)]


def bitsandbytes_binaries(client: httpx.Client, files: list[Any]) -> dict[str, list[str]]:
    """{platform: [CUDA versions with a binary]} of one release's wheels."""
    out: dict[str, set[str]] = {}
    for f in files:
        if f["packagetype"] != "bdist_wheel":
            continue
        tag = f["filename"].rsplit("-", 1)[-1]
        with zipfile.ZipFile(RemoteFile(client, f["url"])) as z:
            names = z.namelist()
        for n in names:
            m = re.search(r"libbitsandbytes_cuda(\d+)(?:_nocublaslt)?\.(so|dll|dylib)$", n)
            if m is None:
                continue
            digits = m.group(1)
            cuda = f"{digits[:-1]}.{digits[-1]}"
            system = {"so": "Linux", "dll": "Windows", "dylib": "Darwin"}[m.group(2)]
            if "win" in tag and system != "Windows":
                continue
            out.setdefault(system, set()).add(cuda)
    return {k: sorted(v, key=Version) for k, v in sorted(out.items())}


# -- the published tables ------------------------------------------------------------------------


def published(results: Path) -> list[dict[str, Any]]:
    """The measured cells of each published table (module doc), as check reads them."""
    return [
        table_of(json.loads(path.read_text(encoding="utf-8")), path.parent.name)
        for path in sorted(results.glob("*/results.json"))
    ]


# -- the whole file -------------------------------------------------------------------------------


def from_pypi(client: httpx.Client) -> dict[str, Any]:
    out: dict[str, dict[str, Any]] = {}
    for project in WITH_CODE:
        out[project] = {}
        for v, files in _public(releases(client, project), None):
            wheel = _wheel(files)
            if wheel is None:
                continue
            data = client.get(wheel["url"], follow_redirects=True).content
            with zipfile.ZipFile(io.BytesIO(data)) as z:
                requires = wheel_requires(z)
            out[project][v] = {
                "requires": requires,
                "checks": code_checks(data, project),
                "arguments": arguments(data, project),
            }
            print(f"{project} {v}: {len(out[project][v]['checks'])} checks", file=sys.stderr)
    for project in DECLARED:
        versions = dict(_public(releases(client, project), SINCE))

        def one(files: list[Any], project: str = project) -> dict[str, Any] | None:
            wheel = _wheel(files)
            if wheel is None:
                return None
            with zipfile.ZipFile(RemoteFile(client, wheel["url"])) as z:
                entry: dict[str, Any] = {"requires": _declared(wheel_requires(z))}
                if project == "transformers":
                    entry["runtime"] = runtime_checked(z)
            return entry

        with ThreadPoolExecutor(8) as pool:
            entries = dict(zip(versions, pool.map(one, versions.values()), strict=True))
        out[project] = {v: e for v, e in entries.items() if e is not None}
        print(f"{project}: {len(out[project])} releases", file=sys.stderr)
    return out


def bitsandbytes(client: httpx.Client) -> dict[str, Any]:
    found = {}
    for v, files in _public(releases(client, "bitsandbytes"), None):
        if Version(v) < Version("0.39.0"):
            continue
        found[v] = bitsandbytes_binaries(client, files)
        print(f"bitsandbytes {v}: {found[v]}", file=sys.stderr)
    return found


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    ap.add_argument("--published", action="store_true", help="only the tables' part")
    ap.add_argument(
        "--arguments", action="store_true", help="only the config keys of LLaMA-Factory's releases"
    )
    ap.add_argument("--results", type=Path, default=ROOT / "results")
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args(argv)
    db: dict[str, Any] = {
        "schema": 1,
        "written": datetime.now(timezone.utc).strftime("%Y-%m-%d"),
        "by": "bench/make_check_data.py",
    }
    if args.published:  # what every publish in this checkout does (modes/living/checkdata.py)
        write_published(args.out, args.results)
        print(f"wrote {args.out} ({args.out.stat().st_size // 1024} KiB)", file=sys.stderr)
        return 0
    if args.arguments:  # the config keys each release defines, into the file as it is
        old = json.loads(args.out.read_text())
        with httpx.Client(timeout=60, headers={"User-Agent": "envbisect-check-data"}) as client:
            for project in WITH_CODE:
                for v, files in _public(releases(client, project), None):
                    wheel = _wheel(files)
                    if wheel is None or v not in old["releases"].get(project, {}):
                        continue
                    data = client.get(wheel["url"], follow_redirects=True).content
                    old["releases"][project][v]["arguments"] = arguments(data, project)
        args.out.write_text(
            json.dumps(old, indent=None, separators=(",", ":"), sort_keys=True) + "\n"
        )
        return 0
    with httpx.Client(timeout=60, headers={"User-Agent": "envbisect-check-data"}) as client:
        db["releases"] = from_pypi(client)
        db["bitsandbytes"] = bitsandbytes(client)
    db["published"] = published(args.results)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(db, indent=None, separators=(",", ":"), sort_keys=True) + "\n")
    print(f"wrote {args.out} ({args.out.stat().st_size // 1024} KiB)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
