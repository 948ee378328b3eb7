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

// followEvents is FollowEvents' loop; it returns when it stops following.
func (e *Engine) followEvents(ctx context.Context, src EventSource) {
	backoff := followBackoff()
	for ctx.Err() == nil {
		ch, err := src.ContainerEvents(ctx)
		if errors.Is(err, ErrNoEventStream) {
			e.log.Info("runtime has no container event stream: re-checks rely on the view window alone")
			return
		}
		if err == nil {
			e.ContainerEvent()
			e.following.Store(true)
			backoff = followBackoff()
			for ev := range ch {
				if ev.Type == ContainerCreatedEvent || ev.Type == ContainerStartedEvent {
					e.ContainerEvent()
				}
			}
			// Until it is open again (which re-lists), image re-checks
			// list the active containers themselves.
			e.following.Store(false)
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
