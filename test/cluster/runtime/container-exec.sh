#!/usr/bin/env bash
# container-exec.sh <mounts-file> <workdir> <hostname> <command> [args...]
# Runs as the container's process, started by the process runtime under
#   ip netns exec <pod netns> unshare --mount --uts --propagation private container-exec.sh …
# so the mounts below exist only in this process's private mount namespace, and the host name (the pod's name, as in
# Kubernetes) only in its own UTS namespace. Each line of <mounts-file> is
# "host-path<TAB>mount-path<TAB>ro|rw"; missing mount points are created (empty dirs/files on the host's filesystem).
# Then it enters <workdir> and execs the command (same pid, so the runtime signals and reaps the real process).
set -euo pipefail
mounts="$1"; workdir="$2"; podhostname="$3"; shift 3
echo "$podhostname" > /proc/sys/kernel/hostname
while IFS=$'\t' read -r src dst mode; do
  [ -n "$src" ] || continue
  if [ -d "$src" ]; then mkdir -p "$dst"; else mkdir -p "$(dirname "$dst")"; [ -e "$dst" ] || : > "$dst"; fi
  mount --bind "$src" "$dst"
  if [ "$mode" = ro ]; then mount -o remount,bind,ro "$dst"; fi
done < "$mounts"
cd "${workdir:-/}"
exec "$@"
