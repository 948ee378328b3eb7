package rules

import (
	"strings"
	"time"

	"github.com/nodegc/nodegc/engine/model"
)

// PlanPass is the pure planner: it decides a pass of the kind from a
// snapshot, a policy and the evaluation time, and reads nothing else (no
// clock, no I/O). A dry-run and a real pass of the same inputs therefore
// select exactly the same items.
//
// What each kind plans:
//   - PassImages: the kubelet's image GC (MaxAge pass, then space pass).
//   - PassContainers: the kubelet's container GC: dead containers, then the
//     sandboxes that no surviving container references, then logs.
//   - PassFull: a container pass, then an image pass. Images stay in use for
//     as long as any container in the snapshot uses them, even one the
//     container plan removes: the image pass of the next cycle frees them,
//     as in the kubelet, where the two collectors run independently.
//   - PassReclaimAll: the eviction manager's reclaim (DeleteAllUnusedContainers
//     then DeleteUnusedImages): container GC that also evicts terminated
//     pods, sandboxes and logs as usual, then every unused, unpinned,
//     non-sandbox image at least MinAge old whatever the thresholds.
//
// Every pass fills DiskReserve. The collectors a pass does not run are
// left empty, with non-nil lists so that JSON shows [] rather than null.
// An unknown kind plans nothing.
func PlanPass(s model.Snapshot, p model.Policy, kind model.PassKind, now time.Time) model.Plan {
	plan := newPlan(s, p, kind, now)
	images, containers := passSides(s, p, kind, now)
	switch {
	case images == nil && containers == nil:
	case images == nil:
		containers(&plan, nil)
	case containers == nil:
		images(&plan, nil)
	default:
		alongside(func() { images(&plan, nil) }, func() { containers(&plan, nil) })
	}
	return plan
}

// newPlan is a plan of the kind with nothing planned yet: its header,
// the policy, the disk reserve, and empty lists for every collector.
func newPlan(s model.Snapshot, p model.Policy, kind model.PassKind, now time.Time) model.Plan {
	return model.Plan{
		APIVersion:  model.APIVersion,
		Kind:        model.KindPlan,
		EvaluatedAt: now,
		Pass:        kind,
		Policy:      p,
		ImageGC:     emptyImagePlan(),
		ContainerGC: model.ContainerPlan{Remove: []model.ContainerRemoval{}},
		SandboxGC:   model.SandboxPlan{Remove: []model.SandboxRemoval{}},
		LogGC:       model.LogPlan{Remove: []model.LogRemoval{}},
		DiskReserve: checkDiskReserve(s, p.Disk),
	}
}

// passSides are a pass's two halves, each nil when a pass of the kind
// does not run it: images, the image planner, fills a plan's ImageGC
// from the images as rankImages ranks them at now (ranked, or ranked
// here when nil);
// containers, the container, sandbox and log planners, fill its
// ContainerGC, SandboxGC and LogGC, and calls containersPlanned (when
// not nil) with a copy of the plan as soon as its ContainerGC is filled
// in, before the sandboxes and logs are planned, and with the index of
// each container's removal (planContainersAt's removedAt). Each half only reads
// the snapshot and writes its own part of the plan, so the two run on
// two cores.
func passSides(s model.Snapshot, p model.Policy, kind model.PassKind, now time.Time) (images func(plan *model.Plan, ranked []imageEntry), containers func(plan *model.Plan, containersPlanned func(model.Plan, []int32))) {
	runContainers := func(reclaim bool) func(*model.Plan, func(model.Plan, []int32)) {
		return func(plan *model.Plan, containersPlanned func(model.Plan, []int32)) {
			removable := removablePods(s)
			evict := removable
			if reclaim {
				evict = terminatedPods(s)
			}
			var removedAt []int32
			plan.ContainerGC, removedAt = planContainersAt(s, p.Container, now, evict)
			if containersPlanned != nil {
				containersPlanned(*plan, removedAt)
			}
			survivors := survivingContainers(s.Containers, removedAt)
			plan.SandboxGC = planSandboxes(s, survivors, evict)
			plan.LogGC = planLogs(s, survivors, p.PodLogsDir, linkDir(s.Logs), removable)
		}
	}
	imageGC := func(reclaim bool) func(*model.Plan, []imageEntry) {
		return func(plan *model.Plan, ranked []imageEntry) {
			if ranked == nil {
				ranked = rankImages(s, now)
			}
			plan.ImageGC = planRankedImages(s, p.Image, now, reclaim, ranked)
		}
	}
	switch kind {
	case model.PassImages:
		return imageGC(false), nil
	case model.PassContainers:
		return nil, runContainers(false)
	case model.PassFull:
		return imageGC(false), runContainers(false)
	case model.PassReclaimAll:
		return imageGC(true), runContainers(true)
	}
	return nil, nil
}

