package tui

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/nodegc/nodegc/control"
	"github.com/nodegc/nodegc/engine"
	"github.com/nodegc/nodegc/engine/cri"
	"github.com/nodegc/nodegc/internal/simfs"
	"github.com/nodegc/nodegc/internal/simnode"
)

// An attached dashboard has the agent's whole record: after seven passes
// another client started, it lists all seven, and its journal view (L)
// shows every line of the agent's journal.
func TestAnAttachedDashboardHasTheWholeRecord(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the control client serves only a root peer: needs root")
	}
	n, ep := simnode.ServeTemp(t, simnode.Options{Seed: 2, Images: 6, Pods: 3, DeadPerContainer: 3, DeletedPods: 2})
	rt, err := cri.Dial(context.Background(), ep, cri.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close() })
	stateDir := filepath.Join(t.TempDir(), "state")
	e, err := engine.New(engine.Options{Reader: rt, Remover: rt, Statfs: simfs.Local(n), Policy: engine.DefaultPolicy(), Now: n.Now, StateDir: stateDir,
		PodSource: func(context.Context, engine.Snapshot) (engine.PodSource, error) {
			return engine.PodSource{Ready: true, RemovablePodUIDs: n.RemovablePods()}, nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	s := engine.NewScheduler(e, engine.SchedulerOptions{})
	srv := control.NewServer(control.Options{Scheduler: s, Engine: e, PID: os.Getpid(),
		Journal: func(context.Context) ([]engine.JournalEntry, error) { return engine.ReadJournalLines(stateDir) }})
	t.Cleanup(srv.Close)
	path := control.SocketPath(t.TempDir())
	l, err := control.Listen(path)
	if err != nil {
		t.Fatal(err)
	}
	hs := control.HTTPServer(srv.Handler())
	go hs.Serve(l)
	t.Cleanup(func() { hs.Close(); l.Close() })
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	other := control.NewClient(path, false) // another dashboard, or gc
	defer other.Close()
	for _, kind := range []engine.PassKind{engine.PassContainers, engine.PassImages, engine.PassFull,
		engine.PassContainers, engine.PassImages, engine.PassContainers, engine.PassFull} {
		if _, err := other.Force(ctx, kind); err != nil {
			t.Fatal(err)
		}
	}
	journal, err := engine.ReadJournalLines(stateDir)
	if err != nil || len(journal) == 0 {
		t.Fatalf("the agent's journal: %d lines, %v; want some", len(journal), err)
	}

	c := control.NewClient(path, false)
	defer c.Close()
	st, err := c.StatusBrief(ctx)
	if err != nil {
		t.Fatal(err)
	}
	c.Watch(ctx, st)
	now := n.Now()
	o := Options{Controller: c, Snapshot: c.NodeSnapshot, Plan: c.PlanSnapshot, ImageFs: c.ImageFs, Changed: c.Changed,
		Journal: c.Journal, History: c.Reports, Policy: st.Policy, Agent: &Agent{PID: st.PID},
		Now: func() time.Time { return now }, HideSelf: true, Self: func() (SelfSample, error) { return SelfSample{}, nil }, timer: noTimer}
	m := send(New(o), tea.WindowSizeMsg{Width: 120, Height: 40})
	m = refreshNow(t, m)
	// What Init reads for the Events pane, and what it makes of it.
	nm, cmd := m.Update(historyCmd(ctx, o.Journal, o.History)())
	m = runCmd(nm.(Model), cmd)
	if got := passesListed(m); got != 7 {
		t.Errorf("the attached dashboard lists %d passes, want the agent's 7", got)
	}
	m = press(m, "L")
	if m.modal == nil || m.modal.kind != modalJournal {
		t.Fatalf("L opened no journal view: %+v", m.modal)
	}
	if got := m.modal.journal.lines; got != len(journal) {
		t.Errorf("the journal view holds %d lines, want the agent's %d", got, len(journal))
	}
}
