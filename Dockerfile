# The frognano-bot App: webhook server and workers in one process (`frognano start`).
# Sandboxes are sibling containers on the Docker engine named by DOCKER_HOST; see
# README.md ("Running the App in Docker") for the trade-off of giving this container the engine's socket.
#
#   docker build -t frognano-bot .
#   docker run -d --name frognano --env-file .env -p 3000:3000 -v frognano-data:/data \
#     -v /var/run/docker.sock:/var/run/docker.sock --group-add "$(stat -c %g /var/run/docker.sock)" \
#     frognano-bot

# Node 22 (LTS): the oldest line every dependency declares support for (content-type@3 asks >=22).
ARG NODE_IMAGE=node:22-bookworm-slim

FROM ${NODE_IMAGE} AS build
WORKDIR /app
# better-sqlite3 ships prebuilt binaries; the toolchain is only the fallback for other platforms.
RUN apt-get update \
 && apt-get install -y --no-install-recommends python3 make g++ \
 && rm -rf /var/lib/apt/lists/*
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
# The image runs compiled JavaScript with node: no tsx, no TypeScript at run time.
RUN npm run build && npm prune --omit=dev --no-audit --no-fund

FROM ${NODE_IMAGE}
# git: cloning and publishing happen on the host side (here), never inside a sandbox.
# tini: signals reach node, so a stop lets runs clean up their containers.
RUN apt-get update \
 && apt-get install -y --no-install-recommends git ca-certificates tini \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /app
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY package.json app.yml ./
COPY bin/healthcheck.js ./bin/
# The sandbox image's recipe: a start on an engine without the image builds it from here.
COPY sandbox ./sandbox
RUN mkdir -p /data && chown node:node /data
# The image's own `node` user (uid 1000): the App needs no root. Docker access comes from the
# engine named by DOCKER_HOST (the mounted socket's group, or a remote engine).
USER node
ENV NODE_ENV=production \
    HOST=0.0.0.0 \
    PORT=3000 \
    FROGNANO_DATA_DIR=/data \
    DOCKER_HOST=unix:///var/run/docker.sock
VOLUME ["/data"]
EXPOSE 3000
# GET /ping answers PONG on PORT (start, serve) or FROGNANO_METRICS_PORT (worker). The start
# period covers a first start that builds the sandbox image before it listens.
HEALTHCHECK --interval=30s --timeout=10s --start-period=10m --retries=3 \
  CMD ["node", "bin/healthcheck.js"]
ENTRYPOINT ["/usr/bin/tini", "--"]
CMD ["node", "dist/cli.js", "start"]