// alongside runs a on a goroutine of its own and b on this one, and
// returns when both are done. The image planner and the container,
// sandbox and log planners only read the snapshot and each writes its
// own part of the plan, so a full pass plans on two cores.
func alongside(a, b func()) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		a()
	}()
	b()
	<-done
}

// removablePods returns the pods whose dead containers, sandboxes and logs
// may all go: those the pod source lists as removable, and none at all
// when the source is not ready (the kubelet's allSourcesReady guard in
// pkg/kubelet/kuberuntime/kuberuntime_gc.go).
func removablePods(s model.Snapshot) map[string]bool {
	m := make(map[string]bool)
	if !s.PodSource.Ready {
		return m
	}
	for _, uid := range s.PodSource.RemovablePodUIDs {
		if uid != "" {
			m[uid] = true
		}
	}
	return m
}

// terminatedPods returns the pods the eviction manager's reclaim treats as
// terminated: the removable ones, plus every pod that has at least one
// sandbox, all of them SANDBOX_NOTREADY, and no running container (a
// sandbox or container in a state the CRI API does not define counts as
// live). The kubelet asks its pod workers (ShouldPodRuntimeBeRemoved); a
// snapshot has no pod workers, and a pod whose sandboxes are all down has
// no live process left. Like the kubelet (the allSourcesReady guard in
// kuberuntime_gc.go), none at all without a ready pod source: a node that
// just rebooted has every sandbox not ready, and its pods' history
// (restart counts, previous logs) must not go.
func terminatedPods(s model.Snapshot) map[string]bool {
	m := removablePods(s)
	if !s.PodSource.Ready {
		return m
	}
	ready := make(map[string]bool)
	seen := make(map[string]bool)
	for _, sb := range s.Sandboxes {
		if sb.PodUID == "" {
			continue
		}
		seen[sb.PodUID] = true
		if sb.State != model.SandboxNotReady { // READY, or a state the API does not define
			ready[sb.PodUID] = true
		}
	}
	running := make(map[string]bool)
	for _, c := range s.Containers {
		if !IsDead(c.State) {
			running[c.PodUID] = true
		}
	}
	for uid := range seen {
		if !ready[uid] && !running[uid] {
			m[uid] = true
		}
	}
	return m
}

// survivingContainers returns the snapshot's containers minus those the
// container plan removes (removedAt, planContainersAt's), in snapshot
// order.
func survivingContainers(all []model.Container, removedAt []int32) []model.Container {
	n := 0
	for _, at := range removedAt {
		if at < 0 {
			n++
		}
	}
	out := make([]model.Container, 0, n)
	for i, c := range all {
		if removedAt[i] < 0 {
			out = append(out, c)
		}
	}
	return out
}

// shortState is a container state for people: "exited", "running".
func shortState(st model.ContainerState) string {
	return strings.ToLower(st.Short())
}

// humanDuration rounds a duration to the second for display, keeping
// sub-second durations as they are so they never print as 0s.
func humanDuration(d time.Duration) string {
	if d >= time.Second || d <= -time.Second {
		d = d.Round(time.Second)
	}
	return d.String()
}
