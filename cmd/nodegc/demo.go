package main

import (
	"context"
	"fmt"
	"time"

	"github.com/nodegc/nodegc/engine"
	"github.com/nodegc/nodegc/engine/cri"
	"github.com/nodegc/nodegc/engine/simnode"
)

// demoPreset returns the simulated node of --demo-scale (validated by the
// caller: small or large).
func demoPreset(scale string, seed int64) simnode.Options {
	if scale == "large" {
		return simnode.DemoLarge(seed)
	}
	return simnode.Demo(seed)
}

// demoNode is a simulated node served on a private socket and a CRI client
// dialled to it, as to a real runtime.
type demoNode struct {
	node   *simnode.Node
	client *cri.Client
	served chan error
}

// startDemoNode serves a simulated node on socket (0600, in a private
// temp dir) and dials it through the CRI adapter.
func startDemoNode(ctx context.Context, o simnode.Options, socket string) (*demoNode, error) {
	node := simnode.New(o)
	endpoint := "unix://" + socket
	l, err := simnode.Listen(endpoint)
	if err != nil {
		return nil, fmt.Errorf("demo: %w", err)
	}
	d := &demoNode{node: node, served: make(chan error, 1)}
	go func() { d.served <- node.Serve(l) }()
	c, err := cri.Dial(ctx, endpoint, cri.Options{ExitDetails: true})
	if err != nil {
		node.Stop()
		<-d.served
		return nil, fmt.Errorf("demo: %w", err)
	}
	d.client = c
	return d, nil
}

// run steps the node's workload every interval, advancing its clock by
// the same, until ctx ends.
func (d *demoNode) run(ctx context.Context, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			d.node.Step(d.node.Now().Add(every))
		}
	}
}

// podSource stands in for the API server: the pods the simulated workload
// deleted are removable.
func (d *demoNode) podSource(context.Context) (engine.PodSource, error) {
	return engine.PodSource{Ready: true, RemovablePodUIDs: d.node.RemovablePods()}, nil
}

// Close closes the client and stops the node.
func (d *demoNode) Close() {
	d.client.Close()
	d.node.Stop()
	<-d.served
}
