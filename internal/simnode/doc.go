// Package simnode is a simulated Kubernetes node: an in-memory container
// runtime that serves the real CRI v1 RuntimeService and ImageService over
// gRPC. It exists so that everything above the socket (the CRI adapter, the
// engine, the CLI and the TUI) runs exactly as it does on a real node, in
// tests, in benchmarks and in `nodegc --demo`.
//
// A Node is deterministic: the same Options (with the same Seed) give the
// same images, pods, containers, IDs and timestamps, and the same sequence
// of Step calls gives the same workload. Its image filesystem accounts for
// image sizes against a capacity, and removing an image frees its size at
// once, as containerd does.
//
// Semantics follow containerd 1.6 where the CRI leaves room: the sandbox
// image is not pinned, an image in use by a container can be removed,
// removals of missing objects succeed (the CRI asks them to be idempotent)
// and ImageStatus of a missing image is an empty response. One deliberate
// difference makes engine bugs visible: RemoveContainer of a running
// container fails with FailedPrecondition where containerd would stop it.
//
// For tests a Node records every call it serves (Calls, IsMutating) and
// injects faults: an error on chosen calls (InjectFault), latency
// (SetLatency), dropped connections (DropConnections) and an outage
// (Down, Up).
//
// simnode speaks only CRI: it imports nothing from nodegc, so the engine's
// own tests can use it.
package simnode
