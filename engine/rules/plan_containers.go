package rules

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"github.com/nodegc/nodegc/engine/model"
)

// evictUnit is the kubelet's unit of container eviction
// (pkg/kubelet/kuberuntime/kuberuntime_gc.go): the dead instances of one
// container name in one pod.
type evictUnit struct {
	podUID string
	name   string
}

func compareUnits(a, b evictUnit) int {
	return cmp.Or(cmp.Compare(a.podUID, b.podUID), cmp.Compare(a.name, b.name))
}

// compareNewestFirst is the kubelet's byCreated order ("newest first",
// pkg/kubelet/kuberuntime/kuberuntime_gc.go in v1.36): createdAt
// descending, and nothing else (the attempt number plays no part). The
// kubelet's sort.Sort leaves equal times in any order; nodegc ends on the
// ID so that ties are deterministic: the smaller ID counts as newer.
func compareNewestFirst(a, b *model.Container) int {
	return cmp.Or(
		b.CreatedAt.Compare(a.CreatedAt),
		cmp.Compare(a.ID, b.ID),
	)
}

// IsDead reports whether a container in the state may be collected: the
// kubelet prunes only RUNNING, and nodegc also keeps any state the CRI
// contract does not name, to be safe.
func IsDead(st model.ContainerState) bool {
	return st == model.ContainerExited || st == model.ContainerCreated || st == model.ContainerUnknown
}

// planContainerGC is the kubelet's container GC (evictContainers in
// pkg/kubelet/kuberuntime/kuberuntime_gc.go) as a pure function:
//
//  1. Evictable containers are those not RUNNING (CREATED, EXITED and
//     UNKNOWN are dead) created at or before now - MinAge, grouped into
//     units of (pod UID, container name).
//  2. If the pod source is ready, every container of a unit whose pod is
//     removable goes (pod-removable).
//  3. If MaxPerPodContainer >= 0, each unit keeps its newest N
//     (per-container-limit).
//  4. If MaxContainers >= 0 and more dead containers remain, each unit is
//     trimmed to max(1, floor(MaxContainers/units)), then the oldest of
//     all remaining go until the total fits (node-limit).
//
// "Newest" is the kubelet's byCreated order: createdAt only, within a unit
// and across units (ties by ID). The
// removals are in execution order: by step, then by unit (pod UID, name),
// oldest first within a unit. An UNKNOWN container is stopped before it is
// removed; its State in the plan says so.
func planContainerGC(s model.Snapshot, p model.ContainerPolicy, now time.Time) model.ContainerPlan {
	return planContainers(s, p, now, removablePods(s))
}

// planContainers is planContainerGC with the set of pods whose containers
// all go (removable pods, or terminated ones for the reclaim pass). Its
// steps are containerPass's methods, in the kubelet's order: removable
// pods, the per-container limit, the node limit.
func planContainers(s model.Snapshot, p model.ContainerPolicy, now time.Time, evictPods map[string]bool) model.ContainerPlan {
	plan, _ := planContainersAt(s, p, now, evictPods)
	return plan
}

// planContainersAt is planContainers, and removedAt: for each of the
// snapshot's containers, the index of the plan's removal with its ID, or
// -1. The survivors and the explanation find a container's removal
// through it, without a map of 100,000 IDs of their own.
func planContainersAt(s model.Snapshot, p model.ContainerPolicy, now time.Time, evictPods map[string]bool) (plan model.ContainerPlan, removedAt []int32) {
	g := newContainerPass(s, now.Add(-p.MinAge))
	g.removePods(evictPods)
	g.enforcePerContainerLimit(p.MaxPerPodContainer)
	g.enforceNodeLimit(p.MaxContainers)
	g.plan.Remove = fit(g.plan.Remove)
	return g.plan, g.removedAt()
}

// fit returns removals in an array of their own length when the one they
// were appended to has room for many more: the plan is built in an array
// with room for every evictable container, and a plan that removes few of
// many (the idle node's, which the dashboard, the scheduler's status and
// the quiet pass's mark keep) would hold all that room for as long as it
// is kept. An empty plan's list stays empty, not nil (its JSON is []).
func fit(removals []model.ContainerRemoval) []model.ContainerRemoval {
	if cap(removals)-len(removals) <= len(removals)/4 {
		return removals
	}
	if len(removals) == 0 {
		return []model.ContainerRemoval{}
	}
	return slices.Clone(removals)
}

