# syntax=docker/dockerfile:1
# One image for every Gantry process: `gantry serve` (default), `gantry operator`, `gantry gateway`, and the CLI.
#   docker build -t gantry .                       # CPU (default target): the patched engine, portable CPU kernels
#   docker build -t gantry:cuda --target cuda .    # CUDA: node-llama-cpp's CUDA build on a CUDA runtime base
#   docker run -d -v gantry:/models -p 11434:11434 --name gantry gantry        # add --gpus=all with gantry:cuda
#   docker exec -it gantry gantry run hf.co/bartowski/SmolLM2-135M-Instruct-GGUF:Q4_K_M
# What the image runs is the package as npm users get it: `npm pack` of the built JavaScript (dist/), installed with
# `npm install --omit=dev` at the lock file's versions (not `npm ci`: the lock lacks other platforms' optional
# engine packages, see server/setup/env.sh). test/integration/package/container.test.ts makes the same install.
ARG NODE_IMAGE=node:24.21.0-bookworm-slim
ARG CUDA_IMAGE=nvidia/cuda:12.9.1-runtime-ubuntu24.04

# The package: compile to dist/ and pack it (dev dependencies stay in this stage).
FROM ${NODE_IMAGE} AS pack
WORKDIR /src
ENV NODE_LLAMA_CPP_SKIP_DOWNLOAD=true npm_config_update_notifier=false
COPY package.json package-lock.json tsconfig.json tsconfig.build.json ./
RUN npm install --no-audit --no-fund --ignore-scripts
COPY server ./server
COPY operator ./operator
RUN node server/setup/build.ts && npm pack --ignore-scripts --pack-destination /tmp && mv /tmp/gantry-*.tgz /tmp/gantry.tgz

# Production dependencies only, from the lock file.
FROM ${NODE_IMAGE} AS install
WORKDIR /app
ENV NODE_LLAMA_CPP_SKIP_DOWNLOAD=true npm_config_update_notifier=false
COPY --from=pack /tmp/gantry.tgz /tmp/gantry.tgz
COPY package-lock.json ./
RUN tar -xzf /tmp/gantry.tgz --strip-components=1 && rm /tmp/gantry.tgz \
 && npm install --omit=dev --no-audit --no-fund \
 && rm -rf node_modules/@node-llama-cpp/*-arm* node_modules/@node-llama-cpp/mac-* node_modules/@node-llama-cpp/win-*

# The CPU engine as local setups build it (server/setup/engine-build.ts): node-llama-cpp's addon patched for a persistent
# ggml threadpool, linked against the prebuilt package's llama.cpp/ggml (ggml picks its CPU kernels at load, so the image
# runs on other machines than the one that builds it), or compiled for a portable CPU target (x86-64-v3; armv8 on arm64)
# where no prebuilt fits. --strict fails the build instead of falling back to the unpatched binary.
FROM install AS engine
# Build tools of this throwaway stage; Debian's versions of the day (the runtime stage has no compiler).
# hadolint ignore=DL3008
RUN apt-get update && apt-get install -y --no-install-recommends cmake g++ make git ca-certificates \
 && rm -rf /var/lib/apt/lists/*
ENV GANTRY_CACHE=/opt/gantry/cache GANTRY_ENGINE_CPU=portable
RUN mkdir -p /opt/gantry/cache && node dist/server/setup/engine-build.js --strict \
 && rm -rf node_modules/@node-llama-cpp/*-cuda* node_modules/@node-llama-cpp/*-vulkan*

# GPU nodes: the CUDA runtime base with Node copied from the pinned Node image, node-llama-cpp's CUDA prebuilt.
FROM ${CUDA_IMAGE} AS cuda
# hadolint ignore=DL3008
RUN apt-get update && apt-get install -y --no-install-recommends ca-certificates libgomp1 tini \
 && rm -rf /var/lib/apt/lists/* && mkdir -p /models && chown 65532:65532 /models
COPY --from=install /usr/local/bin/node /usr/local/bin/node
COPY --from=install /app /app
RUN printf '#!/bin/sh\nexec node /app/dist/server/cli/gantry.js "$@"\n' > /usr/local/bin/gantry && chmod 755 /usr/local/bin/gantry
ENV NODE_ENV=production GANTRY_HOST=0.0.0.0:11434 GANTRY_MODELS=/models GANTRY_GPU=cuda \
    NVIDIA_VISIBLE_DEVICES=all NVIDIA_DRIVER_CAPABILITIES=compute,utility
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
COPY --from=engine /app /app
COPY --from=engine /opt/gantry/cache /opt/gantry/cache
RUN printf '#!/bin/sh\nexec node /app/dist/server/cli/gantry.js "$@"\n' > /usr/local/bin/gantry && chmod 755 /usr/local/bin/gantry
ENV NODE_ENV=production GANTRY_HOST=0.0.0.0:11434 GANTRY_MODELS=/models GANTRY_CACHE=/opt/gantry/cache \
    GANTRY_ENGINE_CPU=portable GANTRY_GPU=off
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
