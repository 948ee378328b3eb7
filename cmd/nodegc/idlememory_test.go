package main

import (
	"context"
	"testing"
	"time"

	"github.com/nodegc/nodegc/cgroupfs"
	"github.com/nodegc/nodegc/engine"
	"github.com/nodegc/nodegc/internal/proctune"
	"github.com/nodegc/nodegc/tui"
)

// TestIdleMemoryLiftsEveryRead pins which of the dashboard's reads lift
// the limit while they run: each one the screen makes that can allocate
// much.
func TestIdleMemoryLiftsEveryRead(t *testing.T) {
	var lifted bool
	var limit int64
	m := proctune.NewIdleMemoryWith(func(l int64) int64 { limit = l; return 0 }, func() (uint64, uint64) { return 1 << 20, 0 })
	inflight := func() { lifted = limit == proctune.DashboardMemoryLimit }
	o := idleOptions(m, tui.Options{
		Snapshot: func(context.Context) (engine.Snapshot, error) { inflight(); return engine.Snapshot{}, nil },
		Plan: func(engine.Snapshot, engine.PassKind, time.Time) (engine.Plan, error) {
			inflight()
			return engine.Plan{}, nil
		},
		Changed: func(context.Context, uint64) (bool, error) { inflight(); return false, nil },
		Cgroups: func(context.Context, cgroupfs.Names) (*cgroupfs.Tree, error) { inflight(); return nil, nil },
		Journal: func(context.Context) ([]engine.JournalEntry, error) { inflight(); return nil, nil },
	})
	ctx := t.Context()
	for name, call := range map[string]func(){
		"Snapshot": func() { _, _ = o.Snapshot(ctx) },
		"Plan":     func() { _, _ = o.Plan(engine.Snapshot{}, engine.PassFull, time.Time{}) },
		"Changed":  func() { _, _ = o.Changed(ctx, 0) },
		"Cgroups":  func() { _, _ = o.Cgroups(ctx, nil) },
		"Journal":  func() { _, _ = o.Journal(ctx) },
	} {
		m.Release() // the idle limit, which only a release with no read in flight sets
		if limit == proctune.DashboardMemoryLimit {
			t.Fatalf("before %s: the limit a pass has; want the idle one", name)
		}
		lifted = false
		call()
		if !lifted {
			t.Errorf("%s ran with the idle limit", name)
		}
		m.Release()
		if limit == proctune.DashboardMemoryLimit {
			t.Errorf("%s left a read in flight: a release kept the limit lifted", name)
		}
	}
}

// TestIdleMemoryLeavesGOMEMLIMITAlone pins that an environment's
// GOMEMLIMIT is the limit the whole run: no IdleMemory, and the options
// are the dashboard's own.
func TestIdleMemoryLeavesGOMEMLIMITAlone(t *testing.T) {
	t.Setenv("GOMEMLIMIT", "64MiB")
	m := proctune.NewIdleMemory()
	if m != nil {
		t.Fatal("an IdleMemory with GOMEMLIMIT set")
	}
	if o := idleOptions(m, tui.Options{}); o.Snapshot != nil || o.Plan != nil {
		t.Error("options wrapped reads it did not have")
	}
}
