package cri

import (
	"context"
	"slices"
	"testing"

	"github.com/nodegc/nodegc/engine"
	"github.com/nodegc/nodegc/internal/simnode"
)

func TestListRunningContainersAsksForTheRunningOnes(t *testing.T) {
	n, c, want := nodeWithStates(t, engine.ContainerRunning)
	ctx := context.Background()
	// Through the read-only view, as gc and the dashboard hand it to the
	// engine.
	rl, ok := c.ReadOnly().(engine.RunningLister)
	if !ok {
		t.Fatal("the read-only view does not list the running containers alone")
	}
	n.ResetCalls()
	got, err := rl.ListRunningContainers(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != want {
		t.Errorf("%d containers, want the %d running", len(got), want)
	}
	for _, ct := range got {
		if ct.State != engine.ContainerRunning {
			t.Errorf("%s is %s", ct.ID, ct.State)
		}
	}
	if calls := n.Calls(); len(calls) != 1 || calls[0] != "/runtime.v1.RuntimeService/ListContainers" {
		t.Errorf("calls %v, want one filtered ListContainers", calls)
	}
}

func TestListActiveContainersAsksForTheCreatedAndRunningOnes(t *testing.T) {
	_, c, want := nodeWithStates(t, engine.ContainerRunning, engine.ContainerCreated)
	ctx := context.Background()
	al, ok := c.ReadOnly().(engine.ActiveLister)
	if !ok {
		t.Fatal("the read-only view does not list the active containers alone")
	}
	got, err := al.ListActiveContainers(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != want {
		t.Errorf("%d containers, want the %d created or running", len(got), want)
	}
	for _, ct := range got {
		if ct.State != engine.ContainerRunning && ct.State != engine.ContainerCreated {
			t.Errorf("%s is %s", ct.ID, ct.State)
		}
	}
}

// nodeWithStates serves a simulated node with live and dead containers
// and counts those in the states, which must be some but not all.
func nodeWithStates(t *testing.T, states ...engine.ContainerState) (*simnode.Node, *Client, int) {
	t.Helper()
	n, ep := serve(t, simnode.Options{Seed: 3, Images: 10, Pods: 6, DeadPerContainer: 2})
	c := dial(t, ep, Options{})
	all, err := c.ListContainers(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := 0
	for _, ct := range all {
		if slices.Contains(states, ct.State) {
			want++
		}
	}
	if want == 0 || want == len(all) {
		t.Fatalf("the node has %d of %d containers in %v: nothing to filter", want, len(all), states)
	}
	return n, c, want
}
