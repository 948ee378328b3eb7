package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/nodegc/nodegc/cgroupfs"
	"github.com/nodegc/nodegc/internal/democgroups"
	"github.com/nodegc/nodegc/tui"

	"github.com/nodegc/nodegc/engine"
	"github.com/nodegc/nodegc/engine/cri"
	"github.com/nodegc/nodegc/internal/simnode"
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
	// cgroups is the simulated kubepods cgroup tree, kept in step with the
	// node's running pods on every step; nil when it could not be made.
	cgroups *democgroups.Tree
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
			d.syncCgroups()
		}
	}
}

// startCgroups makes the simulated cgroup tree under dir and returns the
// reader the dashboard's Cgroups pane uses on it: the real cgroupfs reader,
// with the systemd driver, as on a node with containerd and cgroup v2.
func (d *demoNode) startCgroups(dir string, seed int64) (func(context.Context, cgroupfs.Names) (*cgroupfs.Tree, error), error) {
	tr, err := democgroups.New(filepath.Join(dir, "cgroup"), seed)
	if err != nil {
		return nil, err
	}
	meminfo := filepath.Join(dir, "meminfo")
	if err := os.WriteFile(meminfo, []byte(democgroups.Meminfo()), 0o600); err != nil {
		return nil, fmt.Errorf("demo cgroups: %w", err)
	}
	d.cgroups = tr
	d.syncCgroups()
	return tui.CgroupsFrom(cgroupfs.Config{Root: filepath.Join(dir, "cgroup"), CgroupDriver: "systemd",
		Meminfo: meminfo, NumCPU: democgroups.NumCPU}), nil
}

// syncCgroups brings the cgroup tree in step with the running pods.
func (d *demoNode) syncCgroups() {
	if d.cgroups == nil {
		return
	}
	running := d.node.RunningPods()
	pods := make([]democgroups.Pod, len(running))
	for i, p := range running {
		pods[i] = democgroups.Pod{UID: p.UID, Containers: p.Containers}
	}
	_ = d.cgroups.Sync(pods) // a demo nicety: a failed write shows as missing usage
}

// podSource stands in for the API server: the pods the simulated workload
// deleted are removable.
func (d *demoNode) podSource(context.Context, engine.Snapshot) (engine.PodSource, error) {
	uids := d.node.RemovablePods()
	return engine.PodSource{Ready: true, RemovablePodUIDs: uids,
		Description: fmt.Sprintf("the simulated node's workload (--demo): %d deleted pods", len(uids))}, nil
}

// Close closes the client and stops the node.
func (d *demoNode) Close() {
	d.client.Close()
	d.node.Stop()
	<-d.served
}

// seedDemoHistory writes image records into the demo's empty state dir, as
// a node that has run nodegc for a week would have them: each image present
// at start was first detected between a week and an hour before start, and
// most were last used at some point since (one in five never was). Without
// it every image is first seen at start and never used, so the least
// recently used order is the tie-break's ID order. The history is drawn
// from seed, so the same seed gives the same demo. Images in use at start
// are last used at start once the first snapshot sees them.
func seedDemoHistory(ctx context.Context, r engine.Reader, stateDir string, start time.Time, seed int64) error {
	images, err := r.ListImages(ctx)
	if err != nil {
		return fmt.Errorf("demo: list images: %w", err)
	}
	slices.SortFunc(images, func(a, b engine.Image) int { return strings.Compare(a.ID, b.ID) })
	rng := rand.New(rand.NewPCG(uint64(seed), 0x6e6f64656763)) // "nodegc"
	const week = 7 * 24 * time.Hour
	recs := make([]engine.ImageRecord, 0, len(images))
	for _, img := range images {
		first := start.Add(-time.Hour - time.Duration(rng.Int64N(int64(week-time.Hour)))).Truncate(time.Second)
		rec := engine.ImageRecord{ID: img.ID, FirstDetected: first}
		if rng.IntN(5) != 0 {
			used := first.Add(time.Duration(rng.Int64N(int64(start.Sub(first) - 10*time.Minute)))).Truncate(time.Second)
			rec.LastUsed = &used
		}
		recs = append(recs, rec)
	}
	data, err := json.MarshalIndent(map[string]any{
		"apiVersion": engine.APIVersion, "kind": "ImageRecords", "savedAt": start, "records": recs,
	}, "", " ")
	if err != nil {
		return fmt.Errorf("demo: image records: %w", err)
	}
	if err := os.MkdirAll(stateDir, 0o700); err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	if err := os.WriteFile(filepath.Join(stateDir, "image-records.json"), data, 0o600); err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	return nil
}
