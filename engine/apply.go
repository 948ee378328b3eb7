package engine

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode"

	"github.com/nodegc/nodegc/engine/executor"
)

// The executor's names, under the engine's, so that callers keep writing
// engine.AutoParallel and engine.ActiveLister.

// StopTimeout is [executor.StopTimeout].
const StopTimeout = executor.StopTimeout

// DefaultParallel is [executor.DefaultParallel].
const DefaultParallel = executor.DefaultParallel

// AutoParallel is [executor.AutoParallel].
const AutoParallel = executor.AutoParallel

// CallTimeout is [executor.CallTimeout].
const CallTimeout = executor.CallTimeout

// MaxParallel is [executor.MaxParallel].
const MaxParallel = executor.MaxParallel

// ViewWindow is [executor.ViewWindow].
const ViewWindow = executor.ViewWindow

// ActiveLister is [executor.ActiveLister].
type ActiveLister = executor.ActiveLister

// RunningLister is [executor.RunningLister].
type RunningLister = executor.RunningLister

// ReasonContainerRemoved is [executor.ReasonContainerRemoved].
const ReasonContainerRemoved = executor.ReasonContainerRemoved

// CheckPodLogsDirOnDisk is [executor.CheckPodLogsDirOnDisk].
func CheckPodLogsDirOnDisk(dir string) error { return executor.CheckPodLogsDirOnDisk(dir) }

// ErrBadPlan is returned by Apply for a plan whose items cannot be
// journalled or removed (an empty or malformed ID or path); nothing of
// it is written or removed.
var ErrBadPlan = errors.New("malformed plan")

// maxIDBytes bounds an item's ID or path: a runtime's IDs are 64 hex
// digits (an image's with a "sha256:" prefix), a log path is a kubelet
// path under the pod logs dir.
const maxIDBytes = 4096

// Apply performs the plan: each item is re-checked just before it is
// removed (against a view of the node within the window ViewWindow
// describes), up to
// Options.Parallel removals run at once, fed in plan order and never past
// the space pass's target, a removal error is recorded and the pass goes
// on, and every removal is journalled ahead (an intent line on disk before
// the runtime call, its outcome after). It returns ErrReadOnly without a
// Remover. A journal whose filesystem has no room for the pass's lines
// stops the pass before its first removal and fails it.
//
// Stop contract: cancelling ctx means "stop after the items in flight".
// The items in flight finish (their runtime calls use a context detached
// from ctx, bounded by CallTimeout) and are journalled, no new item
// starts, and the report has Stopped set, the items never started as
// OutcomeNotRun and Undone counting them. Apply returns only after every
// started item's outcome line is written, so a caller that exits when
// Apply returns never exits between a removal and its journal line. A
// failed journal write stops the pass the same way and sets its Error.
func (e *Engine) Apply(ctx context.Context, p Plan) (PassReport, error) {
	if err := e.checkPlan(p); err != nil {
		return PassReport{}, err
	}
	e.passMu.Lock()
	defer e.passMu.Unlock()
	if p.Pass != PassImages {
		e.quiet = nil
	}
	return e.applyLocked(ctx, p, e.now(), nil)
}

// ApplyIssued is Apply for a plan from outside the process (a
// dashboard's, gc's through the agent): it applies only a plan this
// engine issued (Plan, PlanAt, DryRun) within MaxPlanAge, or a part of
// one, each removal as issued, so a forged plan cannot remove what a
// pass of its kind would keep. Any other is ErrUnknownPlan, and nothing
// is written or removed.
func (e *Engine) ApplyIssued(ctx context.Context, p Plan) (PassReport, error) {
	if err := e.checkPlan(p); err != nil {
		return PassReport{}, err
	}
	if err := e.issued.check(p, e.now()); err != nil {
		return PassReport{}, err
	}
	return e.Apply(ctx, p)
}

// checkPlan refuses a plan Apply must not begin: on a read-only engine,
// with no, a future or a stale evaluation time, or with an item no
// runtime could name (validItems).
func (e *Engine) checkPlan(p Plan) error {
	if e.ReadOnly() {
		return ErrReadOnly
	}
	now := e.now()
	switch {
	case p.EvaluatedAt.IsZero():
		return fmt.Errorf("%w: it has no evaluation time", ErrStalePlan)
	case p.EvaluatedAt.After(now):
		return fmt.Errorf("%w: evaluated at %s, after now (%s): preview it again", ErrStalePlan, p.EvaluatedAt.Format(time.RFC3339), now.Format(time.RFC3339))
	}
	if age := now.Sub(p.EvaluatedAt); age > MaxPlanAge {
		return fmt.Errorf("%w: made %s ago, more than %s: preview it again", ErrStalePlan, age.Round(time.Second), MaxPlanAge)
	}
	return validItems(p)
}

// validItems refuses a plan with an image, container or sandbox ID no
// runtime could name: empty, longer than maxIDBytes, or holding a
// control character or space. (A log path outside the kubelet's layout,
// empty and relative ones included, is kept by its re-check.)
func validItems(p Plan) error {
	var bad error
	removals(p, func(kind ItemKind, id string, _ any) {
		if bad != nil || kind == ItemLog {
			return
		}
		switch {
		case id == "":
			bad = fmt.Errorf("%w: a %s removal has an empty ID", ErrBadPlan, kind)
		case len(id) > maxIDBytes:
			bad = fmt.Errorf("%w: a %s removal's ID is longer than %d bytes", ErrBadPlan, kind, maxIDBytes)
		case strings.ContainsFunc(id, func(r rune) bool { return unicode.IsControl(r) || unicode.IsSpace(r) || r == unicode.ReplacementChar }):
			bad = fmt.Errorf("%w: %s ID %q holds a control character or space", ErrBadPlan, kind, id)
		}
	})
	return bad
}

