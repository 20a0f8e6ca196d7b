# syntax=docker/dockerfile:1
# Tessera's container image: built with the whole workspace, run with production dependencies only.
#   docker build -t tessera .
#   docker build --build-arg NPM_OMIT="dev optional" -t tessera:postgres .   # no better-sqlite3
# See docs/OPERATIONS.md ("Container image"). packages/server/test/deploy/ repeats these steps.

ARG NODE_IMAGE=node:22-bookworm-slim

# --- build: every dependency, TypeScript compiled to dist/ ---
FROM ${NODE_IMAGE} AS build
WORKDIR /app
# The manifests first, so the npm ci layer is reused while only sources change.
COPY package.json package-lock.json ./
COPY packages/core/package.json packages/core/
COPY packages/sqlite/package.json packages/sqlite/
COPY packages/server/package.json packages/server/
COPY packages/verify/package.json packages/verify/
COPY packages/client/package.json packages/client/
COPY examples/web/package.json examples/web/
COPY examples/express-api/package.json examples/express-api/
RUN npm ci --no-audit --no-fund
COPY tsconfig.base.json tsconfig.json ./
COPY packages packages
RUN npm run build

# --- deps: the server's production dependencies only (no dev tools, no examples) ---
FROM ${NODE_IMAGE} AS deps
# "dev" keeps better-sqlite3 (an optional dependency) for SQLite; "dev optional" leaves it out.
ARG NPM_OMIT=dev
WORKDIR /app
COPY --from=build /app/package.json /app/package-lock.json ./
COPY --from=build /app/packages/core/package.json packages/core/
COPY --from=build /app/packages/sqlite/package.json packages/sqlite/
COPY --from=build /app/packages/server/package.json packages/server/
COPY --from=build /app/packages/verify/package.json packages/verify/
COPY --from=build /app/packages/client/package.json packages/client/
COPY --from=build /app/examples/web/package.json examples/web/
COPY --from=build /app/examples/express-api/package.json examples/express-api/
RUN npm ci --workspace @tessera/server $(for o in ${NPM_OMIT}; do printf -- '--omit=%s ' "$o"; done) \
      --no-audit --no-fund && npm cache clean --force

# --- runtime: node running the compiled CLI, as an unprivileged user ---
FROM ${NODE_IMAGE} AS runtime
ENV NODE_ENV=production \
    TESSERA_HOST=0.0.0.0 \
    TESSERA_PORT=8080 \
    TESSERA_DATA_DIR=/var/lib/tessera
WORKDIR /app
COPY --from=deps /app/node_modules node_modules
COPY --from=deps /app/package.json package.json
COPY --from=build /app/packages/core/package.json packages/core/
COPY --from=build /app/packages/core/dist packages/core/dist
COPY --from=build /app/packages/sqlite/package.json packages/sqlite/
COPY --from=build /app/packages/sqlite/dist packages/sqlite/dist
COPY --from=build /app/packages/server/package.json packages/server/
COPY --from=build /app/packages/server/dist packages/server/dist
COPY --from=build /app/packages/server/bin packages/server/bin
# The image's "node" user (uid 1000); data (SQLite, the development master key) in a volume.
RUN mkdir -p /var/lib/tessera && chown node:node /var/lib/tessera
USER node
VOLUME ["/var/lib/tessera"]
EXPOSE 8080
HEALTHCHECK --interval=10s --timeout=3s --start-period=30s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:'+(process.env.TESSERA_PORT||8080)+'/healthz').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"]
# node is PID 1's only child concern: it handles SIGTERM itself (drain, then exit); use
# `docker run --init` or compose's `init: true` so zombie processes are reaped.
# The V8 flags are packages/server/src/node-flags.ts's SERVE_NODE_FLAGS (a test keeps them equal).
CMD ["node", "--max-semi-space-size=4", "--heap-growing-percent=50", "packages/server/bin/tessera.js", "serve"]
