#!/usr/bin/env bash
# Install all five servers storebench runs locally, and Toxiproxy (network profiles, faults).
# Each script is idempotent: a second run of this one takes a few seconds.
# The cold MinIO build dominates (~7.5 min on 2 cores).
#
# usage: install-all.sh [VENV]    (VENV: where install-ceph.sh makes `rados` importable)
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
failed=()
for s in redis cassandra ceph ferretdb minio toxiproxy; do
    t0=$SECONDS
    log "=== $s ==="
    if [ "$s" = ceph ]; then
        bash "$here/install-$s.sh" "$@" || failed+=("$s")
    else
        bash "$here/install-$s.sh" || failed+=("$s")
    fi
    log "=== $s: $((SECONDS - t0)) s ==="
done
[ ${#failed[@]} -eq 0 ] || die "failed: ${failed[*]} (run env/servers/install-<name>.sh alone to see why)"
log "all servers installed under $STOREBENCH_CACHE"
