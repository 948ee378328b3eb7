package agent

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nodegc/nodegc/engine"
	"github.com/nodegc/nodegc/engine/cri"
	"github.com/nodegc/nodegc/forecast"
	"github.com/nodegc/nodegc/internal/simfs"
	"github.com/nodegc/nodegc/internal/simnode"
)

// simClock is a simulated node's clock, advanced by the test.
type simClock struct {
	base time.Time
	ns   atomic.Int64
}

func (c *simClock) now() time.Time              { return c.base.Add(time.Duration(c.ns.Load())) }
func (c *simClock) uptime() time.Duration       { return time.Duration(c.ns.Load()) }
func (c *simClock) advance(d time.Duration)     { c.ns.Add(int64(d)) }
func (c *simClock) sinceBase(t time.Time) int64 { return int64(t.Sub(c.base) / time.Second) }

// runAgentFor runs an agent on the simulated node with its state in
// stateDir while the node fills in steps of 30 s (each step once the
// agent has seen a snapshot of the last; a pass every 20 ms of real
// time) until the engine has taken snapshots at least readings
// times 10 s or more apart, then stops it and returns it.
func runAgentFor(t *testing.T, n *simnode.Node, ep, stateDir string, clk *simClock, readings int64) *Agent {
	t.Helper()
	c, err := cri.Dial(context.Background(), ep, cri.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	a := &Agent{uptime: clk.uptime}
	var seen, taken atomic.Int64
	var last time.Time // under the engine's lock, as OnSnapshot runs
	observe := func(s engine.Snapshot) {
		defer taken.Store(s.TakenAt.UnixNano())
		if s.TakenAt.Sub(last) >= forecast.MinSpacing {
			last = s.TakenAt
			seen.Add(1)
		}
		a.ObserveSnapshot(s)
	}
	e, err := engine.New(engine.Options{Reader: c, Remover: c, Statfs: simfs.Local(n), Policy: engine.DefaultPolicy(),
		Now: clk.now, StateDir: stateDir, OnSnapshot: observe})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- a.Run(ctx, Options{Log: slog.New(slog.DiscardHandler), StateDir: stateDir, Engine: e, Started: clk.now(),
			Scheduler:      engine.SchedulerOptions{ContainerPeriod: 20 * time.Millisecond, ImagePeriod: 100 * time.Millisecond},
			StartScheduler: testScheduler, StoppedLine: func(engine.PassReport) string { return "stopped" }})
	}()
	start := seen.Load()
	for step := 0; seen.Load()-start < readings; step++ {
		if step == 100000 {
			t.Fatalf("%d snapshots in %d steps, want %d", seen.Load()-start, step, readings)
		}
		clk.advance(30 * time.Second)
		n.Step(clk.now())
		// In lock step: the clock moves again only once a snapshot of
		// this moment was handed over, so the agent reads the monotonic
		// clock at the time the snapshot bears, as on a node.
		// The passes run on the real clock, the node's stands still
		// between steps; once in some dozens of runs, on a loaded machine
		// (CI), a step was never read by a pass within 10 s, for a reason
		// not yet found. A step the passes leave unread for a second is
		// read by a snapshot of the engine's, which the agent observes
		// as it does a pass's: the test is of the history's survival,
		// not of the passes' cadence. The minute bounds a hang.
		nudge, deadline := time.Now().Add(time.Second), time.Now().Add(time.Minute)
		for taken.Load() < clk.now().UnixNano() {
			switch now := time.Now(); {
			case now.After(deadline):
				t.Fatalf("no snapshot at %ds within a minute", clk.sinceBase(clk.now()))
			case now.After(nudge):
				nudge = deadline
				if _, err := e.Snapshot(ctx); err != nil {
					t.Fatalf("snapshot at %ds: %v", clk.sinceBase(clk.now()), err)
				}
			}
			time.Sleep(time.Millisecond)
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	return a
}

// testScheduler is cmd/nodegc's scheduler start, without events.
func testScheduler(ctx context.Context, e *engine.Engine, so engine.SchedulerOptions, _ engine.EventSource) (context.Context, *engine.Scheduler, func() *engine.PassReport) {
	ctx, cancel := context.WithCancel(ctx)
	s := engine.NewScheduler(e, so)
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.Run(ctx)
	}()
	return ctx, s, func() *engine.PassReport {
		cancel()
		<-done
		s.Wait()
		return nil
	}
}

// TestAgentForecastSurvivesRestart: an agent's history of the image
// filesystem, saved in the state dir as it stops, is where the next
// agent on that dir starts, and the next goes on forecasting from it.
func TestAgentForecastSurvivesRestart(t *testing.T) {
	dir, err := os.MkdirTemp("", "fc-agent-") // short: the control socket is in it
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	state := filepath.Join(dir, "state")
	clk := &simClock{base: simnode.DefaultStart}
	n, ep := simnode.ServeTemp(t, simnode.Options{Seed: 5, Images: 10, Pods: 3, Start: clk.base, Now: clk.now,
		MinImageBytes: 50 << 20, MaxImageBytes: 200 << 20, CapacityBytes: 10 << 30, BaseUsageBytes: 4 << 30,
		Workload: simnode.Workload{GrowthBytes: 5 << 20}})

	first := runAgentFor(t, n, ep, state, clk, 40)
	had := first.fc.hist.Readings()
	if len(had) < 10 {
		t.Fatalf("the first agent kept %d readings, want at least 10", len(had))
	}
	second := runAgentFor(t, n, ep, state, clk, 40)
	rs := second.fc.hist.Readings()
	if len(rs) <= len(had) || !rs[0].At.Equal(had[0].At) || !rs[len(had)-1].At.Equal(had[len(had)-1].At) {
		t.Fatalf("the second agent's history: %d readings from %ds, the first's %d from %ds to %ds; want the first's, then more",
			len(rs), clk.sinceBase(rs[0].At), len(had), clk.sinceBase(had[0].At), clk.sinceBase(had[len(had)-1].At))
	}
	if fs := second.fc.Forecasts(); len(fs) != 2 || fs[0].Status != forecast.StatusFilling {
		t.Errorf("forecasts after the restart: %+v, want the GC threshold filling", fs)
	}
}
