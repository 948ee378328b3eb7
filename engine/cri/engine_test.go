package cri

import (
	"context"
	"testing"

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
