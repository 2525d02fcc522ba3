# syntax=docker/dockerfile:1
# One image for every Gantry process: `gantry serve` (default), `gantry operator`, `gantry gateway`, and the CLI.
#   docker build -t gantry .                          # CPU image
#   docker build -t gantry:cuda --build-arg VARIANT=cuda .   # keeps the CUDA prebuilt of node-llama-cpp
#   docker run -d -v gantry:/models -p 11434:11434 --name gantry gantry
#   docker exec -it gantry gantry run smollm2:135m
# For GPUs add `--gpus=all` (and build the cuda variant on a CUDA runtime base image, see NODE_IMAGE below).
ARG NODE_IMAGE=node:24-bookworm-slim

FROM ${NODE_IMAGE} AS deps
WORKDIR /app
ENV NODE_LLAMA_CPP_SKIP_DOWNLOAD=true
COPY package.json package-lock.json ./
# npm install (lock versions) rather than npm ci: see server/setup/env.sh about optional platform binaries.
RUN --mount=type=cache,target=/root/.npm npm install --omit=dev --no-audit --no-fund

FROM deps AS pruned
ARG VARIANT=cpu
# node-llama-cpp ships every prebuilt (CPU, CUDA, Vulkan) as optional dependencies; keep only what the variant uses.
RUN if [ "$VARIANT" = "cpu" ]; then rm -rf node_modules/@node-llama-cpp/*-cuda* node_modules/@node-llama-cpp/*-vulkan*; fi \
 && rm -rf node_modules/@node-llama-cpp/*-arm* node_modules/@node-llama-cpp/mac-* node_modules/@node-llama-cpp/win-*

# The engine as local setups build it (server/setup/engine-build.ts): node-llama-cpp's addon patched for a persistent
# ggml threadpool, compiled from the sources the package ships and linked against the prebuilt package's llama.cpp/ggml
# libraries (ggml picks its CPU kernels at load, so the image runs on other machines than the one that builds it); where
# no compatible prebuilt package is installed it compiles llama.cpp too, for a portable CPU target (x86-64-v3: AVX2,
# FMA, F16C; armv8 on arm64). --strict fails the image build instead of falling back to the prebuilt binary. GPU variants
# keep their prebuilt binaries (the patched build is CPU-only; the runtime skips it when NODE_LLAMA_CPP_GPU names a GPU);
# ENGINE_BUILD=prebuilt skips it for the CPU image.
FROM pruned AS engine
ARG VARIANT=cpu
ARG ENGINE_BUILD=auto
RUN if [ "$VARIANT" = "cpu" ] && [ "$ENGINE_BUILD" != "prebuilt" ]; then apt-get update \
 && apt-get install -y --no-install-recommends cmake g++ make git ca-certificates && rm -rf /var/lib/apt/lists/*; fi
COPY package.json tsconfig.json ./
COPY server ./server
ENV GANTRY_CACHE=/opt/gantry/cache \
    GANTRY_ENGINE_CPU=portable \
    GANTRY_ENGINE_BUILD=${ENGINE_BUILD}
# The build lands in $GANTRY_CACHE/engine/<key> and is linked from node_modules/node-llama-cpp/llama/localBuilds/;
# the runtime stage copies both to the same paths. Sources and objects are removed by the build itself.
RUN mkdir -p /opt/gantry/cache && if [ "$VARIANT" = "cpu" ]; then node server/setup/engine-build.ts --strict; fi

FROM ${NODE_IMAGE} AS runtime
ARG VARIANT=cpu
ARG ENGINE_BUILD=auto
WORKDIR /app
# Runtime libraries only: no compilers, nothing is ever built at run time.
RUN apt-get update && apt-get install -y --no-install-recommends ca-certificates libgomp1 tini \
 && rm -rf /var/lib/apt/lists/* \
 && printf '#!/bin/sh\nexec node /app/server/cli/gantry.ts "$@"\n' > /usr/local/bin/gantry && chmod 755 /usr/local/bin/gantry \
 && mkdir -p /models && chown 65532:65532 /models
COPY --from=engine /app/node_modules ./node_modules
COPY --from=engine /opt/gantry/cache /opt/gantry/cache
COPY package.json tsconfig.json ./
COPY server ./server
COPY operator ./operator
ENV NODE_ENV=production \
    GANTRY_HOST=0.0.0.0:11434 \
    GANTRY_MODELS=/models \
    GANTRY_CACHE=/opt/gantry/cache \
    GANTRY_ENGINE_CPU=portable \
    GANTRY_ENGINE_BUILD=${ENGINE_BUILD} \
    NODE_LLAMA_CPP_GPU=${VARIANT} \
    NVIDIA_VISIBLE_DEVICES=all \
    NVIDIA_DRIVER_CAPABILITIES=compute,utility
VOLUME /models
EXPOSE 11434
USER 65532:65532
HEALTHCHECK --interval=10s --timeout=3s --start-period=300s CMD node -e "fetch('http://127.0.0.1:11434/health').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"
# tini as PID 1 forwards SIGTERM to node, which shuts down gracefully.
ENTRYPOINT ["tini", "--", "node", "/app/server/cli/gantry.ts"]
CMD ["serve"]
