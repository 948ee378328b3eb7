package engine

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/nodegc/nodegc/engine/rules"
)

// StopTimeout is how long an UNKNOWN container is given to stop before it is
// removed.
const StopTimeout = 10 * time.Second

// DefaultParallel is the pool of a pass that names none: four removals in
// flight (issue 14). 1 is the kubelet's strict one at a time.
const DefaultParallel = 4

// AutoParallel is the Options.Parallel of the adaptive pool (`--parallel
// auto`), which finds how many removals to keep in flight from the
// runtime (see knee). It is opt-in: measured beside the pinned pool on a
// loaded machine it neither reached the best raw speed nor kept the
// kubelet's listings as fast as a serial pass, and its probes list the
// node during the pass, which a node in trouble pays for.
const AutoParallel = -1

// CallTimeout bounds each runtime call of a pass. The calls do not inherit
// the pass's cancellation (a stop lets the items in flight finish), so this
// is what bounds a stop's wait on a runtime that hangs.
const CallTimeout = 2 * time.Minute

// executor applies one plan. It re-checks every item against the runtime
// just before it removes it, so a plan that went stale between planning
// and applying can only remove less, never more. A pass is a chain of
// steps: the pass's set-up (newExecutor: its tasks from apply_tasks.go,
// its journal readied in reconcile.go, its views from view.go), the pool
// (apply_pool.go) running each task's re-check and removal
// (apply_image.go, apply_container.go, apply_sandbox.go, apply_log.go)
// with its journal lines (apply_journal.go), the pass journal's end, and
// the report (below).
type executor struct {
	e *Engine
	// stop is the pass's context: once done, no new item starts.
	stop context.Context
	// calls is stop without its cancellation, for the runtime calls of
	// the items in flight.
	calls context.Context
	r     *PassReport
	// passID is the report's, copied once: the workers read it while
	// the report's other fields change under mu.
	passID  string
	journal *passJournal
	// views are the node's containers (and images) the re-checks read.
	views passViews
	// sandboxRefs are the runtime's sandbox image references, read once
	// per pass; infoErr is set when they could not be read, and then no
	// image is removed (the sandbox-image guard must not fail open).
	sandboxRefs []string
	infoErr     error
	parallel    int   // the pinned pool's width; 0: adaptive
	knee        *knee // the adaptive pool's controller for this phase
	// target is the space pass's bytesToFree when the plan's space pass
	// runs (targeted): no space removal starts once the bytes removed
	// plus the bytes in flight reach it.
	target int64

	mu         sync.Mutex
	cond       *sync.Cond
	inflight   int
	spaceN     int   // space removals in flight
	spaceBytes int64 // their planned bytes
	spaceOK    int   // space removals done
	freed      int64 // planned bytes of the images removed so far
	results    [][]ItemResult
	prog       Progress
	// plan is the plan's items in execution order, indexed as the tasks.
	plan []ItemResult
	// written marks the tasks whose intent is on disk, closed those whose
	// outcome line is written too; writingAhead is set while the next
	// group's intents are written in the background.
	written, closed []bool
	writingAhead    bool
	ahead           sync.WaitGroup // the write-ahead goroutine
	// work sends the feeder's tasks to the pool's workers.
	work chan task
	// links is the pass's handle on the container log links directory
	// (linksDir), under linksMu.
	linksMu sync.Mutex
	links   *logDir
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
	x, phases := e.newExecutor(ctx, p, start)
	stopWake := context.AfterFunc(ctx, x.wake)
	x.runPhases(phases)
	x.closeLinksDir()
	stopWake()
	x.views.close() // a background listing does not outlive the pass
	x.endJournal()
	return e.finishReport(x, p), nil
}

