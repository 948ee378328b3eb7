// Package realnode runs a real, private containerd for nodegc's integration
// tests and for `make sandbox`.
//
// The node is everything a kubelet-managed containerd is, minus the cluster:
// Debian's containerd 1.6 and runc (installed with apt when missing), or
// containerd 2 built from source (Options.Runtime, the table Runtimes), a
// config,
// root, state dir and socket of its own under a temp dir, its root on a
// size-limited tmpfs so the image filesystem can really be filled past the GC
// thresholds, images built locally as OCI archives (no registry) and imported
// with ctr, one of them the CRI sandbox image, and host-network pods so no CNI
// is needed. Pods get the kubelet's labels and cgroup parents
// (/kubepods/<qos>/pod<uid>), so nodegc sees exactly what it sees on a node.
//
// Teardown kills only the processes the harness started (containerd, its
// shims and their containers, found by the temp dir in their command line),
// unmounts everything under the temp dir and removes it. A test binary that
// crashed leaves an owner file behind; the next Launch cleans such leftovers.
package realnode
