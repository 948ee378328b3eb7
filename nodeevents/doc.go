// Package nodeevents reports the agent's GC passes as Events on its Node
// object (events.k8s.io/v1, reporting controller "nodegc"), where
// `kubectl describe node` and `kubectl get events` show them beside the
// kubelet's: the kubelet's warning reasons (FreeDiskSpaceFailed,
// InvalidDiskCapacity, ImageGCFailed, ContainerGCFailed) and one Normal
// GarbageCollected event per pass that removed something.
//
// Repeats cost what they tell: as client-go's events recorder
// (tools/events) does, the first event of a series (same type, reason and
// action about the node) is created, its first repeat within 6 minutes
// patches the event's series (count 2), later repeats are counted and
// written when the series ends or every 30 minutes; new event objects are
// bounded as the kubelet's correlator bounds them (25 at once, then one
// every 5 minutes). So at most one event per reason and action stands
// for a node's window, and a container pass every minute costs about one
// write in 30 minutes, not one a minute (docs/performance.md).
//
// It does not use client-go's events recorder itself: the recorder takes
// a clientset, and the clientset links every API group of
// k8s.io/client-go/kubernetes/scheme (26 MB of the stripped binary, 14 ms
// of every start). What the agent needs of it is small: an
// events.k8s.io/v1 Event named and filled as the recorder fills it, sent
// without blocking the caller, and the series above.
package nodeevents
