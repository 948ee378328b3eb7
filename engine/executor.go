package engine

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"
)

// StopTimeout is how long an UNKNOWN container is given to stop before it is
// removed.
const StopTimeout = 10 * time.Second

// DefaultParallel is how many removals a pass keeps in flight unless
// Options.Parallel says otherwise. 1 is the kubelet's strict one at a time.
const DefaultParallel = 4

// CallTimeout bounds each runtime call of a pass. The calls do not inherit
// the pass's cancellation (a stop lets the items in flight finish), so this
// is what bounds a stop's wait on a runtime that hangs.
const CallTimeout = 2 * time.Minute

// executor applies one plan. It re-checks every item against the runtime
// just before it removes it, so a plan that went stale between planning
// and applying can only remove less, never more. Removals run in a bounded
// pool fed in plan order (see runPhase); each is journalled ahead.
type executor struct {
	e *Engine
	// stop is the pass's context: once done, no new item starts.
	stop context.Context
	// calls is stop without its cancellation, for the runtime calls of
	// the items in flight.
	calls context.Context
	r     *PassReport
	// passID and kind are the report's, copied once: the workers read
	// them while the report's other fields change under mu.
	passID string
	kind   PassKind
	// view is the node's containers (and images) for the re-checks;
	// running holds the running containers alone, for the container
	// phase, and active the created and running ones, for the image
	// phase. See ViewWindow.
	view, running, active *nodeView
	// sandboxRefs are the runtime's sandbox image references, read once
	// per pass; infoErr is set when they could not be read, and then no
	// image is removed (the sandbox-image guard must not fail open).
	sandboxRefs []string
	infoErr     error
	parallel    int
	// target is the space pass's bytesToFree when the plan's space pass
	// runs (targeted): no space removal starts once the bytes removed
	// plus the bytes in flight reach it.
	targeted bool
	target   int64

	mu         sync.Mutex
	cond       *sync.Cond
	inflight   int
	spaceN     int   // space removals in flight
	spaceBytes int64 // their planned bytes
	spaceOK    int   // space removals done
	freed      int64 // planned bytes of the images removed so far
	jerr       error // the first failed journal write: the pass stops
	results    [][]ItemResult
	prog       Progress
	// plan is the plan's items in execution order, as plannedItems.
	plan []ItemResult
	// written marks the tasks whose intent is on disk, closed those whose
	// outcome line is written too; writingAhead is set while the next
	// group's intents are written in the background.
	written, closed []bool
	writingAhead    bool
	ahead           sync.WaitGroup // the write-ahead goroutine
	// work sends the feeder's tasks to the pool's workers.
	work chan task
}

// task is one planned item for the pool.
type task struct {
	idx   int // in plan order, for the report
	kind  ItemKind
	size  int64
	space bool // subject to the space pass's target
	run   func() []ItemResult
	// intent is its journal line: written as the intent (in a group with
	// the next tasks' intents) before the task starts, from the plan; the
	// task's re-check fills in what the runtime reports for the outcome.
	intent *JournalEntry
}

// intentWindow is how many tasks' intent lines the feeder writes in its
// first group of a phase, with one fsync, before the first of them starts;
// each next group of the phase is twice as large, up to maxIntentWindow,
// so a long phase stalls on few fsyncs and a short space pass writes few
// intents it will not need. An intent whose task never reaches the
// runtime gets a skipped or not-run outcome.
const (
	intentWindow    = 64
	maxIntentWindow = 1024
)

// plannedItems lists a plan's items in execution order: containers,
// sandboxes, logs, then images (the kubelet removes containers before the
// sandboxes they held, and image GC runs on its own).
func plannedItems(p Plan) []ItemResult {
	var out []ItemResult
	for _, c := range p.ContainerGC.Remove {
		out = append(out, ItemResult{Kind: ItemContainer, ID: c.ID, Reason: string(c.Reason), Detail: c.Detail})
	}
	for _, s := range p.SandboxGC.Remove {
		out = append(out, ItemResult{Kind: ItemSandbox, ID: s.ID, Reason: s.Reason})
	}
	for _, l := range logsInOrder(p.LogGC) {
		out = append(out, ItemResult{Kind: ItemLog, ID: l.Path, Reason: l.Reason})
	}
	for _, i := range p.ImageGC.Remove {
		out = append(out, ItemResult{Kind: ItemImage, ID: i.ID, Reason: string(i.Reason), Detail: i.Detail, SizeBytes: i.SizeBytes})
	}
	return out
}

// logsInOrder is the log plan in execution order: the links into the pod
// log directories the pass removes go last, after those directories (the
// planner lists them so; a plan from elsewhere may not).
func logsInOrder(p LogPlan) []LogRemoval {
	out := slices.Clone(p.Remove)
	slices.SortStableFunc(out, func(a, b LogRemoval) int {
		return cmp.Compare(b2i(a.Reason == LogPodDirRemoved), b2i(b.Reason == LogPodDirRemoved))
	})
	return out
}

