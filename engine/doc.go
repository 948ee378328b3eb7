// Package engine decides and performs node garbage collection with the
// kubelet's semantics.
//
// Data flows one way: a Reader (the CRI runtime) and the filesystems are
// collected into a Snapshot; pure planners turn a Snapshot, a Policy and an
// evaluation time into a Plan; the Executor applies a Plan through a Remover,
// re-checking every item just before it deletes it, and writes a PassReport.
// The Scheduler runs passes periodically, on demand and as dry-runs, and
// publishes reports and events to subscribers such as the dashboard.
//
// The rules are the kubelet's (pkg/kubelet/images/image_gc_manager.go and
// pkg/kubelet/kuberuntime/kuberuntime_gc.go), with the differences listed in
// docs/design.md: the sandbox image is always protected, never-used
// images are not infinitely idle, and every kept image carries a reason.
package engine
