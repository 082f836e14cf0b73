#!/usr/bin/env bash
# The native benchmark tools the calibration experiment runs beside storebench's clients, on the
# same servers: redis-benchmark (Debian redis-tools, with the Redis install), `rados bench`
# (Debian ceph-common, with the Ceph install), RocksDB's db_bench (Debian rocksdb-tools), and
# storebench-s3get, a GET loop on minio-go (MinIO's Go SDK) built here from env/tools/s3get
# (MinIO's own benchmark, warp, is not served by the Go module proxy here).
# libeatmydata1 (Debian) turns fsync off for one process: the embeddings experiment's durability
# "none" for TileDB, which has no setting of its own to skip its fsyncs.
# cassandra-stress is not installed: it ships only in Cassandra's binary tarball, which is not
# on Maven Central. Second run: a no-op.
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

apt_install rocksdb-tools libeatmydata1

BIN="$STOREBENCH_CACHE/bin/storebench-s3get"
SRC="$STOREBENCH_ENV_DIR/tools/s3get"
stamp="$BIN.source-sha256"
want=$(cat "$SRC/go.mod" "$SRC/go.sum" "$SRC/main.go" | sha256sum | cut -d' ' -f1)
if [ -x "$BIN" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$want" ]; then
    log "storebench-s3get already built: $BIN"
    exit 0
fi
require_go
log "building storebench-s3get"
(cd "$SRC" && timed go build -p "$STOREBENCH_JOBS" -trimpath -o "$BIN" .)
echo "$want" >"$stamp"
log "storebench-s3get installed: $BIN"
