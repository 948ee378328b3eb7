package cri

import (
	"context"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/nodegc/nodegc/engine"
)

// runningFilter asks the runtime for the running containers alone.
var runningFilter = &runtimeapi.ContainerFilter{
	State: &runtimeapi.ContainerStateValue{State: runtimeapi.ContainerState_CONTAINER_RUNNING},
}

// ListRunningContainers lists the running containers alone, with the CRI
// state filter: the executor's container phase re-checks against it (see
// engine.RunningLister), which on a node with many dead containers costs a
// fraction of the whole list.
func (c *Client) ListRunningContainers(ctx context.Context) ([]engine.Container, error) {
	rctx, cancel := c.readContext(ctx)
	defer cancel()
	var list containerList // decoded straight into engine types: see decode.go
	err := c.conn.Invoke(rctx, runtimeapi.RuntimeService_ListContainers_FullMethodName,
		&runtimeapi.ListContainersRequest{Filter: runningFilter}, &list, rawCall)
	if err != nil {
		return nil, c.mapError("list running containers", err)
	}
	return list.items, nil
}

func (r readOnly) ListRunningContainers(ctx context.Context) ([]engine.Container, error) {
	return r.c.ListRunningContainers(ctx)
}

// The executor's container phase finds the state filter through these.
var (
	_ engine.RunningLister = (*Client)(nil)
	_ engine.RunningLister = readOnly{}
)
