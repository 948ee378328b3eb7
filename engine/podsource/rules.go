package podsource

import (
	"cmp"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

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
// "Not listed" means "deleted" only while the list can be right, so the
// list must first agree with the node (every pod with a ready sandbox is
// listed, a static pod through a trusted mirror pod): otherwise Removable
// returns an *InconsistentError and no UID.
//
// Whatever the API says, a pod that still has a running container or a
// ready sandbox is not removable: the pod worker's IsTerminated comes only
// after it stopped them all (isPodStatusCacheTerminal in pod_workers.go),
// and nodegc stops nothing that runs.
//
// A static pod (a sandbox with a config source other than "api") is never
// removable here: the kubelet knows it from its manifest, not from the
// API server, and keeps its content whatever becomes of its mirror pod
// (in v1.36.3 a finished static pod's deleted mirror pod is not even
// re-created). Only the limits can take its content. Pods bound to another
// node are ignored, and a pod is looked up by its own UID only: no other
// pod's mirror annotation can stand for it.
func Removable(snap engine.Snapshot, pods []*corev1.Pod, nodeName string) ([]string, error) {
	v := newView(snap, pods, nodeName)
	if err := v.consistent(); err != nil {
		return nil, err
	}
	active := activePods(snap)
	removable := []string{}
	for _, uid := range snap.PodUIDs() {
		if active[uid] || v.static[uid] {
			continue
		}
		p, ok := v.own[uid]
		if !ok || contentRemovable(p) {
			removable = append(removable, uid)
		}
	}
	return removable, nil
}

// InconsistentError says that the API server's list of this node's pods
// cannot be right: pods run here that it does not hold. The usual cause is
// a node name that is not the kubelet's (every pod then looks deleted);
// another is an API server or cache that lags behind the kubelet.
type InconsistentError struct {
	// Node is the node name the API server was asked about.
	Node string
	// Server names the API server, when known.
	Server string
	// Unlisted are the pods with a ready sandbox that the list lacks,
	// sorted by UID.
	Unlisted []engine.Sandbox
}

func (e *InconsistentError) Error() string {
	first := e.Unlisted[0]
	name := first.PodUID
	if first.PodName != "" {
		name = first.PodNamespace + "/" + first.PodName
	}
	server := "the API server"
	if e.Server != "" {
		server += " " + e.Server
	}
	return fmt.Sprintf("pod source inconsistent: node %s: %d pods running here are not listed by %s (wrong --node-name? e.g. %s)",
		e.Node, len(e.Unlisted), server, name)
}

// view is the API server's list read against one snapshot.
type view struct {
	snap     engine.Snapshot
	nodeName string
	// own holds the pods bound to nodeName by their own UID.
	own map[string]*corev1.Pod
	// static holds the UIDs of the snapshot's static pods.
	static map[string]bool
	// mirrored holds the static pods that a trusted mirror pod names.
	mirrored map[string]bool
}

func newView(snap engine.Snapshot, pods []*corev1.Pod, nodeName string) view {
	v := view{snap: snap, nodeName: nodeName, own: make(map[string]*corev1.Pod, len(pods)),
		static: make(map[string]bool), mirrored: make(map[string]bool)}
	for _, sb := range snap.Sandboxes {
		if sb.Static() && sb.PodUID != "" {
			v.static[sb.PodUID] = true
		}
	}
	for _, p := range pods {
		if p == nil || p.Spec.NodeName != nodeName {
			continue
		}
		v.own[string(p.UID)] = p
		if uid, ok := trustedMirror(p, nodeName, v.static); ok {
			v.mirrored[uid] = true
		}
	}
	return v
}

// consistent reports, as an *InconsistentError, the pods with a ready sandbox (or one
// in a state the CRI API does not define) that the list lacks: an API pod
// must be listed by its UID, a static pod through a trusted mirror pod.
func (v view) consistent() error {
	seen := make(map[string]bool)
	var unlisted []engine.Sandbox
	for _, sb := range v.snap.Sandboxes {
		if sb.State == engine.SandboxNotReady || sb.PodUID == "" || seen[sb.PodUID] {
			continue
		}
		seen[sb.PodUID] = true
		listed := v.mirrored[sb.PodUID]
		if !v.static[sb.PodUID] {
			_, listed = v.own[sb.PodUID]
		}
		if !listed {
			unlisted = append(unlisted, sb)
		}
	}
	if len(unlisted) == 0 {
		return nil
	}
	slices.SortFunc(unlisted, func(a, b engine.Sandbox) int { return cmp.Compare(a.PodUID, b.PodUID) })
	return &InconsistentError{Node: v.nodeName, Unlisted: unlisted}
}

// trustedMirror returns the static pod's UID that p, a mirror pod, names,
// when p may stand for it: the kubelet made it (its controller is this
// Node, as basicMirrorClient.CreateMirrorPod in pkg/kubelet/pod/
// mirror_client.go sets it) and it names a static pod that is on this
// node. Any pod may carry the mirror annotation (kube-apiserver v1.36.3
// allows it on create), so the annotation alone proves nothing.
func trustedMirror(p *corev1.Pod, nodeName string, static map[string]bool) (string, bool) {
	uid := p.Annotations[MirrorPodAnnotation]
	if uid == "" || !static[uid] {
		return "", false
	}
	ref := metav1.GetControllerOfNoCopy(p)
	if ref == nil || ref.APIVersion != "v1" || ref.Kind != "Node" || ref.Name != nodeName {
		return "", false
	}
	return uid, true
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