// journalSettled reports whether the journal has nothing for a pass to
// settle: no failed write, and no intent of an earlier pass left open.
func (e *Engine) journalSettled() bool {
	if e.journal == nil {
		return true
	}
	e.mu.Lock()
	reconciled := e.reconciled
	e.mu.Unlock()
	return reconciled && e.journal.healthy()
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

// newExecutor sets up the pass of p: its report and tasks, its journal
// readied (a journal that cannot be readied halts the pass) and the
// intents an earlier pass left settled, its views (the first phase's
// listed meanwhile), the image filesystem measured and, for a pass that
// removes images, the sandbox images read.
func (e *Engine) newExecutor(ctx context.Context, p Plan, start time.Time) (*executor, [][]task) {
	r := new(e.newReport(p, start))
	parallel := e.o.Parallel
	if parallel == 0 {
		parallel = DefaultParallel
	}
	x := &executor{e: e, stop: ctx, calls: context.WithoutCancel(ctx), r: r, passID: r.PassID(), parallel: parallel, target: p.ImageGC.BytesToFree}
	x.cond = sync.NewCond(&x.mu)
	phases, planned := passTasks(p, p.ImageGC.Triggered && spacePassPlanned(p.ImageGC))
	x.plan, x.results = planned, make([][]ItemResult, len(planned))
	x.written, x.closed = make([]bool, len(planned)), make([]bool, len(planned))
	x.prog = Progress{Pass: r.ID, Kind: p.Pass, Items: len(planned)}
	for _, it := range planned {
		x.prog.Bytes += max(it.SizeBytes, 0)
	}
	notes, clean, err := e.readyJournal(ctx, len(planned), len(p.ContainerGC.Remove))
	r.Notes = append(r.Notes, notes...)
	if err != nil {
		x.halt(err.Error(), true)
	}
	var first ItemKind
	if len(phases) > 0 && err == nil && ctx.Err() == nil {
		first = phases[0][0].item.Kind
	}
	x.views = newPassViews(x.calls, e.o.Reader, &e.containerGen, first, e.Following())
	x.journal = newPassJournal(e, x.passID, p.Pass, clean)
	// The sandbox images are read only for a pass that removes images
	// (no other re-check reads them), beside the image filesystem.
	var reading sync.WaitGroup
	if len(p.ImageGC.Remove) > 0 {
		reading.Go(func() {
			if info, err := e.o.Reader.Info(x.calls); err == nil {
				x.sandboxRefs = info.SandboxImages
			} else {
				x.infoErr = fmt.Errorf("runtime info (for the sandbox images): %w", err)
			}
		})
	}
	if before, err := e.imageFs(x.calls); err == nil {
		r.ImageFsBefore = &before
	}
	reading.Wait()
	e.publishProgress(x.prog)
	return x, phases
}

// wake wakes the feeder (the pass was stopped).
func (x *executor) wake() {
	x.mu.Lock()
	x.cond.Broadcast()
	x.mu.Unlock()
}

// endJournal makes the pass's lines durable (passJournal.end); a failed
// sync fails the pass.
func (x *executor) endJournal() {
	notes, err := x.journal.end()
	if err != nil {
		x.halt(fmt.Sprintf("journal write failed (%v)", err), true)
	}
	x.r.Notes = append(x.r.Notes, notes...)
}

// finishReport fills the report from the results: the items in plan
// order, the bytes freed (estimated and measured), the records of the
// images removed, and the kubelet's image events.
func (e *Engine) finishReport(x *executor, p Plan) PassReport {
	r := x.r
	removedImages := map[string]bool{}
	for _, its := range x.results {
		for _, it := range its {
			r.Items = append(r.Items, it)
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
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if x.journal.failed() != nil {
		// Its open intents are settled at the next pass.
		e.reconciled, e.reconcileAfter = false, time.Time{}
	}
	if after, err := e.imageFs(x.calls); err == nil {
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
		if err := saveRecords(e.o.StateDir, e.records, e.now()); err != nil {
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
	case spacePassPlanned(p.ImageGC) && r.Stopped == "" && r.EstimatedBytesFreed < p.ImageGC.BytesToFree && !hasEvent(r.Events, EventFreeDiskSpaceFailed):
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

// spacePassPlanned reports whether the image plan runs the space pass.
func spacePassPlanned(p ImagePlan) bool {
	for _, rm := range p.Remove {
		if rm.Reason == RemoveForSpace {
			return true
		}
	}
	return false
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
