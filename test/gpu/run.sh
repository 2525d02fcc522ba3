#!/usr/bin/env bash
# bash <bundle>/run.sh [--quick] [--gpu cuda|off] [--out DIR]
# Gantry's GPU check, on a machine that has the working tree and the GPU bundle (`npm run gpu:bundle`) and nothing else
# of ours: no Node, no npm, no network. Unpacks Node, the dependencies (into the tree's node_modules, unless it has
# its own) and llama.cpp's source, then hands over to test/gpu/device-run.ts on that Node: builds the engine (and, on
# a GPU, the CUDA backend for it) and llama-server, llama-bench and llama-batched-bench from the same source, serves a
# model, runs the GPU path's tests and `bench llama` against llama-server and llama.cpp's own batched decode (the
# ceiling), and writes tables and logs to the output folder ($OUT where the device tool runs it, else ./gpu-out). Each phase prints its time; a failed phase is reported and the rest goes on.
# --quick: small models and few streams (the CPU run `npm run test:bundle` makes); --gpu off: the CPU only.
set -uo pipefail
BUNDLE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
if [ -f "$PWD/package.json" ] && [ -f "$PWD/test/gpu/device-run.ts" ]; then REPO="$PWD"; else REPO="$(dirname "$BUNDLE")"; fi
OUT_DIR="${OUT:-$REPO/gpu-out}"
for ((i = 1; i <= $#; i++)); do [ "${!i}" = "--out" ] && j=$((i + 1)) && OUT_DIR="${!j}"; done
WORK="${GANTRY_GPU_WORK:-${TMPDIR:-/tmp}/gantry-gpu}"
mkdir -p "$OUT_DIR" "$WORK"
exec > >(tee -a "$OUT_DIR/run.log") 2>&1
T0=$(date +%s)
echo "== unpack: bundle $BUNDLE, tree $REPO, work $WORK, out $OUT_DIR"

# xz, or Python's lzma where the machine has no xz.
unxz_to() { # archive dir
  mkdir -p "$2"
  if command -v xz >/dev/null; then xz -dc "$1" | tar -x -C "$2"; else
    python3 -c 'import lzma, shutil, sys; shutil.copyfileobj(lzma.open(sys.argv[1]), sys.stdout.buffer)' "$1" | tar -x -C "$2"
  fi
}

stamp="$(sha256sum "$BUNDLE/manifest.json" | cut -c1-16)"
if [ ! -x "$WORK/node/bin/node" ] || [ "$(cat "$WORK/.bundle" 2>/dev/null)" != "$stamp" ]; then
  rm -rf "$WORK/node" "$WORK/llama.cpp"
  unxz_to "$BUNDLE/node.tar.xz" "$WORK" && unxz_to "$BUNDLE/llama.cpp.tar.xz" "$WORK" && echo "$stamp" >"$WORK/.bundle" ||
    { echo "== unpack FAILED"; exit 1; }
fi
# The tree's own node_modules (a developer's checkout) is used as it is; a bare tree gets the bundle's.
if [ ! -d "$REPO/node_modules/node-llama-cpp" ] || [ -f "$REPO/node_modules/.gantry-gpu-bundle" ]; then
  if [ "$(cat "$REPO/node_modules/.gantry-gpu-bundle" 2>/dev/null)" != "$stamp" ]; then
    rm -rf "$REPO/node_modules"
    unxz_to "$BUNDLE/node_modules.tar.xz" "$REPO" && echo "$stamp" >"$REPO/node_modules/.gantry-gpu-bundle" ||
      { echo "== unpack FAILED (node_modules)"; exit 1; }
  fi
fi
# The NVIDIA driver's tools where an image keeps them off PATH.
[ -d /usr/local/nvidia/bin ] && PATH="$PATH:/usr/local/nvidia/bin"
export PATH="$WORK/node/bin:$PATH"
export GANTRY_LLAMA_CPP_SOURCE="$WORK/llama.cpp"
echo "== unpack done ($(($(date +%s) - T0)) s): Node $(node --version)"
cd "$REPO" && exec node test/gpu/device-run.ts --bundle "$BUNDLE" --work "$WORK" --out "$OUT_DIR" --started "$T0" "$@"
