// Package podsource is nodegc's pod source: the API server's view of the
// pods bound to this node, kept by a client-go informer, from which it
// tells the engine which pods are removable, as the kubelet's pod workers
// do (ShouldPodContentBeRemoved in pkg/kubelet/pod_workers.go).
//
// The engine needs a pod source to remove what deleted pods leave behind:
// their dead containers, sandboxes and log directories. Without one (no
// API server, not synced yet, or a list that disagrees with the node) it
// behaves like a kubelet whose sources are not ready: limits only. The
// source fails closed: static pods are never its to remove, and a mirror
// pod counts only when this Node made it. The engine package itself does not import
// client-go; this package plugs into engine.Options.PodSource.
package podsource