// removals calls fn for each removal of p with its kind, ID and the
// removal itself.
func removals(p Plan, fn func(kind ItemKind, id string, item any)) {
	for _, r := range p.ImageGC.Remove {
		fn(ItemImage, r.ID, r)
	}
	for _, r := range p.ContainerGC.Remove {
		fn(ItemContainer, r.ID, r)
	}
	for _, r := range p.SandboxGC.Remove {
		fn(ItemSandbox, r.ID, r)
	}
	for _, r := range p.LogGC.Remove {
		fn(ItemLog, r.Path, r)
	}
}

// passDeps returns what a pass of the engine reads of it.
func (e *Engine) passDeps() executor.Deps {
	return executor.Deps{Reader: e.o.Reader, Remover: e.o.Remover, Journal: e.journal, Boot: e.boot, PodLogsDir: e.o.Policy.PodLogsDir,
		LinksDir: e.containerLogsDir(), Parallel: e.o.Parallel, Now: e.now, Log: e.log, KneeFor: e.phaseKnee,
		ContainerGen: &e.containerGen, Following: e.Following, Publish: e.publishProgress}
}

// phaseKnee makes the adaptive pool's controller of a phase.
func (e *Engine) phaseKnee(widest int) *executor.Knee {
	if e.kneeFor != nil {
		return e.kneeFor(widest)
	}
	return executor.NewKnee(widest, time.Now)
}

// applyLocked performs p; e.passMu is held, and e.mu is taken only around
// the engine's shared state. A failure is in the report: a journal without
// room or a failed journal write stops the pass and sets its Error. The
// pass is run by the executor (executor.Run: its set-up, the pool, its
// views closed and its journal made durable), its report finished
// (finishReport) and closed with its events (closeReport).
//
// A plan that removes nothing builds no executor: the pass reads no usage
// of its own (listed, the usage its listing read; nil for an applied
// preview), readies no journal and writes nothing (emptyReport), unless
// the journal has something to settle: a failed write to repair or an
// earlier pass's intents open, which the executor's set-up settles.
func (e *Engine) applyLocked(ctx context.Context, p Plan, start time.Time, listed *FsStats) (PassReport, error) {
	r := e.newReport(p, start)
	empty := planEmpty(p) && e.journalSettled()
	if empty {
		e.emptyReport(&r, listed)
	} else {
		defer e.markPassing()()
		journalFailed := executor.Run(ctx, e.passDeps(), passHost{e}, &r, p)
		e.finishReport(ctx, &r, journalFailed)
	}
	return e.closeReport(r, p, empty), nil
}

// planEmpty reports whether the plan removes nothing.
func planEmpty(p Plan) bool {
	return len(p.ImageGC.Remove) == 0 && len(p.ContainerGC.Remove) == 0 &&
		len(p.SandboxGC.Remove) == 0 && len(p.LogGC.Remove) == 0
}

// emptyReport fills the report of a pass whose plan removes nothing: the
// notes left for the next pass, and the image filesystem as its listing
// read it (UsageFromListing) when listed is set. Its events are its
// plan's (an image pass that cannot free enough still reports
// FreeDiskSpaceFailed).
func (e *Engine) emptyReport(r *PassReport, listed *FsStats) {
	if listed != nil {
		fs := *listed
		r.ImageFsBefore, r.ImageFsAfter, r.UsageFrom = &fs, &fs, UsageFromListing
	}
	e.mu.Lock()
	r.Notes, e.notes = e.notes, nil
	e.mu.Unlock()
}

// journalSettled reports whether the journal has nothing for a pass to
// settle: no failed write, and no intent of an earlier pass left open.
func (e *Engine) journalSettled() bool {
	if e.journal == nil {
		return true
	}
	e.mu.Lock()
	reconciled := e.rec.Done()
	e.mu.Unlock()
	return reconciled && e.journal.Healthy()
}

// newReport starts the report of a pass of p begun at start: its number,
// its plan and the plan's events, no items yet.
func (e *Engine) newReport(p Plan, start time.Time) PassReport {
	return PassReport{ID: e.passSeq.Add(1), Run: e.run, Kind: p.Pass, StartedAt: start, Plan: p, Items: []ItemResult{}, Events: planEvents(p)}
}

// markPassing marks a pass in flight until the returned func is called.
func (e *Engine) markPassing() (done func()) {
	e.mu.Lock()
	e.passing = true
	e.mu.Unlock()
	return func() {
		e.mu.Lock()
		e.passing = false
		e.mu.Unlock()
	}
}

// planEvents copies the plan's events, stamped with its evaluation time.
func planEvents(p Plan) []Event {
	out := make([]Event, 0, len(p.ImageGC.Events))
	for _, ev := range p.ImageGC.Events {
		if ev.Time.IsZero() {
			ev.Time = p.EvaluatedAt
		}
		out = append(out, ev)
	}
	return out
}
