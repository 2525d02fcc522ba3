#!/usr/bin/env bash
# npm run image [-- [--cuda] [--push <repository>] [--kind [<cluster>]]] — builds the container image under the name
# and tag the Helm chart runs by default (gantry:<package version>; gantry:<version>-cuda with --cuda), then, on
# request, pushes it to a registry (as <repository>:<tag>) or loads it into a kind cluster's nodes, and prints the
# `helm install` that runs it. Needs a Docker engine (or a docker CLI that reaches one).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT"

say() { echo "gantry-image: $*" >&2; }
usage() { say "usage: npm run image [-- [--cuda] [--push <repository>] [--kind [<cluster>]]]"; exit 2; }

version="$(node -p 'require("./package.json").version' 2>/dev/null || sed -n 's/^  "version": "\(.*\)",$/\1/p' package.json)"
suffix="" target="cpu" push="" kind=""
while [ $# -gt 0 ]; do
  case "$1" in
    --cuda) suffix="-cuda" target="cuda" ;;
    --push) [ $# -ge 2 ] || usage; push="$2"; shift ;;
    --kind) if [ $# -ge 2 ] && [ "${2#--}" = "$2" ]; then kind="$2"; shift; else kind="kind"; fi ;;
    -h|--help) usage ;;
    *) say "unknown argument: $1"; usage ;;
  esac
  shift
done
tag="$version$suffix"
local_image="gantry:$tag"

if ! docker info >/dev/null 2>&1; then
  say "no Docker engine answers (docker info failed): build the image where one runs (Docker Desktop, a Linux host"
  say "with dockerd, or a CI runner), then push it with --push <repository> or load it with --kind"
  exit 1
fi

say "building $local_image (target $target) from $ROOT"
docker build --target "$target" -t "$local_image" .
image="$local_image"
if [ -n "$push" ]; then
  image="$push:$tag"
  docker tag "$local_image" "$image"
  say "pushing $image"
  docker push "$image"
fi
if [ -n "$kind" ]; then
  say "loading $local_image into the nodes of kind cluster $kind"
  kind load docker-image "$local_image" --name "$kind"
fi

set_repo=""
[ -n "$push" ] && set_repo=" --set image.repository=$push"
[ -n "$suffix" ] && set_repo="$set_repo --set image.tag=$tag"
say "built $image; install the chart with it:"
echo "helm install gantry charts/gantry -n gantry-system --create-namespace$set_repo"
