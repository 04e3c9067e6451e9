# The local stand-in for node:22-bookworm-slim, made from Debian packages and the pinned Node.js
# (build.sh fetches both and checks them): Node.js in /usr/local/bin, npm in
# /usr/local/lib/node_modules, a user `node` with uid:gid 1000:1000, as the official image lays
# them out, so deploy/Dockerfile builds on it unchanged (NODE_IMAGE).
# The context is a directory build.sh fills: node (the binary) and npm (the package).
ARG DEBIAN_IMAGE=content-platform/debian:bookworm
FROM ${DEBIAN_IMAGE}
ARG NODE_VERSION
ENV NODE_VERSION=${NODE_VERSION}
COPY node /usr/local/bin/node
COPY npm /usr/local/lib/node_modules/npm
RUN ln -s ../lib/node_modules/npm/bin/npm-cli.js /usr/local/bin/npm \
 && ln -s ../lib/node_modules/npm/bin/npx-cli.js /usr/local/bin/npx \
 && groupadd --gid 1000 node \
 && useradd --uid 1000 --gid node --shell /bin/bash --create-home node \
 && test "$(node --version)" = "v${NODE_VERSION}" \
 && npm --version
CMD ["node"]
