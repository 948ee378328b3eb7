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

// createdFilter asks the runtime for the created containers alone.
var createdFilter = &runtimeapi.ContainerFilter{
	State: &runtimeapi.ContainerStateValue{State: runtimeapi.ContainerState_CONTAINER_CREATED},
}

// ListRunningContainers lists the running containers alone, with the CRI
// state filter: the executor's container phase re-checks against it (see
// engine.RunningLister), which on a node with many dead containers costs a
// fraction of the whole list.
func (c *Client) ListRunningContainers(ctx context.Context) ([]engine.Container, error) {
	return c.listFiltered(ctx, runningFilter, "list running containers")
}

// listFiltered lists the containers the filter selects.
func (c *Client) listFiltered(ctx context.Context, filter *runtimeapi.ContainerFilter, what string) ([]engine.Container, error) {
	rctx, cancel := c.readContext(ctx)
	defer cancel()
	var list containerList // decoded straight into engine types: see decode.go
	err := c.conn.Invoke(rctx, runtimeapi.RuntimeService_ListContainers_FullMethodName,
		&runtimeapi.ListContainersRequest{Filter: filter}, &list, rawCall)
	if err != nil {
		return nil, c.mapError(what, err)
	}
	return list.items, nil
}

func (r readOnly) ListRunningContainers(ctx context.Context) ([]engine.Container, error) {
	return r.c.ListRunningContainers(ctx)
}

// ListActiveContainers lists the created and running containers alone,
// with two state-filtered listings asked for at once: the image re-check's
// view of the containers that can newly use an image (see
// engine.ActiveLister), small on any node.
func (c *Client) ListActiveContainers(ctx context.Context) ([]engine.Container, error) {
	var created []engine.Container
	var cerr error
	done := make(chan struct{})
	go func() {
		defer close(done)
		created, cerr = c.listFiltered(ctx, createdFilter, "list created containers")
	}()
	running, err := c.ListRunningContainers(ctx)
	<-done
	if err != nil {
		return nil, err
	}
	if cerr != nil {
		return nil, cerr
	}
	return append(running, created...), nil
}

func (r readOnly) ListActiveContainers(ctx context.Context) ([]engine.Container, error) {
	return r.c.ListActiveContainers(ctx)
}

// The executor's container and image phases find the state filters
// through these.
var (
	_ engine.RunningLister = (*Client)(nil)
	_ engine.RunningLister = readOnly{}
	_ engine.ActiveLister  = (*Client)(nil)
	_ engine.ActiveLister  = readOnly{}
)
