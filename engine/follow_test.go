package engine

import (
	"context"
	"testing"
	"time"
)

// The follower is the one stream of the runtime's events: the scheduler's
// subscribers are told of its state and of every burst of events.
func TestFollowerNotices(t *testing.T) {
	e := newTestEngine(t, newFakeRuntime(), false)
	s := NewScheduler(e, SchedulerOptions{})
	notices, unsubscribe := s.Subscribe()
	defer unsubscribe()
	next := func() Notice {
		t.Helper()
		for {
			select {
			case n := <-notices:
				if n.Containers {
					return n
				}
			case <-time.After(10 * time.Second):
				t.Fatal("no notice of the node's containers")
			}
		}
	}
	src := &streamSource{opens: make(chan chan ContainerEvent, 4), noneAt: 2}
	stop := e.FollowEvents(context.Background(), src)
	defer stop()
	ch := <-src.opens
	if n := next(); !n.Status.Events.Live || !s.Status().Events.Live {
		t.Fatalf("the stream opened: %+v; want live", n.Status.Events)
	}
	ch <- ContainerEvent{Type: ContainerStoppedEvent}
	if n := next(); !n.Status.Events.Live {
		t.Errorf("an event: %+v; want live", n.Status.Events)
	}
	close(ch) // the stream breaks; the second open says there is none
	if n := next(); n.Status.Events.Live || n.Status.Events.Down == "" {
		t.Errorf("the stream broke: %+v; want down, with why", n.Status.Events)
	}
	if n := next(); !n.Status.Events.NoStream {
		t.Errorf("the runtime has no stream: %+v; want NoStream", n.Status.Events)
	}
}

// A burst of events buffered together tells the listeners once, as the
// dashboard's one re-list for a burst needs.
func TestFollowerCoalescesABurst(t *testing.T) {
	e := newTestEngine(t, newFakeRuntime(), false)
	told := make(chan EventStream, 8)
	defer e.OnContainers(func(s EventStream) { told <- s })()
	ch := make(chan ContainerEvent, 8)
	for range 5 {
		ch <- ContainerEvent{Type: ContainerStoppedEvent}
	}
	// The five are buffered before the reader starts, so they are one
	// burst: the reader takes them all before the channel reads empty.
	done := make(chan error)
	go func() { done <- e.readEvents(ch) }()
	if s := <-told; !s.Live {
		t.Errorf("the burst told %+v, want a live stream", s)
	}
	close(ch)
	if err := <-done; err != errStreamClosed {
		t.Errorf("readEvents = %v, want %v", err, errStreamClosed)
	}
	if n := len(told); n != 0 {
		t.Errorf("a burst of 5 events told the listeners %d more times, want once in all", n)
	}
}
