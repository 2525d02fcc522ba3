# syntax=docker/dockerfile:1
# One image for every Gantry process: `gantry serve` (default), `gantry operator`, `gantry gateway`, and the CLI.
#   npm run image                                  # CPU (default target), with docker or podman; see docs/container.md
#   docker build -t gantry .                       # the same, by hand (podman build works the same)
#   docker build -t gantry:cuda --target cuda .    # CUDA: the patched engine plus a CUDA module, on a CUDA base
# What the image runs is the package as npm users get it: `npm pack` of the built JavaScript (dist/), over the
# production dependencies at the lock file's versions (`npm install --omit=dev`, not `npm ci`: the lock lacks other
# platforms' optional engine packages, see server/setup/env.sh).
# Behind a TLS-inspecting proxy, the build trusts a CA bundle given as the build secret `ca` (npm run image passes the
# machine's); it is mounted only while npm runs and is never part of an image layer.
ARG NODE_IMAGE=node:24.21.0-bookworm-slim
ARG CUDA_IMAGE=nvidia/cuda:12.9.1-runtime-ubuntu24.04
ARG CUDA_DEVEL_IMAGE=nvidia/cuda:12.9.1-devel-ubuntu24.04

# Production dependencies, from the lock file alone (so a code change rebuilds neither them nor the engine).
FROM ${NODE_IMAGE} AS deps
WORKDIR /app
ENV NODE_LLAMA_CPP_SKIP_DOWNLOAD=true npm_config_update_notifier=false
COPY package.json package-lock.json ./
# Optional dependencies are left out: they are node-llama-cpp's prebuilt binaries for every platform and GPU backend
# (600 MB of CUDA and Vulkan builds) and a copy-on-write helper; only this platform's CPU package is added, at the
# lock's version (the engine stage links the patched addon against it; the CUDA stage adds its own module).
RUN --mount=type=secret,id=ca \
    if [ -s /run/secrets/ca ]; then export NODE_EXTRA_CA_CERTS=/run/secrets/ca; fi \
 && npm install --omit=dev --omit=optional --no-audit --no-fund \
 && prebuilt="@node-llama-cpp/$(node -p 'process.platform + "-" + process.arch')" \
 && version="$(node -p 'require("./package-lock.json").packages["node_modules/node-llama-cpp"].version')" \
 && mkdir -p "node_modules/$prebuilt" \
 && npm pack --silent --pack-destination /tmp "$prebuilt@$version" \
 && tar -xzf /tmp/node-llama-cpp-*.tgz -C "node_modules/$prebuilt" --strip-components=1 \
 && rm -rf /tmp/node-llama-cpp-*.tgz /root/.npm

# The package: compile to dist/ and pack it (dev dependencies stay in this stage).
FROM ${NODE_IMAGE} AS pack
WORKDIR /src
ENV NODE_LLAMA_CPP_SKIP_DOWNLOAD=true npm_config_update_notifier=false
COPY package.json package-lock.json tsconfig.json tsconfig.build.json ./
RUN --mount=type=secret,id=ca \
    if [ -s /run/secrets/ca ]; then export NODE_EXTRA_CA_CERTS=/run/secrets/ca; fi \
 && npm install --no-audit --no-fund --ignore-scripts
COPY server ./server
COPY operator ./operator
RUN node server/setup/build.ts && npm pack --ignore-scripts --pack-destination /tmp && mv /tmp/gantry-*.tgz /tmp/gantry.tgz

