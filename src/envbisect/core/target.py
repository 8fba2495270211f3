"""The machine a candidate environment is for: interpreter, platform, tags, markers.

Pure: a ``Target`` is built from facts (``Target.from_facts``) that the materialize edge reads
off the target interpreter by running ``FACTS_SCRIPT`` with it. Wheel compatibility is computed
with ``packaging.tags`` *for that interpreter*, never for the one running envbisect.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from packaging import tags
from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.utils import InvalidWheelFilename, parse_wheel_filename
from packaging.version import InvalidVersion, Version

# Run with the target interpreter (``python -I -c FACTS_SCRIPT``); prints one JSON object.
# Kept to the standard library and Python 3.6 syntax so that any target can run it.
FACTS_SCRIPT = r"""
import json, os, platform, sys, sysconfig
impl = sys.implementation.name
try:
    libc = os.confstr("CS_GNU_LIBC_VERSION") or ""
except (AttributeError, ValueError, OSError):
    libc = ""
markers = {
    "implementation_name": impl,
    "implementation_version": "{0.major}.{0.minor}.{0.micro}".format(sys.implementation.version),
    "os_name": os.name,
    "platform_machine": platform.machine(),
    "platform_release": platform.release(),
    "platform_system": platform.system(),
    "platform_version": platform.version(),
    "python_full_version": platform.python_version(),
    "platform_python_implementation": platform.python_implementation(),
    "python_version": ".".join(platform.python_version_tuple()[:2]),
    "sys_platform": sys.platform,
}
print(json.dumps({
    "executable": sys.executable,
    "implementation": impl,
    "version": list(sys.version_info[:3]),
    "abiflags": sysconfig.get_config_var("abiflags") or getattr(sys, "abiflags", "") or "",
    "platform": sysconfig.get_platform(),
    "glibc": libc.split(" ")[1] if libc.startswith("glibc ") else None,
    "macos": platform.mac_ver()[0] or None,
    "markers": markers,
}))
"""

_LEGACY_MANYLINUX = {17: "manylinux2014", 12: "manylinux2010", 5: "manylinux1"}


@dataclass(frozen=True, slots=True, kw_only=True)
class Target:
    """An interpreter on a machine, as far as wheel selection and markers are concerned."""

    executable: str
    implementation: str
    version: tuple[int, int, int]
    abiflags: str
    platform: str
    glibc: tuple[int, int] | None
    macos: tuple[int, int] | None
    markers: tuple[tuple[str, str], ...]

    @classmethod
    def from_facts(cls, facts: dict[str, Any]) -> Target:
        ver = facts["version"]
        glibc = _two_ints(facts.get("glibc"))
        macos = _two_ints(facts.get("macos"))
        return cls(
            executable=str(facts["executable"]),
            implementation=str(facts["implementation"]),
            version=(int(ver[0]), int(ver[1]), int(ver[2])),
            abiflags=str(facts.get("abiflags") or ""),
            platform=str(facts["platform"]),
            glibc=glibc,
            macos=macos,
            markers=tuple(sorted((str(k), str(v)) for k, v in facts.get("markers", {}).items())),
        )

    @property
    def python_version(self) -> Version:
        return Version(".".join(map(str, self.version)))

    @property
    def short(self) -> str:
        """A human label such as ``cp311-manylinux_2_36_x86_64``."""
        plats = self.platform_tags()
        return f"{self.interpreter_tag}-{plats[0] if plats else self.platform}"

    @property
    def identity(self) -> str:
        """What the interpreter *is*, for environment ids: implementation, full version,
        ABI flags and its best platform tag; never its path, so the same interpreter reached
        through another path (a venv's, a symlink) or on another node has the same id."""
        plats = self.platform_tags()
        version = ".".join(map(str, self.version))
        return (
            f"{self.implementation} {version}{self.abiflags} {plats[0] if plats else self.platform}"
        )

    def described(self) -> dict[str, str]:
        """The interpreter as a published table records it: implementation, full version, ABI
        tag and best platform tag (``identity``'s facts, one field each), never its path:
        a committed ``results.json`` reads the same on every machine."""
        plats = self.platform_tags()
        return {
            "implementation": self.implementation,
            "version": ".".join(map(str, self.version)),
            "abi": self.abi_tag,
            "platform": plats[0] if plats else self.platform,
        }

    @property
    def abi_tag(self) -> str:
        """``cp311``, ``cp313t``: the ABI tag of CPython's own wheels; ``none`` elsewhere."""
        if self.implementation != "cpython":
            return "none"
        return f"cp{self.version[0]}{self.version[1]}{self.abiflags}"

    @property
    def interpreter_tag(self) -> str:
        prefix = tags.INTERPRETER_SHORT_NAMES.get(self.implementation, self.implementation)
        return f"{prefix}{self.version[0]}{self.version[1]}"

    def marker_environment(self) -> dict[str, str]:
        return dict(self.markers)

    def platform_tags(self) -> list[str]:
        return list(_platforms(self.platform, self.glibc, self.macos))

    def supported_tags(self) -> list[tags.Tag]:
        """Tags in priority order, as pip and uv compute them for this interpreter."""
        py = (self.version[0], self.version[1])
        plats = self.platform_tags()
        if self.implementation == "cpython":
            abis = [f"cp{py[0]}{py[1]}{self.abiflags}"]
            found = list(tags.cpython_tags(py, abis=abis, platforms=plats))
        else:
            found = list(tags.generic_tags(self.interpreter_tag, platforms=plats))
        found += list(tags.compatible_tags(py, self.interpreter_tag, plats))
        return found

    def accepts_requires_python(self, spec: str | None) -> bool:
        if not spec:
            return True
        return _accepts(spec, self.version)

    def wheel_compatible(self, filename: str, supported: frozenset[tags.Tag]) -> bool:
        """Whether ``filename`` is a valid wheel name with a tag in ``supported``; the same
        answer as ``parse_wheel_filename`` gives, at the cost of a split and cached lookups
        (the tag part repeats across every version of a project)."""
        if not filename.endswith(".whl"):
            return False
        stem = filename[:-4]
        dashes = stem.count("-")
        if dashes not in (4, 5):
            return False
        parts = stem.split("-", dashes - 2)
        if dashes == 5 and _BUILD_TAG.match(parts[2]) is None:
            return False
        return _wheel_name_ok(parts[0], parts[1]) and _tags_ok(parts[-1], supported)


# A project page lists thousands of files, most of them sharing a requires-python and a tag
# set, and a plan reads the same pages for every environment: parse each string once.


@functools.lru_cache(maxsize=1 << 16)
def wheel_tags(filename: str) -> frozenset[tags.Tag] | None:
    """The tags of a wheel filename (None: not a valid one)."""
    try:
        return frozenset(parse_wheel_filename(filename)[3])
    except InvalidWheelFilename:
        return None


_BUILD_TAG = re.compile(r"(\d+)(.*)\Z", re.ASCII)
_WHEEL_NAME = re.compile(r"^[\w._]+\Z", re.UNICODE)


@functools.lru_cache(maxsize=1 << 14)
def _wheel_name_ok(name: str, version: str) -> bool:
    """The checks ``parse_wheel_filename`` makes of the name and version fields."""
    if "__" in name or _WHEEL_NAME.match(name) is None:
        return False
    try:
        Version(version)
    except InvalidVersion:
        return False
    return True


# Answers per tag set, by identity: two equal sets of a thousand tags would be compared tag
# by tag on every lookup of a cache keyed by the set itself. The set is held, so its id stays.
_TAG_ANSWERS: dict[int, tuple[frozenset[tags.Tag], dict[str, bool]]] = {}


def _tags_ok(tag_text: str, supported: frozenset[tags.Tag]) -> bool:
    held = _TAG_ANSWERS.get(id(supported))
    if held is None or held[0] is not supported:
        if len(_TAG_ANSWERS) >= 64:
            _TAG_ANSWERS.clear()
        held = _TAG_ANSWERS[id(supported)] = (supported, {})
    answers = held[1]
    found = answers.get(tag_text)
    if found is None:
        try:
            found = not supported.isdisjoint(tags.parse_tag(tag_text))
        except tags.InvalidTag:
            found = False
        answers[tag_text] = found
    return found


@functools.lru_cache(maxsize=1 << 12)
def _accepts(spec: str, version: tuple[int, int, int]) -> bool:
    try:
        return SpecifierSet(spec).contains(Version(".".join(map(str, version))), prereleases=True)
    except InvalidSpecifier:
        return True  # an unparsable requires-python is ignored, as pip and uv do


def _two_ints(value: object) -> tuple[int, int] | None:
    if not value:
        return None
    m = re.match(r"(\d+)\.(\d+)", str(value))
    return (int(m.group(1)), int(m.group(2))) if m else None


def _platforms(
    platform: str, glibc: tuple[int, int] | None, macos: tuple[int, int] | None
) -> Iterator[str]:
    """Platform tags for a ``sysconfig.get_platform()`` value, most specific first (PEP 600)."""
    plat = platform.replace("-", "_").replace(".", "_")
    if plat.startswith("linux_"):
        arch = plat[len("linux_") :]
        if glibc is not None and glibc[0] == 2:
            for minor in range(glibc[1], 4, -1):
                yield f"manylinux_2_{minor}_{arch}"
                legacy = _LEGACY_MANYLINUX.get(minor)
                if legacy and (legacy == "manylinux2014" or arch in ("x86_64", "i686")):
                    yield f"{legacy}_{arch}"
        yield plat
    elif plat.startswith("macosx_") and macos is not None:
        arch = plat.split("_", 3)[-1]
        yield from tags.mac_platforms(macos, arch)
    else:
        yield plat


_LEGACY_GLIBC = {"manylinux1": (2, 5), "manylinux2010": (2, 12), "manylinux2014": (2, 17)}


_VERSION_REQUEST = re.compile(r"(?:cpython|python|cp)?-?(?P<major>3)\.?(?P<minor>\d{1,2})")


def version_request(request: str | None) -> tuple[int, int] | None:
    """``(3, 10)`` for a request that names a CPython version alone (``3.10``, ``cp310``,
    ``python3.10``); None for a path or anything else."""
    m = _VERSION_REQUEST.fullmatch((request or "").strip().lower())
    return (int(m["major"]), int(m["minor"])) if m else None


def for_version(host: Target, major: int, minor: int) -> Target:
    """CPython ``major.minor`` on ``host``'s platform, for planning without that interpreter
    (as ``uv pip compile --python-version`` plans): the version's first release (X.Y.0),
    the host's platform, C library and OS markers. Only building needs the interpreter."""
    full = f"{major}.{minor}.0"
    markers = dict(host.markers)
    markers.update(
        python_version=f"{major}.{minor}",
        python_full_version=full,
        implementation_name="cpython",
        implementation_version=full,
        platform_python_implementation="CPython",
    )
    return Target(
        executable=f"{major}.{minor}",
        implementation="cpython",
        version=(major, minor, 0),
        abiflags="",
        platform=host.platform,
        glibc=host.glibc,
        macos=host.macos,
        markers=tuple(sorted(markers.items())),
    )


def with_platform(base: Target, tag: str) -> Target:
    """``base`` (its interpreter) on another platform, named by a wheel platform tag.

    ``manylinux_2_28_x86_64`` / ``manylinux2014_aarch64`` (glibc level from the tag),
    ``linux_x86_64``, ``macosx_11_0_arm64``, ``win_amd64``. Raises ``ValueError`` for others.
    """
    markers = dict(base.markers)
    m = re.fullmatch(r"manylinux_(\d+)_(\d+)_(\w+)", tag)
    legacy = re.fullmatch(r"(manylinux1|manylinux2010|manylinux2014)_(\w+)", tag)
    mac = re.fullmatch(r"macosx_(\d+)_(\d+)_(\w+)", tag)
    glibc: tuple[int, int] | None = None
    macos: tuple[int, int] | None = None
    if m or legacy or tag.startswith("linux_"):
        if m:
            glibc, arch = (int(m.group(1)), int(m.group(2))), m.group(3)
        elif legacy:
            glibc, arch = _LEGACY_GLIBC[legacy.group(1)], legacy.group(2)
        else:
            arch = tag[len("linux_") :]
        platform = f"linux-{arch}"
        markers.update(
            sys_platform="linux", platform_system="Linux", os_name="posix", platform_machine=arch
        )
    elif mac:
        macos, arch = (int(mac.group(1)), int(mac.group(2))), mac.group(3)
        platform = f"macosx-{macos[0]}.{macos[1]}-{arch}"
        markers.update(
            sys_platform="darwin", platform_system="Darwin", os_name="posix", platform_machine=arch
        )
    elif tag in ("win_amd64", "win32", "win_arm64"):
        platform = tag.replace("_", "-")
        machine = {"win_amd64": "AMD64", "win32": "x86", "win_arm64": "ARM64"}[tag]
        markers.update(
            sys_platform="win32", platform_system="Windows", os_name="nt", platform_machine=machine
        )
    else:
        raise ValueError(tag)
    return Target(
        executable=base.executable,
        implementation=base.implementation,
        version=base.version,
        abiflags=base.abiflags,
        platform=platform,
        glibc=glibc,
        macos=macos,
        markers=tuple(sorted(markers.items())),
    )
