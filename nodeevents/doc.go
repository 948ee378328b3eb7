// Package nodeevents reports the agent's GC passes as Events on its Node
// object (events.k8s.io/v1, reporting controller "nodegc"), where
// `kubectl describe node` and `kubectl get events` show them beside the
// kubelet's: the kubelet's warning reasons (FreeDiskSpaceFailed,
// InvalidDiskCapacity, ImageGCFailed, ContainerGCFailed) and one Normal
// GarbageCollected event per pass that removed something.
//
// It does not use client-go's events recorder (k8s.io/client-go/tools/
// events): the recorder takes a clientset, and the clientset links every
// API group of k8s.io/client-go/kubernetes/scheme (26 MB of the stripped
// binary, 14 ms of every start). What the agent needs of the recorder is
// small: an events.k8s.io/v1 Event named and filled as the recorder
// fills it, sent without blocking the caller, and a bound on how many.
// The recorder's series (a repeat PATCHed onto the first) is left out: at
// most one event per reason per pass, every minute or five, is the
// kubelet's own rate for these reasons.
package nodeevents
