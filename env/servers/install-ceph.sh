#!/usr/bin/env bash
# Install Ceph 16.2 (pacific) from Debian: mon, osd, mgr, radosgw (S3), CLI tools and the
# librados Python binding, and make `import rados` work in the project venv.
#
# usage: install-ceph.sh [VENV]     (default: $STOREBENCH_VENV, else <repo>/.venv)
#
# Debian's python3-rados is built for the system Python 3.11
# (/usr/lib/python3/dist-packages/rados.cpython-311-*.so, linked only to librados). The venv
# must not see the rest of dist-packages, so a directory under the cache holds a symlink to
# just that .so, and a .pth file in the venv's site-packages names that directory.
# Second run: a no-op.
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

CEPH_MAJOR_MINOR=16.2
VENV="${1:-${STOREBENCH_VENV:-$STOREBENCH_REPO/.venv}}"
PYRADOS_DIR="$STOREBENCH_CACHE/pyrados"
PTH_NAME=storebench-rados.pth

ceph_version() { ceph --version 2>/dev/null | sed -n 's/^ceph version \([0-9.]*\).*/\1/p'; }

have_all=1
for p in ceph-mon ceph-osd ceph-mgr ceph-common radosgw python3-rados; do
    pkg_installed "$p" || have_all=0
done
v=$(ceph_version || true)
if [ "$have_all" = 1 ] && [[ "$v" == "$CEPH_MAJOR_MINOR".* ]]; then
    log "ceph $v already installed"
else
    apt_install ceph-mon ceph-osd ceph-mgr ceph-common radosgw python3-rados
    v=$(ceph_version || true)
    [[ "$v" == "$CEPH_MAJOR_MINOR".* ]] || die "installed ceph reports version '${v:-?}', want $CEPH_MAJOR_MINOR.x"
    log "ceph $v installed"
fi

# --- rados in the venv -------------------------------------------------------------------
if [ ! -x "$VENV/bin/python" ]; then
    log "no venv at $VENV (no $VENV/bin/python): skipped making rados importable there;"
    log "run again as: $0 /path/to/venv   once the venv exists"
    exit 0
fi
read -r SITE EXT < <("$VENV/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"], sysconfig.get_config_var("EXT_SUFFIX"))')
SO="/usr/lib/python3/dist-packages/rados$EXT"
[ -f "$SO" ] || die "$SO not found: Debian's python3-rados only has $(echo /usr/lib/python3/dist-packages/rados*.so) - the venv's Python ($EXT) must be the system Python 3.11 version"
mkdir -p "$PYRADOS_DIR"
ln -sfn "$SO" "$PYRADOS_DIR/rados$EXT"
want="$PYRADOS_DIR"
if [ "$(cat "$SITE/$PTH_NAME" 2>/dev/null)" != "$want" ]; then
    printf '%s\n' "$want" >"$SITE/$PTH_NAME"
    log "wrote $SITE/$PTH_NAME -> $want"
fi
"$VENV/bin/python" -c 'import rados; print("rados importable from the venv:", rados.__file__)' >&2 \
    || die "import rados fails in $VENV"
