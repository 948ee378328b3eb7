// Package kubelet runs a real kubelet (v1.36.3, built by
// scripts/build-kube.sh from tools/kube) beside nodegc on the real
// containerd of internal/realnode and checks that nodegc's plan, replayed
// from a snapshot taken just before each of the kubelet's periodic garbage
// collection passes, names exactly what the kubelet removed.
//
// The container-GC and API-server tests run on Debian's containerd 1.6,
// the image-GC test on containerd 2 (built into the same cache by
// scripts/build-containerd2.sh), which pins the sandbox image the kubelet
// would otherwise remove.
//
// The binaries are found in $NODEGC_KUBE_DIR (set by the Makefile), else
// /var/cache/nodegc/kube-v1.36.3. Without them, root or containerd the tests
// skip, and fail under NODEGC_REQUIRE_CONTAINERD=1.
package kubelet
