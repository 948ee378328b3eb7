// Command nodegc is a node-local garbage collector for Kubernetes nodes.
//
// It plans and performs image, container, sandbox and log garbage
// collection over the node's CRI runtime with the kubelet's semantics,
// explains every decision, and prints the kubepods cgroup tree. The policy
// takes the kubelet's flag names, reads the node's kubelet configuration,
// and says where each effective value came from.
//
// Exit codes: 0 ok; 1 the runtime cannot be reached, a pass had errors or
// the confirmation was declined; 2 bad input (a flag, the kubelet config, a
// snapshot file, or gc without a terminal and without --yes).
package main