// b2i is 1 for true, 0 for false.
func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
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

// phases groups the plan's items into the phases the pool runs one after
// another: containers, sandboxes, logs, the log links into the pod log
// directories just removed, the images removed for age (or reclaim), then
// the images removed for space. Within a phase items start
// in plan order.
func (x *executor) phases(p Plan) [][]task {
	var out [][]task
	idx := 0
	next := func() int { idx++; return idx - 1 }
	var cs, ss, ls, ll, ia, is []task
	for _, c := range p.ContainerGC.Remove {
		en := &JournalEntry{Kind: ItemContainer, ID: c.ID, Reason: string(c.Reason), PodUID: c.PodUID, Name: c.Name}
		cs = append(cs, task{idx: next(), kind: ItemContainer, run: func() []ItemResult { return x.container(c, en) }, intent: en})
	}
	for _, s := range p.SandboxGC.Remove {
		en := &JournalEntry{Kind: ItemSandbox, ID: s.ID, Reason: s.Reason, PodUID: s.PodUID}
		ss = append(ss, task{idx: next(), kind: ItemSandbox, run: func() []ItemResult { return []ItemResult{x.sandbox(s, en)} }, intent: en})
	}
	for _, l := range logsInOrder(p.LogGC) {
		t := task{idx: next(), kind: ItemLog, run: func() []ItemResult { return []ItemResult{x.logPath(l)} },
			intent: &JournalEntry{Kind: ItemLog, ID: l.Path, Reason: l.Reason}}
		if l.Reason == LogPodDirRemoved {
			ll = append(ll, t) // re-checked once the pod directories are gone
		} else {
			ls = append(ls, t)
		}
	}
	for _, i := range p.ImageGC.Remove {
		en := &JournalEntry{Kind: ItemImage, ID: i.ID, RepoTags: i.RepoTags, RepoDigests: i.RepoDigests, SizeBytes: i.SizeBytes, Reason: string(i.Reason)}
		t := task{idx: next(), kind: ItemImage, size: max(i.SizeBytes, 0), run: func() []ItemResult { return []ItemResult{x.image(i, en)} }, intent: en}
		if i.Reason == RemoveForSpace {
			t.space = x.targeted
			is = append(is, t)
		} else {
			ia = append(ia, t)
		}
	}
	for _, ph := range [][]task{cs, ss, ls, ll, ia, is} {
		if len(ph) > 0 {
			out = append(out, ph)
		}
	}
	return out
}

