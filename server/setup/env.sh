#!/usr/bin/env bash
# env.sh <task> — the project's one entry point for setting up a machine and running a task.
# Ensures Node.js >= 24 (installs the `node@24` package from the npm registry into the cache when the machine's Node is
# older), installs the npm dependencies when package-lock.json changed, builds the patched node-llama-cpp addon once
# (server/setup/engine-build.ts: persistent threadpool; falls back to the prebuilt binary without a compiler), then runs
# the task with that Node first on PATH.
# Everything downloaded or built is cached outside the repo, under $GANTRY_CACHE (default ~/.cache/gantry).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
# Where the user ran the command (npm run sets INIT_CWD): the CLI resolves relative paths (-f Modelfile, ./file.gguf) there.
CALLER_DIR="${INIT_CWD:-$PWD}"
export GANTRY_CACHE="${GANTRY_CACHE:-$HOME/.cache/gantry}"
mkdir -p "$GANTRY_CACHE"
cd "$ROOT"

log() { echo "gantry-setup: $*" >&2; }

node_major() { "${1:-node}" -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0; }

ensure_node() {
  if [ "$(node_major node)" -ge 24 ]; then return; fi
  local dir="$GANTRY_CACHE/node24"
  if [ ! -x "$dir/node_modules/node/bin/node" ] || [ "$(node_major "$dir/node_modules/node/bin/node")" -lt 24 ]; then
    log "Node $(node --version 2>/dev/null || echo none) is older than 24: installing node@24 from the npm registry into $dir"
    rm -rf "$dir.tmp" && mkdir -p "$dir.tmp"
    npm install --prefix "$dir.tmp" --no-save --no-audit --no-fund --loglevel=error node@24 >&2
    rm -rf "$dir" && mv "$dir.tmp" "$dir"
  fi
  export PATH="$dir/node_modules/node/bin:$PATH"
}

ensure_deps() {
  local stamp="node_modules/.gantry-lock-sha"
  local want; want="$( (cat package.json; cat package-lock.json 2>/dev/null || true) | sha256sum | cut -c1-64)"
  if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then return; fi
  log "installing npm dependencies"
  export NODE_LLAMA_CPP_SKIP_DOWNLOAD=true
  # `npm install`, not `npm ci`: node-llama-cpp lists prebuilt binaries for every platform as optional dependencies,
  # and a registry that does not serve some of them leaves them out of the lock, which `npm ci` then refuses.
  # The lock's versions are still the ones installed.
  npm install --no-audit --no-fund --loglevel=error >&2
  ( (cat package.json; cat package-lock.json 2>/dev/null || true) | sha256sum | cut -c1-64 ) > "$stamp"
}

# Seconds when warm; the one-time build prints its cost. Never fails the setup (prebuilt fallback, logged).
ensure_engine() {
  node server/setup/engine-build.ts || log "engine: build step failed unexpectedly; the prebuilt binary will be used"
}

ensure_node
ensure_deps
task="${1:-}"
# The CLI checks the engine itself when it first needs it (server/setup/engine-first-use.ts), as an installed gantry
# does, so a command that needs nothing set up prints nothing but its own output.
case "$task" in cluster-up|cluster-down|gantry|build) ;; *) ensure_engine ;; esac

shift || true
case "$task" in
  start) exec node server/setup/start.ts "$@" ;;
  test) exec bash test/run.sh "$@" ;;
  bench) exec node test/bench/run.ts "$@" ;;
  gantry) cd "$CALLER_DIR" && exec node "$ROOT/server/cli/gantry.ts" "$@" ;;
  build) exec node server/setup/build.ts "$@" ;;
  cluster-up) exec bash test/cluster/up.sh "$@" ;;
  cluster-down) exec bash test/cluster/down.sh "$@" ;;
  node) exec node "$@" ;;
  "") log "environment ready (Node $(node --version))" ;;
  *) log "unknown task: $task (start | test | bench | gantry | build | cluster-up | cluster-down | node)"; exit 2 ;;
esac
