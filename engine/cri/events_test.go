package cri

import (
	"context"
	"errors"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/nodegc/nodegc/engine"
	"github.com/nodegc/nodegc/internal/simnode"
)

// nextEvent waits for one event; the bound only keeps a broken test from
// hanging.
func nextEvent(t *testing.T, ch <-chan engine.ContainerEvent) (engine.ContainerEvent, bool) {
	t.Helper()
	select {
	case ev, ok := <-ch:
		return ev, ok
	case <-time.After(30 * time.Second):
		t.Fatal("no event within 30 s")
	}
	return engine.ContainerEvent{}, false
}

func TestContainerEvents(t *testing.T) {
	t.Run("a container that dies and restarts, then is removed, arrives as stopped, created, started, deleted", func(t *testing.T) {
		n, ep := serve(t, simnode.Options{Images: 2, Pods: 1, Workload: simnode.Workload{DieProbability: 1}})
		c := dial(t, ep, Options{})
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		ch, err := c.ReadOnly().(engine.EventSource).ContainerEvents(ctx)
		if err != nil {
			t.Fatal(err)
		}
		before, err := c.ListContainers(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var old string
		for _, k := range before {
			if k.State == engine.ContainerRunning {
				old = k.ID
			}
		}
		n.Step(n.Now().Add(time.Second))
		var got []engine.ContainerEventType
		var fresh string
		for range 3 {
			ev, ok := nextEvent(t, ch)
			if !ok {
				t.Fatal("stream closed")
			}
			got = append(got, ev.Type)
			if ev.Type == engine.ContainerCreatedEvent {
				fresh = ev.ContainerID
			}
			if ev.PodSandboxID == "" {
				t.Errorf("%s event of %s names no sandbox", ev.Type, ev.ContainerID)
			}
		}
		want := []engine.ContainerEventType{engine.ContainerStoppedEvent, engine.ContainerCreatedEvent, engine.ContainerStartedEvent}
		if len(got) != 3 || got[0] != want[0] || got[1] != want[1] || got[2] != want[2] {
			t.Fatalf("events %v, want %v", got, want)
		}
		if fresh == "" || fresh == old {
			t.Errorf("created event names %q; the restarted attempt must be a new container (old %s)", fresh, old)
		}
		if err := c.RemoveContainer(ctx, old); err != nil {
			t.Fatal(err)
		}
		ev, _ := nextEvent(t, ch)
		if ev.Type != engine.ContainerDeletedEvent || ev.ContainerID != old {
			t.Errorf("after RemoveContainer: %+v, want deleted %s", ev, old)
		}
	})
	t.Run("a runtime that answers Unimplemented has no event stream", func(t *testing.T) {
		n, ep := serve(t, simnode.Options{Images: 1})
		n.InjectFault(simnode.Fault{Method: "GetContainerEvents", Err: codes.Unimplemented, Message: "unknown method GetContainerEvents for service runtime.v1.RuntimeService"})
		c := dial(t, ep, Options{})
		ch, err := c.ContainerEvents(context.Background())
		if !errors.Is(err, engine.ErrNoEventStream) || ch != nil {
			t.Fatalf("ContainerEvents = %v, %v; want an error wrapping ErrNoEventStream", ch, err)
		}
	})
	t.Run("another error opening the stream is not ErrNoEventStream", func(t *testing.T) {
		n, ep := serve(t, simnode.Options{Images: 1})
		n.InjectFault(simnode.Fault{Method: "GetContainerEvents", Err: codes.Internal})
		c := dial(t, ep, Options{})
		_, err := c.ContainerEvents(context.Background())
		if err == nil || errors.Is(err, engine.ErrNoEventStream) {
			t.Fatalf("ContainerEvents error = %v; want a plain error", err)
		}
	})
	t.Run("a dropped connection ends the stream with an error, and a new stream opens", func(t *testing.T) {
		n, ep := serve(t, simnode.Options{Images: 2, Pods: 1, Workload: simnode.Workload{DieProbability: 1}})
		c := dial(t, ep, Options{})
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		ch, err := c.ContainerEvents(ctx)
		if err != nil {
			t.Fatal(err)
		}
		n.DropConnections()
		ev, ok := nextEvent(t, ch)
		if !ok || ev.Err == nil {
			t.Fatalf("after the drop: %+v (open %v); want a last value with Err", ev, ok)
		}
		if _, ok := nextEvent(t, ch); ok {
			t.Fatal("the channel must close after the error")
		}
		ch, err = c.ContainerEvents(ctx)
		if err != nil {
			t.Fatalf("reopen: %v", err)
		}
		n.Step(n.Now().Add(time.Second))
		if ev, ok := nextEvent(t, ch); !ok || ev.Err != nil {
			t.Fatalf("after reopening: %+v (open %v); want an event", ev, ok)
		}
	})
	t.Run("cancelling the context closes the channel without an error", func(t *testing.T) {
		_, ep := serve(t, simnode.Options{Images: 1})
		c := dial(t, ep, Options{})
		ctx, cancel := context.WithCancel(context.Background())
		ch, err := c.ContainerEvents(ctx)
		if err != nil {
			t.Fatal(err)
		}
		cancel()
		if ev, ok := nextEvent(t, ch); ok {
			t.Fatalf("after cancel: %+v; want the channel closed", ev)
		}
	})
}