// containerUnit is one evict unit's dead containers, newest first: the
// kubelet's containersByEvictUnit entry. cs are their indexes in the
// snapshot's containers.
type containerUnit struct {
	key evictUnit
	cs  []int32
}

// containerPass is one container plan being built: the evict units still
// in play and the removals so far. Its steps trim the units and append
// to the plan; they delete nothing.
type containerPass struct {
	containers []model.Container
	// units are the evict units in (pod UID, name) order, each newest
	// first.
	units []containerUnit
	plan  model.ContainerPlan
	// src is the index of each removal's container; dups pairs each
	// container listed again under an ID with the first so listed.
	src  []int32
	dups [][2]int32
	// bySandbox and byUID name the pods of the removals (podNames);
	// lastSandbox, lastUID and lastPod keep the last of them looked up,
	// for the next removal of the same unit.
	bySandbox, byUID     map[string]podName
	lastSandbox, lastUID string
	lastPod              *podName
}

// newContainerPass groups the snapshot's evictable containers into units.
func newContainerPass(s model.Snapshot, newestGCTime time.Time) *containerPass {
	units, evictable, dups := evictUnits(s.Containers, newestGCTime)
	g := &containerPass{containers: s.Containers, units: units, dups: dups,
		plan: model.ContainerPlan{Remove: make([]model.ContainerRemoval, 0, evictable)}, src: make([]int32, 0, evictable)}
	g.bySandbox, g.byUID = podNames(s.Sandboxes)
	return g
}

// removedAt is, for each container, the index of the removal of its ID,
// or -1: a container listed again under an ID goes with the first.
func (g *containerPass) removedAt() []int32 {
	at := make([]int32, len(g.containers))
	for i := range at {
		at[i] = -1
	}
	for n, ci := range g.src {
		at[ci] = int32(n)
	}
	for _, d := range g.dups {
		at[d[0]] = at[d[1]]
	}
	return at
}

// evictUnits is the kubelet's evictableContainers: the dead containers
// created at or before newestGCTime, grouped by (pod UID, name), the
// units in that order and each newest first. A container listed twice
// under one ID counts once; dups pairs the index of each container listed
// again with the first of its ID. evictable is how many containers the
// units hold.
func evictUnits(containers []model.Container, newestGCTime time.Time) (units []containerUnit, evictable int, dups [][2]int32) {
	index := make(map[evictUnit]int)
	first := make(map[string]int32, len(containers))
	j := -1 // the last container's unit: a unit's containers come one after another
	for i := range containers {
		c := &containers[i]
		if f, ok := first[c.ID]; ok {
			dups = append(dups, [2]int32{int32(i), f})
			continue // a duplicate ID: the first one stands for both
		}
		first[c.ID] = int32(i)
		if !IsDead(c.State) || c.CreatedAt.After(newestGCTime) {
			continue
		}
		k := evictUnit{c.PodUID, c.Name}
		if j < 0 || units[j].key != k {
			var ok bool
			if j, ok = index[k]; !ok {
				j = len(units)
				index[k] = j
				units = append(units, containerUnit{key: k})
			}
		}
		units[j].cs = append(units[j].cs, int32(i))
		evictable++
	}
	slices.SortFunc(units, func(a, b containerUnit) int { return compareUnits(a.key, b.key) })
	for _, u := range units {
		slices.SortFunc(u.cs, func(a, b int32) int { return compareNewestFirst(&containers[a], &containers[b]) })
	}
	return units, evictable, dups
}

