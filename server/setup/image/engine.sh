#!/usr/bin/env bash
# Sourced by the image scripts: picks the container engine and sets it up. pick_engine sets ENGINE to `docker` (a
# Docker engine answers) or `podman` (installed; it needs no daemon), GANTRY_IMAGE_ENGINE naming either one first.
# On a machine without systemd, podman runs with Gantry's containers.conf (runc, cgroupfs, no default ulimits: see
# that file), unless CONTAINERS_CONF names another; engine_env prints the export that makes `podman` use it too.

engine_say() { echo "gantry-image: $*" >&2; }

ENGINE_CONF="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/containers.conf"

# podman needs Gantry's containers.conf where systemd is not the init (no systemd cgroup manager, no journald).
podman_conf() {
  if [ -z "${CONTAINERS_CONF:-}" ] && [ ! -d /run/systemd/system ] && [ ! -f /etc/containers/containers.conf ]; then
    export CONTAINERS_CONF="$ENGINE_CONF"
  fi
}

pick_engine() {
  local order="docker podman"
  [ "${GANTRY_IMAGE_ENGINE:-}" = podman ] && order="podman docker"
  for e in $order; do
    if [ "$e" = docker ] && command -v docker >/dev/null 2>&1 && docker info >/dev/null 2>&1; then
      ENGINE=docker; return 0
    fi
    if [ "$e" = podman ] && command -v podman >/dev/null 2>&1; then
      podman_conf
      if podman info >/dev/null 2>&1; then ENGINE=podman; return 0; fi
      engine_say "podman is installed but \`podman info\` fails:"; podman info 2>&1 | tail -3 >&2
    fi
  done
  if command -v docker >/dev/null 2>&1; then
    engine_say "docker is installed but no Docker engine answers (docker info failed), and podman is not installed."
  else
    engine_say "neither docker nor podman is installed."
  fi
  engine_say "install one: podman needs no daemon (Debian/Ubuntu: sudo apt-get install podman; Fedora: sudo dnf install"
  engine_say "podman; macOS: brew install podman && podman machine init && podman machine start), or Docker"
  engine_say "(https://docs.docker.com/engine/install/). Or build where one runs and push with --push <repository>."
  return 1
}

# The line that makes a shell's `podman` use the same settings as the image scripts (empty when none are needed).
engine_env() {
  if [ "$ENGINE" = podman ] && [ "${CONTAINERS_CONF:-}" = "$ENGINE_CONF" ]; then
    echo "export CONTAINERS_CONF=$ENGINE_CONF"
  fi
}
