package cri

import (
	"context"
	"testing"

	"github.com/nodegc/nodegc/engine"
	"github.com/nodegc/nodegc/internal/simnode"
)

func TestListRunningContainersAsksForTheRunningOnes(t *testing.T) {
	n, ep := serve(t, simnode.Options{Seed: 3, Images: 10, Pods: 6, DeadPerContainer: 2})
	c := dial(t, ep, Options{})
	ctx := context.Background()
	all, err := c.ListContainers(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := 0
	for _, ct := range all {
		if ct.State == engine.ContainerRunning {
			want++
		}
	}
	if want == 0 || want == len(all) {
		t.Fatalf("the node has %d running of %d containers: nothing to filter", want, len(all))
	}
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
	_, ep := serve(t, simnode.Options{Seed: 3, Images: 10, Pods: 6, DeadPerContainer: 2})
	c := dial(t, ep, Options{})
	ctx := context.Background()
	all, err := c.ListContainers(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := 0
	for _, ct := range all {
		if ct.State == engine.ContainerRunning || ct.State == engine.ContainerCreated {
			want++
		}
	}
	al, ok := c.ReadOnly().(engine.ActiveLister)
	if !ok {
		t.Fatal("the read-only view does not list the active containers alone")
	}
	got, err := al.ListActiveContainers(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != want || want == len(all) {
		t.Errorf("%d containers, want the %d created or running of %d", len(got), want, len(all))
	}
	for _, ct := range got {
		if ct.State != engine.ContainerRunning && ct.State != engine.ContainerCreated {
			t.Errorf("%s is %s", ct.ID, ct.State)
		}
	}
}
