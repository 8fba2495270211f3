"""The environment report, run inside the reported environment: ``python -I -c SOURCE quick``
(or ``deep``) prints one JSON object (env/envreport.py reads this file's text as its script).

envbisect also imports it to read a plain uv virtualenv of this machine from its files, in its
own process (``envreport.read_venv``): ``interpreter`` then describes envbisect's interpreter
and the caller sets what differs, ``walk`` reads the same distributions the script would.

Standard library only, Python 3.8 syntax: it runs with whatever interpreter a candidate
environment has.
"""

import json
import os
import platform
import re
import subprocess
import sys

PACKAGES = (
    "torch",
    "transformers",
    "datasets",
    "accelerate",
    "peft",
    "trl",
    "tokenizers",
    "pyarrow",
    "numpy",
    "deepspeed",
    "bitsandbytes",
    "vllm",
    "flash-attn",
    "llamafactory",
)


def norm(n):
    return re.sub(r"[-_.]+", "-", n or "").lower()


def interpreter():
    """This interpreter and machine: platform, kernel, glibc, Python, the marker values."""
    try:
        libc = os.confstr("CS_GNU_LIBC_VERSION") or ""
    except (AttributeError, ValueError, OSError):
        libc = ""
    return {
        "platform": platform.platform(),
        "system": platform.system(),
        "machine": platform.machine(),
        "kernel": platform.release(),
        "glibc": libc.split(" ")[1] if libc.startswith("glibc ") else None,
        "python": platform.python_version(),
        "executable": sys.executable,
        "implementation": sys.implementation.name,
        "markers": {
            "sys_platform": sys.platform,
            "platform_system": platform.system(),
            "platform_machine": platform.machine(),
            "os_name": os.name,
            "python_version": "%d.%d" % sys.version_info[:2],
            "python_full_version": platform.python_version(),
            "implementation_name": sys.implementation.name,
            "platform_python_implementation": platform.python_implementation(),
        },
    }


def _paths(d):
    # RECORD read as text (d.files makes a path object of each of torch's 20,000 lines: most
    # of this script's time); a quoted path (one with a comma) and no RECORD: d.files.
    record = d.read_text("RECORD")
    if record is None or '"' in record:
        return [str(f) for f in d.files or []]
    return [line.rsplit(",", 2)[0] for line in record.splitlines() if line.count(",") >= 2]


def walk(out, dists):
    """Fill ``out`` from ``dists`` (importlib.metadata's, in path order): versions, wheel
    tags, the top-level modules each installs, llamafactory's requirements, torch's build.
    Returns {name: distribution} for the deep checks."""
    out.update({"packages": {}, "wheel_tags": {}, "requires": {}, "torch": None})
    out.update({"numpy_abi": None, "modules": {}})
    found, versions, torch_files = {}, {}, []
    for d in dists:
        md = d.metadata  # parsed once: each d.version or d.metadata parses METADATA again
        name = norm(md["Name"])
        if not name or name in found:
            continue
        found[name], versions[name] = d, md["Version"]
        wheel = (d.read_text("WHEEL") or "").splitlines()
        tags = [line.split(":", 1)[1].strip() for line in wheel if line.startswith("Tag:")]
        if tags:
            out["wheel_tags"][name] = {"version": versions[name], "tags": tags}
        # The top-level modules it installs (RECORD), so a failing frame or a module a message
        # names leads to its distribution (lock's descent).
        files = _paths(d)
        if name == "torch":
            torch_files = files
        for f in files:
            parts = f.replace(os.sep, "/").split("/")
            top = parts[0][:-3] if len(parts) == 1 and parts[0].endswith(".py") else parts[0]
            if len(parts) == 1 and not parts[0].endswith(".py"):
                top = parts[0].split(".", 1)[0] if parts[0].endswith((".so", ".pyd")) else ""
            if (
                top
                and top.isidentifier()
                and not top.endswith(("-info", "__pycache__"))
                and top not in out["modules"]
            ):
                out["modules"][top] = name
    for p in PACKAGES:
        out["packages"][p] = versions.get(norm(p))
    if "llamafactory" in found:
        out["requires"]["llamafactory"] = list(found["llamafactory"].requires or [])
    out["installed"] = dict(sorted(versions.items()))
    if "torch" in found:
        t = {"version": versions["torch"], "cuda": None, "cudnn": None}
        for f in torch_files:
            if f.replace(os.sep, "/") == "torch/version.py":
                with open(str(found["torch"].locate_file(f)), encoding="utf-8") as fh:
                    text = fh.read()
                m = re.search(r"^cuda\s*(?::\s*\S+)?\s*=\s*['\"]([^'\"]+)['\"]", text, re.M)
                t["cuda"] = m.group(1) if m else None
                m = re.search(r"^hip\s*(?::\s*\S+)?\s*=\s*['\"]([^'\"]+)['\"]", text, re.M)
                t["hip"] = m.group(1) if m else None
        out["torch"] = t
    return found


def _torch_devices(t):
    """What torch sees of the GPUs (deep only: it imports torch)."""
    try:
        import torch

        cudnn = torch.backends.cudnn
        t["cudnn"] = cudnn.version() if cudnn.is_available() else None
        t["cuda_available"] = torch.cuda.is_available()
        t["devices"] = (
            [
                {
                    "name": torch.cuda.get_device_name(i),
                    "memory_gib": round(
                        torch.cuda.get_device_properties(i).total_memory / 2**30, 1
                    ),
                    "bf16": bool(torch.cuda.is_bf16_supported()),
                }
                for i in range(torch.cuda.device_count())
            ]
            if torch.cuda.is_available()
            else []
        )
    except Exception as e:
        t["import_error"] = "%s: %s" % (type(e).__name__, e)


def _numpy_abi(found):
    """Compiled packages that need numpy and fail to import against the installed one."""
    bad = []
    for name, d in sorted(found.items()):
        deps = {norm(re.match(r"\s*([A-Za-z0-9._-]*)", r).group(1)) for r in (d.requires or [])}
        if name == "numpy" or "numpy" not in deps:
            continue
        files = [str(f) for f in (d.files or [])]
        if not any(f.endswith((".so", ".pyd")) for f in files):
            continue
        top = (d.read_text("top_level.txt") or "").split()
        top = top or sorted({f.split("/")[0] for f in files if f.endswith("__init__.py")})
        for mod in top[:2]:
            if mod.startswith("_"):
                continue
            try:
                p = subprocess.run(
                    [sys.executable, "-I", "-c", "import " + mod],
                    capture_output=True,
                    text=True,
                    timeout=120,
                )
            except subprocess.TimeoutExpired:
                continue
            err = p.stderr
            if any(
                m in err
                for m in (
                    "compiled using NumPy 1.x cannot be run in",
                    "_ARRAY_API not found",
                    "numpy.dtype size changed",
                )
            ):
                bad.append({"package": name, "version": d.version, "module": mod})
            break
    return bad


def main(argv):
    from importlib import metadata  # here: envbisect imports this file and reads no metadata

    deep = len(argv) > 1 and argv[1] == "deep"
    out = interpreter()
    found = walk(out, metadata.distributions())
    if deep and out["torch"] is not None:
        _torch_devices(out["torch"])
    if deep and "numpy" in found:
        out["numpy_abi"] = _numpy_abi(found)
    print(json.dumps(out))


if __name__ == "__main__":
    main(sys.argv)
