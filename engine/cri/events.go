package cri

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protowire"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/nodegc/nodegc/engine"
	"github.com/nodegc/nodegc/internal/pbwire"
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
	stream, err := c.openEvents(sctx)
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
	var first *containerEvent
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
		if first != nil && !send(first.ev) {
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
			if !send(resp.ev) {
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

// eventsStream is the CRI's GetContainerEvents stream.
var eventsStream = func() *grpc.StreamDesc {
	for i, d := range runtimeapi.RuntimeService_ServiceDesc.Streams {
		if d.StreamName == "GetContainerEvents" {
			return &runtimeapi.RuntimeService_ServiceDesc.Streams[i]
		}
	}
	panic("cri-api has no GetContainerEvents stream")
}()

// openEvents opens the event stream as the generated client does, but
// with its events decoded by containerEvent (rawCall).
func (c *Client) openEvents(ctx context.Context) (grpc.ServerStreamingClient[containerEvent], error) {
	stream, err := c.conn.NewStream(ctx, eventsStream, runtimeapi.RuntimeService_GetContainerEvents_FullMethodName, grpc.StaticMethod(), rawCall)
	if err != nil {
		return nil, err
	}
	x := &grpc.GenericClientStream[runtimeapi.GetEventsRequest, containerEvent]{ClientStream: stream}
	if err := x.SendMsg(&runtimeapi.GetEventsRequest{}); err != nil {
		return nil, err
	}
	if err := x.CloseSend(); err != nil {
		return nil, err
	}
	return x, nil
}

// Field numbers of ContainerEventResponse and PodSandboxStatus
// (k8s.io/cri-api api.proto).
const (
	fieldEventContainerID = 1
	fieldEventType        = 2
	fieldEventCreated     = 3
	fieldEventSandbox     = 4 // pod_sandbox_status
	fieldSandboxStatusID  = 1
)

// containerEvent is one ContainerEventResponse decoded straight into the
// engine's type (a rawDecoder; see decode.go). Each event also carries the
// status of its pod's containers, label and annotation maps included, which
// the engine never reads: decoding them into the generated types was about
// a twentieth of the CPU of a large pass, which sees an event for every
// container it removes. The result is what the generated type converts to
// (TestDecodeEventsMatchesGeneratedCode); what it skips it does not check,
// so an event whose container statuses are malformed (invalid UTF-8, say),
// which the generated code refused and which broke the stream, is now read
// for the fields the engine keeps.
type containerEvent struct {
	ev engine.ContainerEvent
}

// decode reads one event. As in any protobuf decoder, a later value of a
// field wins, the sandbox status sent twice is merged, and a field of an
// unexpected wire type is skipped as unknown. A type the API does not
// define keeps its name: a reader lists again on any event.
func (e *containerEvent) decode(b []byte) error {
	var id, sandbox []byte
	var typ runtimeapi.ContainerEventType
	var created int64
	err := pbwire.EachField(b, func(num protowire.Number, wt protowire.Type, b []byte) (m int, err error) {
		switch {
		case wt == protowire.BytesType && num == fieldEventContainerID:
			id, m, err = pbwire.ConsumeString(b)
		case wt == protowire.VarintType && num == fieldEventType:
			var v uint64
			v, m = protowire.ConsumeVarint(b)
			typ = runtimeapi.ContainerEventType(int32(v))
		case wt == protowire.VarintType && num == fieldEventCreated:
			var v uint64
			v, m = protowire.ConsumeVarint(b)
			created = int64(v)
		case wt == protowire.BytesType && num == fieldEventSandbox:
			var v []byte
			v, m = protowire.ConsumeBytes(b)
			if m >= 0 {
				err = pbwire.EachField(v, func(num protowire.Number, wt protowire.Type, b []byte) (m int, err error) {
					if wt == protowire.BytesType && num == fieldSandboxStatusID {
						sandbox, m, err = pbwire.ConsumeString(b)
					} else {
						m = protowire.ConsumeFieldValue(num, wt, b)
					}
					return m, err
				})
			}
		default:
			m = protowire.ConsumeFieldValue(num, wt, b)
		}
		return m, err
	})
	if err != nil {
		return err
	}
	t, ok := eventTypes[typ]
	if !ok {
		t = engine.ContainerEventType(typ.String())
	}
	e.ev = engine.ContainerEvent{Type: t, ContainerID: string(id), PodSandboxID: string(sandbox), Time: nsTime(created)}
	return nil
}