// applyLocked performs p; e.passMu is held, and e.mu is taken only around
// the engine's shared state. A failure is in the report: a journal without
// room or a failed journal write stops the pass and sets its Error.
func (e *Engine) applyLocked(ctx context.Context, p Plan, start time.Time) (PassReport, error) {
	e.mu.Lock()
	e.passing = true
	e.mu.Unlock()
	defer func() {
		e.mu.Lock()
		e.passing = false
		e.mu.Unlock()
	}()
	r := PassReport{ID: e.passSeq.Add(1), Run: e.run, Kind: p.Pass, StartedAt: start, Plan: p, Items: []ItemResult{}, Events: planEvents(p)}
	planned := plannedItems(p)
	parallel := e.o.Parallel
	if parallel <= 0 {
		parallel = DefaultParallel
	}
	x := &executor{e: e, stop: ctx, calls: context.WithoutCancel(ctx), r: &r, passID: r.PassID(), kind: p.Pass, parallel: parallel}
	x.view = newNodeView(x.calls, e.o.Reader, &e.containerGen, viewAll)
	x.running = newNodeView(x.calls, e.o.Reader, &e.containerGen, viewRunning)
	x.active = newNodeView(x.calls, e.o.Reader, &e.containerGen, viewActive)
	x.cond = sync.NewCond(&x.mu)
	if note, err := e.journal.reset(); err != nil {
		x.halt(err.Error(), true)
	} else if note != "" {
		e.log.Warn("journal repaired", "note", note)
		r.Notes = append(r.Notes, note)
	}
	// Each item takes two lines (its intent and its outcome), a container
	// up to four more for its logs.
	if err := e.journal.checkSpace(2*len(planned) + 4*len(p.ContainerGC.Remove)); err != nil {
		x.halt(err.Error(), true)
	}
	x.targeted, x.target = p.ImageGC.Triggered && spacePassPlanned(p.ImageGC), p.ImageGC.BytesToFree
	phases := x.phases(p)
	if len(phases) > 0 && !x.halted() {
		// The first phase's view is listed while the pass sets up.
		switch phases[0][0].kind {
		case ItemContainer:
			x.running.prefetch(false)
		case ItemImage:
			x.view.prefetch(true)
			x.active.prefetch(false)
		default:
			x.view.prefetch(false)
		}
	}
	x.results, x.plan = make([][]ItemResult, len(planned)), planned
	x.written, x.closed = make([]bool, len(planned)), make([]bool, len(planned))
	x.prog = Progress{Pass: r.ID, Kind: p.Pass, Items: len(planned)}
	for _, it := range planned {
		x.prog.Bytes += max(it.SizeBytes, 0)
	}
	// clean is set when no intent of an earlier pass is open: the pass
	// then ends on a checkpoint when all of its own are closed.
	clean := false
	if !x.halted() {
		e.mu.Lock()
		r.Notes = append(r.Notes, e.notes...)
		r.Notes = append(r.Notes, e.reconcileLocked(ctx)...)
		e.notes = nil
		clean = e.reconciled
		e.mu.Unlock()
	}
	if before, err := e.imageFs(x.calls); err == nil {
		r.ImageFsBefore = &before
	}
	if info, err := e.o.Reader.Info(x.calls); err == nil {
		x.sandboxRefs = info.SandboxImages
	} else {
		x.infoErr = fmt.Errorf("runtime info (for the sandbox images): %w", err)
	}
	x.publish()
	if x.halted() {
		x.notRun(0)
	}
	stopWake := context.AfterFunc(ctx, func() {
		x.mu.Lock()
		x.cond.Broadcast()
		x.mu.Unlock()
	})
	defer stopWake()
	stopWorkers := x.startWorkers()
	for i, ph := range phases {
		if i > 0 {
			x.view.invalidate() // the phase before removed what the view holds
			x.running.invalidate()
			x.active.invalidate()
		}
		x.runPhase(ph)
	}
	stopWorkers()
	x.view.close() // a background listing does not outlive the pass
	x.running.close()
	x.active.close()
	// The outcome lines were written (or queued) without waiting for
	// their fsync. When sync fails, queued lines are lost: the pass's
	// intents are then settled by the next pass's reconciliation. A pass
	// that closed every intent it wrote ends on a checkpoint, in the same
	// fsync, and the journal is rotated there when it is large.
	x.mu.Lock()
	closedAll := clean && x.jerr == nil
	x.mu.Unlock()
	if closedAll && e.journal.needsCheckpoint() {
		closedAll = e.journal.writeLazy(checkpointLine(e.now())) == nil
	}
	if err := e.journal.sync(); err != nil {
		x.mu.Lock()
		x.journalFailedLocked(err)
		x.mu.Unlock()
		x.halt(fmt.Sprintf("journal write failed (%v)", err), true)
	} else if closedAll {
		r.Notes = append(r.Notes, e.rotateJournal()...)
	}
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
	if x.jerr != nil {
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
	if len(removedImages) > 0 {
		for id := range removedImages {
			delete(e.records, id)
		}
		if e.persists() {
			if err := saveRecords(e.o.StateDir, e.records, e.now()); err != nil {
				e.log.Error("save image records", "err", err)
			}
		}
	}
	switch {
	case imageDeletionFailed(r):
		// The kubelet's freeOldImages and freeSpace return their deletion
		// errors, and GarbageCollect returns before it would record
		// FreeDiskSpaceFailed (image_gc_manager.go v1.36): the failure is
		// the pass's failed items, and ImageGCFailed's message.
		r.Events = slices.DeleteFunc(r.Events, func(ev Event) bool { return ev.Reason == EventFreeDiskSpaceFailed })
	case spacePassPlanned(p.ImageGC) && r.Stopped == "" && r.EstimatedBytesFreed < p.ImageGC.BytesToFree && !hasEvent(r.Events, EventFreeDiskSpaceFailed):
		// The space pass expected to free enough, but removals were
		// skipped at the re-check: the kubelet would not have counted
		// those images either and reports the event. (When the MaxAge
		// pass alone brought usage under the high threshold, no space
		// pass ran, and the kubelet reports nothing.)
		r.Events = append(r.Events, Event{Time: e.now(), Reason: EventFreeDiskSpaceFailed, Warning: true,
			Message: freeDiskSpaceFailedMessage(p.ImageGC.UsagePercent, p.ImageGC.CapacityBytes, spaceFreed(r))})
	}
	r.FinishedAt = e.now()
	e.log.Info("pass done", "pass", r.PassID(), "kind", r.Kind, "removed", r.Count(OutcomeRemoved), "failed", r.Count(OutcomeFailed),
		"skipped", r.Count(OutcomeSkipped), "stopped", r.Stopped != "", "undone", r.Undone)
	return r, nil
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

// outcome classifies a runtime error: nil is success, NotFound means the
// item is already gone, anything else is a failure recorded on the item.
func outcome(it ItemResult, what string, err error) ItemResult {
	switch {
	case err == nil:
		it.Outcome = OutcomeRemoved
	case errors.Is(err, ErrNotFound):
		it.Outcome = OutcomeGone
	default:
		it.Outcome = OutcomeFailed
		it.Error = fmt.Sprintf("%s: %v", what, err)
	}
	return it
}
