package simnode

import (
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// eventBuffer is how many events a subscriber of the event stream may fall
// behind by. A subscriber that falls further behind has its stream ended
// with ResourceExhausted rather than silently missing events: its client
// reconnects and lists again.
const eventBuffer = 1024

// eventHub fans the node's container events out to the open
// GetContainerEvents streams. It has its own lock, so the node can emit
// while holding n.mu; sends never block.
type eventHub struct {
	mu   sync.Mutex
	subs map[*eventSub]struct{}
}

type eventSub struct {
	ch       chan *runtimeapi.ContainerEventResponse
	overflow chan struct{} // closed when the subscriber fell behind
}

func (h *eventHub) subscribe() *eventSub {
	s := &eventSub{ch: make(chan *runtimeapi.ContainerEventResponse, eventBuffer), overflow: make(chan struct{})}
	h.mu.Lock()
	if h.subs == nil {
		h.subs = map[*eventSub]struct{}{}
	}
	h.subs[s] = struct{}{}
	h.mu.Unlock()
	return s
}

func (h *eventHub) unsubscribe(s *eventSub) {
	h.mu.Lock()
	delete(h.subs, s)
	h.mu.Unlock()
}

func (h *eventHub) publish(ev *runtimeapi.ContainerEventResponse) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for s := range h.subs {
		select {
		case s.ch <- ev:
		default:
			close(s.overflow)
			delete(h.subs, s)
		}
	}
}

// emit publishes one container event, as containerd does on a container's
// create, start, stop (exit) and delete. n.mu is held.
func (n *Node) emit(t runtimeapi.ContainerEventType, c *container) {
	n.events.mu.Lock()
	none := len(n.events.subs) == 0
	n.events.mu.Unlock()
	if none {
		return
	}
	ev := &runtimeapi.ContainerEventResponse{
		ContainerId:        c.id,
		ContainerEventType: t,
		CreatedAt:          n.stamp(),
		PodSandboxStatus:   &runtimeapi.PodSandboxStatus{Id: c.sandboxID},
		ContainersStatuses: []*runtimeapi.ContainerStatus{c.status()},
	}
	if s, ok := n.sandboxes.get(c.sandboxID); ok {
		ev.PodSandboxStatus = &runtimeapi.PodSandboxStatus{Id: s.id, Metadata: s.metadata(), State: s.state(), CreatedAt: s.createdAt}
	}
	n.events.publish(ev)
}

// GetContainerEvents serves the CRI container event stream: every
// container created, started, stopped or deleted on the node from now on,
// through the gRPC API or by the workload. It sends its response headers
// at once, so a client knows the stream is open before the first event.
func (r *runtimeService) GetContainerEvents(_ *runtimeapi.GetEventsRequest, ss grpc.ServerStreamingServer[runtimeapi.ContainerEventResponse]) error {
	h := &r.n.events
	sub := h.subscribe()
	defer h.unsubscribe(sub)
	if err := ss.SendHeader(metadata.MD{}); err != nil {
		return err
	}
	for {
		select {
		case <-ss.Context().Done():
			return nil
		case <-sub.overflow:
			// Send what was queued, then end the stream.
			for {
				select {
				case ev := <-sub.ch:
					if err := ss.Send(ev); err != nil {
						return err
					}
				default:
					return status.Error(codes.ResourceExhausted, "container event stream: the client fell behind; list again and reconnect")
				}
			}
		case ev := <-sub.ch:
			if err := ss.Send(ev); err != nil {
				return err
			}
		}
	}
}
