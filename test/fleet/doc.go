// Package fleet tests `nodegc fleet` at scale: many simulated nodes
// behind one real kube-apiserver, each node's agent (`nodegc agent` on a
// `nodegc simnode`) in a network namespace of its own with a global
// unicast address (the API server's pods proxy refuses loopback and
// link-local ones), its Pod object written through the API with that
// address as status.podIP. Everything it creates (namespaces, a bridge,
// veth pairs, processes, files) it removes, and every byte stays on this
// machine. It needs root, ip(8), etcd and `make kube`.
//
// NODEGC_FLEET_NODES sets the number of nodes (default 100). The timings
// it logs are a benchmark (docs/performance.md), not assertions.
package fleet
