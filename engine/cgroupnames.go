package engine

import "github.com/nodegc/nodegc/cgroupfs"

// CgroupNames resolves the IDs in kubepods cgroup names from a snapshot's
// sandboxes and containers: pods by UID, containers by ID, and each
// sandbox's own (pause) cgroup as "POD". Either list may be nil, as when
// the runtime listed the sandboxes but not the containers. The CLI's
// `nodegc cgroups` and the dashboard's Cgroups pane both name the tree
// through it.
func CgroupNames(sandboxes []Sandbox, containers []Container) *cgroupfs.NameMap {
	var n cgroupfs.NameMap
	for _, sb := range sandboxes {
		n.AddPod(sb.PodUID, sb.PodNamespace, sb.PodName)
		n.AddContainer(sb.ID, "POD", sb.PodUID)
	}
	for _, c := range containers {
		n.AddContainer(c.ID, c.Name, c.PodUID)
	}
	return &n
}
