# shellcheck shell=bash
# Shared helpers for storebench's env/ scripts. Source it:
#   . "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
#
# STOREBENCH_CACHE   where downloads, Go/Maven caches and built server binaries live
#                    (default: $HOME/.cache/storebench). Never inside the git work tree.
# STOREBENCH_JOBS    parallel build jobs (default 2: the project's machines have 2 cores).

set -euo pipefail

STOREBENCH_ENV_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
STOREBENCH_REPO="$(cd "$STOREBENCH_ENV_DIR/.." && pwd)"
export STOREBENCH_REPO
export STOREBENCH_CACHE="${STOREBENCH_CACHE:-$HOME/.cache/storebench}"
export STOREBENCH_JOBS="${STOREBENCH_JOBS:-2}"
mkdir -p "$STOREBENCH_CACHE/bin"

# log MSG...  -> "[storebench <script>] MSG" on stderr
log() {
    printf '[storebench %s] %s\n' "$(basename "${0:-sh}" .sh)" "$*" >&2
}

# die MSG...  -> log and exit 1
die() {
    log "ERROR: $*"
    exit 1
}

# timed CMD...  -> run CMD, log how long it took
timed() {
    local t0=$SECONDS
    "$@"
    log "done in $((SECONDS - t0)) s: $*"
}

_sudo() {
    if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi
}

# pkg_installed PKG -> 0 if the Debian package is installed (status "install ok installed")
pkg_installed() {
    [ "$(dpkg-query -W -f='${Status}' "$1" 2>/dev/null || true)" = "install ok installed" ]
}

# apt_install PKG...
#   Installs only the packages not yet installed (so a second run is a no-op and needs no
#   network). Runs `apt-get update` at most once per process, and only if the package lists
#   are missing or older than a day. Retries the install up to 3 times: some images delete
#   downloaded .deb files after each dpkg run, which can make a large install fail with
#   "cannot access archive"; the same install run again succeeds.
_STOREBENCH_APT_UPDATED=0   # 1 once this process ran (or decided to skip) apt-get update
_STOREBENCH_APT_DID_UPDATE=0
apt_install() {
    local missing=() p
    for p in "$@"; do
        pkg_installed "$p" || missing+=("$p")
    done
    if [ ${#missing[@]} -eq 0 ]; then
        log "already installed: $*"
        return 0
    fi
    command -v apt-get >/dev/null || die "apt-get not found: install ${missing[*]} with your system's package manager"
    if [ "$_STOREBENCH_APT_UPDATED" = 0 ]; then
        local lists
        lists=$(find /var/lib/apt/lists -maxdepth 1 -name '*_Packages*' -mmin -1440 2>/dev/null | head -n 1 || true)
        if [ -z "$lists" ]; then
            log "apt-get update"
            _sudo apt-get update -q || log "apt-get update failed; trying the install anyway"
            _STOREBENCH_APT_DID_UPDATE=1
        fi
        _STOREBENCH_APT_UPDATED=1
    fi
    # Debian's server packages start their daemon from the postinst (invoke-rc.d), e.g. a
    # system redis-server on 127.0.0.1:6379 that would take storebench's port. storebench
    # starts its servers itself: forbid service starts during the install, unless the
    # machine already has a policy (container images usually do).
    local policy=/usr/sbin/policy-rc.d own_policy=0
    if [ ! -e "$policy" ] && [ "$(id -u)" -eq 0 ]; then
        printf '#!/bin/sh\n# storebench: no service starts during apt_install\nexit 101\n' >"$policy"
        chmod +x "$policy"
        own_policy=1
    fi
    local try rc=1
    for try in 1 2 3; do
        log "apt-get install (try $try/3): ${missing[*]}"
        if _sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}"; then
            rc=0
            break
        fi
        if [ "$_STOREBENCH_APT_DID_UPDATE" = 0 ]; then
            log "apt-get update (the package lists may be out of date)"
            _sudo apt-get update -q || true
            _STOREBENCH_APT_DID_UPDATE=1
        fi
        sleep 2
    done
    [ "$own_policy" = 1 ] && rm -f "$policy"
    [ "$rc" = 0 ] || die "apt-get install failed 3 times: ${missing[*]}"
    log "installed: ${missing[*]}"
}

# Go toolchain pinned for building MinIO and FerretDB when the machine has no go >= 1.24.
STOREBENCH_GO_TOOLCHAIN="${STOREBENCH_GO_TOOLCHAIN:-go1.24.13}"

_go_minor() {  # prints the minor version of the go on PATH (e.g. 24), or 0
    local v
    v=$(go env GOVERSION 2>/dev/null | sed 's/^go//') || { echo 0; return; }
    local rest=${v#1.}
    [[ "$v" == 1.* && "${rest%%.*}" =~ ^[0-9]+$ ]] && echo "${rest%%.*}" || echo 0
}

# require_go -> make sure go >= 1.24 is on PATH, then set up Go caches under the cache dir.
#   If the machine has none (Debian 12 ships 1.19), the official toolchain is fetched as the
#   Go module golang.org/toolchain through the Go module proxy (as `GOTOOLCHAIN` does), using
#   Debian's golang-go only as the bootstrap client.
require_go() {
    local dir="$STOREBENCH_CACHE/go-toolchain/$STOREBENCH_GO_TOOLCHAIN"
    [ -x "$dir/bin/go" ] && export PATH="$dir/bin:$PATH"
    if ! command -v go >/dev/null 2>&1 || [ "$(_go_minor)" -lt 24 ]; then
        command -v go >/dev/null 2>&1 || apt_install golang-go ca-certificates
        local arch module
        arch=$(go env GOARCH)
        module="golang.org/toolchain@v0.0.1-${STOREBENCH_GO_TOOLCHAIN}.linux-${arch}"
        log "fetching the Go toolchain $module from the Go module proxy"
        local json
        json=$(cd "$(mktemp -d)" && GOFLAGS=-modcacherw GOMODCACHE="$STOREBENCH_CACHE/go-toolchain/mod" \
            go mod download -json "$module") || die "could not fetch $module"
        local src
        src=$(printf '%s' "$json" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",\{0,1\}$/\1/p')
        [ -n "$src" ] && [ -d "$src" ] || die "go mod download gave no directory for $module"
        mkdir -p "$(dirname "$dir")"
        rm -rf "$dir" && cp -r "$src" "$dir" && chmod -R u+w "$dir" && chmod +x "$dir"/bin/* "$dir"/pkg/tool/*/*
        export PATH="$dir/bin:$PATH"
        [ "$(_go_minor)" -ge 24 ] || die "the fetched toolchain at $dir does not run"
    fi
    export GOPATH="$STOREBENCH_CACHE/go"
    export GOCACHE="$STOREBENCH_CACHE/go-build"
    export GOMODCACHE="$STOREBENCH_CACHE/go/pkg/mod"
    export GOFLAGS="${GOFLAGS:-} -modcacherw"
    export GOTOOLCHAIN=local   # never try to download another toolchain
    export CGO_ENABLED="${CGO_ENABLED:-0}"
    mkdir -p "$GOPATH" "$GOCACHE"
}
