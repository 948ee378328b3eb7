// Package cgroupfs finds and reads the kubepods cgroup tree of a Kubernetes
// node: the cgroup mode (v1, v2 unified, hybrid), the kubelet's cgroup driver
// (cgroupfs or systemd), where each controller is mounted, and, for every
// QoS, pod and container cgroup under kubepods, its memory usage and limit,
// cumulative CPU time, pids and pressure (PSI) where the kernel offers it.
//
// It also computes node allocatable as the kubelet does (capacity minus
// systemReserved and kubeReserved) and compares it with the limits really set
// on the kubepods cgroup, so drift between the kubelet's config and the node
// shows.
//
// The package never talks to the container runtime: pod and container names
// come in through the [Names] interface, filled by the caller from a CRI
// snapshot. Cgroups nobody claims are shown as "unknown", never dropped.
package cgroupfs
