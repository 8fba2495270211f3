"""The user's own index settings, read the way uv reads them, and where each came from.

uv itself runs with ``--no-config`` and without its index variables (env/uv.py): envbisect
reads the indexes once, here, so that its candidate lists and uv's installs come from the
same place. The order, highest first (uv's documented precedence: "settings provided via
environment variables take precedence over persistent configuration, and settings provided
via the command line take precedence over both", docs.astral.sh/uv/concepts/configuration-files):

1. the flags: ``--index-url``, ``--extra-index-url``;
2. uv's environment variables: ``UV_DEFAULT_INDEX``, then ``UV_INDEX_URL`` (its older name)
   for the main index; ``UV_INDEX`` and ``UV_EXTRA_INDEX_URL`` (space-separated,
   ``name=url`` allowed) for the others;
3. uv's configuration files: ``UV_CONFIG_FILE`` alone when set; else the project's (the
   current folder or the nearest parent with a ``uv.toml``, or a ``pyproject.toml`` with a
   ``[tool.uv]`` table: uv.toml wins in one folder), then the user's
   (``$XDG_CONFIG_HOME/uv/uv.toml``, ``~/.config/uv/uv.toml``), then the system's
   (``$XDG_CONFIG_DIRS/uv/uv.toml``, ``/etc/uv/uv.toml``). A scalar comes from the first
   file that sets it; lists are joined, the project's first. In a file, ``[[index]]`` with
   ``default = true`` or ``index-url`` names the main index (``[pip]``'s keys win there, as
   for ``uv pip``); the other ``[[index]]`` entries (not ``explicit`` ones) and
   ``extra-index-url`` are the others;
4. pip's settings, which uv never reads (docs.astral.sh/uv/pip/compatibility) but a pip user
   set for the same purpose: ``PIP_INDEX_URL``/``PIP_EXTRA_INDEX_URL``, then pip.conf
   (``PIP_CONFIG_FILE``, ``/etc/pip.conf``, ``$XDG_CONFIG_DIRS/pip/pip.conf``,
   ``~/.pip/pip.conf``, ``~/.config/pip/pip.conf``; the later file and ``[install]`` over
   ``[global]`` win, as pip reads them). pip's main index counts only where uv's settings
   name none, and pip's other indexes only where uv's name none;
5. PyPI.

For the other indexes, the first level that names any gives them, and configuration files
add theirs after the flags' or the variables' (uv: "indexes provided via the command line
take precedence over those in the configuration file"). ``--no-config`` (or ``UV_NO_CONFIG``)
keeps the flags only.

``--find-links`` folders the same way: the flag, else ``UV_FIND_LINKS`` (comma-separated),
then uv's files' ``find-links`` lists; pip's ``PIP_FIND_LINKS`` or pip.conf's ``find-links``
only where uv's settings name none. Every other uv setting is not read.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from envbisect.redact import mask_url

PYPI = "https://pypi.org/simple"


@dataclass(frozen=True, slots=True)
class Found:
    """One index URL and where it was set (a flag, a variable, a file's path)."""

    url: str
    origin: str


@dataclass(frozen=True, slots=True, kw_only=True)
class IndexSettings:
    main: Found = field(default_factory=lambda: Found(PYPI, "default"))
    extra: tuple[Found, ...] = ()
    links: tuple[Found, ...] = ()  # --find-links folders (or URLs)
    # The extra indexes came from pip's settings: pip's rule for them (the best version from
    # any index), not uv's first-index rule, or a mirror of a few files would hide PyPI's.
    pip_rule: bool = False

    def describe(self) -> str:
        """The one line said at start: every index, credentials masked, and its origin."""
        parts = [f"{mask_url(self.main.url)} ({self.main.origin})"]
        parts += [f"{mask_url(f.url)} ({f.origin})" for f in self.extra]
        label = "index" if not self.extra else "indexes"
        rule = "; pip's rule: the best version from any of them" if self.pip_rule else ""
        links = "".join(f"; find-links: {mask_url(f.url)} ({f.origin})" for f in self.links)
        return f"envbisect: {label}: " + ", ".join(parts) + rule + links


@dataclass(slots=True)
class _Level:
    main: Found | None = None
    extra: list[Found] = field(default_factory=list)
    links: list[Found] = field(default_factory=list)


def resolve(
    *,
    index_url: str | None,
    extra_index_urls: tuple[str, ...],
    environ: Mapping[str, str],
    cwd: Path,
    no_config: bool = False,
    find_links: tuple[str, ...] = (),
    project: tuple[str, Mapping[str, Any]] | None = None,
) -> IndexSettings:
    """The indexes to use, in the order above (module docstring). ``project``: the origin
    and values of a ``[tool.envbisect]`` table (cli/projectconf.py), after uv's variables
    and before the configuration files."""
    flags = _Level(
        Found(index_url, "--index-url") if index_url is not None else None,
        [Found(u, "--extra-index-url") for u in extra_index_urls],
        [Found(u, "--find-links") for u in find_links],
    )
    if no_config or _truthy(environ.get("UV_NO_CONFIG", "")):
        return _settle([flags])
    table = []
    if project is not None:
        origin, values = project
        main = values.get("index-url")
        table = [
            _Level(
                Found(main, origin) if main else None,
                [Found(u, origin) for u in values.get("extra-index-url", [])],
                [Found(u, origin) for u in values.get("find-links", [])],
            )
        ]
    levels = [flags, _uv_env(environ), *table, *_uv_files(environ, cwd)]
    return _settle(levels, pip=_pip(environ))


def _settle(levels: list[_Level], pip: _Level | None = None) -> IndexSettings:
    main = next((lv.main for lv in levels if lv.main is not None), None)
    # The flags and the variables are one setting for the other indexes (a flag replaces the
    # variable); configuration files add theirs after it.
    head = next((lv.extra for lv in levels[:2] if lv.extra), [])
    extra = [*head, *(f for lv in levels[2:] for f in lv.extra)]
    links = [
        *next((lv.links for lv in levels[:2] if lv.links), []),
        *(f for lv in levels[2:] for f in lv.links),
    ]
    pip_rule = False
    if pip is not None:
        if main is None:
            main = pip.main
        if not extra:
            extra, pip_rule = pip.extra, bool(pip.extra)
        if not links:
            links = pip.links
    main = main or Found(PYPI, "default")
    seen = {main.url}
    unique = []
    for f in extra:
        if f.url not in seen:
            seen.add(f.url)
            unique.append(f)
    folders: list[Found] = []
    for f in links:  # the first mention of each folder
        if all(f.url != g.url for g in folders):
            folders.append(f)
    return IndexSettings(
        main=main, extra=tuple(unique), pip_rule=pip_rule and bool(unique), links=tuple(folders)
    )


def _split(value: str, origin: str) -> list[Found]:
    out = []
    for word in value.split():
        name, sep, url = word.partition("=")
        # ``name=url``: an index's name before its URL (a URL's own = comes after ://).
        if sep and "://" not in name and "://" in url:
            word = url
        out.append(Found(word, origin))
    return out


def _uv_env(environ: Mapping[str, str]) -> _Level:
    level = _Level()
    for var in ("UV_DEFAULT_INDEX", "UV_INDEX_URL"):
        if environ.get(var):
            level.main = Found(environ[var].strip(), var)
            break
    for var in ("UV_INDEX", "UV_EXTRA_INDEX_URL"):
        level.extra += _split(environ.get(var, ""), var)
    level.links = [
        Found(u.strip(), "UV_FIND_LINKS")
        for u in environ.get("UV_FIND_LINKS", "").split(",")
        if u.strip()
    ]
    return level


def _uv_files(environ: Mapping[str, str], cwd: Path) -> list[_Level]:
    if environ.get("UV_CONFIG_FILE"):
        path = Path(environ["UV_CONFIG_FILE"])
        return [_uv_file(path, _read_toml(path))]
    out = []
    project = _project_file(cwd)
    if project is not None:
        out.append(project)
    home = Path(environ.get("HOME") or Path.home())
    user = Path(environ.get("XDG_CONFIG_HOME") or home / ".config") / "uv" / "uv.toml"
    if user.is_file():
        out.append(_uv_file(user, _read_toml(user)))
    dirs = [Path(d) for d in environ.get("XDG_CONFIG_DIRS", "").split(":") if d]
    for folder in [*dirs, Path("/etc")]:
        system = folder / "uv" / "uv.toml"
        if system.is_file():
            out.append(_uv_file(system, _read_toml(system)))
            break  # the first system file only, as uv reads them
    return out


def _project_file(cwd: Path) -> _Level | None:
    for folder in [cwd, *cwd.parents]:
        uv_toml = folder / "uv.toml"
        if uv_toml.is_file():
            return _uv_file(uv_toml, _read_toml(uv_toml))
        pyproject = folder / "pyproject.toml"
        if pyproject.is_file():
            tool = _read_toml(pyproject).get("tool", {})
            if isinstance(tool, dict) and isinstance(tool.get("uv"), dict):
                return _uv_file(pyproject, tool["uv"], prefix="tool.uv.")
    return None


def _uv_file(path: Path, data: dict[str, Any], prefix: str = "") -> _Level:
    level = _Level()
    where = str(path)
    for section, table in (("pip.", data.get("pip")), ("", data)):
        if not isinstance(table, dict):
            continue
        if level.main is None and isinstance(table.get("index-url"), str):
            level.main = Found(table["index-url"], f"{where} {prefix}{section}index-url")
        for url in _strings(table.get("extra-index-url")):
            level.extra.append(Found(url, f"{where} {prefix}{section}extra-index-url"))
        for url in _strings(table.get("find-links")):
            level.links.append(Found(url, f"{where} {prefix}{section}find-links"))
    for entry in data.get("index", []) if isinstance(data.get("index"), list) else []:
        if not isinstance(entry, dict) or not isinstance(entry.get("url"), str):
            continue
        if entry.get("explicit"):
            continue  # only for the packages a source pins to it
        if entry.get("default"):
            level.main = Found(entry["url"], f"{where} {prefix}index (default)")
        else:
            level.extra.append(Found(entry["url"], f"{where} {prefix}index"))
    return level


def _pip(environ: Mapping[str, str]) -> _Level:
    level = _Level()
    files = _pip_files(environ)
    import configparser  # where pip's files are read: not on every start

    parser = configparser.RawConfigParser()
    for path in files:
        try:
            parser.read(path, encoding="utf-8")
        except (configparser.Error, UnicodeDecodeError):
            continue
    for key, attr in (("index-url", "main"), ("extra-index-url", "extra"), ("find-links", "links")):
        var = "PIP_" + key.replace("-", "_").upper()
        if environ.get(var):
            value, origin = environ[var], var
        else:
            value, origin = "", ""
            for section in ("install", "global"):
                if parser.has_option(section, key):
                    value = parser.get(section, key)
                    origin = f"{_pip_origin(files, section, key)} [{section}] {key}"
                    break
        if not value.strip():
            continue
        if attr == "main":
            level.main = Found(value.strip(), origin)
        elif attr == "extra":
            level.extra = [Found(u, origin) for u in value.split()]
        else:
            level.links = [Found(u, origin) for u in value.split()]
    return level


def _pip_files(environ: Mapping[str, str]) -> list[Path]:
    given = environ.get("PIP_CONFIG_FILE")
    if given == os.devnull:
        return []  # pip: no configuration file at all
    home = Path(environ.get("HOME") or Path.home())
    dirs = [Path(d) for d in environ.get("XDG_CONFIG_DIRS", "/etc/xdg").split(":") if d]
    user = Path(environ.get("XDG_CONFIG_HOME") or home / ".config")
    candidates = [
        *(d / "pip" / "pip.conf" for d in dirs),
        Path("/etc/pip.conf"),
        home / ".pip" / "pip.conf",
        user / "pip" / "pip.conf",
        *([Path(given)] if given else []),
    ]
    return [p for p in candidates if p.is_file()]


def _pip_origin(files: list[Path], section: str, key: str) -> str:
    """The last pip.conf that sets the key (pip's later files win)."""
    for path in reversed(files):
        import configparser

        one = configparser.RawConfigParser()
        try:
            one.read(path, encoding="utf-8")
        except (configparser.Error, UnicodeDecodeError):
            continue
        if one.has_option(section, key):
            return str(path)
    return "pip.conf"


def _read_toml(path: Path) -> dict[str, Any]:
    from envbisect.errors import UsageError

    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover
        import tomli as tomllib
    try:
        data: dict[str, Any] = tomllib.loads(path.read_text(encoding="utf-8"))
        return data
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as e:
        raise UsageError(
            f"cannot read uv's configuration file {path}: {e}",
            hint="fix the file, or pass --no-config to ignore every index setting but the flags",
            ref="bad-config",
        ) from None


def _strings(value: object) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        return [v for v in value if isinstance(v, str)]
    return []


def _truthy(value: str) -> bool:
    return value.strip().lower() in ("1", "true", "yes", "on")
