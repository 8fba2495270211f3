#!/usr/bin/env bash
# The GPU path, proven on a machine with no network: its python3 holds a CUDA torch,
# transformers, peft and accelerate; FOLDER holds what bench/gpu/prepare.sh put there.
#   bench/gpu/check.sh FOLDER [--device cuda|cpu] [--python PYTHON]
# Every environment reuses the machine's torch (--inherit): nothing is downloaded. Runs
#   1. lora-step on the device (bf16 where the GPU supports it),
#   2. llamafactory-train for 3 steps, where the machine's python has llamafactory,
#   3. a bisection of peft (0.13.2 .. 0.17.1, from FOLDER) with lora-step as the probe,
# and prints one summary (JSON lines under WORK/summary.jsonl). --device cpu hides the GPUs
# (CUDA_VISIBLE_DEVICES=""), for a check of the script itself on a machine without one.
# Exit 0 when every step ran (a bisection whose ends both pass is an answer too), 3 if not.
set -uo pipefail
folder=$(cd "${1:?usage: bench/gpu/check.sh FOLDER [--device cuda|cpu] [--python PYTHON]}" && pwd)
shift
device=cuda
python=python3
while [ $# -gt 0 ]; do
  case "$1" in
    --device) device=$2; shift 2 ;;
    --python) python=$2; shift 2 ;;
    *) echo "unknown argument: $1" >&2; exit 2 ;;
  esac
done
work=${WORK:-$(mktemp -d "${TMPDIR:-/tmp}/envbisect-gpu-XXXXXX")}
mkdir -p "$work"
# Probes inherit CUDA_VISIBLE_DEVICES from here (envbisect sets it per probe from it).
[ "$device" = cpu ] && export CUDA_VISIBLE_DEVICES=
start=$(date +%s)

# envbisect's own environment, from the folder alone.
"$python" -m venv "$work/tool" || exit 3
"$work/tool/bin/pip" install -q --no-index --find-links "$folder" envbisect-ml || exit 3
eb="$work/tool/bin/envbisect"
# No index at all (an empty file:// one): what the environments add comes from the folder.
mkdir -p "$work/no-index"
common=(--python "$("$python" -c 'import sys; print(sys.executable)')" --inherit --offline
        --no-config --index-url "file://$work/no-index" --find-links "$folder"
        --results "$work/results" --cache-dir "$work/cache" --json)
summary="$work/summary.jsonl"
: > "$summary"

step() {  # step NAME COMMAND...: run it, keep its JSON answer and its exit code
  local name=$1; shift
  local t0; t0=$(date +%s)
  "$@" > "$work/$name.json" 2> "$work/$name.err"
  local rc=$?
  "$work/tool/bin/python" - "$name" "$rc" "$(( $(date +%s) - t0 ))" "$work/$name.json" >> "$summary" <<'PY'
import json, sys
name, rc, secs, path = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
try:
    data = json.load(open(path))
except Exception:
    data = {}
out = {"step": name, "exit": rc, "seconds": secs}
if "outcome" in data:
    out["outcome"] = data["outcome"].get("kind")
    out["signature"] = data["outcome"].get("signature")
    out["reports"] = data.get("reports")
if "first_bad" in data:
    out["first_bad"], out["last_good"] = data.get("first_bad"), data.get("last_good")
    out["probes"] = len(data.get("probes") or [])
print(json.dumps(out))
PY
}

step lora-step "$eb" probe --with peft --probe lora-step "${common[@]}"
if "$python" -c "import llamafactory" 2>/dev/null; then
  step llamafactory-train "$eb" probe --with llamafactory --probe llamafactory-train "${common[@]}"
else
  echo '{"step": "llamafactory-train", "skipped": "the machine'"'"'s python has no llamafactory"}' >> "$summary"
fi
step peft-bisection "$eb" run --package peft --good 0.13.2 --bad 0.17.1 --probe lora-step \
  "${common[@]}"

echo "envbisect GPU check, $(date -u +%Y-%m-%dT%H:%MZ), device $device, $(( $(date +%s) - start )) s:"
cat "$summary"
"$work/tool/bin/python" - "$summary" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
bad = [r for r in rows if not r.get("skipped") and r["exit"] not in (0, 1)]
sys.exit(3 if bad else 0)
PY
