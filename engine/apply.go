package engine

import (
	"context"
	"slices"
	"time"

	"github.com/nodegc/nodegc/engine/executor"
	"github.com/nodegc/nodegc/engine/rules"
	"github.com/nodegc/nodegc/engine/state"
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
// pass is set up (newExecutor), run in the pool (runPhases), its views
// closed and its journal made durable, and reported (finishReport).
//
// A plan that removes nothing builds no executor: the pass reads no usage
// of its own (listed, the usage its listing read; nil for an applied
// preview), readies no journal and writes nothing (emptyReport), unless
// the journal has something to settle: a failed write to repair or an
// earlier pass's intents open, which the executor's set-up settles.
func (e *Engine) applyLocked(ctx context.Context, p Plan, start time.Time, listed *FsStats) (PassReport, error) {
	if planEmpty(p) && e.journalSettled() {
		return e.emptyReport(p, start, listed), nil
	}
	defer e.markPassing()()
	r := new(e.newReport(p, start))
	journalFailed := executor.Run(ctx, e.passDeps(), passHost{e}, r, p)
	return e.finishReport(ctx, r, p, journalFailed), nil
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

// emptyReport is the report of a pass whose plan removes nothing: its
// plan's events (an image pass that cannot free enough still reports
// FreeDiskSpaceFailed), the notes left for the next pass, and the image
// filesystem as its listing read it (UsageFromListing) when listed is
// set.
func (e *Engine) emptyReport(p Plan, start time.Time, listed *FsStats) PassReport {
	r := e.newReport(p, start)
	if listed != nil {
		fs := *listed
		r.ImageFsBefore, r.ImageFsAfter, r.UsageFrom = &fs, &fs, UsageFromListing
	}
	e.mu.Lock()
	r.Notes, e.notes = e.notes, nil
	e.mu.Unlock()
	r.Events = passEvents(r, p, e.now())
	r.FinishedAt = e.now()
	e.log.Info("pass done", "pass", r.PassID(), "kind", r.Kind, "removed", 0, "nothing planned", true)
	return r
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

// finishReport fills the report from the pass's items: the bytes freed
// (estimated and measured), the records of the images removed, and the
// kubelet's image events. A pass whose journal write failed leaves its
// open intents to the next pass.
func (e *Engine) finishReport(ctx context.Context, r *PassReport, p Plan, journalFailed bool) PassReport {
	removedImages := map[string]bool{}
	for _, it := range r.Items {
		if it.Kind != ItemImage {
			continue
		}
		if it.Outcome == OutcomeRemoved {
			r.EstimatedBytesFreed = AddBytes(r.EstimatedBytesFreed, it.SizeBytes)
		}
		if it.Outcome == OutcomeRemoved || it.Outcome == OutcomeGone {
			removedImages[it.ID] = true
		}
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if journalFailed {
		e.rec.Invalidate()
	}
	if after, err := e.ImageFs(context.WithoutCancel(ctx)); err == nil {
		r.ImageFsAfter = &after
		if r.ImageFsBefore != nil {
			m := after.AvailableBytes - r.ImageFsBefore.AvailableBytes
			r.MeasuredBytesFreed = &m
		}
	}
	e.forgetImagesLocked(removedImages)
	r.Events = passEvents(*r, p, e.now())
	r.FinishedAt = e.now()
	e.log.Info("pass done", "pass", r.PassID(), "kind", r.Kind, "removed", r.Count(OutcomeRemoved), "failed", r.Count(OutcomeFailed),
		"skipped", r.Count(OutcomeSkipped), "stopped", r.Stopped != "", "undone", r.Undone)
	return *r
}

// forgetImagesLocked drops the records of the images a pass removed and
// saves the rest; e.mu is held.
func (e *Engine) forgetImagesLocked(removed map[string]bool) {
	if len(removed) == 0 {
		return
	}
	for id := range removed {
		delete(e.records, id)
	}
	if e.persists() {
		if err := state.SaveRecords(e.o.StateDir, e.records, e.now()); err != nil {
			e.log.Error("save image records", "err", err)
		} else {
			e.savedAt = e.now()
		}
	}
}

// passEvents are the report's events once the pass is done.
func passEvents(r PassReport, p Plan, now time.Time) []Event {
	switch {
	case imageDeletionFailed(r):
		// The kubelet's freeOldImages and freeSpace return their deletion
		// errors, and GarbageCollect returns before it would record
		// FreeDiskSpaceFailed (image_gc_manager.go v1.36): the failure is
		// the pass's failed items, and ImageGCFailed's message.
		return slices.DeleteFunc(r.Events, func(ev Event) bool { return ev.Reason == EventFreeDiskSpaceFailed })
	case rules.SpacePassPlanned(p.ImageGC) && r.Stopped == "" && r.EstimatedBytesFreed < p.ImageGC.BytesToFree && !hasEvent(r.Events, EventFreeDiskSpaceFailed):
		// The space pass expected to free enough, but removals were
		// skipped at the re-check: the kubelet would not have counted
		// those images either and reports the event. (When the MaxAge
		// pass alone brought usage under the high threshold, no space
		// pass ran, and the kubelet reports nothing.)
		return append(r.Events, Event{Time: now, Reason: EventFreeDiskSpaceFailed, Warning: true,
			Message: rules.FreeDiskSpaceFailedMessage(p.ImageGC.UsagePercent, p.ImageGC.CapacityBytes, spaceFreed(r))})
	}
	return r.Events
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

// hasEvent reports whether evs holds an event with the reason.
func hasEvent(evs []Event, reason string) bool {
	for _, ev := range evs {
		if ev.Reason == reason {
			return true
		}
	}
	return false
}
