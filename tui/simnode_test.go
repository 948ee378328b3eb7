package tui

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/nodegc/nodegc/engine"
	"github.com/nodegc/nodegc/engine/cri"
	"github.com/nodegc/nodegc/internal/simfs"
	"github.com/nodegc/nodegc/internal/simnode"
)

// simEngine serves a simulated node on a fresh socket and returns it with
// an engine that reads and removes through the real CRI adapter.
func simEngine(t testing.TB, o simnode.Options) (*simnode.Node, *engine.Engine) {
	t.Helper()
	n, ep := simnode.ServeTemp(t, o)
	c, err := cri.Dial(context.Background(), ep, cri.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	e, err := engine.New(engine.Options{
		Reader: c, Remover: c, Statfs: simfs.Local(n), Policy: engine.DefaultPolicy(), Now: n.Now,
		PodSource: func(context.Context, engine.Snapshot) (engine.PodSource, error) {
			return engine.PodSource{Ready: true, RemovablePodUIDs: n.RemovablePods()}, nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	return n, e
}

func simOptions(s *engine.Scheduler, now func() time.Time) Options {
	e := s.Engine()
	return Options{
		Controller: s, Snapshot: e.Snapshot, Plan: e.PlanSnapshot, Policy: e.Policy(), Now: now, HideSelf: true,
		Self:  func() (SelfSample, error) { return SelfSample{}, nil },
		timer: noTimer,
	}
}

// removedIDs are the IDs a plan removes, of every kind.
func removedIDs(p engine.Plan) []string {
	var ids []string
	for _, r := range p.ImageGC.Remove {
		ids = append(ids, r.ID)
	}
	for _, r := range p.ContainerGC.Remove {
		ids = append(ids, r.ID)
	}
	for _, r := range p.SandboxGC.Remove {
		ids = append(ids, r.ID)
	}
	slices.Sort(ids)
	return ids
}

func snapshotIDs(t *testing.T, e *engine.Engine) map[string]bool {
	t.Helper()
	s, err := e.Snapshot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	ids := map[string]bool{}
	for _, im := range s.Images {
		ids[im.ID] = true
	}
	for _, c := range s.Containers {
		ids[c.ID] = true
	}
	for _, sb := range s.Sandboxes {
		ids[sb.ID] = true
	}
	return ids
}

func TestSimnodeDryRun(t *testing.T) {
	tests := []struct {
		name  string
		keys  []string
		apply bool
	}{
		{"dry-run then y removes exactly the previewed items", []string{"D", "y"}, true},
		{"dry-run then esc removes nothing", []string{"D", "esc"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n, e := simEngine(t, simnode.Demo(7))
			// Push the image filesystem over the high threshold.
			for i := range 90 {
				n.Step(n.Now().Add(time.Duration(i+1) * time.Second))
			}
			s := engine.NewScheduler(e, engine.SchedulerOptions{})
			m := New(simOptions(s, n.Now))
			m = send(m, windowSize(100, 30))
			m = refreshNow(t, m)
			before := snapshotIDs(t, e)

			m = press(m, tt.keys[0])
			if !m.ModalOpen() || m.modal.items == 0 {
				t.Fatalf("preview shows no items (modal open %v)", m.ModalOpen())
			}
			planned := removedIDs(m.modal.plan)
			m = press(m, tt.keys[1:]...)

			after := snapshotIDs(t, e)
			var gone []string
			for id := range before {
				if !after[id] {
					gone = append(gone, id)
				}
			}
			slices.Sort(gone)
			if !tt.apply {
				if len(gone) != 0 || len(n.MutatingCalls()) != 0 {
					t.Fatalf("cancelled preview removed %v (calls %v)", gone, n.MutatingCalls())
				}
				return
			}
			if !slices.Equal(gone, planned) {
				t.Errorf("removed %d objects, previewed %d:\nremoved  %v\npreviewed %v", len(gone), len(planned), gone, planned)
			}
			if got := passesListed(m); got != 1 {
				t.Errorf("events pane shows %d passes, want 1", got)
			}
		})
	}
}

// TestSimnodePausedRunsNoPeriodicPass pauses the real scheduler with p and
// lets both periods elapse: no pass runs and nothing is removed.
func TestSimnodePausedRunsNoPeriodicPass(t *testing.T) {
	n, e := simEngine(t, simnode.Demo(3))
	var mu sync.Mutex
	clock := n.Now()
	now := func() time.Time { mu.Lock(); defer mu.Unlock(); return clock }
	fire := make(chan time.Time)
	s := engine.NewScheduler(e, engine.SchedulerOptions{Now: now, After: func(time.Duration) <-chan time.Time { return fire }})
	ch, cancel := s.Subscribe()
	defer cancel()
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	go s.Run(ctx)

	m := New(simOptions(s, now))
	m = send(m, windowSize(100, 30))
	m = refreshNow(t, m)
	m = press(m, "p")
	if !s.Status().Paused {
		t.Fatal("p did not pause the scheduler")
	}
	mu.Lock()
	clock = clock.Add(engine.ImageGCPeriod + time.Minute)
	mu.Unlock()
	fire <- clock
	// The loop publishes a notice once it has handled the due passes.
	deadline := time.After(10 * time.Second)
	for handled := false; !handled; {
		select {
		case nt := <-ch:
			handled = !nt.Status.NextImagePass.Before(clock)
		case <-deadline:
			t.Fatal("the scheduler never handled the due passes")
		}
	}
	if st := s.Status(); st.Passes != 0 || len(n.MutatingCalls()) != 0 {
		t.Errorf("paused scheduler ran %d passes, calls %v", st.Passes, n.MutatingCalls())
	}
	_ = m
}
