#!/usr/bin/env bash
# Build the MinIO server from the Go module proxy into $STOREBENCH_CACHE/bin/minio.
# The minio repository has no semver tags; this pseudo-version is what @latest resolved to
# when the project pinned it. Cold build: ~7.5 min on 2 cores, ~1.5 GB peak memory,
# ~2 GB of Go caches (kept under $STOREBENCH_CACHE/go*). Second run: a no-op.
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

MINIO_MODULE=github.com/minio/minio
MINIO_VERSION="${MINIO_VERSION:-v0.0.0-20260212201848-7aac2a2c5b7c}"
BIN="$STOREBENCH_CACHE/bin/minio"

require_go
# `go version -m` reads the module version embedded in the binary: no need to run it.
# (output captured first: `cmd | grep -q` fails under pipefail when grep exits early)
built_version() { [ -x "$BIN" ] && go version -m "$BIN" 2>/dev/null | awk -v m="$MINIO_MODULE" '$1 == "mod" && $2 == m { print $3 }'; }
if [ "$(built_version || true)" = "$MINIO_VERSION" ]; then
    log "minio $MINIO_VERSION already built: $BIN"
    printf '%s %s\n' "$MINIO_MODULE" "$MINIO_VERSION" >"$BIN.version"
    exit 0
fi

log "building minio $MINIO_VERSION (several minutes on 2 cores)"
GOBIN="$STOREBENCH_CACHE/bin" timed go install -p "$STOREBENCH_JOBS" "$MINIO_MODULE@$MINIO_VERSION"
[ "$(built_version || true)" = "$MINIO_VERSION" ] \
    || die "built $BIN but it does not report $MINIO_MODULE $MINIO_VERSION"
# The binary itself reports "DEVELOPMENT.GOGET" (release builds set it with -ldflags):
# storebench reads the module version from this file instead.
printf '%s %s\n' "$MINIO_MODULE" "$MINIO_VERSION" >"$BIN.version"
log "minio installed: $BIN"
