package cri

import (
	"context"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nodegc/nodegc/engine"
	"github.com/nodegc/nodegc/internal/simnode"
)

// TestEngineReadPathsMakeNoMutatingCall drives the engine through this
// adapter over a recorded simulated node: snapshots, plans and dry-runs of
// every pass kind must make no mutating CRI call, while the node holds
// plenty to remove.
func TestEngineReadPathsMakeNoMutatingCall(t *testing.T) {
	o := simnode.Demo(7)
	o.InitialUsagePercent = 95 // above the high threshold: image GC triggers
	n, ep := serve(t, o)
	c := dial(t, ep, Options{ExitDetails: true})
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		rt   engine.Reader
		rm   engine.Remover
	}{
		{"a read-only engine", c.ReadOnly(), nil},
		{"an engine that could remove", c, c},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, err := engine.New(engine.Options{Reader: tc.rt, Remover: tc.rm, Statfs: simStatfs(n), Policy: engine.DefaultPolicy(), StateDir: t.TempDir(),
				PodSource: func(context.Context, engine.Snapshot) (engine.PodSource, error) {
					return engine.PodSource{Ready: true, RemovablePodUIDs: n.RemovablePods()}, nil
				}})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { e.Close() }) // its state dir's and its runtime's locks
			n.ResetCalls()
			planned := 0
			for _, kind := range []engine.PassKind{engine.PassImages, engine.PassContainers, engine.PassFull, engine.PassReclaimAll} {
				if _, err := e.Snapshot(ctx); err != nil {
					t.Fatal(err)
				}
				p, err := e.Plan(ctx, kind)
				if err != nil {
					t.Fatal(err)
				}
				r, err := e.DryRun(ctx, kind)
				if err != nil {
					t.Fatal(err)
				}
				planned += len(r.Items)
				if len(r.Items) != len(p.ContainerGC.Remove)+len(p.SandboxGC.Remove)+len(p.LogGC.Remove)+len(p.ImageGC.Remove) {
					t.Errorf("%s: dry-run lists %d items, plan %+v", kind, len(r.Items), p)
				}
			}
			if planned == 0 {
				t.Fatal("nothing was planned: the test proves nothing")
			}
			if got := n.MutatingCalls(); len(got) != 0 {
				t.Errorf("mutating calls: %v", got)
			}
			if len(n.Calls()) == 0 {
				t.Error("no call was recorded at all")
			}
		})
	}
}

// TestEngineRunRemovesThroughTheAdapter is the counterpart: a real pass
// does remove, so the recording above would see a mutation.
func TestEngineRunRemovesThroughTheAdapter(t *testing.T) {
	n, ep := serve(t, simnode.Demo(7))
	c := dial(t, ep, Options{})
	e, err := engine.New(engine.Options{Reader: c, Remover: c, Statfs: simStatfs(n), Policy: engine.DefaultPolicy(), Now: n.Now})
	if err != nil {
		t.Fatal(err)
	}
	n.ResetCalls()
	r, err := e.Run(context.Background(), engine.PassContainers)
	if err != nil {
		t.Fatal(err)
	}
	if r.Count(engine.OutcomeRemoved) == 0 || len(n.MutatingCalls()) == 0 || !r.OK() {
		t.Errorf("removed %d, mutating calls %v, items %+v", r.Count(engine.OutcomeRemoved), n.MutatingCalls(), r.Items)
	}
}

// TestPeriodicPassAfterRemovalsSkipsOnItsOwnEvents follows the simulated
// node's real event stream: after a periodic container pass that removed
// dead containers and sandboxes, the stop and delete events of those
// removals are its own, so the next periodic container pass is skipped
// without listing the node; a container event of anything else since
// (a container stopped) makes it run in full.
func TestPeriodicPassAfterRemovalsSkipsOnItsOwnEvents(t *testing.T) {
	for _, tc := range []struct {
		name     string
		other    bool // another container stops between the passes
		wantSkip bool
	}{
		{name: "its own removals' events alone", wantSkip: true},
		{name: "a container stopped besides", other: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			n, ep := serve(t, simnode.Options{Seed: 7, Images: 6, Pods: 3, DeadPerContainer: 3, StaleSandboxes: 2})
			c := dial(t, ep, Options{})
			e, err := engine.New(engine.Options{Reader: c, Remover: c, Statfs: simStatfs(n), Policy: engine.DefaultPolicy(), StateDir: t.TempDir(), Now: n.Now})
			if err != nil {
				t.Fatal(err)
			}
			defer e.Close()
			var bursts atomic.Int64
			defer e.OnContainers(func(engine.EventStream) { bursts.Add(1) })()
			defer e.FollowEvents(ctx, c)()
			waitFor(t, "the stream", func() bool { return e.EventStream().Live })
			first, err := e.RunPeriodic(ctx, engine.PassContainers)
			sandboxes := slices.ContainsFunc(first.Items, func(it engine.ItemResult) bool {
				return it.Kind == engine.ItemSandbox && it.Outcome == engine.OutcomeRemoved
			})
			if err != nil || !first.OK() || first.Count(engine.OutcomeRemoved) == 0 || !sandboxes {
				t.Fatalf("first pass: %v, removed %d (a sandbox among them: %v), items %+v", err, first.Count(engine.OutcomeRemoved), sandboxes, first.Items)
			}
			// The removals' events reach the follower: wait until its
			// bursts stop coming.
			settled(t, &bursts)
			if tc.other {
				before := bursts.Load()
				cs, err := c.ListContainers(ctx)
				if err != nil {
					t.Fatal(err)
				}
				i := slices.IndexFunc(cs, func(c engine.Container) bool { return c.State == engine.ContainerRunning })
				if i < 0 {
					t.Fatal("no running container")
				}
				if err := c.StopContainer(ctx, cs[i].ID, 0); err != nil {
					t.Fatal(err)
				}
				waitFor(t, "the death's event", func() bool { return bursts.Load() > before })
			}
			n.ResetCalls()
			r, err := e.RunPeriodic(ctx, engine.PassContainers)
			if err != nil {
				t.Fatal(err)
			}
			listed := slices.ContainsFunc(n.Calls(), func(c string) bool { return strings.HasSuffix(c, "/ListContainers") })
			if tc.wantSkip != (r.Skipped != "") || tc.wantSkip == listed {
				t.Errorf("skipped %q, listed the containers %v; want skipped %v", r.Skipped, listed, tc.wantSkip)
			}
		})
	}
}

// waitFor waits, at most 10 s, until ok.
func waitFor(t *testing.T, what string, ok func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !ok(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 10 s", what)
		}
	}
}

// settled waits until n has not moved for 300 ms.
func settled(t *testing.T, n *atomic.Int64) {
	t.Helper()
	last, since := n.Load(), time.Now()
	waitFor(t, "events to settle", func() bool {
		if v := n.Load(); v != last {
			last, since = v, time.Now()
		}
		return time.Since(since) > 300*time.Millisecond
	})
}
