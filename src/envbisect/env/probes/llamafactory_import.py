"""llamafactory: import LLaMA-Factory and the entry points a release has, report what it found.

The package is ``llamafactory`` from 0.7.1 on, ``llmtuner`` before (the ``llmtuner``
distribution went on to 0.7.1 too). ``run_exp``, what training runs through, is in
``<pkg>.train.tuner`` from llmtuner 0.3 on (``llmtuner.tuner.tune`` before; 0.2 to 0.7.0 also
export it at the top level). The CLI's ``main`` is in ``<pkg>.cli`` from 0.7.1 on, the module
the ``llamafactory-cli`` command runs; before, training ran ``src/train_bash.py`` from a
checkout. Which modules a release has is read from its files, without importing: a module the
release has must import and hold its entry point, else the probe fails with the exception.
Neither package installed: untestable.
"""

import importlib
import importlib.util
import os
import shutil
import sys
import time

from _common import report, untestable

PKG = next((p for p in ("llamafactory", "llmtuner") if importlib.util.find_spec(p)), None)
if PKG is None:
    untestable("not installed in this environment: llamafactory (nor llmtuner)")
HOME = importlib.util.find_spec(PKG).submodule_search_locations[0]


def has(module):
    """Whether the release ships ``module`` (a dotted path below the package)."""
    path = os.path.join(HOME, *module.split("."))
    return os.path.isfile(path + ".py") or os.path.isfile(os.path.join(path, "__init__.py"))


def entry(module, attr):
    """Import ``module`` and take ``attr`` from it: any exception is the release's failure."""
    name = f"{PKG}.{module}" if module else PKG
    value = getattr(importlib.import_module(name), attr, None)
    if not callable(value):
        raise AttributeError(f"{name} has no callable {attr!r}")
    return f"{name}.{attr}"


start = time.perf_counter()
package = importlib.import_module(PKG)
seconds = {"import": round(time.perf_counter() - start, 3)}
try:
    from importlib.metadata import PackageNotFoundError, version

    try:
        release = version(PKG)
    except PackageNotFoundError:  # a checkout on sys.path
        release = str(getattr(package, "__version__", "?"))
except ImportError:  # Python < 3.8
    release = str(getattr(package, "__version__", "?"))

found = {}
start = time.perf_counter()
tuner = next((m for m in ("train.tuner", "tuner.tune") if has(m)), None)
if tuner is None:
    raise ModuleNotFoundError(f"{PKG} {release} has no train.tuner module")
found["run_exp"] = entry(tuner, "run_exp")
seconds["run_exp"] = round(time.perf_counter() - start, 3)
if has("cli"):
    start = time.perf_counter()
    found["cli"] = entry("cli", "main")
    seconds["cli"] = round(time.perf_counter() - start, 3)
    script = os.path.join(os.path.dirname(sys.executable), "llamafactory-cli")
    found["cli_command"] = os.path.exists(script) or shutil.which("llamafactory-cli") is not None
workflows = os.path.join(HOME, tuner.split(".")[0])  # train/sft/workflow.py, train/ppo/...
stages = sorted(
    d for d in os.listdir(workflows) if os.path.isfile(os.path.join(workflows, d, "workflow.py"))
)
report(
    probe="llamafactory",
    package=PKG,
    version=release,
    module_version=str(getattr(package, "__version__", "?")),
    entry_points=found,
    stages=stages,
    seconds=seconds,
)
print(f"llamafactory: {PKG} {release}: {found['run_exp']}, {found.get('cli', 'no CLI')}")
