package control

import (
	"context"
	"errors"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/nodegc/nodegc/engine"
)

// statusScheduler is an agent's scheduler whose notices the test sends.
type statusScheduler struct {
	mu   sync.Mutex
	st   engine.Status
	subs []chan engine.Notice
}

func (f *statusScheduler) Status() engine.Status {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.st
}

func (f *statusScheduler) Subscribe() (<-chan engine.Notice, func()) {
	f.mu.Lock()
	defer f.mu.Unlock()
	ch := make(chan engine.Notice, 64)
	f.subs = append(f.subs, ch)
	return ch, func() {
		f.mu.Lock()
		defer f.mu.Unlock()
		for i, c := range f.subs {
			if c == ch {
				f.subs = append(f.subs[:i], f.subs[i+1:]...)
				close(ch)
				return
			}
		}
	}
}

// publish sets the status, as the scheduler does, and sends it.
func (f *statusScheduler) publish(st engine.Status) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.st = st
	for _, ch := range f.subs {
		ch <- engine.Notice{Status: st}
	}
}

func (f *statusScheduler) Force(context.Context, engine.PassKind) (engine.PassReport, error) {
	return engine.PassReport{}, errors.New("not in this test")
}
func (f *statusScheduler) Preview(context.Context, engine.PassKind) (engine.PassReport, error) {
	return engine.PassReport{}, errors.New("not in this test")
}
func (f *statusScheduler) Apply(context.Context, engine.Plan) (engine.PassReport, error) {
	return engine.PassReport{}, errors.New("not in this test")
}
func (f *statusScheduler) Pause(context.Context, engine.Pause) error { return nil }
func (f *statusScheduler) Resume(context.Context) error              { return nil }
func (f *statusScheduler) Stop() bool                                { return false }

// policyEngine answers the status call's policy.
type policyEngine struct{ Engine }

func (policyEngine) Policy() engine.Policy { return engine.DefaultPolicy() }

// A client following an agent numbers the agent's statuses itself: the status
// it starts with (the agent's, whose Seq counts every notice the agent
// ever published) must not look newer than the notices that follow, or
// the dashboard keeps it and drops them all (issue 24: a real containerd
// dashboard showed the agent's pass before last, for good).
func TestAttachedStatusesGrow(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the client serves only a root peer: needs root")
	}
	sched := &statusScheduler{st: engine.Status{Passes: 40, Seq: 400}}
	c := serveScheduler(t, sched)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	st, err := c.AgentStatus(ctx)
	if err != nil {
		t.Fatal(err)
	}
	notices, unsubscribe := c.Subscribe()
	defer unsubscribe()
	c.Watch(ctx, st)
	held := c.Status() // what the dashboard starts with
	next := func() engine.Status {
		t.Helper()
		select {
		case n := <-notices:
			return n.Status
		case <-time.After(30 * time.Second):
			t.Fatal("no notice")
		}
		return engine.Status{}
	}
	first := next() // the stream's opening status
	if !first.Newer(held) || first.Passes != 40 {
		t.Errorf("the stream's first status %+v is not newer than the one held %+v", first, held)
	}
	sched.publish(engine.Status{Passes: 41, Seq: 401})
	if got := next(); got.Passes != 41 || got.Seq <= first.Seq || got != c.Status() {
		t.Errorf("the pass's notice %+v after %+v; Status %+v", got, first, c.Status())
	}
	// A new agent behind the same socket starts its Seq again: its
	// statuses are still taken.
	sched.publish(engine.Status{Passes: 0, Seq: 1})
	if got := next(); got.Passes != 0 || !got.Newer(first) {
		t.Errorf("a restarted agent's status %+v is older than %+v", got, first)
	}
}

// A dashboard opens on the agent's brief status, without the last pass
// report (after a large node's first pass, megabytes to send and read
// before the first frame); the report still reaches it, once, from the
// notices stream's first line, as a pass notice.
func TestAttachedBriefStatusGetsTheLastReport(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the client serves only a root peer: needs root")
	}
	last := &engine.PassReport{ID: 3, Run: "r", Kind: engine.PassContainers, FinishedAt: time.Unix(100, 0),
		Items: []engine.ItemResult{{Kind: engine.ItemContainer, ID: "c1", Outcome: engine.OutcomeRemoved}}}
	sched := &statusScheduler{st: engine.Status{Passes: 3, Seq: 30, LastReport: last}}
	c := serveScheduler(t, sched)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	full, err := c.AgentStatus(ctx)
	if err != nil || full.Scheduler.LastReport == nil {
		t.Fatalf("the full status has no last report: %+v, %v", full.Scheduler, err)
	}
	st, err := c.StatusBrief(ctx)
	if err != nil || st.Scheduler.LastReport != nil || st.Scheduler.Passes != 3 {
		t.Fatalf("the brief status: %+v, %v; want 3 passes and no report", st.Scheduler, err)
	}
	notices, unsubscribe := c.Subscribe()
	defer unsubscribe()
	c.Watch(ctx, st)
	next := func() engine.Notice {
		t.Helper()
		select {
		case n := <-notices:
			return n
		case <-time.After(30 * time.Second):
			t.Fatal("no notice")
		}
		return engine.Notice{}
	}
	if n := next(); n.Report == nil || n.Report.PassID() != "r/3" || n.Report.Count(engine.OutcomeRemoved) != 1 || n.Status.LastReport == nil {
		t.Fatalf("the stream's first notice: report %+v, status %+v; want pass r/3 with its item", n.Report, n.Status)
	}
	// The same last report again (a status change) is no new pass.
	sched.publish(engine.Status{Passes: 3, Seq: 31, LastReport: last, Paused: true})
	if n := next(); n.Report != nil || !n.Status.Paused {
		t.Errorf("a status notice after the report: report %+v, status %+v; want no report", n.Report, n.Status)
	}
}

// serveScheduler serves sched on a control socket of a test's own, as an
// agent would, and returns a client of it; t.Cleanup ends both.
func serveScheduler(t *testing.T, sched *statusScheduler) *Client {
	t.Helper()
	srv := NewServer(Options{Scheduler: sched, Engine: policyEngine{}, PID: 1})
	path := SocketPath(t.TempDir())
	l, err := Listen(path)
	if err != nil {
		srv.Close()
		t.Fatal(err)
	}
	hs := HTTPServer(srv.Handler())
	go hs.Serve(l)
	c := NewClient(path, false)
	t.Cleanup(func() {
		c.Close()
		hs.Close()
		l.Close()
		srv.Close()
	})
	return c
}
