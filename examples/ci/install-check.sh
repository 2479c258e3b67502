#!/usr/bin/env bash
# Follows docs/install.md literally, from an empty module cache (a temporary GOPATH
# and GOMODCACHE: every dependency fetched through the Go module proxy):
#   1. its blocks marked <!-- install-check: NAME --> run as written, in a fresh
#      directory, with two substitutions: the clone URL is this repository (its
#      committed files), and the release URL serves archives `make release`
#      built from that clone (file://);
#   2. `make release` twice, in two clones at different paths: the same SHA256SUMS;
#   3. `go install github.com/hookcert/hookcert/cmd/hookcert@VERSION` and `@latest`,
#      served by a file:// module proxy holding this commit as VERSION (the
#      dependencies still come from the real proxy): the path a user takes once
#      the module is published.
# Each installed binary must print, in `hookcert version`, its version, the commit
# where the build knows it (a checkout), and the Go version.
# Usage: examples/ci/install-check.sh   (a few minutes; fetches about 80 MB)
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
doc=$repo/docs/install.md
export PATH=/usr/local/go/bin:$PATH

if [ "$(go env GOPROXY)" = off ]; then
  echo "install-check: GOPROXY=off; the install paths need the Go module proxy" >&2
  exit 1
fi

tmp=$(mktemp -d)
# The module cache is read-only by design: make it writable to remove it.
trap 'chmod -R u+w "$tmp" 2>/dev/null; rm -rf "$tmp"' EXIT

# An empty GOPATH and module cache; the build cache (content-addressed) is kept,
# so this measures fetching, not compiling the dependencies again. No go env
# file (GOENV=off) and no GOFLAGS, as for a new user: a machine's may turn off
# the commit stamping. The local Go is the one documented (go.mod).
unset GOFLAGS
export GOENV=off GOPATH=$tmp/gopath GOMODCACHE=$tmp/gopath/pkg/mod GOBIN=$tmp/bin GOTOOLCHAIN=local
export PATH=$GOBIN:$PATH
gover=$(go env GOVERSION)
commit=$(git -C "$repo" rev-parse HEAD)

# block NAME prints the sh block that follows <!-- install-check: NAME --> in the doc.
block() {
  awk -v mark="<!-- install-check: $1 -->" '
    $0 == mark { want = 1; next }
    want && /^```sh/ { inside = 1; next }
    inside && /^```/ { exit }
    inside { print }' "$doc"
}

# run_block NAME DIR SED_EXPR... runs the block in DIR with the substitutions;
# its output goes to $tmp/NAME.out (and to the terminal on a failure).
run_block() {
  local name=$1 dir=$2 script=$tmp/$1.sh
  shift 2
  block "$name" > "$script"
  [ -s "$script" ] || { echo "install-check: no block '$name' in $doc" >&2; return 1; }
  for expr in "$@"; do sed -i -e "$expr" "$script"; done
  mkdir -p "$dir"
  local start=$SECONDS
  if ! (cd "$dir" && bash -eo pipefail "$script") > "$tmp/$name.out" 2>&1; then
    cat "$script" "$tmp/$name.out" >&2
    echo "install-check: the '$name' block of docs/install.md failed" >&2
    return 1
  fi
  echo "  ran in $((SECONDS - start)) s"
}

check_version() { # $1 output of hookcert version, $2 wanted version (regexp), $3 wanted commit ("" = none)
  local out
  out=$(grep '^hookcert ' <<< "$1" | tail -n 1)
  echo "  $out"
  [[ $out =~ ^hookcert\ $2\  ]] || { echo "install-check: version: want $2" >&2; return 1; }
  if [ -n "$3" ]; then
    [[ $out == *"(commit $3)"* ]] || { echo "install-check: version: want (commit $3), unmodified" >&2; return 1; }
  fi
  [[ $out == *" $gover "* ]] || { echo "install-check: version: want Go version $gover" >&2; return 1; }
}

pseudo="v[0-9]+\.[0-9]+\.[0-9]+-[0-9.a-z-]*${commit:0:12}|v[0-9]+\.[0-9]+\.[0-9]+"
echo "install-check: docs/install.md, From a checkout (empty module cache)"
run_block checkout "$tmp/user" "s|git clone https://github.com/hookcert/hookcert|git clone -q $repo hookcert|"
check_version "$(cat "$tmp/checkout.out")" "$pseudo" "$commit"
echo "  $(du -sh "$GOMODCACHE/cache/download" | cut -f1) of modules fetched"
clone=$tmp/user/hookcert
run_block make-build "$clone"
check_version "$(cat "$tmp/make-build.out")" "$pseudo" "$commit"

echo "install-check: make release, twice, in clones at different paths"
version=v0.0.1-install-check
platform=$(go env GOOS)_$(go env GOARCH)
make -s -C "$clone" release VERSION=$version PLATFORMS="$(go env GOOS)/$(go env GOARCH) windows/amd64" \
  DIST="$tmp/dist/$version" > "$tmp/release.out"
git clone -q "$repo" "$tmp/elsewhere/hookcert-copy"
make -s -C "$tmp/elsewhere/hookcert-copy" release VERSION=$version PLATFORMS="$(go env GOOS)/$(go env GOARCH) windows/amd64" \
  DIST="$tmp/dist2" > /dev/null
diff "$tmp/dist/$version/SHA256SUMS" "$tmp/dist2/SHA256SUMS" || { echo "install-check: make release is not reproducible" >&2; exit 1; }
sed 's/^/  /' "$tmp/dist/$version/SHA256SUMS"
echo "  the same bytes from both clones"

echo "install-check: docs/install.md, From a release archive"
run_block release "$tmp/download" "s|^version=v1.2.3 platform=linux_amd64|version=$version platform=$platform|" \
  "s|https://github.com/hookcert/hookcert/releases/download|file://$tmp/dist|"
check_version "$(cat "$tmp/release.out")" "$version" "$commit"

echo "install-check: go install github.com/hookcert/hookcert/cmd/hookcert@VERSION through a module proxy"
mod=github.com/hookcert/hookcert
proxy=$tmp/proxy/$mod/@v
mkdir -p "$proxy"
# A module zip is the tree at the commit under "module@version/": git archive makes one.
git -C "$clone" archive --format=zip --prefix="$mod@$version/" -o "$proxy/$version.zip" HEAD
cp "$clone/go.mod" "$proxy/$version.mod"
printf '{"Version":"%s","Time":"%s"}\n' "$version" "$(git -C "$clone" show -s --format=%cI HEAD)" > "$proxy/$version.info"
echo "$version" > "$proxy/list"
for v in "$version" latest; do
  rm -f "$GOBIN/hookcert"
  # Only this module comes from the file proxy; it is not in the checksum database.
  (cd "$tmp" && GOPROXY="file://$tmp/proxy,$(go env GOPROXY)" GONOSUMDB=$mod go install "$mod/cmd/hookcert@$v" 2> "$tmp/go.log") ||
    { cat "$tmp/go.log" >&2; echo "install-check: go install @$v failed" >&2; exit 1; }
  # A module download carries no VCS data: the version names the release, no commit.
  check_version "$("$GOBIN/hookcert" version)" "$version" ""
done

echo "install-check: ok"
