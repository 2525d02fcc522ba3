#!/usr/bin/env bash
# bash server/setup/image/host-tools.sh — the machine's tools for building and running the image, from Debian's
# packages where missing (CI's .ci/run calls it; root on Debian or Ubuntu): podman (with runc; no daemon),
# mmdebstrap (the offline base: docs/decisions/0013-offline-image-bases.md), containerd (the test cluster's
# real node) and redis-server (the queue's broker in tests). Elsewhere it says what to install. A machine whose
# Docker engine answers needs no podman.
set -euo pipefail
want=()
command -v podman >/dev/null 2>&1 || docker info >/dev/null 2>&1 || want+=(podman runc)
command -v mmdebstrap >/dev/null 2>&1 || want+=(mmdebstrap)
command -v containerd >/dev/null 2>&1 || want+=(containerd)
command -v redis-server >/dev/null 2>&1 || command -v valkey-server >/dev/null 2>&1 || want+=(redis-server)
[ ${#want[@]} -eq 0 ] && exit 0
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "host-tools: installing ${want[*]} from Debian's packages" >&2
  apt-get update -qq >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${want[@]}" uidmap >&2
else
  echo "host-tools: missing ${want[*]}: install them (Debian/Ubuntu: sudo apt-get install ${want[*]})" >&2
  exit 1
fi
