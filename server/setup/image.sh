#!/usr/bin/env bash
# npm run image [-- [--cuda] [--offline-base] [--push <repository>] [--kind [<cluster>]]] — builds the container image
# under the name and tag the Helm chart runs by default (gantry:<package version>; gantry:<version>-cuda with --cuda)
# with docker or podman, whichever answers (server/setup/image/engine.sh), then, on request, pushes it to a registry
# (as <repository>:<tag>) or loads it into a kind cluster's nodes, and prints the `helm install` that runs it.
# Where no registry serves the Dockerfile's Node base (or with --offline-base), it is made here from Debian's packages
# and the npm registry's Node (server/setup/image/offline-base.sh, docs/decisions/0013-offline-image-bases.md).
# The machine's CA bundle (GANTRY_IMAGE_CA, default the system's) is the build secret `ca`: npm trusts it during the
# build (a TLS-inspecting proxy), and no image layer keeps it.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT"
export GANTRY_CACHE="${GANTRY_CACHE:-$HOME/.cache/gantry}"
mkdir -p "$GANTRY_CACHE"
# shellcheck source=server/setup/image/engine.sh
source "$ROOT/server/setup/image/engine.sh"
# shellcheck source=server/setup/image/offline-base.sh
source "$ROOT/server/setup/image/offline-base.sh"

say() { engine_say "$@"; }
usage() { say "usage: npm run image [-- [--cuda] [--offline-base] [--push <repository>] [--kind [<cluster>]]]"; exit 2; }

version="$(node -p 'require("./package.json").version' 2>/dev/null || sed -n 's/^  "version": "\(.*\)",$/\1/p' package.json)"
suffix="" target="cpu" push="" kind="" offline=""
while [ $# -gt 0 ]; do
  case "$1" in
    --cuda) suffix="-cuda" target="cuda" ;;
    --offline-base) offline=1 ;;
    --push) [ $# -ge 2 ] || usage; push="$2"; shift ;;
    --kind) if [ $# -ge 2 ] && [ "${2#--}" = "$2" ]; then kind="$2"; shift; else kind="kind"; fi ;;
    -h|--help) usage ;;
    *) say "unknown argument: $1"; usage ;;
  esac
  shift
done
tag="$version$suffix"
local_image="gantry:$tag"

pick_engine || exit 1

# The Node base: present, pulled, or (no registry, or --offline-base) made here.
node_image="$(sed -n 's/^ARG NODE_IMAGE=//p' Dockerfile)"
if ! image_present "$(full_image_name "$node_image")"; then
  if [ -z "$offline" ] && "$ENGINE" pull "$node_image" >/dev/null 2>"$GANTRY_CACHE/image-pull.log"; then :
  else
    [ -z "$offline" ] && say "cannot pull $node_image ($(tail -1 "$GANTRY_CACHE/image-pull.log")): making it from Debian's packages and the npm registry's Node (--offline-base skips the pull)"
    if [ "$target" = cuda ]; then
      say "the CUDA target also needs the CUDA base images (see the Dockerfile's CUDA_IMAGE), which only a registry serves"
    fi
    offline_node_base "$node_image"
  fi
fi

build=("$ENGINE" build --target "$target" -t "$local_image")
ca="${GANTRY_IMAGE_CA:-/etc/ssl/certs/ca-certificates.crt}"
[ -s "$ca" ] && build+=(--secret "id=ca,src=$ca")
# podman's chroot isolation needs no cgroups for RUN steps (the engine stage's compile is the longest).
[ "$ENGINE" = podman ] && build+=(--isolation chroot)
say "building $local_image (target $target) with $ENGINE from $ROOT"
"${build[@]}" .
image="$local_image"
if [ -n "$push" ]; then
  image="$push:$tag"
  "$ENGINE" tag "$local_image" "$image"
  say "pushing $image"
  "$ENGINE" push "$image"
fi
if [ -n "$kind" ]; then
  say "loading $local_image into the nodes of kind cluster $kind"
  if [ "$ENGINE" = docker ]; then
    kind load docker-image "$local_image" --name "$kind"
  else
    archive="$(mktemp --suffix=.tar)"
    podman save -o "$archive" "$local_image" && kind load image-archive "$archive" --name "$kind"
    rm -f "$archive"
  fi
fi

set_repo=""
[ -n "$push" ] && set_repo=" --set image.repository=$push"
[ -n "$suffix" ] && set_repo="$set_repo --set image.tag=$tag"
say "built $image; install the chart with it:"
echo "helm install gantry charts/gantry -n gantry-system --create-namespace$set_repo"
conf="$(engine_env)"
[ -z "$conf" ] || say "podman here runs with Gantry's settings; in your shell too: $conf"
