package engine

import (
	"context"
	"errors"
	"testing"
)

// TestShadowSchedulerPlansEveryPassAndRemovesNothing: a scheduler in
// shadow mode over an engine that can remove runs its periodic passes as
// dry runs marked Shadow, makes no mutating runtime call, refuses forced
// passes and applies, and judges what another removes against its plans.
func TestShadowSchedulerPlansEveryPassAndRemovesNothing(t *testing.T) {
	rt := newFakeRuntime() // its image fs is 90 % used: image GC plans removals
	deadContainers(rt)
	for _, id := range []string{"img-a", "img-b"} {
		rt.Images[id] = Image{ID: id, SizeBytes: 100, RepoTags: []string{id + ":1"}}
	}
	clk := newFakeClock(execNow)
	e, err := New(Options{Reader: rt, Statfs: rt.Statfs, Remover: rt, Policy: DefaultPolicy(), Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	s := NewScheduler(e, SchedulerOptions{Shadow: true, After: clk.After})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { s.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	if _, err := e.Snapshot(ctx); err != nil { // the images' records begin now, as the agent's first snapshot does
		t.Fatal(err)
	}

	clk.advance(ContainerGCPeriod)
	clk.waitIdle()
	st := s.Status()
	if !st.Shadow || !st.ReadOnly || st.Passes != 1 || st.LastReport == nil || !st.LastReport.Shadow || !st.LastReport.DryRun {
		t.Fatalf("after one container period: status %+v", st)
	}
	if got := st.LastReport.Items; len(got) != 1 || got[0].ID != "old" || got[0].Outcome != OutcomePlanned {
		t.Fatalf("shadow container pass items = %+v, want the older dead container planned", got)
	}
	if _, err := s.Force(ctx, PassFull); !errors.Is(err, ErrShadow) || !errors.Is(err, ErrReadOnly) {
		t.Errorf("Force in shadow mode: err %v, want ErrShadow (an ErrReadOnly)", err)
	}
	pr, err := s.Preview(ctx, PassFull)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Apply(ctx, pr.Plan); !errors.Is(err, ErrShadow) {
		t.Errorf("Apply in shadow mode: err %v, want ErrShadow", err)
	}

	// Another (the kubelet's container GC) removes what the shadow pass
	// planned; the next pass's snapshot misses it, the one after settles
	// it as agreed.
	rt.Mu.Lock()
	delete(rt.Containers, "old")
	rt.Mu.Unlock()
	clk.advance(ImageGCPeriod - ContainerGCPeriod)
	clk.waitIdle()
	if got := rt.MutatingCalls(); len(got) != 0 {
		t.Fatalf("shadow mode made mutating calls: %v", got)
	}
	st = s.Status()
	if st.ShadowTally.Containers != (ShadowCounts{Agreed: 1}) || st.RemovedByOthers.Containers != 1 {
		t.Errorf("tally %+v, removed by others %+v; want the container agreed and counted as another's", st.ShadowTally, st.RemovedByOthers)
	}
	if r := st.LastReport; r == nil || r.Kind != PassImages || !r.Shadow || r.Count(OutcomePlanned) == 0 {
		t.Errorf("last report after an image period: %+v, want a shadow image pass that planned images", r)
	}
	if st.ShadowTally.Passes != 6 || st.Passes != 6 {
		t.Errorf("shadow passes: tally %d, status %d; want 6 (five container passes and one image pass)", st.ShadowTally.Passes, st.Passes)
	}
}
