// Package fleet tests `nodegc fleet` against a real kube-apiserver and
// etcd with the NodeGC resource of deploy/crd.yaml: the test writes the
// Node and NodeGC objects as agents would (no agent runs; the fleet never
// asks one), runs the nodegc binary (-o json, and its screen in a private
// tmux server) and checks what it shows: states, bad input, a change on
// the watch, a watch that breaks and resumes. Everything it starts it
// ends, and it removes what it creates. It needs etcd, `make kube`
// (kube-apiserver and kubectl v1.36.3) and tmux.
//
// TestFleetAtScale is the benchmark: NODEGC_FLEET_NODES nodes (default
// 200; 5,000 for docs/performance.md). The timings it logs are figures,
// not assertions.
package fleet
