// Package agent is `nodegc agent`'s surfaces around the engine: the TCP
// listener of /metrics, /healthz and /readyz, with the bounds that keep
// the kubelet's probes answered whoever else connects; the control socket in the state
// dir; the metrics collector fed by the scheduler's notices; and the
// Node's events. cmd/nodegc parses the flags, opens the node and calls
// Listen and Run.
package agent
