"""``why`` for a binary the loader could not load: a shared object that asks a newer glibc
than the machine has, or links a library the machine lacks (a CUDA library of another
toolkit than the report's, or one of the ``nvidia-*`` wheels its release requires).

Who does what: core/evidence/elfneeds.py reads an ELF file's glibc needs and linked
libraries; core/evidence/cudalibs.py knows which toolkit and which ``nvidia-*`` wheel a
library name belongs to; the questions here ask them of each release's shared objects
(through modes/releasereads.py's ``Reader``), and the two handlers turn a message into a
history and fixes the way modes/why.py does for the Python kinds.
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass, replace

from envbisect.core.evidence import cudalibs
from envbisect.core.evidence.boundaries import NO, YES, Fix, glibc_needed, merged, read_everywhere
from envbisect.core.evidence.elfneeds import glibc_needed_by
from envbisect.core.evidence.failure import MissingLibrary, MissingSymbolVersion
from envbisect.core.evidence.stated import stated_cuda, stated_glibc
from envbisect.core.results.why import Explained
from envbisect.errors import EnvbisectError
from envbisect.index.source import requires_dist
from envbisect.model import DistFile
from envbisect.modes.releasereads import Reader, fits
from envbisect.modes.staticprobes import Question
from envbisect.modes.whichdist import WhyContext, dist_of, finish, history, nobody, version

_SHARED = re.compile(r"\.so(?:\.\d+)*$")


@dataclass(frozen=True, slots=True, kw_only=True)
class LinksGlibc(Question):
    """Whether every shared object of the release asks at most glibc ``limit`` (their ELF
    version needs, what the loader checks: a manylinux tag is only the wheel's claim)."""

    limit: tuple[int, int]

    @property
    def key(self) -> str:
        return f"glibc:{self.limit[0]}.{self.limit[1]}"

    def ask(self, r: Reader, f: DistFile) -> int | None:
        shared = [m for m in r.names(f) if _SHARED.search(m)]
        if not shared:
            return YES  # no binary: it asks nothing of the C library
        needs = [glibc_needed_by(r.binary(f, m) or b"") for m in shared]
        read = [n for n in needs if n is not None]
        if not read:
            return None
        return YES if max(read) <= self.limit else NO


@dataclass(frozen=True, slots=True, kw_only=True)
class LinksLibrary(Question):
    """Whether the release's shared objects load where ``missing`` was not found and the
    CUDA toolkit is ``toolkit`` (cudalibs.fits: the libraries they link, read from each)."""

    missing: str
    toolkit: int | None
    newer: bool = False  # no toolkit said: the machine's taken as newer than the missing one

    @property
    def key(self) -> str:
        said = self.toolkit or ("newer" if self.newer else "older")
        return f"links:{self.missing}:{said}"

    def ask(self, r: Reader, f: DistFile) -> int | None:
        shared = [m for m in r.names(f) if _SHARED.search(m)]
        if not shared:
            return None  # no binary: its kernels moved to another distribution, or never were
        linked = [r.libraries(f, m) for m in shared]
        read = [name for libs in linked if libs is not None for name in libs]
        if all(libs is None for libs in linked):
            return None
        return YES if cudalibs.fits(read, self.missing, self.toolkit, newer=self.newer) else NO


def glibc(ctx: WhyContext, item: MissingSymbolVersion) -> Explained:
    """A shared object of an installed package needs a newer glibc than the machine has: the
    releases whose Linux wheels ask at most what it has (their manylinux tags, from the
    index page: nothing read), the report's glibc where it says it, else below the version
    the loader did not find."""
    top = (item.module or "").split(".")[0]
    dist = dist_of(ctx, top)
    if dist is None:
        return nobody(item, top)
    have = stated_glibc(ctx.text)
    major, minor = (int(x) for x in item.version.split(".")[:2])
    limit = have if have is not None else (major, minor - 1)
    try:
        pf = ctx.client.project_files(dist)
    except EnvbisectError:
        return nobody(item, top)
    answers: list[tuple[str, int | None]] = []
    stated = version(ctx, dist)
    for v in sorted(pf.versions()):
        files = [f.filename for f in pf.files_of(v) if not f.yanked]
        if (v.is_prerelease and str(v) != stated) or not files:
            continue
        wheels = [n for n in files if fits(n, ctx.releases.minor) is not None]
        need = glibc_needed(wheels)
        answers.append((str(v), None if need is None else int(need <= limit)))
    said = f"{limit[0]}.{limit[1]}"
    h = read_everywhere(
        dist, "callee", f"{dist}'s Linux wheels need at most glibc {said}", answers, stated
    )
    if h.installed_answer != 0 or not merged([h]):
        # the tag of the release that failed claims the machine's glibc will do (or nothing
        # is known of it): the binaries' own needs decide, read from the wheels
        q = LinksGlibc(
            dist=dist,
            role="callee",
            limit=limit,
            text=f"{dist}'s shared objects need at most glibc {said}",
        )
        elf = history(ctx, q)
        if elf is not None and merged([elf]):
            h = elf
    return finish(
        item,
        [h],
        notes=(
            f"the machine's glibc is {'older than ' + item.version if have is None else said}: "
            "a release built for it, or a newer system (manylinux tags, as the wheels claim)",
        ),
    )


def shared_library(ctx: WhyContext, item: MissingLibrary) -> Explained:
    """A binary of an installed package links a library the loader did not find. Where the
    package's release requires the ``nvidia-*`` wheel that ships it (torch brings its CUDA
    libraries so), that wheel is missing: install it, at the version required. Otherwise the
    release was built for another CUDA toolkit than the machine's: the releases whose shared
    objects link the report's toolkit (or, where the report names none, do not link the
    missing library), read from each wheel."""
    top = (item.module or "").split(".")[0]
    dist = dist_of(ctx, top) if top else _binary_importer(ctx)
    if dist is None and not top:
        return Explained(
            item=item,
            kind="unexplained",
            notes=(f"the text does not show which package loads {item.library}",),
        )
    if dist is None:
        return nobody(item, top)
    said = version(ctx, dist)
    bundled = _bundled(ctx, dist, said, item.library)
    if bundled is not None:
        name, spec = bundled
        fix = Fix(
            package=name,
            op="",
            version=spec,
            why=f"{dist} {said} requires {name}{spec}, which ships {item.library}",
        )
        return Explained(
            item=item,
            kind="not-installed",
            package=name,
            fixes=(fix,),
            notes=(
                f"{dist} {said} brings its CUDA libraries as nvidia-* wheels: {item.library} "
                f"is in {name}, missing or not found (installed with --no-deps, or for "
                "another platform?)",
            ),
        )
    cuda = stated_cuda(ctx.text)
    toolkit = cuda[0] if cuda is not None and cudalibs.toolkit_of(item.library) else None
    wanted = cudalibs.toolkit_of(item.library)
    where = (
        f"link CUDA {toolkit}'s libraries (the report's CUDA {cuda[0]}.{cuda[1]})"
        if toolkit is not None and cuda is not None
        else f"link no CUDA {wanted} or newer"
        if wanted is not None
        else f"do not link {item.library}"
    )
    q = LinksLibrary(
        dist=dist,
        role="callee",
        missing=item.library,
        toolkit=toolkit,
        text=f"{dist}'s shared objects {where}",
    )
    h = history(ctx, q)
    if toolkit is None and wanted is not None:
        said = f"older than CUDA {wanted}, whose {item.library} the machine lacks"
        if h is None or not merged([h]):  # no release built for an older one: a newer machine
            q = replace(
                q, newer=True, text=f"{dist}'s shared objects link CUDA {wanted + 1} or newer"
            )
            h, said = history(ctx, q), f"newer than CUDA {wanted} (no release fits an older one)"
        return finish(
            item,
            [h],
            notes=(
                "the report does not say its CUDA toolkit (nvcc --version, or torch's "
                f"+cuXXX): taken as {said}",
            ),
        )
    return finish(item, [h])


# an import line, also as IPython prints a frame's source (``---> 81     from x import y``)
_IMPORT = re.compile(
    r"^\s*(?:-*>\s*)?(?:\d+\s+)?(?:from\s+([A-Za-z_][\w.]*)\s+import|import\s+([A-Za-z_][\w.]*))",
    re.M,
)
_TRIED = 6  # import names of the text asked whether their distribution ships binaries


def _binary_importer(ctx: WhyContext) -> str | None:
    """The distribution the text imports that ships shared objects, where no frame says which
    package loaded the library (``from awq import ...`` in the report, then the error alone):
    the first of the text's imports, outside the standard library, whose release (the one
    stated, else the newest) has a binary."""
    tops = []
    for m in _IMPORT.finditer(ctx.text):
        top = (m.group(1) or m.group(2)).split(".")[0]
        if top not in tops and top not in sys.stdlib_module_names:
            tops.append(top)
    for top in tops[:_TRIED]:
        dist = dist_of(ctx, top)
        rels = ctx.releases.of(dist, version(ctx, dist)) if dist else None
        if not dist or not rels:
            continue
        said = version(ctx, dist)
        stated = [r for r in rels if str(r.version) == said]
        picks = stated or [rels[-1], rels[len(rels) // 2], rels[0]]  # kernels may have moved
        if any(_SHARED.search(n) for p in picks for n in ctx.reader.names(p.file)):
            return dist
    return None


def _bundled(ctx: WhyContext, dist: str, said: str | None, library: str) -> tuple[str, str] | None:
    """The ``nvidia-*`` requirement of ``dist``'s stated release that ships ``library``."""
    if said is None or not cudalibs.is_cuda(library):
        return None
    try:
        files = ctx.client.version_files(dist, said)
        ranked = [
            (rank, f.filename, f)
            for f in files
            if f.is_wheel and (rank := fits(f.filename, ctx.releases.minor)) is not None
        ]
        if not ranked:
            return None
        best = min(ranked, key=lambda x: (x[0], x[1]))[2]
        return cudalibs.nvidia_dist_for(library, requires_dist(ctx.client.core_metadata(best)))
    except EnvbisectError:
        return None
