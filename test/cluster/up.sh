#!/usr/bin/env bash
# up.sh — start (or reuse) the shared test control plane; the last line printed is `export KUBECONFIG=…`.
set -euo pipefail
exec node "$(dirname "${BASH_SOURCE[0]}")/cli.ts" up
