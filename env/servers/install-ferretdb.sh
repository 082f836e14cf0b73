#!/usr/bin/env bash
# Build FerretDB v1 (MongoDB wire protocol on SQLite) into $STOREBENCH_CACHE/bin/ferretdb.
#
# `go install github.com/FerretDB/FerretDB/cmd/ferretdb@v1.24.0` does not work (the module
# proxy refuses that module's version list), and a binary built without the version files
# panics at start ("Invalid build/version/version.txt"). So: download the module source with
# `go mod download`, copy it to a writable directory, write build/version/version.txt and
# `go build` there (~65 s cold on 2 cores). Second run: a no-op.
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

FERRETDB_MODULE=github.com/FerretDB/FerretDB
FERRETDB_VERSION="${FERRETDB_VERSION:-v1.24.0}"
BIN="$STOREBENCH_CACHE/bin/ferretdb"
SRC="$STOREBENCH_CACHE/src/ferretdb-$FERRETDB_VERSION"

require_go
# (output captured first: `cmd | grep -q` fails under pipefail when grep exits early)
built_version() { [ -x "$BIN" ] && "$BIN" --version 2>/dev/null | sed -n 's/^version: //p'; }
if [ "$(built_version || true)" = "$FERRETDB_VERSION" ]; then
    log "ferretdb $FERRETDB_VERSION already built: $BIN"
    exit 0
fi

log "downloading $FERRETDB_MODULE@$FERRETDB_VERSION source"
dir=$(go mod download -json "$FERRETDB_MODULE@$FERRETDB_VERSION" | sed -n 's/^\s*"Dir": "\(.*\)",\?$/\1/p')
[ -n "$dir" ] && [ -d "$dir" ] || die "go mod download $FERRETDB_MODULE@$FERRETDB_VERSION gave no source directory"
rm -rf "$SRC"
mkdir -p "$(dirname "$SRC")"
cp -r "$dir" "$SRC"
chmod -R u+w "$SRC"
printf '%s\n' "$FERRETDB_VERSION" >"$SRC/build/version/version.txt"

log "building ferretdb $FERRETDB_VERSION"
(cd "$SRC" && timed go build -p "$STOREBENCH_JOBS" -trimpath -o "$BIN" ./cmd/ferretdb)
[ "$(built_version || true)" = "$FERRETDB_VERSION" ] \
    || die "built $BIN but its --version does not say $FERRETDB_VERSION: $("$BIN" --version 2>&1 | head -n 3)"
log "ferretdb installed: $BIN"
