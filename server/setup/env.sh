#!/usr/bin/env bash
# env.sh <task> — the project's one entry point for setting up a machine and running a task.
# Ensures Node.js >= 24 (installs the `node@24` package from the npm registry into the cache when the machine's Node is
# older), installs the npm dependencies when package-lock.json changed, builds the patched node-llama-cpp addon once
# (server/setup/engine-build.ts: persistent threadpool; about a minute cold), then runs the task with that Node first on
# PATH. Without a compiler the engine falls back to the prebuilt binary with a warning, except for `test`, which needs
# the patched build (a machine that cannot build it must not pass the engine tests untested).
# Everything downloaded or built is cached outside the repo, under $GANTRY_CACHE (default ~/.cache/gantry). Every step
# that writes shared state runs under a lock (server/setup/dir-lock.sh, the engine build's protocol), so setups started
# at once on an empty cache (two `npm start`, `npm test`) install each thing once and never remove each other's files.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
# Where the user ran the command (npm run sets INIT_CWD): the CLI resolves relative paths (-f Modelfile, ./file.gguf) there.
CALLER_DIR="${INIT_CWD:-$PWD}"
export GANTRY_CACHE="${GANTRY_CACHE:-$HOME/.cache/gantry}"
mkdir -p "$GANTRY_CACHE"
cd "$ROOT"

log() { echo "gantry-setup: $*" >&2; }
# shellcheck source=server/setup/dir-lock.sh
source "$ROOT/server/setup/dir-lock.sh"

node_major() { "${1:-node}" -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0; }

node24_ready() { [ -x "$1/node_modules/node/bin/node" ] && [ "$(node_major "$1/node_modules/node/bin/node")" -ge 24 ]; }

# Runs under the node24 lock; a setup that waited for it finds Node installed. Checks its own steps (see dir-lock.sh).
install_node() {
  local dir="$1"
  node24_ready "$dir" && return 0
  log "Node $(node --version 2>/dev/null || echo none) is older than 24: installing node@24 from the npm registry into $dir (about 20 s)"
  rm -rf "$dir.tmp" && mkdir -p "$dir.tmp" || return
  npm install --prefix "$dir.tmp" --no-save --no-audit --no-fund --loglevel=error node@24 >&2 || return
  node24_ready "$dir.tmp" || { log "the node@24 package installed no working Node 24 in $dir.tmp"; return 1; }
  rm -rf "$dir" && mv "$dir.tmp" "$dir"
}

ensure_node() {
  if [ "$(node_major node)" -ge 24 ]; then return; fi
  local dir="$GANTRY_CACHE/node24"
  node24_ready "$dir" || with_dir_lock "$dir.lock" install_node "$dir"
  export PATH="$dir/node_modules/node/bin:$PATH"
}

deps_stamp() { (cat package.json; cat package-lock.json 2>/dev/null || true) | sha256sum | cut -c1-64; }

# Runs under the checkout's install lock; a setup that waited for it finds the stamp current.
install_deps() {
  local stamp="node_modules/.gantry-lock-sha" want
  want="$(deps_stamp)"
  if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then return 0; fi
  log "installing npm dependencies (1-3 minutes cold: node-llama-cpp brings its CPU, CUDA and Vulkan prebuilt binaries)"
  # `npm install`, not `npm ci`: node-llama-cpp lists prebuilt binaries for every platform as optional dependencies,
  # and a registry that does not serve some of them leaves them out of the lock, which `npm ci` then refuses.
  # The lock's versions are still the ones installed.
  NODE_LLAMA_CPP_SKIP_DOWNLOAD=true npm install --no-audit --no-fund --loglevel=error >&2 || return
  echo "$want" >"$stamp"
}

ensure_deps() {
  local stamp="node_modules/.gantry-lock-sha"
  if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$(deps_stamp)" ]; then return; fi
  mkdir -p node_modules
  with_dir_lock "node_modules/.gantry-install.lock" install_deps
}

# Seconds when warm; the one-time build prints its expected and real cost. It runs under the build's own lock (in
# engine-build.ts). For `test` the patched build is required (--strict: setup fails, saying what to install); otherwise
# a machine without a compiler runs the prebuilt binary, with a warning.
ensure_engine() {
  if [ "${1:-}" = "test" ]; then
    node server/setup/engine-build.ts --strict
  else
    node server/setup/engine-build.ts || log "engine: build step failed unexpectedly; the prebuilt binary will be used"
  fi
}

ensure_node
ensure_deps
task="${1:-}"
# The CLI checks the engine itself when it first needs it (server/setup/engine-first-use.ts), as an installed gantry
# does, so a command that needs nothing set up prints nothing but its own output.
case "$task" in cluster-up|cluster-down|gantry|build) ;; *) ensure_engine "$task" ;; esac

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
