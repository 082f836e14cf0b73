#!/usr/bin/env bash
# Build Toxiproxy (Shopify's TCP proxy that adds latency, bandwidth limits and faults in user
# space) from the Go module proxy into $STOREBENCH_CACHE/bin/toxiproxy-server. storebench's
# network profiles use it for what this kernel cannot do (no sch_netem): wire latency, and
# injected resets and stalls. ~25 s cold on 2 cores. Second run: a no-op.
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

TOXIPROXY_MODULE=github.com/Shopify/toxiproxy/v2
TOXIPROXY_VERSION="${TOXIPROXY_VERSION:-v2.12.0}"
BIN="$STOREBENCH_CACHE/bin/toxiproxy-server"

require_go
# (output captured first: `cmd | grep -q` fails under pipefail when grep exits early)
built_version() { [ -x "$BIN" ] && go version -m "$BIN" 2>/dev/null | awk -v m="$TOXIPROXY_MODULE" '$1 == "mod" && $2 == m { print $3 }'; }
# The binary reports its version as "git" (release builds set it with -ldflags): storebench
# reads the module version from this file instead.
stamp() { printf '%s %s\n' "$TOXIPROXY_MODULE" "$TOXIPROXY_VERSION" >"$BIN.version"; }
if [ "$(built_version || true)" = "$TOXIPROXY_VERSION" ]; then
    log "toxiproxy $TOXIPROXY_VERSION already built: $BIN"
    stamp
    exit 0
fi

log "building toxiproxy $TOXIPROXY_VERSION"
tmp=$(mktemp -d)
# `go install .../cmd/server` names the binary `server`: build into a scratch GOBIN, then rename.
GOBIN="$tmp" timed go install -p "$STOREBENCH_JOBS" "$TOXIPROXY_MODULE/cmd/server@$TOXIPROXY_VERSION"
mv -f "$tmp/server" "$BIN"
rmdir "$tmp"
[ "$(built_version || true)" = "$TOXIPROXY_VERSION" ] \
    || die "built $BIN but it does not report $TOXIPROXY_MODULE $TOXIPROXY_VERSION"
stamp
log "toxiproxy installed: $BIN"
