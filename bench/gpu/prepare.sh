#!/usr/bin/env bash
# Where there is network: fill FOLDER with everything bench/gpu/check.sh needs on a GPU machine
# that has none (its python3 holds a CUDA torch, transformers, peft and accelerate): envbisect's
# own wheel and its dependencies' (uv among them), and the peft releases the check bisects.
#   bench/gpu/prepare.sh FOLDER [PYTHON_VERSION]   (the GPU machine's Python, default 3.11)
# Prints the folder's size: it must stay well under 60 MiB.
set -euo pipefail
cd "$(dirname "$0")/../.."
out=${1:?usage: bench/gpu/prepare.sh FOLDER [PYTHON_VERSION]}
py=${2:-3.11}
mkdir -p "$out"
python3 -m pip wheel -q --no-deps -w "$out" .
# Wheels for Linux x86_64 and the machine's Python, whatever this machine is.
python3 -m pip download -q --only-binary :all: --platform manylinux_2_28_x86_64 \
  --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 --platform linux_x86_64 \
  --python-version "$py" --implementation cp -d "$out" \
  "uv>=0.5" "packaging>=25.0" "resolvelib>=1.0" "httpx>=0.27" "tomli-w>=1.0" "rich>=13.0" \
  "markdown-it-py>=2.2" "shtab>=1.7"
# The bisection's peft releases (no dependencies: the machine has them).
for v in 0.13.2 0.14.0 0.15.2 0.17.1; do
  python3 -m pip download -q --no-deps --only-binary :all: -d "$out" "peft==$v"
done
du -sh "$out"
