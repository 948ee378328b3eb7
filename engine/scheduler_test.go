package engine

import (
	"context"
	"errors"
	"reflect"
	"slices"
	"sync"
	"testing"
	"time"
)

// fakeClock drives the scheduler's loop: After registers a waiter, and
// advance moves time and fires the waiters that are due.
type fakeClock struct {
	mu      sync.Mutex
	cond    *sync.Cond
	now     time.Time
	waiters []waiter
}

type waiter struct {
	at time.Time
	ch chan time.Time
}

func newFakeClock(t time.Time) *fakeClock {
	c := &fakeClock{now: t}
	c.cond = sync.NewCond(&c.mu)
	return c
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) After(d time.Duration) <-chan time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	ch := make(chan time.Time, 1)
	c.waiters = append(c.waiters, waiter{c.now.Add(d), ch})
	c.cond.Broadcast()
	return ch
}

// waitArmed blocks until something waits on the clock for at. A test
// that wakes the loop (a pause with an expiry) and then moves the clock
// to at must first let the loop wait for at: a loop that measured its
// wait from the time before the move waits past at, as a real timer
// started late would.
func (c *fakeClock) waitArmed(at time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for !slices.ContainsFunc(c.waiters, func(w waiter) bool { return w.at.Equal(at) }) {
		c.cond.Wait()
	}
}

// waitIdle blocks until the loop waits on the clock again.
func (c *fakeClock) waitIdle() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for len(c.waiters) == 0 {
		c.cond.Wait()
	}
}

// advance moves the clock by d, one due waiter at a time, letting the loop
// run its passes between steps.
func (c *fakeClock) advance(d time.Duration) {
	end := c.Now().Add(d)
	for {
		c.waitIdle()
		c.mu.Lock()
		// The earliest waiter, not the first registered: a loop woken
		// early (a pause with an expiry) leaves its later waiter behind.
		i := 0
		for j, w := range c.waiters {
			if w.at.Before(c.waiters[i].at) {
				i = j
			}
		}
		w := c.waiters[i]
		if w.at.After(end) {
			c.now = end
			c.mu.Unlock()
			return
		}
		c.waiters = slices.Delete(c.waiters, i, i+1)
		c.now = w.at
		c.mu.Unlock()
		w.ch <- w.at
	}
}

// deadContainers puts two dead instances of one container in the runtime;
// the default policy (one dead per container) removes the older.
func deadContainers(rt *fakeRuntime) {
	rt.Sandboxes["s1"] = Sandbox{ID: "s1", PodUID: "u1", State: SandboxReady, CreatedAt: execNow.Add(-time.Hour)}
	rt.Containers["old"] = Container{ID: "old", PodSandboxID: "s1", PodUID: "u1", Name: "app", Attempt: 0, State: ContainerExited, CreatedAt: execNow.Add(-time.Hour)}
	rt.Containers["new"] = Container{ID: "new", PodSandboxID: "s1", PodUID: "u1", Name: "app", Attempt: 1, State: ContainerExited, CreatedAt: execNow.Add(-time.Minute)}
}

