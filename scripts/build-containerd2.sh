#!/usr/bin/env bash
# Builds containerd 2 (containerd, containerd-shim-runc-v2, ctr) from the Go
# module proxy, because Debian 12 packages only containerd 1.6. The binaries
# are cached by version under $NODEGC_CACHE (default /var/cache/nodegc), so
# only the first run pays the build (about 5 minutes on 2 cores); later runs
# return at once. Prints the bin directory on stdout.
#
#   scripts/build-containerd2.sh            # build or reuse v2.2.1
#   CONTAINERD2_VERSION=v2.2.1 scripts/build-containerd2.sh
set -euo pipefail

version="${CONTAINERD2_VERSION:-v2.2.1}"
cache="${NODEGC_CACHE:-/var/cache/nodegc}"
dest="$cache/containerd-$version"
bin="$dest/bin"
tools=(containerd containerd-shim-runc-v2 ctr)

have() {
	local t
	for t in "${tools[@]}"; do
		[ -x "$bin/$t" ] || return 1
	done
}

if have; then
	echo "$bin"
	exit 0
fi

go="${GO:-go}"
if ! command -v "$go" >/dev/null 2>&1; then
	echo "build-containerd2: no go toolchain on PATH" >&2
	exit 1
fi

mkdir -p "$cache"
# One build at a time: parallel runs (several checkouts on one machine) wait
# for the first and then reuse its binaries.
exec 9>"$cache/.containerd-$version.lock"
flock 9
if have; then
	echo "$bin"
	exit 0
fi

work="$(mktemp -d "$cache/.build-containerd-$version.XXXXXX")"
trap 'chmod -R u+w "$work" 2>/dev/null; rm -rf "$work"' EXIT

echo "build-containerd2: building containerd $version from source (a few minutes, once)" >&2
dir="$(cd "$work" && GOFLAGS=-mod=mod "$go" mod download -json "github.com/containerd/containerd/v2@$version" |
	sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')"
if [ -z "$dir" ] || [ ! -d "$dir" ]; then
	echo "build-containerd2: go mod download gave no module directory for containerd $version" >&2
	exit 1
fi
# The module cache is read-only; build in a writable copy.
cp -r "$dir" "$work/src"
chmod -R u+w "$work/src"
mkdir -p "$work/bin"
(
	cd "$work/src"
	GOFLAGS="-mod=mod -buildvcs=false" CGO_ENABLED=0 "$go" build \
		-tags "no_btrfs no_devmapper" \
		-ldflags "-X github.com/containerd/containerd/v2/version.Version=$version" \
		-o "$work/bin/" ./cmd/containerd ./cmd/containerd-shim-runc-v2 ./cmd/ctr
)
"$work/bin/containerd" --version >&2
# Publish the finished bin directory in one rename so a half-built one is
# never seen as cached.
mkdir -p "$dest"
rm -rf "$bin"
mv "$work/bin" "$bin"
echo "$bin"
