package main

import (
	"context"
	"time"

	"github.com/nodegc/nodegc/cgroupfs"
	"github.com/nodegc/nodegc/engine"
	"github.com/nodegc/nodegc/internal/proctune"
	"github.com/nodegc/nodegc/tui"
)

// idleOptions wraps the dashboard's reads that can allocate much in
// m.Begin:
// the listing, the plan and the journal, whose results stay, and the
// light poll and the cgroup read.
func idleOptions(m *proctune.IdleMemory, o tui.Options) tui.Options {
	if m == nil {
		return o
	}
	o.Snapshot = proctune.Read(m, true, o.Snapshot)
	o.Journal = proctune.Read(m, true, o.Journal)
	if plan := o.Plan; plan != nil {
		o.Plan = func(s engine.Snapshot, kind engine.PassKind, at time.Time) (engine.Plan, error) {
			defer m.Begin(true)()
			return plan(s, kind, at)
		}
	}
	if changed := o.Changed; changed != nil {
		o.Changed = func(ctx context.Context, since uint64) (bool, error) {
			defer m.Begin(false)()
			return changed(ctx, since)
		}
	}
	if cgroups := o.Cgroups; cgroups != nil {
		o.Cgroups = func(ctx context.Context, names cgroupfs.Names) (*cgroupfs.Tree, error) {
			defer m.Begin(false)()
			return cgroups(ctx, names)
		}
	}
	return o
}