func startScheduler(t *testing.T, rt *fakeRuntime, paused bool) (*Scheduler, *fakeClock) {
	t.Helper()
	clk := newFakeClock(execNow)
	e, err := New(Options{Reader: rt, Statfs: rt.Statfs, Remover: rt, Policy: DefaultPolicy(), Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	s := NewScheduler(e, SchedulerOptions{Paused: paused, After: clk.After})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { s.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	return s, clk
}

func TestSchedulerPeriodicPasses(t *testing.T) {
	for _, tc := range []struct {
		name       string
		paused     bool
		wantCalls  []string
		wantPasses int64
	}{
		{name: "a running scheduler removes the older dead container after one container period", wantCalls: []string{"RemoveContainer old"}, wantPasses: 1},
		{name: "a paused scheduler runs no periodic pass", paused: true, wantPasses: 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rt := newFakeRuntime()
			deadContainers(rt)
			s, clk := startScheduler(t, rt, tc.paused)
			clk.advance(ContainerGCPeriod - time.Second)
			if got := rt.MutatingCalls(); len(got) != 0 {
				t.Fatalf("a pass ran before the first period: %v", got)
			}
			clk.advance(time.Second)
			clk.waitIdle()
			if got := rt.MutatingCalls(); !slices.Equal(got, tc.wantCalls) {
				t.Errorf("mutating calls = %v, want %v", got, tc.wantCalls)
			}
			st := s.Status()
			if st.Passes != tc.wantPasses || st.Paused != tc.paused {
				t.Errorf("status = %+v", st)
			}
			if want := execNow.Add(2 * ContainerGCPeriod); !st.NextContainerPass.Equal(want) {
				t.Errorf("next container pass %v, want %v", st.NextContainerPass, want)
			}
		})
	}
}

func TestSchedulerForceRunsWhilePaused(t *testing.T) {
	rt := newFakeRuntime()
	deadContainers(rt)
	s, _ := startScheduler(t, rt, true)
	r, err := s.Force(context.Background(), PassContainers)
	if err != nil {
		t.Fatal(err)
	}
	if !r.Forced || r.Count(OutcomeRemoved) != 1 || !s.Status().Paused {
		t.Errorf("report %+v, status %+v", r, s.Status())
	}
}

func TestPreviewThenApplyRemovesExactlyThePreviewedItems(t *testing.T) {
	rt := newFakeRuntime()
	deadContainers(rt)
	s, _ := startScheduler(t, rt, true)
	ctx := context.Background()
	pr, err := s.Preview(ctx, PassFull)
	if err != nil {
		t.Fatal(err)
	}
	if got := rt.MutatingCalls(); len(got) != 0 {
		t.Fatalf("preview made mutating calls: %v", got)
	}
	if !pr.DryRun || len(pr.Items) != 1 || pr.Items[0].Outcome != OutcomePlanned || pr.Items[0].ID != "old" {
		t.Fatalf("preview = %+v", pr.Items)
	}
	// A new dead instance appears after the preview: applying the
	// previewed plan must not touch it.
	rt.Containers["newer"] = Container{ID: "newer", PodSandboxID: "s1", PodUID: "u1", Name: "app", Attempt: 2, State: ContainerExited, CreatedAt: execNow}
	ar, err := s.Apply(ctx, pr.Plan)
	if err != nil {
		t.Fatal(err)
	}
	if got := rt.MutatingCalls(); !slices.Equal(got, []string{"RemoveContainer old"}) {
		t.Errorf("mutating calls = %v, want only the previewed one", got)
	}
	if ar.DryRun || ar.Count(OutcomeRemoved) != 1 {
		t.Errorf("apply report %+v", ar)
	}
}

func TestImageGCFailedOnlyFromTheSecondFailureInARow(t *testing.T) {
	rt := newFakeRuntime()
	rt.Fs = FsStats{Mountpoint: "/fake", CapacityBytes: 0}
	s, _ := startScheduler(t, rt, true)
	ch, stop := s.Subscribe()
	defer stop()
	ctx := context.Background()
	var got [][]string
	for range 3 {
		r, _ := s.Force(ctx, PassImages)
		var reasons []string
		for _, ev := range r.Events {
			reasons = append(reasons, ev.Reason)
		}
		got = append(got, reasons)
	}
	want := [][]string{
		{EventInvalidDiskCapacity},
		{EventInvalidDiskCapacity, EventImageGCFailed},
		{EventInvalidDiskCapacity, EventImageGCFailed},
	}
	for i := range want {
		if !slices.Equal(got[i], want[i]) {
			t.Errorf("pass %d events = %v, want %v", i+1, got[i], want[i])
		}
	}
	// Subscribers saw the reports and the events.
	var reports, events int
	for len(ch) > 0 {
		n := <-ch
		if n.Report != nil {
			reports++
		}
		if n.Event != nil {
			events++
		}
	}
	if reports != 3 || events != 5 {
		t.Errorf("subscriber saw %d reports and %d events, want 3 and 5", reports, events)
	}
}

func TestPeriodicImageGCDisabledAtHigh100WithoutMaxAge(t *testing.T) {
	rt := newFakeRuntime()
	p := DefaultPolicy()
	p.Image.HighThresholdPercent, p.Image.LowThresholdPercent = 100, 80
	e, err := New(Options{Reader: rt, Statfs: rt.Statfs, Remover: rt, Policy: p, Now: func() time.Time { return execNow }})
	if err != nil {
		t.Fatal(err)
	}
	if !NewScheduler(e, SchedulerOptions{}).Status().ImageGCDisabled {
		t.Error("periodic image GC is not disabled at high=100, maxAge=0")
	}
	p.Image.MaxAge = time.Hour
	e, _ = New(Options{Reader: rt, Statfs: rt.Statfs, Remover: rt, Policy: p})
	if NewScheduler(e, SchedulerOptions{}).Status().ImageGCDisabled {
		t.Error("periodic image GC disabled although MaxAge is set")
	}
}

// Every notice carries a greater Status.Seq than any status read before
// it, so a reader keeps the later of a status read at the start of a slow
// refresh and a notice that came meanwhile (issue 24: an attached
// dashboard showed a pass in flight a minute after it ended).
func TestSchedulerStatusSeqGrows(t *testing.T) {
	rt := newFakeRuntime()
	deadContainers(rt)
	s, _ := startScheduler(t, rt, true)
	ch, unsubscribe := s.Subscribe()
	defer unsubscribe()
	before := s.Status()
	if _, err := s.Force(context.Background(), PassContainers); err != nil {
		t.Fatal(err)
	}
	prev := before
	var last Status
	for n := 0; ; n++ {
		var nt Notice
		select {
		case nt = <-ch:
		default:
			if n < 2 {
				t.Fatalf("%d notices, want the pass's start and end", n)
			}
			if after := s.Status(); after.Seq != last.Seq || after.Running != "" {
				t.Errorf("status after the pass %+v, last notice's seq %d", after, last.Seq)
			}
			if before.Newer(last) {
				t.Errorf("the status read before the pass (seq %d) is as new as its last notice (seq %d)", before.Seq, last.Seq)
			}
			return
		}
		if nt.Status.Seq <= prev.Seq {
			t.Errorf("notice %d has seq %d after seq %d", n, nt.Status.Seq, prev.Seq)
		}
		prev, last = nt.Status, nt.Status
	}
}

// TestStatusKeepsTheLastReportWithoutTheImagePlansAccount pins what the
// status keeps of the last pass: all of the report its notice carried but
// the image plan's Keep and Order, which only the notice carries.
func TestStatusKeepsTheLastReportWithoutTheImagePlansAccount(t *testing.T) {
	rt := newFakeRuntime()
	addImages(rt, "i1", "i2", "i3")
	s, _ := startScheduler(t, rt, true)
	notices, cancel := s.Subscribe()
	defer cancel()
	r, err := s.Force(context.Background(), PassImages)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Plan.ImageGC.Keep) == 0 || len(r.Plan.ImageGC.Order) == 0 {
		t.Fatalf("the pass kept no image with a reason, or has no order: %+v", r.Plan.ImageGC)
	}
	var sent *PassReport
	for n := range notices {
		if n.Report != nil {
			sent = n.Report
			break
		}
	}
	if len(sent.Plan.ImageGC.Keep) != len(r.Plan.ImageGC.Keep) || len(sent.Plan.ImageGC.Order) != len(r.Plan.ImageGC.Order) {
		t.Errorf("the notice's report keeps %d of %d images' reasons; want the whole plan", len(sent.Plan.ImageGC.Keep), len(r.Plan.ImageGC.Keep))
	}
	last := s.Status().LastReport
	if last == nil || last.Plan.ImageGC.Keep != nil || last.Plan.ImageGC.Order != nil {
		t.Fatalf("the status keeps %+v; want the report without Keep and Order", last)
	}
	want := *sent
	want.Plan.ImageGC.Keep, want.Plan.ImageGC.Order = nil, nil
	if !reflect.DeepEqual(*last, want) {
		t.Errorf("the status's report:\n%+v\nwant the notice's without Keep and Order:\n%+v", *last, want)
	}
}

// TestAStalePlanIsNoPass applies a previewed plan after MaxPlanAge: the
// engine refuses it before any pass begins, so the scheduler counts no
// pass, keeps no report and publishes no report or failure event, and the
// runtime sees no mutating call.
func TestAStalePlanIsNoPass(t *testing.T) {
	rt := newFakeRuntime()
	deadContainers(rt)
	s, clk := startScheduler(t, rt, true)
	notices, cancel := s.Subscribe()
	defer cancel()
	ctx := context.Background()
	pr, err := s.Preview(ctx, PassFull)
	if err != nil {
		t.Fatal(err)
	}
	before := s.Status()
	clk.mu.Lock()
	clk.now = clk.now.Add(MaxPlanAge + time.Second)
	clk.mu.Unlock()
	if _, err := s.Apply(ctx, pr.Plan); !errors.Is(err, ErrStalePlan) {
		t.Fatalf("apply after %s: %v, want ErrStalePlan", MaxPlanAge, err)
	}
	if got := rt.MutatingCalls(); len(got) != 0 {
		t.Errorf("mutating calls %v", got)
	}
	st := s.Status()
	if st.Passes != before.Passes || st.LastReport != before.LastReport || st.Running != "" {
		t.Errorf("status after the refusal: passes %d (was %d), last report %+v, running %q", st.Passes, before.Passes, st.LastReport, st.Running)
	}
	for {
		select {
		case n := <-notices:
			if n.Report != nil && !n.Report.DryRun || n.Event != nil {
				t.Errorf("published %+v", n)
			}
			continue
		default:
		}
		break
	}
}
