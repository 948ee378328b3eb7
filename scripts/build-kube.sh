#!/usr/bin/env bash
# Builds the real kubelet, kube-apiserver, kube-controller-manager,
# kube-scheduler and kubectl (k8s.io/kubernetes, pinned in tools/kube/go.mod)
# that test/kubelet and test/cluster run beside nodegc, into a cache dir keyed
# by version: $NODEGC_KUBE_DIR, default
# ${NODEGC_CACHE:-/var/cache/nodegc}/kube-<version>. Skips what is already
# there. The first build takes 10-35 minutes on 2 cores, depending on load;
# Go's build cache and the cache dir make later runs fast. Prints one line.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
version="$(awk '$1 == "require" && $2 == "k8s.io/kubernetes" {print $3}' "$root/tools/kube/go.mod")"
if [ -z "$version" ]; then
	echo "build-kube: no k8s.io/kubernetes version in tools/kube/go.mod" >&2
	exit 1
fi
dir="${NODEGC_KUBE_DIR:-${NODEGC_CACHE:-/var/cache/nodegc}/kube-$version}"
cmds=(kubelet kube-apiserver kube-controller-manager kube-scheduler kubectl)
missing=()
for c in "${cmds[@]}"; do
	[ -x "$dir/$c" ] || missing+=("$c")
done
if [ ${#missing[@]} -eq 0 ]; then
	echo "build-kube: ${cmds[*]} $version present in $dir"
	exit 0
fi
mkdir -p "$dir"
start=$SECONDS
for c in "${missing[@]}"; do
	# Build to a temp name and rename, so an interrupted build never leaves a
	# binary that looks complete.
	(cd "$root/tools/kube" && GOFLAGS=-mod=mod CGO_ENABLED=0 "${GO:-go}" build -trimpath -o "$dir/.$c.tmp" "k8s.io/kubernetes/cmd/$c")
	mv "$dir/.$c.tmp" "$dir/$c"
done
echo "build-kube: built ${missing[*]} $version into $dir in $((SECONDS - start))s"
