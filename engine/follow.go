package engine

import (
	"context"
	"errors"
	"math"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// followRetry bounds the wait before FollowEvents opens a broken stream
// again.
const followRetry = 30 * time.Second

// FollowEvents keeps the engine's passes told of the runtime's container
// events, in the background, until ctx ends or stop is called: every
// container created or started, and every (re)opening of the stream
// (events may have come while it was down), makes the next re-check list
// the node again (ContainerEvent), which closes the gap ViewWindow
// leaves. A broken stream is opened again with backoff; a runtime without
// one (ErrNoEventStream) ends it at once, and the window alone bounds the
// gap. stop returns once the follower has ended, so none outlives its
// caller.
func (e *Engine) FollowEvents(ctx context.Context, src EventSource) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		e.followEvents(ctx, src)
	}()
	return func() { cancel(); <-done }
}

// followBackoff is the wait before each reopening of a broken stream:
// one second, doubling up to followRetry.
func followBackoff() wait.Backoff {
	return wait.Backoff{Duration: time.Second, Factor: 2, Steps: math.MaxInt32, Cap: followRetry}
}

// EventStream is the state of the engine's follower of the runtime's
// container event stream (FollowEvents), for those who refresh on its
// notices (OnContainers) rather than poll: the dashboard.
type EventStream struct {
	// Live is set while the stream is open.
	Live bool `json:"live"`
	// Down says why the stream is not open ("" while live, or before a
	// follower started).
	Down string `json:"down,omitempty"`
	// NoStream is set when the runtime has no stream (ErrNoEventStream):
	// the follower has ended.
	NoStream bool `json:"noStream,omitempty"`
}

// EventStream returns the follower's state; zero when none ever ran.
func (e *Engine) EventStream() EventStream {
	if st := e.stream.Load(); st != nil {
		return *st
	}
	return EventStream{}
}

// OnContainers registers fn to be told, with the follower's state, each
// time the node's containers may have changed: a burst of container
// events (of any type), and every opening, breaking or end of the stream.
// It returns a func that unregisters it. fn runs on the follower's
// goroutine and must not block.
func (e *Engine) OnContainers(fn func(EventStream)) (cancel func()) { return e.containers.add(fn) }

// setStream records the follower's state and tells the listeners.
func (e *Engine) setStream(st EventStream) {
	e.streamGen.Add(1)
	e.following.Store(st.Live)
	e.stream.Store(&st)
	e.containers.publish(st)
}

// followEvents is FollowEvents' loop; it returns when it stops following.
func (e *Engine) followEvents(ctx context.Context, src EventSource) {
	backoff := followBackoff()
	for ctx.Err() == nil {
		ch, err := src.ContainerEvents(ctx)
		if errors.Is(err, ErrNoEventStream) {
			e.log.Info("runtime has no container event stream: re-checks rely on the view window alone")
			e.setStream(EventStream{Down: err.Error(), NoStream: true})
			return
		}
		if err == nil {
			e.ContainerEvent()
			e.setStream(EventStream{Live: true})
			backoff = followBackoff()
			err = e.readEvents(ch)
			// Until it is open again (which re-lists), image re-checks
			// list the active containers themselves.
			e.setStream(EventStream{Down: err.Error()})
		} else {
			e.setStream(EventStream{Down: err.Error()})
		}
		if ctx.Err() != nil {
			return
		}
		delay := backoff.Step()
		e.log.Warn("container event stream broke: reconnecting", "err", err, "in", delay)
		select {
		case <-ctx.Done():
			return
		case <-time.After(delay):
		}
	}
}

// readEvents reads the open stream until it closes, and returns why. A
// container created or started makes the passes list the node again
// (ContainerEvent); every burst of events, however many are buffered
// together, tells the listeners once.
func (e *Engine) readEvents(ch <-chan ContainerEvent) error {
	err := errStreamClosed
	for ev := range ch {
		for more := true; more; {
			if !e.own.has(ev) {
				e.streamGen.Add(1)
			}
			switch {
			case ev.Err != nil:
				err = ev.Err
			case ev.Type == ContainerCreatedEvent || ev.Type == ContainerStartedEvent:
				e.ContainerEvent()
			}
			select {
			case next, ok := <-ch:
				if !ok {
					return err
				}
				ev = next
			default:
				more = false
			}
		}
		e.containers.publish(EventStream{Live: true})
	}
	return err
}

// errStreamClosed is why a stream that closed without an error is down.
var errStreamClosed = errors.New("the stream closed")
