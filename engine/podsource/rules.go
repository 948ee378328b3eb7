package podsource

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/nodegc/nodegc/engine"
)

// MirrorPodAnnotation is the annotation of a mirror pod that holds its
// static pod's UID (kubetypes.ConfigMirrorAnnotationKey,
// v1.MirrorPodAnnotationKey). The kubelet names a static pod's containers
// with the static pod's UID, which the API server never sees: only its
// mirror pod, with a UID of its own.
const MirrorPodAnnotation = corev1.MirrorPodAnnotationKey

// Pod status reasons the kubelet sets when it evicts a pod: the eviction
// manager (pkg/kubelet/eviction/helpers.go Reason) and the critical-pod
// preemption (pkg/kubelet/preemption/preemption.go, events.PreemptContainer).
// Both kill the pod with isEvicted = true, which makes the pod worker's
// status evicted (pod_workers.go UpdatePod, KillPodOptions.Evict).
const (
	ReasonEvicted    = "Evicted"
	ReasonPreempting = "Preempting"
)

// Removable returns, sorted, the UIDs among the snapshot's pods
// (engine.Snapshot.PodUIDs) whose content the kubelet would remove, given
// the pods the API server has bound to nodeName. It is the API-side
// reading of the kubelet's podWorkers.ShouldPodContentBeRemoved
// (pkg/kubelet/pod_workers.go, v1.36.3):
//
//	status.IsEvicted() || (status.IsDeleted() && status.IsTerminated())
//	// unknown pod: podsSynced
//
// so a pod is removable when
//   - the API server does not know it (deleted, or never bound here): the
//     pod workers do not know it once all sources are synced, or know it
//     as an orphan, which is deleted;
//   - it was evicted or preempted by the kubelet (phase Failed with reason
//     Evicted or Preempting: evictPod and preemption set these as they
//     kill it with isEvicted);
//   - it is being deleted (deletionTimestamp set, which UpdatePod marks
//     deleted) and terminated, as pkg/volume/util.IsPodTerminated reads it
//     from the API: a terminal phase, or no init, regular or ephemeral
//     container running.
//
// Whatever the API says, a pod that still has a running container or a
// ready sandbox is not removable: the pod worker's IsTerminated comes only
// after it stopped them all (isPodStatusCacheTerminal in pod_workers.go),
// and nodegc stops nothing that runs. This also covers a static pod whose
// mirror pod is missing for a moment.
//
// A static pod counts through its mirror pod: MirrorPodAnnotation holds
// the UID its containers carry. Pods bound to another node are ignored.
func Removable(snap engine.Snapshot, pods []*corev1.Pod, nodeName string) []string {
	known := make(map[string]*corev1.Pod, len(pods))
	for _, p := range pods {
		if p == nil || p.Spec.NodeName != nodeName {
			continue
		}
		known[string(p.UID)] = p
		if uid := p.Annotations[MirrorPodAnnotation]; uid != "" {
			known[uid] = p
		}
	}
	active := activePods(snap)
	removable := []string{}
	for _, uid := range snap.PodUIDs() {
		if active[uid] {
			continue
		}
		p, ok := known[uid]
		if !ok || contentRemovable(p) {
			removable = append(removable, uid)
		}
	}
	return removable
}

// contentRemovable reports whether a pod the API server knows may lose its
// content: evicted, or deleted and terminated (ShouldPodContentBeRemoved).
func contentRemovable(p *corev1.Pod) bool {
	return evicted(p) || (p.DeletionTimestamp != nil && terminated(p))
}

// evicted reports whether the kubelet evicted or preempted the pod.
func evicted(p *corev1.Pod) bool {
	return p.Status.Phase == corev1.PodFailed &&
		(p.Status.Reason == ReasonEvicted || p.Status.Reason == ReasonPreempting)
}

// terminated is pkg/volume/util.IsPodTerminated (v1.36.3): a terminal
// phase, or deleted with every container status terminated or waiting.
func terminated(p *corev1.Pod) bool {
	st := p.Status
	return st.Phase == corev1.PodFailed || st.Phase == corev1.PodSucceeded ||
		(p.DeletionTimestamp != nil && notRunning(st.InitContainerStatuses) &&
			notRunning(st.ContainerStatuses) && notRunning(st.EphemeralContainerStatuses))
}

// notRunning is pkg/volume/util's notRunning: every status is terminated
// or waiting, or there is none.
func notRunning(statuses []corev1.ContainerStatus) bool {
	for _, s := range statuses {
		if s.State.Terminated == nil && s.State.Waiting == nil {
			return false
		}
	}
	return true
}

// activePods returns the pods with a running container or a ready sandbox
// in the snapshot (isPodStatusCacheTerminal in pkg/kubelet/pod_workers.go).
// A state the CRI API does not define counts as running, as everywhere in
// the engine.
func activePods(snap engine.Snapshot) map[string]bool {
	m := make(map[string]bool)
	for _, c := range snap.Containers {
		switch c.State {
		case engine.ContainerCreated, engine.ContainerExited, engine.ContainerUnknown:
		default:
			m[c.PodUID] = true
		}
	}
	for _, sb := range snap.Sandboxes {
		if sb.State != engine.SandboxNotReady {
			m[sb.PodUID] = true
		}
	}
	return m
}
