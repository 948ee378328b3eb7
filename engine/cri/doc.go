// Package cri is nodegc's adapter to a container runtime: it speaks the
// Kubernetes CRI v1 API (k8s.io/cri-api) over gRPC to the runtime's unix
// socket and implements engine.Reader and engine.Remover on top of it.
//
// Dial connects with a per-call timeout and a receive limit large enough
// for a node with 100,000 containers; Discover finds the endpoint as
// crictl and the kubelet do. Client.ReadOnly hands out a value with only
// the reading methods, so `nodegc plan` and --read-only cannot delete
// anything by construction.
//
// Errors wrap engine.ErrNotFound when the runtime does not have the object
// and engine.ErrUnavailable when it cannot be reached, so callers can map
// them without knowing gRPC.
package cri
