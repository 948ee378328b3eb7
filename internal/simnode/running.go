package simnode

import (
	"slices"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// RunningPod is a pod with a READY sandbox and the IDs of its running
// containers: what has a cgroup on a real node.
type RunningPod struct {
	UID        string
	Containers []string
}

// RunningPods returns the pods with a READY sandbox, by UID, with their
// running containers, without a CRI round trip: the demo keeps its
// simulated cgroup tree in step with it every second.
func (n *Node) RunningPods() []RunningPod {
	n.mu.Lock()
	defer n.mu.Unlock()
	byUID := map[string]*RunningPod{}
	for s := range n.sandboxes.all() {
		if s.ready && byUID[s.uid] == nil {
			byUID[s.uid] = &RunningPod{UID: s.uid}
		}
	}
	for c := range n.containers.all() {
		if p := byUID[c.uid]; p != nil && c.state == runtimeapi.ContainerState_CONTAINER_RUNNING {
			p.Containers = append(p.Containers, c.id)
		}
	}
	out := make([]RunningPod, 0, len(byUID))
	for _, p := range byUID {
		slices.Sort(p.Containers)
		out = append(out, *p)
	}
	slices.SortFunc(out, func(a, b RunningPod) int {
		switch {
		case a.UID < b.UID:
			return -1
		case a.UID > b.UID:
			return 1
		}
		return 0
	})
	return out
}
