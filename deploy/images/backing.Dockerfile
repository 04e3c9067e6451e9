# Images of the backing servers for compose on one machine, from the Debian base (build.sh):
#   versitygw  the S3 server, deploy/local/backing-servers.sh's pinned Go build, posix backend on /data
#   ferretdb   the MongoDB-compatible server, the same script's pinned Go build, SQLite on /data
#   redis      Debian's redis-server, append-only file on /data
# Each runs as uid 1000 with nothing writable but /data (a volume) and /tmp, and has no package
# manager. The context is a directory build.sh fills: the two binaries, http-ok and redis-entrypoint.
ARG DEBIAN_IMAGE=content-platform/debian:bookworm

FROM ${DEBIAN_IMAGE} AS slim
# No package manager at run time (the dpkg database stays, for image scanners).
RUN rm -rf /usr/bin/apt /usr/bin/apt-* /usr/lib/apt /etc/apt /var/lib/apt /var/cache/apt \
      /usr/lib/x86_64-linux-gnu/libapt-* /usr/lib/aarch64-linux-gnu/libapt-* \
      /usr/bin/dpkg /usr/bin/dpkg-* /usr/sbin/dpkg-* /usr/lib/dpkg \
 && install -d -o 1000 -g 1000 /data
# http-ok <host:port> <path>: exit 0 when GET answers 200 (bash's /dev/tcp: no curl in the image).
COPY http-ok /usr/local/bin/http-ok

FROM slim AS versitygw
COPY versitygw /usr/local/bin/versitygw
# The upstream image's settings: VGW_BACKEND and VGW_BACKEND_ARG pick the backend, the other VGW_
# variables are versitygw's own; the root account's keys come from ROOT_ACCESS_KEY and ROOT_SECRET_KEY.
ENV VGW_BACKEND=posix \
    VGW_BACKEND_ARG=/data \
    VGW_PORT=:9000 \
    VGW_HEALTH=/_/health
USER 1000:1000
VOLUME /data
EXPOSE 9000
HEALTHCHECK --interval=5s --timeout=3s --start-period=5s --retries=30 \
  CMD ["sh", "-c", "http-ok \"127.0.0.1:${VGW_PORT##*:}\" \"$VGW_HEALTH\""]
ENTRYPOINT ["sh", "-c", "exec versitygw \"$VGW_BACKEND\" \"$VGW_BACKEND_ARG\"", "versitygw"]

FROM slim AS ferretdb
COPY ferretdb /usr/local/bin/ferretdb
# FerretDB reads FERRETDB_* variables for its flags; its debug listener answers /debug/readyz.
ENV FERRETDB_HANDLER=sqlite \
    FERRETDB_SQLITE_URL=file:/data/?_pragma=synchronous(normal) \
    FERRETDB_LISTEN_ADDR=:27017 \
    FERRETDB_DEBUG_ADDR=127.0.0.1:8088 \
    FERRETDB_STATE_DIR=- \
    FERRETDB_TELEMETRY=disable \
    FERRETDB_LOG_LEVEL=warn
USER 1000:1000
VOLUME /data
EXPOSE 27017
HEALTHCHECK --interval=5s --timeout=3s --start-period=5s --retries=30 \
  CMD ["sh", "-c", "http-ok \"$FERRETDB_DEBUG_ADDR\" /debug/readyz"]
ENTRYPOINT ["ferretdb"]

FROM ${DEBIAN_IMAGE} AS redis
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends redis-server \
 && rm -rf /var/lib/apt/lists/* /var/log/apt /var/log/dpkg.log \
 && rm -rf /usr/bin/apt /usr/bin/apt-* /usr/lib/apt /etc/apt /var/lib/apt /var/cache/apt \
      /usr/lib/x86_64-linux-gnu/libapt-* /usr/lib/aarch64-linux-gnu/libapt-* \
      /usr/bin/dpkg /usr/bin/dpkg-* /usr/sbin/dpkg-* /usr/lib/dpkg \
 && install -d -o 1000 -g 1000 /data
USER 1000:1000
WORKDIR /data
VOLUME /data
EXPOSE 6379
HEALTHCHECK --interval=5s --timeout=3s --start-period=5s --retries=30 \
  CMD ["sh", "-c", "redis-cli -p \"${REDIS_PORT:-6379}\" ping | grep -qx PONG"]
# redis-entrypoint appends REDIS_ARGS to the command (the local compose override's port and
# address; compose.yaml's users stay) and passes ACL rules word by word. REDIS_PORT is the port the
# healthcheck asks.
COPY redis-entrypoint /usr/local/bin/redis-entrypoint
ENTRYPOINT ["redis-entrypoint"]
CMD ["redis-server", "--dir", "/data", "--appendonly", "yes", "--save", ""]
