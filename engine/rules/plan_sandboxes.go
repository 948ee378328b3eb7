package rules

import (
	"cmp"
	"slices"

	"github.com/nodegc/nodegc/engine/model"
)

// compareSandboxNewestFirst is the kubelet's sandboxByCreated order
// ("newest first", pkg/kubelet/kuberuntime/kuberuntime_gc.go in v1.36):
// createdAt descending, the attempt playing no part; nodegc ends on the ID
// so that ties are deterministic.
func compareSandboxNewestFirst(a, b *model.Sandbox) int {
	return cmp.Or(
		b.CreatedAt.Compare(a.CreatedAt),
		cmp.Compare(a.ID, b.ID),
	)
}

// planSandboxGC is the kubelet's sandbox GC (evictSandboxes in
// pkg/kubelet/kuberuntime/kuberuntime_gc.go) as a pure function. It takes
// the whole snapshot, for its sandboxes and its pod source, and the
// containers that survive the container plan: the kubelet lists the
// containers again after removing the dead ones, so a sandbox whose last
// containers the container plan removes is free to go in the same pass.
//
// A sandbox is active when it is SANDBOX_READY or a surviving container
// references it; active sandboxes always stay. Per pod, in the kubelet's
// newest-first order (createdAt only, the kubelet's sandboxByCreated):
//   - a removable pod (ready pod source) loses every inactive sandbox
//     (pod-removable), the newest included;
//   - any other pod keeps its newest sandbox and loses the older inactive
//     ones (superseded).
//
// Removals are ordered by pod UID, oldest sandbox first.
func planSandboxGC(s model.Snapshot, survivors []model.Container) model.SandboxPlan {
	return planSandboxes(s, survivors, removablePods(s))
}

// planSandboxes is planSandboxGC with the set of pods whose inactive
// sandboxes all go (removable pods, or terminated ones for the reclaim
// pass).
func planSandboxes(s model.Snapshot, survivors []model.Container, evictPods map[string]bool) model.SandboxPlan {
	plan := model.SandboxPlan{Remove: []model.SandboxRemoval{}}
	referenced := make(map[string]bool, len(survivors))
	for _, c := range survivors {
		referenced[c.PodSandboxID] = true
	}
	byPod := make(map[string][]*model.Sandbox)
	seen := make(map[string]bool, len(s.Sandboxes))
	for i := range s.Sandboxes {
		sb := &s.Sandboxes[i]
		if seen[sb.ID] {
			continue
		}
		seen[sb.ID] = true
		byPod[sb.PodUID] = append(byPod[sb.PodUID], sb)
	}
	pods := make([]string, 0, len(byPod))
	for uid, sbs := range byPod {
		pods = append(pods, uid)
		slices.SortFunc(sbs, compareSandboxNewestFirst)
	}
	slices.Sort(pods)

	for _, uid := range pods {
		sbs := byPod[uid]
		keep, reason := 1, model.SandboxSuperseded
		if evictPods[uid] {
			keep, reason = 0, model.SandboxPodRemovable
		}
		for i := len(sbs) - 1; i >= keep; i-- {
			sb := sbs[i]
			// Only a sandbox known to be NOTREADY is inactive: a state
			// the contract does not know counts as ready.
			if sb.State != model.SandboxNotReady || referenced[sb.ID] {
				continue // active
			}
			plan.Remove = append(plan.Remove, model.SandboxRemoval{ID: sb.ID, PodUID: sb.PodUID, Reason: reason, State: sb.State})
		}
	}
	return plan
}
