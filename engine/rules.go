package engine

// The names below are the rules room's, under the engine's name, so that
// callers keep writing engine.PlanPass and engine.Explain.

import (
	"fmt"
	"time"

	"github.com/nodegc/nodegc/engine/rules"
)

// ErrInvalidCapacity is [rules.ErrInvalidCapacity].
var ErrInvalidCapacity = rules.ErrInvalidCapacity

// AddBytes is [rules.AddBytes].
func AddBytes(a int64, b int64) int64 {
	return rules.AddBytes(a, b)
}

// Explain is [rules.Explain].
func Explain(s Snapshot, p Plan) Explanation {
	return rules.Explain(s, p)
}

// ExplainContainers is [rules.ExplainContainers].
func ExplainContainers(s Snapshot, p Plan) []ContainerRow {
	return rules.ExplainContainers(s, p)
}

// ExplainImages is [rules.ExplainImages].
func ExplainImages(s Snapshot, p Plan) ([]ImageRow, CutLine) {
	return rules.ExplainImages(s, p)
}

// ExplainSandboxes is [rules.ExplainSandboxes].
func ExplainSandboxes(s Snapshot, p Plan) []SandboxRow {
	return rules.ExplainSandboxes(s, p)
}

// ParseThreshold is [rules.ParseThreshold].
func ParseThreshold(v string, capacity int64) (int64, error) {
	return rules.ParseThreshold(v, capacity)
}

// PlanPass is [rules.PlanPass].
func PlanPass(s Snapshot, p Policy, kind PassKind, now time.Time) Plan {
	return rules.PlanPass(s, p, kind, now)
}

// PlanExplained is [rules.PlanExplained].
func PlanExplained(s Snapshot, p Policy, kind PassKind, now time.Time) (Plan, func() Explanation) {
	return rules.PlanExplained(s, p, kind, now)
}

// UsagePercent is [rules.UsagePercent].
func UsagePercent(fs FsStats) (int, error) {
	return rules.UsagePercent(fs)
}

// WithinDir is [rules.WithinDir].
func WithinDir(dir string, path string) bool {
	return rules.WithinDir(dir, path)
}

// PlanSnapshot plans a pass of the kind over a snapshot the caller
// already holds (from Snapshot), evaluated at at (zero: the snapshot's
// time), with the engine's effective policy: the one its passes and
// dry-runs use, which holds the MaxAge pass back after a fresh start. A
// view that shows a plan (the dashboard) plans through it, so that it
// never shows a removal the next pass would not make. It takes no lock
// and makes no runtime call: a pass in flight does not delay it.
func (e *Engine) PlanSnapshot(s Snapshot, kind PassKind, at time.Time) (Plan, error) {
	if !validPass(kind) {
		return Plan{}, fmt.Errorf("unknown pass kind %q", kind)
	}
	if at.IsZero() {
		at = s.TakenAt
	}
	return rules.PlanPass(s, e.effectivePolicy(at), kind, at), nil
}
