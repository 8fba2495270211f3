"""Lockfiles of an environment, both pinned with hashes: the text tools install from.

    requirements.txt   ``name==version --hash=sha256:...`` (pip and uv, ``--require-hashes``)
    pylock.toml        PEP 751, one ``[[packages]]`` entry per installed distribution

Pure: entries in, text out; the caller reads the clock (``when``) and writes the files.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any
from urllib.parse import unquote, urlsplit

from packaging.utils import canonicalize_name

from envbisect import __version__
from envbisect.model import DistFile, IndexConfig
from envbisect.redact import mask_url, strip_credentials


@dataclass(frozen=True, slots=True, kw_only=True)
class LockEntry:
    name: str
    version: str
    index: str | None
    files: tuple[DistFile, ...]  # the files of this version usable on the target, with hashes
    # Written ``===``: a build with a local label (2.13.0+cpu in a --find-links folder) would
    # meet ``==2.13.0`` too, and an installer would take it and refuse its unlisted hash.
    exact: bool = False


def index_options(indexes: IndexConfig, used: set[str] | None = None) -> list[str]:
    """The lines that make a requirements lock install anywhere: where its files come from,
    in the order uv consults them (credentials never written: the installer brings its own,
    from the environment or a keyring). ``used``: the indexes the locked files came from
    (``DistFile.index``); the other extra indexes and folders are left out, so that uv's
    first-index rule cannot send a package to a mirror that does not hold the locked file."""

    def wanted(url: str) -> bool:
        return used is None or mask_url(url) in used or url in used

    out = [f"--index-url {strip_credentials(indexes.index_url)}"]
    out += [
        f"--extra-index-url {strip_credentials(u)}" for u in indexes.extra_index_urls if wanted(u)
    ]
    if indexes.torch_index and wanted(indexes.torch_index):  # torch's own files
        out.append(f"--extra-index-url {strip_credentials(indexes.torch_index)}")
    out += [f"--find-links {strip_credentials(u)}" for u in indexes.find_links if wanted(u)]
    return out


def requirements_lock(
    entries: list[LockEntry], *, header: list[str], indexes: IndexConfig | None = None
) -> str:
    out = [f"# {h}" for h in header]
    used = {f.index for e in entries for f in e.files}
    out += index_options(indexes, used) if indexes is not None else []
    for e in sorted(entries, key=lambda e: canonicalize_name(e.name)):
        hashes = sorted({h for f in e.files if (h := f.hash("sha256"))})
        line = f"{e.name}{'===' if e.exact else '=='}{e.version}"
        if not hashes:
            out.append(f"{line}  # no hash known for this file")
            continue
        out.append(line + " \\")
        out += [
            f"    --hash=sha256:{h}" + (" \\" if i < len(hashes) - 1 else "")
            for i, h in enumerate(hashes)
        ]
    return "\n".join(out) + "\n"


@dataclass(frozen=True, slots=True)
class Pylocked:
    """A PEP 751 lockfile's text, validated by ``packaging.pylock``, and the entries it had
    to leave out: no file of theirs can be named by URL or path (a wheel from a folder whose
    public index could not be read), and an entry without one is a lock uv refuses."""

    text: str
    left_out: tuple[str, ...]  # ``name==version`` of each entry left out


def pylock(
    entries: list[LockEntry],
    *,
    requires_python: str,
    environment: str,
    when: datetime,
    notes: Sequence[str] = (),
) -> Pylocked:
    """A PEP 751 lockfile (``lock-version = "1.0"``), written by tomli-w and validated with
    ``packaging.pylock`` before it is returned. ``notes``: what keeps it from installing
    anywhere (comments at the top, and ``[tool.envbisect] notes``). A file whose public URL is
    unknown (``url == ""``) is never guessed: it is dropped, and an entry left with no file
    is left out of ``packages``, said in the notes and in ``[tool.envbisect] left-out``."""
    import tomli_w
    from packaging.pylock import Pylock, PylockValidationError

    packages: list[dict[str, Any]] = []
    left_out: list[str] = []
    for e in sorted(entries, key=lambda e: canonicalize_name(e.name)):
        named = [f for f in e.files if f.hash("sha256") and f.url]
        sdists = [f for f in named if not f.is_wheel]
        wheels = [f for f in named if f.is_wheel]
        if not sdists and not wheels:
            left_out.append(f"{canonicalize_name(e.name)}=={e.version}")
            continue
        package: dict[str, Any] = {"name": canonicalize_name(e.name), "version": e.version}
        if e.index:
            package["index"] = strip_credentials(e.index)
        if sdists:
            package["sdist"] = _file_table(sdists[0])
        if wheels:
            package["wheels"] = [_file_table(w) for w in wheels]
        packages.append(package)
    notes = [*notes]
    if left_out:
        notes.append(
            f"left out of this file: {', '.join(left_out)} (no public URL is known for its "
            "files; install it first from the index the requirements lock beside this file "
            "names, then this file)"
        )
    tool: dict[str, Any] = {"generated": when.astimezone(timezone.utc).replace(microsecond=0)}
    if notes:
        tool["notes"] = notes
    if left_out:
        tool["left-out"] = left_out
    data: dict[str, Any] = {
        "lock-version": "1.0",
        "environments": [environment],
        "requires-python": requires_python,
        "created-by": f"envbisect {__version__}",
        "packages": packages,
        "tool": {"envbisect": tool},
    }
    try:
        Pylock.from_dict(data)
    except PylockValidationError as e:  # a bug here, never a file written that tools refuse
        raise ValueError(f"the pylock envbisect made does not validate: {e}") from e
    # A comment cannot hold a line break or a control character: each note on one plain line.
    head = "".join(f"# {_one_line(n)}\n" for n in notes)
    return Pylocked(text=head + tomli_w.dumps(data), left_out=tuple(left_out))


def _file_table(f: DistFile) -> dict[str, Any]:
    table: dict[str, Any] = {"name": f.filename}
    if f.url.startswith("file://"):  # a --find-links folder: PEP 751 names local files by path
        table["path"] = unquote(urlsplit(f.url).path)
    else:
        table["url"] = strip_credentials(f.url)
    if f.upload_time is not None:
        table["upload-time"] = f.upload_time.astimezone(timezone.utc).replace(microsecond=0)
    if f.size is not None:
        table["size"] = f.size
    table["hashes"] = {"sha256": f.hash("sha256") or ""}
    return table


def _one_line(text: str) -> str:
    return " ".join("".join(c if c.isprintable() else " " for c in text).split())