// remove appends the container ci to the plan's removals, naming its pod.
func (g *containerPass) remove(ci int32, why model.ContainerRemoveReason, detail string) {
	c := &g.containers[ci]
	g.src = append(g.src, ci)
	if g.lastPod == nil || c.PodSandboxID != g.lastSandbox || c.PodUID != g.lastUID {
		pod, ok := g.bySandbox[c.PodSandboxID]
		if !ok {
			pod = g.byUID[c.PodUID]
		}
		g.lastSandbox, g.lastUID, g.lastPod = c.PodSandboxID, c.PodUID, &pod
	}
	pod := g.lastPod
	g.plan.Remove = append(g.plan.Remove, model.ContainerRemoval{
		ID: c.ID, PodUID: c.PodUID, PodNamespace: pod.namespace, PodName: pod.name, Name: c.Name, Reason: why,
		State: c.State, PodSandboxID: c.PodSandboxID, Attempt: c.Attempt, Detail: detail,
	})
}

// trim keeps the newest n of a unit and removes the rest, oldest first:
// the kubelet's removeOldestN.
func (g *containerPass) trim(u *containerUnit, n int, why model.ContainerRemoveReason, detail string) {
	for i := len(u.cs) - 1; i >= n; i-- {
		g.remove(u.cs[i], why, detail)
	}
	if len(u.cs) > n {
		u.cs = u.cs[:n]
	}
}

// removePods removes every container of the units whose pod is in
// evictPods and drops those units: the kubelet's first step, for pods
// the pod source says are removable.
func (g *containerPass) removePods(evictPods map[string]bool) {
	if len(evictPods) == 0 {
		return
	}
	live := g.units[:0]
	for i := range g.units {
		u := &g.units[i]
		if evictPods[u.key.podUID] {
			g.trim(u, 0, model.RemovePodRemovable, "pod "+u.key.podUID+" is removable")
			continue
		}
		live = append(live, *u)
	}
	g.units = live
}

// enforcePerContainerLimit keeps each unit's newest limit dead containers
// (MaxPerPodContainer; a negative limit is no limit).
func (g *containerPass) enforcePerContainerLimit(limit int) {
	if limit < 0 {
		return
	}
	detail := fmt.Sprintf("each container keeps its newest %d dead", limit)
	for i := range g.units {
		g.trim(&g.units[i], limit, model.RemovePerContainerLimit, detail)
	}
}

// enforceNodeLimit brings the node's dead containers down to limit
// (MaxContainers; a negative limit is no limit) as the kubelet does: each
// unit is trimmed to an equal share (at least one), then the oldest of
// all that remain go.
func (g *containerPass) enforceNodeLimit(limit int) {
	if limit < 0 || g.total() <= limit {
		return
	}
	detail := fmt.Sprintf("the node keeps at most %d dead containers", limit)
	perUnit := max(1, limit/len(g.units))
	for i := range g.units {
		g.trim(&g.units[i], perUnit, model.RemoveNodeLimit, detail)
	}
	n := g.total()
	if n <= limit {
		return
	}
	flat := make([]int32, 0, n)
	for _, u := range g.units {
		flat = append(flat, u.cs...)
	}
	slices.SortFunc(flat, func(a, b int32) int { return compareNewestFirst(&g.containers[a], &g.containers[b]) })
	for i := len(flat) - 1; i >= limit; i-- {
		g.remove(flat[i], model.RemoveNodeLimit, detail)
	}
}

// total is how many dead containers the units still hold.
func (g *containerPass) total() int {
	n := 0
	for _, u := range g.units {
		n += len(u.cs)
	}
	return n
}

// podName is a pod's namespace and name.
type podName struct{ namespace, name string }

// podNames maps each sandbox ID, and each pod UID, to the pod's namespace
// and name as its sandboxes record them (a container carries only the pod
// UID). For a UID, the first named sandbox in snapshot order stands.
func podNames(sandboxes []model.Sandbox) (bySandbox, byUID map[string]podName) {
	bySandbox = make(map[string]podName, len(sandboxes))
	byUID = make(map[string]podName, len(sandboxes))
	for _, sb := range sandboxes {
		if sb.PodName == "" {
			continue
		}
		n := podName{sb.PodNamespace, sb.PodName}
		bySandbox[sb.ID] = n
		if _, ok := byUID[sb.PodUID]; !ok {
			byUID[sb.PodUID] = n
		}
	}
	return bySandbox, byUID
}
