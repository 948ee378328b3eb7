package engine

import (
	"context"
	"errors"
	"log/slog"
	"time"
)

// Options configure an Engine.
type Options struct {
	// Reader reads the runtime. Required.
	Reader Reader
	// Remover mutates the runtime; nil makes the engine read-only, and
	// Apply refuses.
	Remover Remover
	// Policy is the effective policy; New validates it.
	Policy Policy
	// StateDir holds the image records and the deletion journal; "" keeps
	// records in memory only and writes no journal.
	StateDir string
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Statfs measures a filesystem by path; nil means the real statfs.
	Statfs func(path string) (FsStats, error)
	// RootFsPath is the root filesystem to report; "" means "/".
	RootFsPath string
	// PodSource reports the API server's pods; nil means not ready.
	PodSource func(ctx context.Context) (PodSource, error)
	// ScanLogs makes snapshots list pod log directories and
	// /var/log/containers symlinks for log GC.
	ScanLogs bool
	// ContainerLogsDir overrides /var/log/containers (tests).
	ContainerLogsDir string
	// Logger receives Info per deletion and Debug per item; nil discards.
	Logger *slog.Logger
}

// ErrReadOnly is returned by Apply on an engine without a Remover.
var ErrReadOnly = errors.New("read-only: this engine cannot remove anything")

// Engine collects snapshots, plans and applies passes for one runtime. It is
// safe for concurrent use; passes are serialised.
type Engine struct {
	o Options
}

// New validates the options and the policy, and loads the image records
// from StateDir.
func New(o Options) (*Engine, error) {
	return nil, errors.New("engine: not implemented yet")
}

// Policy returns the effective policy.
func (e *Engine) Policy() Policy { return e.o.Policy }

// ReadOnly reports whether the engine has no Remover.
func (e *Engine) ReadOnly() bool { return e.o.Remover == nil }

// Snapshot collects the runtime's state and the filesystems, updates the
// image records (first detected, last used) and persists them.
func (e *Engine) Snapshot(ctx context.Context) (Snapshot, error) {
	return Snapshot{}, errors.New("engine: not implemented yet")
}

// Plan takes a snapshot and plans a pass of the kind at the engine's now.
func (e *Engine) Plan(ctx context.Context, kind PassKind) (Plan, error) {
	return Plan{}, errors.New("engine: not implemented yet")
}

// Apply performs the plan: each item is re-checked just before it is
// removed, a removal error is recorded and the pass goes on, and every
// deletion is journaled. It returns ErrReadOnly without a Remover.
func (e *Engine) Apply(ctx context.Context, p Plan) (PassReport, error) {
	return PassReport{}, errors.New("engine: not implemented yet")
}

// DryRun plans a pass and reports every item as planned. It makes no
// mutating runtime call.
func (e *Engine) DryRun(ctx context.Context, kind PassKind) (PassReport, error) {
	return PassReport{}, errors.New("engine: not implemented yet")
}

// Run plans and applies one pass.
func (e *Engine) Run(ctx context.Context, kind PassKind) (PassReport, error) {
	return PassReport{}, errors.New("engine: not implemented yet")
}
