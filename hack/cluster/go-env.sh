# Sourced: Go module and build caches outside the repository, shared by every Kubernetes version we build.
KUBEVIRT_CACHE="${KUBEVIRT_CACHE:-/var/cache/kubevirt-py}"
export GOMODCACHE="$KUBEVIRT_CACHE/go/mod"
export GOCACHE="$KUBEVIRT_CACHE/go/build"
export GOFLAGS="-modcacherw"
export GOTOOLCHAIN="${GOTOOLCHAIN:-auto}"  # go >= 1.21 fetches the toolchain go.mod asks for
export CGO_ENABLED="${CGO_ENABLED:-0}"
mkdir -p "$GOMODCACHE" "$GOCACHE"
