#!/usr/bin/env bash
# Checks the install paths docs/install.md gives, from an empty module cache:
#   1. `go install ./cmd/hookcert` in a fresh clone of this repository (GOFLAGS=-mod=mod,
#      every dependency fetched through the Go module proxy), and
#   2. `go install github.com/hookcert/hookcert/cmd/hookcert@VERSION` and `@latest`, served
#      by a file:// module proxy that holds this commit as VERSION (the dependencies still
#      come from the real proxy): the path a user takes after a release is tagged.
# Each installed binary must print, in `hookcert version`, the module version, the
# commit (where the build knows it: a checkout, not a module download) and the Go version.
# Usage: examples/ci/install-check.sh   (about a minute with a warm build cache)
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
export PATH=/usr/local/go/bin:$PATH

if [ "$(go env GOPROXY)" = off ]; then
  echo "install-check: GOPROXY=off; the install paths need the Go module proxy" >&2
  exit 1
fi

tmp=$(mktemp -d)
# The module cache is read-only by design: make it writable to remove it.
trap 'chmod -R u+w "$tmp" 2>/dev/null; rm -rf "$tmp"' EXIT

# A clean clone: only committed files, whatever the working tree holds.
git clone -q "$repo" "$tmp/src"
commit=$(git -C "$tmp/src" rev-parse HEAD)

# An empty GOPATH and module cache; the build cache (content-addressed) is kept,
# so this measures fetching, not compiling the dependencies again.
export GOPATH=$tmp/gopath GOMODCACHE=$tmp/gopath/pkg/mod GOBIN=$tmp/bin
# GOFLAGS replaces the machine's (which may set -buildvcs=false): a checkout's
# build must stamp its commit. The local Go is the one documented (go.mod).
export GOFLAGS=-mod=mod GOTOOLCHAIN=local
gover=$(go env GOVERSION)
log=$tmp/go.log

# quiet runs a go command with its "go: downloading" lines kept for a failure.
quiet() { "$@" 2>>"$log" || { cat "$log" >&2; echo "install-check: failed: $*" >&2; return 1; }; }

check_version() { # $1 binary, $2 wanted version (regexp), $3 wanted commit ("" = none)
  local out
  out=$("$1" version)
  echo "  $out"
  [[ $out =~ ^hookcert\ $2\  ]] || { echo "install-check: version: want module version $2" >&2; return 1; }
  if [ -n "$3" ]; then
    [[ $out == *"(commit $3)"* ]] || { echo "install-check: version: want (commit $3), unmodified" >&2; return 1; }
  fi
  [[ $out == *" $gover "* ]] || { echo "install-check: version: want Go version $gover" >&2; return 1; }
}

echo "install-check: go install ./cmd/hookcert in a fresh clone, empty module cache"
start=$SECONDS
(cd "$tmp/src" && quiet go install ./cmd/hookcert)
echo "  installed in $((SECONDS - start)) s; $(du -sh "$GOMODCACHE/cache/download" | cut -f1) of modules fetched"
# A checkout's main module version is the pseudo-version of its commit (or its tag).
check_version "$GOBIN/hookcert" "v[0-9]+\.[0-9]+\.[0-9]+-[0-9.a-z-]*${commit:0:12}(\+dirty)?|v[0-9]+\.[0-9]+\.[0-9]+" "$commit"

echo "install-check: go install github.com/hookcert/hookcert/cmd/hookcert@VERSION through a module proxy"
version=v0.0.1-install-check
mod=github.com/hookcert/hookcert
proxy=$tmp/proxy/$mod/@v
mkdir -p "$proxy"
# A module zip is the tree at the commit under "module@version/": git archive makes one.
git -C "$tmp/src" archive --format=zip --prefix="$mod@$version/" -o "$proxy/$version.zip" HEAD
cp "$tmp/src/go.mod" "$proxy/$version.mod"
printf '{"Version":"%s","Time":"%s"}\n' "$version" "$(git -C "$tmp/src" show -s --format=%cI HEAD)" >"$proxy/$version.info"
echo "$version" >"$proxy/list"
rm -f "$GOBIN/hookcert"
# Only this module comes from the file proxy; it is not in the checksum database.
(cd "$tmp" && GOPROXY="file://$tmp/proxy,$(go env GOPROXY)" GONOSUMDB=$mod GOFLAGS= quiet go install "$mod/cmd/hookcert@$version")
# A module download carries no VCS data: the version names the release, no commit.
check_version "$GOBIN/hookcert" "$version" ""
rm -f "$GOBIN/hookcert"
(cd "$tmp" && GOPROXY="file://$tmp/proxy,$(go env GOPROXY)" GONOSUMDB=$mod GOFLAGS= quiet go install "$mod/cmd/hookcert@latest")
check_version "$GOBIN/hookcert" "$version" ""

echo "install-check: ok"
