"""import:PKG[,PKG...]: import each package, report its version.

A name may be an import name (``sklearn``) or a distribution name (``scikit-learn``,
``pyyaml``): distribution names are mapped to the modules they install.
"""

import importlib
import importlib.util
import re
import sys
import time

from _common import report, untestable


def modules_for(name):
    if importlib.util.find_spec(name) is not None:
        return [name]
    wanted = re.sub(r"[-_.]+", "-", name).lower()
    try:
        from importlib import metadata
    except ImportError:  # Python < 3.8
        return []
    for dist in metadata.distributions():
        dist_name = re.sub(r"[-_.]+", "-", dist.metadata["Name"] or "").lower()
        if dist_name != wanted:
            continue
        top = (dist.read_text("top_level.txt") or "").split()
        if not top:
            files = dist.files or []
            top = sorted({str(f).split("/")[0] for f in files if str(f).endswith("__init__.py")})
            top += sorted(
                {str(f)[:-3] for f in files if "/" not in str(f) and str(f).endswith(".py")}
            )
        return [t for t in top if not t.startswith("_") and importlib.util.find_spec(t)] or top[:1]
    return []


names = [n for n in sys.argv[1].split(",") if n] if len(sys.argv) > 1 else []
if not names:
    sys.stderr.write("usage: import:PKG[,PKG...]\n")
    sys.exit(2)
plan = {}
for name in names:
    mods = modules_for(name)
    if not mods:
        untestable("not installed in this environment: " + name)
    plan[name] = mods
versions = {}
for mods in plan.values():
    for mod in mods:
        start = time.perf_counter()
        module = importlib.import_module(mod)
        versions[mod] = {
            "version": str(getattr(module, "__version__", "?")),
            "seconds": round(time.perf_counter() - start, 3),
        }
report(probe="import", modules=versions)
