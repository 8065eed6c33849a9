# slurm-otel container image: one image for both agents and the demo.
#
#   docker build -t slurm-otel:0.1.0 .
#   docker run --rm -p 127.0.0.1:9836:9836 -p 127.0.0.1:9837:9837 slurm-otel:0.1.0
#       (the default command: the demo on a synthetic node, bound to 0.0.0.0 inside the container)
#   docker run ... slurm-otel:0.1.0 node --procfs-root /host/proc ...   (see deploy/kubernetes)
#   docker run ... slurm-otel:0.1.0 cluster ...                          (see deploy/kubernetes)
#
# Works with the classic builder and BuildKit alike (no RUN --mount), so `docker-compose build`
# 1.29 can build it too.

ARG NODE_IMAGE=node:24-bookworm-slim

# ---- build: compile TypeScript and the node agent's fd reader, then drop the dev dependencies ----
FROM ${NODE_IMAGE} AS build
# A C compiler for the fd reader (native/fd-reader.c): without one the node agent reads fd tables
# through Node's fs, slower.
RUN apt-get update \
 && apt-get install -y --no-install-recommends gcc libc6-dev \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY package.json package-lock.json ./
# --ignore-scripts: the `prepare` script would emit src/ before the sources are copied; the build
# runs explicitly below. No runtime dependency needs an install script.
RUN npm ci --ignore-scripts --no-audit --no-fund
COPY tsconfig.json ./
COPY src ./src
COPY native ./native
COPY scripts/native.mjs ./scripts/native.mjs
RUN npm run build \
 && npm prune --omit=dev --ignore-scripts --no-audit --no-fund \
 && test -f dist/src/cli/main.js \
 && test -f dist/native/fd-reader.node

# ---- runtime: dist/src, the fd reader, production node_modules and package.json only ----
FROM ${NODE_IMAGE} AS runtime
LABEL org.opencontainers.image.title="slurm-otel" \
      org.opencontainers.image.description="OpenTelemetry metrics for Slurm clusters with InfiniBand/RoCE fabrics" \
      org.opencontainers.image.licenses="Apache-2.0"
ENV NODE_ENV=production
WORKDIR /app
# iproute2 brings `rdma`, which --qp-counters observe|manage runs, and the node agent asks for the kernel's
# list of verbs contexts when a process's fds cannot all be read (about 3 MB).
RUN apt-get update \
 && apt-get install -y --no-install-recommends iproute2 \
 && rm -rf /var/lib/apt/lists/* \
 && test -x /usr/bin/rdma
# A dedicated unprivileged user with a numeric id, so that Kubernetes' runAsNonRoot can verify it.
# (The node agent's DaemonSet overrides it with uid 0 and exactly CAP_SYS_PTRACE and
# CAP_DAC_READ_SEARCH: container runtimes grant added capabilities only to uid 0. See
# deploy/README.md.)
RUN groupadd --system --gid 10001 slurm-otel \
 && useradd --system --uid 10001 --gid 10001 --no-create-home --home-dir /nonexistent \
      --shell /usr/sbin/nologin slurm-otel
# Owned by root and not writable by the agent.
COPY --from=build /src/package.json ./package.json
COPY --from=build /src/node_modules ./node_modules
COPY --from=build /src/dist/src ./dist/src
COPY --from=build /src/dist/native ./dist/native
USER 10001:10001

# 9836/9837: node agent (and demo) metrics and self-monitoring;
# 8080/8081: cluster agent metrics and self-monitoring.
EXPOSE 9836 9837 8080 8081

# /health answers 200 once the agent has completed a collection. No curl in the slim image:
# node's own fetch does it. For the cluster agent set
# SLURM_OTEL_HEALTHCHECK_URL=http://127.0.0.1:8081/health.
HEALTHCHECK --interval=30s --timeout=5s --start-period=30s --retries=3 \
  CMD ["node", "-e", "fetch(process.env.SLURM_OTEL_HEALTHCHECK_URL || 'http://127.0.0.1:9837/health', { signal: AbortSignal.timeout(4000) }).then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]

ENTRYPOINT ["node", "dist/src/cli/main.js"]
CMD ["demo", "--metrics-bind-address", "0.0.0.0:9836", "--monitoring-bind-address", "0.0.0.0:9837"]
