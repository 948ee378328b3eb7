package cri

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/nodegc/nodegc/engine"
)

var (
	_ engine.EventSource = (*Client)(nil)
	_ engine.EventSource = readOnly{}
)

// establishWait is how long ContainerEvents waits for the runtime's first
// answer on a new stream. A runtime without the method (containerd 1.6)
// answers Unimplemented at once; one that serves it may say nothing until
// its first event, so after this wait the stream counts as open.
const establishWait = time.Second

// eventBuffer is how many events the channel of ContainerEvents holds
// before the reader of the stream waits for its consumer.
const eventBuffer = 256

// ContainerEvents opens the runtime's CRI container event stream
// (GetContainerEvents: containerd 1.7 and later, CRI-O, simnode). A
// runtime that does not serve it gives an error wrapping
// engine.ErrNoEventStream. The channel closes when ctx ends, or when the
// stream breaks, after a last value whose Err says why.
func (c *Client) ContainerEvents(ctx context.Context) (<-chan engine.ContainerEvent, error) {
	sctx, cancel := context.WithCancel(ctx)
	stream, err := c.rt.GetContainerEvents(sctx, &runtimeapi.GetEventsRequest{})
	if err != nil {
		cancel()
		return nil, c.eventsError(err)
	}
	type header struct {
		md  metadata.MD
		err error
	}
	hc := make(chan header, 1)
	go func() {
		md, err := stream.Header()
		hc <- header{md, err}
	}()
	var first *runtimeapi.ContainerEventResponse
	select {
	case h := <-hc:
		if h.err != nil || h.md == nil {
			// The call ended before any header: its status says why.
			resp, err := stream.Recv()
			if err != nil {
				cancel()
				return nil, c.eventsError(err)
			}
			first = resp
		}
	case <-time.After(establishWait):
	case <-ctx.Done():
		cancel()
		return nil, fmt.Errorf("container events: %w", ctx.Err())
	}
	out := make(chan engine.ContainerEvent, eventBuffer)
	go func() {
		defer cancel()
		defer close(out)
		send := func(ev engine.ContainerEvent) bool {
			select {
			case out <- ev:
				return true
			case <-ctx.Done():
				return false
			}
		}
		if first != nil && !send(toContainerEvent(first)) {
			return
		}
		for {
			resp, err := stream.Recv()
			if err != nil {
				if ctx.Err() == nil {
					if errors.Is(err, io.EOF) {
						err = errors.New("the runtime ended the stream")
					}
					send(engine.ContainerEvent{Err: c.eventsError(err)})
				}
				return
			}
			if !send(toContainerEvent(resp)) {
				return
			}
		}
	}()
	return out, nil
}

// ContainerEvents opens the runtime's container event stream; reading
// events mutates nothing.
func (r readOnly) ContainerEvents(ctx context.Context) (<-chan engine.ContainerEvent, error) {
	return r.c.ContainerEvents(ctx)
}

// eventsError maps a stream error: Unimplemented means the runtime has no
// event stream at all.
func (c *Client) eventsError(err error) error {
	if status.Code(err) == codes.Unimplemented {
		return fmt.Errorf("container events: %w: %w", engine.ErrNoEventStream, err)
	}
	return c.mapError("container events", err)
}

// eventTypes maps the CRI's event types.
var eventTypes = map[runtimeapi.ContainerEventType]engine.ContainerEventType{
	runtimeapi.ContainerEventType_CONTAINER_CREATED_EVENT: engine.ContainerCreatedEvent,
	runtimeapi.ContainerEventType_CONTAINER_STARTED_EVENT: engine.ContainerStartedEvent,
	runtimeapi.ContainerEventType_CONTAINER_STOPPED_EVENT: engine.ContainerStoppedEvent,
	runtimeapi.ContainerEventType_CONTAINER_DELETED_EVENT: engine.ContainerDeletedEvent,
}

// toContainerEvent converts one CRI event. A type the API does not define
// keeps its name: a reader lists again on any event.
func toContainerEvent(r *runtimeapi.ContainerEventResponse) engine.ContainerEvent {
	t, ok := eventTypes[r.GetContainerEventType()]
	if !ok {
		t = engine.ContainerEventType(r.GetContainerEventType().String())
	}
	return engine.ContainerEvent{
		Type:         t,
		ContainerID:  r.GetContainerId(),
		PodSandboxID: r.GetPodSandboxStatus().GetId(),
		Time:         nsTime(r.GetCreatedAt()),
	}
}
