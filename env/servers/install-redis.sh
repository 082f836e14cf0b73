#!/usr/bin/env bash
# Install Redis 7 from Debian (redis-server, redis-tools). storebench starts its own
# redis-server processes (env/conf/redis.conf.in); the package's system service is not used.
# Second run: a no-op.
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

REDIS_MAJOR=7

if command -v redis-server >/dev/null 2>&1; then
    v=$(redis-server --version | sed -n 's/.* v=\([0-9.]*\).*/\1/p')
    # redis-tools brings redis-benchmark: the reference rate in experiments/clients.py
    if [ "${v%%.*}" = "$REDIS_MAJOR" ] && command -v redis-benchmark >/dev/null 2>&1; then
        log "redis-server $v already installed: $(command -v redis-server)"
        exit 0
    fi
    log "redis-server ${v:-?} found (want $REDIS_MAJOR.x, with redis-benchmark): installing Debian's"
fi
apt_install redis-server redis-tools
v=$(redis-server --version | sed -n 's/.* v=\([0-9.]*\).*/\1/p')
[ "${v%%.*}" = "$REDIS_MAJOR" ] || die "installed redis-server reports version '${v:-?}', want $REDIS_MAJOR.x"
# The package may have started its own daemon on 6379 if the machine had no policy-rc.d
# blocking it; a system daemon would take storebench's default port.
if pgrep -u redis -x redis-server >/dev/null 2>&1; then
    log "note: a system redis-server is running (pid $(pgrep -u redis -x redis-server | tr '\n' ' ')); stop it (service redis-server stop) if it holds port 6379"
fi
log "redis-server $v installed"
