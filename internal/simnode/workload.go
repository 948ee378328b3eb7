package simnode

import (
	"fmt"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Step advances the node's clock to now (it never goes back) and runs one
// step of the workload: an image may be pulled, running containers may
// die and be restarted as a new attempt, a pod may be deleted (its
// containers exit, its sandbox stops, it becomes removable), a pod may
// start, and the image filesystem grows by Workload.GrowthBytes. The same
// node given the same Steps ends in the same state.
func (n *Node) Step(now time.Time) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if now.After(n.clock) {
		n.clock = now
	}
	w := n.o.Workload
	if n.chance(w.PullProbability) {
		n.pullNext()
	}
	if w.DieProbability > 0 {
		var dying []*container
		for c := range n.containers.all() {
			if c.state == runtimeapi.ContainerState_CONTAINER_RUNNING && !n.deletedSet[c.uid] && n.chance(w.DieProbability) {
				dying = append(dying, c)
			}
		}
		for _, c := range dying {
			n.restart(c)
		}
	}
	if n.chance(w.PodDeleteProbability) {
		var live []*sandbox
		for s := range n.sandboxes.all() {
			if s.ready {
				live = append(live, s)
			}
		}
		if len(live) > 0 {
			n.deletePod(live[n.rng.IntN(len(live))])
		}
	}
	if n.chance(w.PodStartProbability) {
		n.startPod()
	}
	if w.GrowthBytes > 0 {
		n.growth += min(w.GrowthBytes, max(n.o.CapacityBytes-n.usedBytes(), 0))
	}
}

// chance reports whether an event of probability p happens. It draws from
// the random source only when 0 < p < 1, so a workload without an event
// kind does not shift the others.
func (n *Node) chance(p float64) bool {
	switch {
	case p <= 0:
		return false
	case p >= 1:
		return true
	}
	return n.rng.Float64() < p
}

// pullNext pulls the next image of the catalogue, if it fits.
func (n *Node) pullNext() {
	w := n.o.Workload
	i := n.nextPull
	n.nextPull++
	im := n.generatedImage(i, w.PullMinBytes, w.PullMaxBytes)
	if n.usedBytes() > n.o.CapacityBytes {
		n.dropImage(im) // no space left on device: the pull fails
		return
	}
	n.pulled = append(n.pulled, im)
}

// restart ends a running container with an error and starts its next
// attempt, as the kubelet does for a crash-looping container.
func (n *Node) restart(c *container) {
	code := int32(1)
	if n.rng.IntN(4) == 0 {
		code = 137
	}
	n.stopContainer(c, code)
	s, ok := n.sandboxes.get(c.sandboxID)
	if !ok || !s.ready {
		return
	}
	u := &unit{s: s, name: c.name, imageID: c.imageID, spec: c.spec, labels: c.labels, annotations: c.annotations}
	n.newContainer(u, c.attempt+1, runtimeapi.ContainerState_CONTAINER_RUNNING, n.stamp(), 0, 0)
}

// deletePod is the pod's deletion from the API server as the node sees
// it: the containers are stopped, the sandbox too, and the pod becomes
// removable.
func (n *Node) deletePod(s *sandbox) {
	for _, c := range s.live() {
		n.stopContainer(c, 0)
	}
	s.ready = false
	s.build()
	n.markDeleted(s.uid)
}

// startPod starts a pod whose containers prefer the images pulled most
// recently, so fresh pulls come into use and older images fall idle.
func (n *Node) startPod() {
	p := n.sandboxes.len() + len(n.deleted)
	spec := podSpec{
		uid:       n.podUID(),
		name:      fmt.Sprintf("%s-%d-%s", apps[p%len(apps)], p, n.hexID()[:5]),
		namespace: namespaces[n.rng.IntN(len(namespaces))],
		ready:     true,
		createdAt: time.Unix(0, n.stamp()),
	}
	s := n.newSandbox(spec)
	for j := range n.o.ContainersPerPod {
		im := n.pickImage()
		u := n.newUnit(s, ctrNames[j%len(ctrNames)], im)
		n.newContainer(u, 0, runtimeapi.ContainerState_CONTAINER_RUNNING, n.stamp(), 0, 0)
	}
}

func (n *Node) pickImage() *image {
	if k := len(n.pulled); k > 0 && n.rng.IntN(10) < 7 {
		im := n.pulled[k-1-n.rng.IntN(min(k, 3))]
		if !im.gone {
			return im
		}
	}
	for range 8 {
		im := n.images.order[n.rng.IntN(len(n.images.order))]
		if !im.gone && im.spec() != n.o.SandboxImage {
			return im
		}
	}
	return n.sandboxImage()
}
