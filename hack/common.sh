# Sourced by the hack/ scripts: repository root, the project's virtualenv, and small helpers.
set -euo pipefail

KUBEVIRT_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${KUBEVIRT_VENV:-$KUBEVIRT_ROOT/.venv}"
PY="$VENV/bin/python"
export PATH="$VENV/bin:$PATH"

log() { printf '[%s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }

# apt_install PKG...: install the Debian packages that are missing (idempotent, one apt-get update).
apt_install() {
    local missing=()
    local pkg
    for pkg in "$@"; do
        dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
    done
    [ ${#missing[@]} -eq 0 ] && return 0
    log "apt: installing ${missing[*]}"
    local sudo=""
    [ "$(id -u)" -eq 0 ] || sudo="sudo"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}