# The CPU engine as local setups build it (server/setup/engine-build.ts): node-llama-cpp's addon patched for a persistent
# ggml threadpool, linked against the prebuilt package's llama.cpp/ggml (ggml picks its CPU kernels at load, so the image
# runs on other machines than the one that builds it), or compiled for a portable CPU target (x86-64-v3; armv8 on arm64)
# where no prebuilt fits. --strict fails the build instead of falling back to the unpatched binary. Only the sources the
# build imports are copied (test/unit/dockerfile.test.ts checks the list), so other code changes keep this layer.
FROM deps AS engine
# Build tools of this throwaway stage; Debian's versions of the day (the runtime stage has no compiler).
# hadolint ignore=DL3008
RUN apt-get update && apt-get install -y --no-install-recommends cmake g++ make git ca-certificates \
 && rm -rf /var/lib/apt/lists/*
COPY server/config.ts ./server/
COPY server/common/config.ts server/common/dir-lock.ts server/common/duration.ts server/common/host-port.ts \
     server/common/kv-cache-settings.ts server/common/step-pipeline-settings.ts ./server/common/
COPY server/engine/gpu.ts ./server/engine/
COPY server/engine/native/patched-build.ts server/engine/native/node-llama-cpp-addon.patch ./server/engine/native/
COPY server/setup/config.ts server/setup/engine-build.ts server/setup/llama-source.ts server/setup/prebuilt-llama-cpp.cmake \
     ./server/setup/
ENV GANTRY_CACHE=/opt/gantry/cache GANTRY_ENGINE_CPU=portable
RUN mkdir -p /opt/gantry/cache && node server/setup/engine-build.ts --strict

# The application: the packed package over the production dependencies, without what no Gantry process loads at run
# time (the llama.cpp git bundle the engine stage built from, TypeScript, type declarations, source maps, other GPU
# backends' binaries); the engine link the engine stage made in node-llama-cpp's localBuilds.
FROM deps AS app
COPY --from=pack /tmp/gantry.tgz /tmp/gantry.tgz
RUN tar -xzf /tmp/gantry.tgz --strip-components=1 && rm /tmp/gantry.tgz \
 && rm -rf node_modules/node-llama-cpp/llama/gitRelease.bundle node_modules/typescript node_modules/@types \
    node_modules/@node-llama-cpp/*-cuda* node_modules/@node-llama-cpp/*-vulkan* \
 && find node_modules \( -name '*.map' -o -name '*.d.ts' -o -name '*.d.mts' -o -name '*.d.cts' -o -name '*.md' \) \
    -type f -delete
COPY --from=engine /app/node_modules/node-llama-cpp/llama/localBuilds ./node_modules/node-llama-cpp/llama/localBuilds

# The CUDA engine: the patched CPU engine above plus libggml-cuda.so built from the same llama.cpp source with
# GGML_BACKEND_DL (server/setup/cuda-engine-build.ts), the very engine the GPU check measures (docs/gpu.md).
# CUDA_ARCHITECTURES: the GPUs the module carries kernels for (CMAKE_CUDA_ARCHITECTURES).
FROM ${CUDA_DEVEL_IMAGE} AS cuda-engine
ARG CUDA_ARCHITECTURES="75;80;86;89;90"
# hadolint ignore=DL3008
RUN apt-get update && apt-get install -y --no-install-recommends cmake g++ make git ca-certificates \
 && rm -rf /var/lib/apt/lists/*
COPY --from=deps /usr/local/bin/node /usr/local/bin/node
COPY --from=engine /app /app
COPY --from=engine /opt/gantry/cache /opt/gantry/cache
WORKDIR /app
COPY server/setup/cuda-engine.ts server/setup/cuda-engine-build.ts server/setup/llama-cmake.ts ./server/setup/
ENV GANTRY_CACHE=/opt/gantry/cache GANTRY_ENGINE_CPU=portable
RUN node server/setup/cuda-engine-build.ts --architectures "${CUDA_ARCHITECTURES}"

# GPU nodes: the CUDA runtime base with Node copied from the Node image, the CUDA engine.
FROM ${CUDA_IMAGE} AS cuda
# hadolint ignore=DL3008
RUN apt-get update && apt-get install -y --no-install-recommends ca-certificates libgomp1 tini \
 && rm -rf /var/lib/apt/lists/* && mkdir -p /models && chown 65532:65532 /models
COPY --from=deps /usr/local/bin/node /usr/local/bin/node
COPY --from=app /app /app
COPY --from=cuda-engine /app/node_modules/node-llama-cpp/llama/localBuilds /app/node_modules/node-llama-cpp/llama/localBuilds
COPY --from=cuda-engine /opt/gantry/cache /opt/gantry/cache
RUN printf '#!/bin/sh\nexec node /app/dist/server/cli/gantry.js "$@"\n' > /usr/local/bin/gantry && chmod 755 /usr/local/bin/gantry
ENV NODE_ENV=production GANTRY_HOST=0.0.0.0:11434 GANTRY_MODELS=/models GANTRY_CACHE=/opt/gantry/cache \
    GANTRY_ENGINE_CPU=portable GANTRY_GPU=cuda GANTRY_SHUTDOWN_TIMEOUT=8s NVIDIA_VISIBLE_DEVICES=all NVIDIA_DRIVER_CAPABILITIES=compute,utility
VOLUME /models
EXPOSE 11434
USER 65532:65532
# The process's own health: `gantry serve` on 11434 (/health, 503 while a model loads), or `gantry gateway` or
# `gantry operator` on 8080 (/healthz); whichever of them answers.
HEALTHCHECK --interval=10s --timeout=3s --start-period=300s \
  CMD ["node", "-e", "Promise.any(['http://127.0.0.1:11434/health','http://127.0.0.1:8080/healthz'].map(u=>fetch(u))).then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"]
ENTRYPOINT ["tini", "--", "gantry"]
CMD ["serve"]

# The default target: CPU.
FROM ${NODE_IMAGE} AS cpu
# Runtime libraries only (no compilers); Debian's versions of the base image's release.
# hadolint ignore=DL3008
RUN apt-get update && apt-get install -y --no-install-recommends ca-certificates libgomp1 tini \
 && rm -rf /var/lib/apt/lists/* && mkdir -p /models && chown 65532:65532 /models
WORKDIR /app
COPY --from=app /app /app
COPY --from=engine /opt/gantry/cache /opt/gantry/cache
RUN printf '#!/bin/sh\nexec node /app/dist/server/cli/gantry.js "$@"\n' > /usr/local/bin/gantry && chmod 755 /usr/local/bin/gantry
# GANTRY_SHUTDOWN_TIMEOUT: running answers get 8 s after SIGTERM, so that `docker stop`'s default 10 s grace period
# covers the shutdown (the answers' last lines and freeing the model included).
ENV NODE_ENV=production GANTRY_HOST=0.0.0.0:11434 GANTRY_MODELS=/models GANTRY_CACHE=/opt/gantry/cache \
    GANTRY_ENGINE_CPU=portable GANTRY_GPU=off GANTRY_SHUTDOWN_TIMEOUT=8s
VOLUME /models
EXPOSE 11434
USER 65532:65532
# The process's own health: `gantry serve` on 11434 (/health, 503 while a model loads), or `gantry gateway` or
# `gantry operator` on 8080 (/healthz); whichever of them answers.
HEALTHCHECK --interval=10s --timeout=3s --start-period=300s \
  CMD ["node", "-e", "Promise.any(['http://127.0.0.1:11434/health','http://127.0.0.1:8080/healthz'].map(u=>fetch(u))).then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"]
# tini as PID 1 forwards SIGTERM to node, which shuts down gracefully.
ENTRYPOINT ["tini", "--", "gantry"]
CMD ["serve"]
