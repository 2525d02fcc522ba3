#!/usr/bin/env bash
# down.sh — stop the shared test control plane (exactly its recorded processes) and remove its pod networks.
set -euo pipefail
exec node "$(dirname "${BASH_SOURCE[0]}")/cli.ts" down
