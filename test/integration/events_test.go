package integration

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/nodegc/nodegc/engine"
	"github.com/nodegc/nodegc/internal/realnode"
)

// TestContainerEventsFromTheRuntime reads the runtime's own container
// event stream through the adapter, whose decoder reads four fields of each
// event and skips the rest (engine/cri/events.go). containerd 2.2 reports a
// container created, started, stopped and deleted, in that order, each
// event naming the container, its sandbox and a time: the created and
// started events are what make a pass's re-checks list the node again
// (engine.FollowEvents). containerd 1.6 has no stream and says so
// (engine.ErrNoEventStream), so the re-checks rely on their listings alone.
func TestContainerEventsFromTheRuntime(t *testing.T) { forEachRuntime(t, testContainerEvents) }

func testContainerEvents(t *testing.T, rt realnode.Runtime) {
	n := startNode(t, rt, 64*MiB)
	m := n.Must(t)
	c := dial(t, n)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ch, err := c.ContainerEvents(ctx)
	if rt.Version == "1.6" {
		if !errors.Is(err, engine.ErrNoEventStream) {
			t.Fatalf("containerd 1.6: %v, want ErrNoEventStream", err)
		}
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	sb := m.RunPod("events", "default", podUID("events"), "")
	id := m.StartContainer(sb, "app", realnode.SandboxImageRef, 0)
	m.StopContainer(id, time.Second)
	// containerd sends the stopped event after StopContainer returns
	// (handleContainerExit builds it once the container is marked
	// stopped), so the container is removed only once it came.
	got := readEvents(t, ch, id, sb, 3)
	removeContainer(t, n, id)
	got = append(got, readEvents(t, ch, id, sb, 1)...)
	want := []engine.ContainerEventType{engine.ContainerCreatedEvent, engine.ContainerStartedEvent, engine.ContainerStoppedEvent, engine.ContainerDeletedEvent}
	if !slices.Equal(got, want) {
		t.Fatalf("the container's events were %v, want %v", got, want)
	}
}

// readEvents reads the types of the next k events of container id from
// ch, checking that each names its sandbox sb and a time.
func readEvents(t *testing.T, ch <-chan engine.ContainerEvent, id, sb string, k int) []engine.ContainerEventType {
	t.Helper()
	var got []engine.ContainerEventType
	deadline := time.After(30 * time.Second)
	for len(got) < k {
		select {
		case ev, ok := <-ch:
			if !ok {
				t.Fatalf("the stream closed after %v", got)
			}
			if ev.Err != nil {
				t.Fatalf("the stream broke after %v: %v", got, ev.Err)
			}
			if ev.ContainerID != id {
				continue // the sandbox's own container, on some runtimes
			}
			if ev.PodSandboxID != sb || ev.Time.IsZero() {
				t.Errorf("%s event of %s: sandbox %q, time %v; want sandbox %s and a time", ev.Type, id, ev.PodSandboxID, ev.Time, sb)
			}
			got = append(got, ev.Type)
		case <-deadline:
			t.Fatalf("after 30 s %d of the container's next %d events came: %v", len(got), k, got)
		}
	}
	return got
}
