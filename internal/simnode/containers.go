package simnode

import (
	"context"
	"slices"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/nodegc/nodegc/internal/containerdapi"
)

// containersService serves containerd's containers List, which containerd
// serves on the CRI socket: a record for each sandbox, as containerd's CRI
// plugin keeps one for each sandbox's pause container, naming the image
// the sandbox was made from (the same its verbose PodSandboxStatus
// reports). The node keeps no other records, so it serves only the
// sandbox filter; in any namespace but the CRI's it has none.
type containersService struct{ n *Node }

// ListContainerRecords lists the sandboxes' records.
func (c containersService) ListContainerRecords(_ context.Context, ns string, filters []string) ([]containerdapi.Container, error) {
	if !slices.Equal(filters, []string{containerdapi.SandboxFilter}) {
		return nil, status.Errorf(codes.InvalidArgument, "simnode serves only the filter %s", containerdapi.SandboxFilter)
	}
	if ns != containerdapi.CRINamespace {
		return nil, nil
	}
	n := c.n
	n.mu.Lock()
	defer n.mu.Unlock()
	out := make([]containerdapi.Container, 0, n.sandboxes.len())
	for s := range n.sandboxes.all() {
		// A sandbox's labels never change: they are encoded outside the lock.
		out = append(out, containerdapi.Container{ID: s.id, Kind: containerdapi.KindSandbox, Labels: s.labels, Image: s.image})
	}
	return out, nil
}
