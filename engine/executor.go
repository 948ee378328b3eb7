package engine

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
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
	// view is the node's containers (and images) for the re-checks;
	// running holds the running containers alone, for the container
	// phase. See ViewWindow.
	view, running *nodeView
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
	// outcome line is written too.
	written, closed []bool
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
	for _, l := range p.LogGC.Remove {
		out = append(out, ItemResult{Kind: ItemLog, ID: l.Path, Reason: l.Reason})
	}
	for _, i := range p.ImageGC.Remove {
		out = append(out, ItemResult{Kind: ItemImage, ID: i.ID, Reason: string(i.Reason), Detail: i.Detail, SizeBytes: i.SizeBytes})
	}
	return out
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
// another: containers, sandboxes, logs, the images removed for age (or
// reclaim), then the images removed for space. Within a phase items start
// in plan order.
func (x *executor) phases(p Plan) [][]task {
	var out [][]task
	idx := 0
	next := func() int { idx++; return idx - 1 }
	var cs, ss, ls, ia, is []task
	for _, c := range p.ContainerGC.Remove {
		en := &JournalEntry{Kind: ItemContainer, ID: c.ID, Reason: string(c.Reason), PodUID: c.PodUID, Name: c.Name}
		cs = append(cs, task{idx: next(), kind: ItemContainer, run: func() []ItemResult { return x.container(c, en) }, intent: en})
	}
	for _, s := range p.SandboxGC.Remove {
		en := &JournalEntry{Kind: ItemSandbox, ID: s.ID, Reason: s.Reason, PodUID: s.PodUID}
		ss = append(ss, task{idx: next(), kind: ItemSandbox, run: func() []ItemResult { return []ItemResult{x.sandbox(s, en)} }, intent: en})
	}
	for _, l := range p.LogGC.Remove {
		ls = append(ls, task{idx: next(), kind: ItemLog, run: func() []ItemResult { return []ItemResult{x.logPath(l)} },
			intent: &JournalEntry{Kind: ItemLog, ID: l.Path, Reason: l.Reason}})
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
	for _, ph := range [][]task{cs, ss, ls, ia, is} {
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
	x := &executor{e: e, stop: ctx, calls: context.WithoutCancel(ctx), r: &r, parallel: parallel}
	x.view = newNodeView(x.calls, e.o.Reader, &e.containerGen, false)
	x.running = newNodeView(x.calls, e.o.Reader, &e.containerGen, true)
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
	if !x.halted() {
		e.mu.Lock()
		r.Notes = append(r.Notes, e.notes...)
		r.Notes = append(r.Notes, e.reconcileLocked(ctx)...)
		e.notes = nil
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
	for i, ph := range phases {
		if i > 0 {
			x.view.invalidate() // the phase before removed what the view holds
			x.running.invalidate()
		}
		x.runPhase(ph)
	}
	x.view.wait() // a background listing does not outlive the pass
	x.running.wait()
	// The outcome lines were written without waiting for their fsync.
	if err := e.journal.sync(); err != nil {
		x.halt(fmt.Sprintf("journal write failed (%v)", err), true)
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
		e.reconciled = false // its open intents are settled at the next pass
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

// runPhase runs one phase's tasks in a pool of x.parallel, starting them in
// plan order, and returns when every started task has finished. Once the
// pass stops (its context was cancelled or a journal write failed) no task
// starts; those never started are reported as OutcomeNotRun.
//
// A space task starts only while no space removal has succeeded yet (the
// kubelet checks its target after each removal, so a target <= 0 still
// removes one) or the bytes removed plus the bytes in flight are short of
// the target; while removals in flight could decide it, the feeder waits
// for them. So the pool removes exactly what the serial pass removes when
// every removal behaves the same, and never more: a failed removal frees
// its bytes in flight and lets the next candidate in, as serially.
func (x *executor) runPhase(tasks []task) {
	x.mu.Lock()
	defer x.mu.Unlock()
	window := intentWindow
feed:
	for i, t := range tasks {
		if !x.written[t.idx] && !x.stoppingLocked() {
			x.writeIntents(tasks[i:min(i+window, len(tasks))])
			window = min(2*window, maxIntentWindow)
		}
		for {
			if x.stoppingLocked() {
				for _, rest := range tasks[i:] {
					x.notRunLocked(rest.idx)
				}
				break feed
			}
			if x.inflight >= x.parallel {
				x.cond.Wait()
				continue
			}
			if t.space && !x.spaceMayStart() {
				if x.spaceN == 0 {
					// Nothing in flight can change it: the target is
					// reached, as the serial pass would find.
					for _, rest := range tasks[i:] {
						x.results[rest.idx] = []ItemResult{skipped(x.planned(rest), "the space pass freed enough before it")}
					}
					break feed
				}
				x.cond.Wait()
				continue
			}
			break
		}
		x.inflight++
		if t.space {
			x.spaceN++
			x.spaceBytes += t.size
		}
		go x.work(t)
	}
	for x.inflight > 0 {
		x.cond.Wait()
	}
	// Close the intents of the tasks that never reached the runtime.
	for _, t := range tasks {
		if x.written[t.idx] && !x.closed[t.idx] {
			x.closeIntent(t)
		}
	}
}

// writeIntents writes the tasks' intent lines in one group and waits for
// them to be on disk; x.mu is held and released meanwhile.
func (x *executor) writeIntents(tasks []task) {
	lines := make([]JournalEntry, len(tasks))
	for i, t := range tasks {
		lines[i] = x.stamp(JournalIntent, *t.intent)
	}
	x.mu.Unlock()
	err := x.e.journal.write(lines...)
	x.mu.Lock()
	if err != nil {
		x.journalFailedLocked(err)
		return
	}
	for _, t := range tasks {
		x.written[t.idx] = true
	}
}

// closeIntent writes the outcome line of a task whose intent is on disk,
// from its result (not-run when it has none); x.mu is held.
func (x *executor) closeIntent(t task) {
	en := *t.intent
	op := JournalNotRun
	if its := x.results[t.idx]; len(its) > 0 {
		switch it := its[0]; it.Outcome {
		case OutcomeRemoved:
			op = JournalRemoved
		case OutcomeGone:
			op = JournalGone
		case OutcomeFailed:
			op, en.Error = JournalFailed, it.Error
		case OutcomeSkipped:
			op, en.Error = JournalSkipped, it.Detail
		}
	}
	x.closed[t.idx] = true
	if err := x.e.journal.writeLazy(x.stamp(op, en)); err != nil {
		x.journalFailedLocked(err)
	}
}

// stamp fills a journal line's op, time and pass.
func (x *executor) stamp(op JournalOp, en JournalEntry) JournalEntry {
	en.Op, en.Time, en.Pass, en.PassKind = op, x.e.now(), JournalPass(x.r.PassID()), x.r.Plan.Pass
	return en
}

// journalFailedLocked records the first failed journal write: the pass
// stops before its next removal. x.mu is held.
func (x *executor) journalFailedLocked(err error) {
	if x.jerr == nil {
		x.jerr = err
		x.e.log.Error("journal write failed: the pass stops", "err", err, "pass", x.r.PassID())
	}
}

// planned is the report line of a task that never ran.
func (x *executor) planned(t task) ItemResult {
	it := x.plan[t.idx]
	it.Time = x.e.now()
	return it
}

// spaceMayStart reports whether a space removal may start now; x.mu is held.
func (x *executor) spaceMayStart() bool {
	if x.spaceOK+x.spaceN == 0 {
		return true
	}
	return x.freed+x.spaceBytes < x.target
}

// stoppingLocked reports whether no new item may start, noting the reason
// the first time; x.mu is held.
func (x *executor) stoppingLocked() bool {
	switch {
	case x.r.Stopped != "":
	case x.jerr != nil:
		x.haltLocked(fmt.Sprintf("journal write failed (%v): no further removal", x.jerr), true)
	case x.stop.Err() != nil:
		x.haltLocked("stopped on request after the items in flight", false)
	}
	return x.r.Stopped != ""
}

// halted is stoppingLocked for callers without x.mu.
func (x *executor) halted() bool {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.stoppingLocked()
}

// halt stops the pass; failed makes it a pass-level failure too.
func (x *executor) halt(why string, failed bool) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.haltLocked(why, failed)
}

// haltLocked is halt with x.mu held.
func (x *executor) haltLocked(why string, failed bool) {
	if x.r.Stopped != "" {
		return
	}
	x.r.Stopped = why
	if failed {
		x.r.Error = why
	}
	x.e.log.Warn("pass stopped", "pass", x.r.PassID(), "why", why)
}

// notRun reports every planned item from idx on that has no result as
// never started.
func (x *executor) notRun(idx int) {
	x.mu.Lock()
	defer x.mu.Unlock()
	for i := idx; i < len(x.plan); i++ {
		x.notRunLocked(i)
	}
}

// notRunLocked reports the planned item idx as never started; x.mu is held.
func (x *executor) notRunLocked(idx int) {
	if x.results[idx] != nil {
		return
	}
	it := x.plan[idx]
	it.Outcome, it.Detail, it.Time = OutcomeNotRun, x.r.Stopped, x.e.now()
	x.results[idx] = []ItemResult{it}
	x.r.Undone++
}

// work runs one task and records it.
func (x *executor) work(t task) {
	its := t.run()
	now := x.e.now()
	for i := range its {
		its[i].Time = now
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	x.results[t.idx] = its
	x.closeIntent(t)
	x.inflight--
	removed := len(its) > 0 && its[0].Outcome == OutcomeRemoved
	if t.space {
		x.spaceN--
		x.spaceBytes -= t.size
		if removed {
			x.spaceOK++
		}
	}
	if t.kind == ItemImage && removed {
		x.freed += t.size
	}
	x.prog.ItemsDone++
	x.prog.BytesDone += t.size
	x.publish()
	x.cond.Broadcast()
}

// publish sends the progress to the engine's progress listeners.
func (x *executor) publish() { x.e.publishProgress(x.prog) }

// journal writes a line for the pass (durably, or lazily for an
// outcome); a failure stops the pass.
func (x *executor) journal(op JournalOp, en JournalEntry, lazy bool) error {
	write := x.e.journal.write
	if lazy {
		write = x.e.journal.writeLazy
	}
	err := write(x.stamp(op, en))
	if err != nil {
		x.mu.Lock()
		x.journalFailedLocked(err)
		x.mu.Unlock()
	}
	return err
}

// call makes a removal's runtime call; the task's intent is on disk, and
// the pool writes its outcome.
func (x *executor) call(it ItemResult, what string, call func(ctx context.Context) error) ItemResult {
	ctx, cancel := context.WithTimeout(x.calls, CallTimeout)
	defer cancel()
	return outcome(it, what, call(ctx))
}

// removeLogged journals an intent of its own, removes and journals the
// outcome: for the log file and link removed with a container. Without
// its intent line on disk the item is not removed.
func (x *executor) removeLogged(it ItemResult, en JournalEntry, what string, call func(ctx context.Context) error) ItemResult {
	en.Kind, en.ID = it.Kind, it.ID
	if err := x.journal(JournalIntent, en, false); err != nil {
		it.Outcome, it.Error = OutcomeFailed, fmt.Sprintf("not removed: %v", err)
		return it
	}
	it = x.call(it, what, call)
	op := JournalRemoved
	switch it.Outcome {
	case OutcomeGone:
		op = JournalGone
	case OutcomeFailed:
		op, en.Error = JournalFailed, it.Error
	}
	if jerr := x.journal(op, en, true); jerr != nil && it.Error == "" {
		it.Error = fmt.Sprintf("journal: %v", jerr)
	}
	return it
}

// rt runs one runtime read of the pass with the per-call timeout.
func rt[T any](x *executor, call func(ctx context.Context) (T, error)) (T, error) {
	ctx, cancel := context.WithTimeout(x.calls, CallTimeout)
	defer cancel()
	return call(ctx)
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

// image re-checks and removes one image: it must still exist, be unpinned,
// not be a sandbox image and be used by no container in any state, by the
// view of the node (see ViewWindow).
func (x *executor) image(rm ImageRemoval, en *JournalEntry) ItemResult {
	it := ItemResult{Kind: ItemImage, ID: rm.ID, Reason: string(rm.Reason), Detail: rm.Detail, SizeBytes: rm.SizeBytes}
	if x.infoErr != nil {
		return recheckFailed(it, x.infoErr)
	}
	v, err := x.view.fresh(true)
	if err != nil {
		return recheckFailed(it, err)
	}
	img, ok := v.imageByID[rm.ID]
	if !ok {
		it.Outcome = OutcomeGone
		return it
	}
	en.RepoTags, en.RepoDigests, en.SizeBytes = img.RepoTags, img.RepoDigests, img.SizeBytes
	if img.Pinned {
		return skipped(it, "pinned since planning")
	}
	if img.SizeBytes < 0 {
		return skipped(it, fmt.Sprintf("the runtime reports an impossible size (%d bytes)", img.SizeBytes))
	}
	if IsSandboxImage(img, x.sandboxRefs) {
		return skipped(it, "sandbox image")
	}
	if c, used := v.imageUser(img); used {
		return skipped(it, fmt.Sprintf("in use since planning by container %s (%s)", c.Name, c.ID))
	}
	it = x.call(it, "remove image", func(ctx context.Context) error { return x.e.o.Remover.RemoveImage(ctx, rm.ID) })
	if it.Outcome == OutcomeRemoved {
		x.e.log.Info("removed image", "image", rm.ID, "tags", img.RepoTags, "size", img.SizeBytes, "reason", rm.Reason, "pass", x.r.PassID())
	}
	return it
}

// container re-checks and removes one dead container, then its log file
// and its /var/log/containers link. A container running again is skipped;
// an UNKNOWN one is stopped first, as the kubelet does.
//
// The re-check is against the view of the node's running containers (see
// ViewWindow). EXITED is final in CRI (a runtime refuses to start an
// exited container; the kubelet creates a new one), so a container planned
// as exited that the view does not show running needs no more. A
// container planned in any other state can still change, one the view
// shows running is confirmed, and the log path is only in the container's
// status: the runtime is asked then, just before the removal.
func (x *executor) container(rm ContainerRemoval, en *JournalEntry) []ItemResult {
	it := ItemResult{Kind: ItemContainer, ID: rm.ID, Reason: string(rm.Reason), Detail: rm.Detail}
	v, err := x.running.fresh(false)
	if err != nil {
		return []ItemResult{recheckFailed(it, err)}
	}
	cur, running := v.byID[rm.ID]
	if !running {
		cur = Container{ID: rm.ID, PodUID: rm.PodUID, Name: rm.Name, PodSandboxID: rm.PodSandboxID, State: ContainerExited}
	}
	if running || rm.State != ContainerExited || x.mayHaveLogFile(rm) {
		if cur, err = rt(x, func(ctx context.Context) (Container, error) { return x.e.o.Reader.ContainerStatus(ctx, rm.ID) }); err != nil {
			return []ItemResult{recheckFailed(it, err)}
		}
	}
	en.PodUID, en.Name = cur.PodUID, cur.Name
	switch {
	case cur.State == ContainerRunning:
		return []ItemResult{skipped(it, "running since planning")}
	case !isDead(cur.State):
		return []ItemResult{skipped(it, fmt.Sprintf("in state %s, which the CRI API does not define: kept as active", cur.State))}
	case cur.State == ContainerUnknown:
		_, err := rt(x, func(ctx context.Context) (struct{}, error) {
			return struct{}{}, x.e.o.Remover.StopContainer(ctx, rm.ID, StopTimeout)
		})
		if err != nil && !errors.Is(err, ErrNotFound) {
			it.Outcome, it.Error = OutcomeFailed, fmt.Sprintf("stop unknown-state container: %v", err)
			return []ItemResult{it}
		}
	}
	it = x.call(it, "remove container", func(ctx context.Context) error { return x.e.o.Remover.RemoveContainer(ctx, rm.ID) })
	if it.Outcome != OutcomeRemoved {
		return []ItemResult{it}
	}
	x.e.log.Info("removed container", "container", rm.ID, "pod", cur.PodUID, "name", cur.Name, "reason", rm.Reason, "pass", x.r.PassID())
	return append([]ItemResult{it}, x.containerLogs(cur, rm)...)
}

// mayHaveLogFile reports whether a removed container can leave a log
// file for containerLogs: the kubelet writes a container's log in its
// pod's directory under podLogsDir (<namespace>_<name>_<uid>, or <uid>
// in the old layout: BuildPodLogsDirectory and
// parsePodUIDFromLogsDirectory in pkg/kubelet/kuberuntime/helpers.go), so
// a container whose pod has neither has no log file nodegc may remove, and
// its status need not be asked for the path. When the plan does not name
// the pod, any podLogsDir counts.
func (x *executor) mayHaveLogFile(rm ContainerRemoval) bool {
	root := x.e.o.Policy.PodLogsDir
	if root == "" {
		return false
	}
	dirs := []string{root}
	if rm.PodNamespace != "" && rm.PodName != "" && rm.PodUID != "" {
		dirs = []string{filepath.Join(root, rm.PodNamespace+"_"+rm.PodName+"_"+rm.PodUID), filepath.Join(root, rm.PodUID)}
	}
	for _, d := range dirs {
		if _, err := os.Lstat(d); err == nil {
			return true
		}
	}
	return false
}

// ReasonContainerRemoved is the reason of the log file and link removed
// with their container.
const ReasonContainerRemoved = "container-removed"

// containerLogs removes a removed container's log file and its
// /var/log/containers link, as the kubelet's removeContainerLog
// (pkg/kubelet/kuberuntime/kuberuntime_container.go) does. Unlike the
// kubelet it acts only on an absolute log path inside podLogsDir that is a
// regular file reached through no symlink, and on a link that is a
// symlink; the kubelet removes them
// before the container, nodegc after, so a container the runtime keeps
// keeps its logs.
func (x *executor) containerLogs(c Container, rm ContainerRemoval) []ItemResult {
	var out []ItemResult
	if p := c.LogPath; p != "" && WithinDir(x.e.o.Policy.PodLogsDir, p) {
		if realFileUnder(x.e.o.Policy.PodLogsDir, p) {
			it := ItemResult{Kind: ItemLog, ID: p, Reason: ReasonContainerRemoved, Detail: "log file of container " + c.ID}
			out = append(out, x.removeLogged(it, JournalEntry{Reason: ReasonContainerRemoved, PodUID: c.PodUID, Name: c.Name},
				"remove container log", func(context.Context) error { return removeLog(p, false) }))
		}
	}
	if rm.PodName == "" || rm.PodNamespace == "" || c.Name == "" {
		return out
	}
	link := containerLogLink(x.e.containerLogsDir(), rm.PodName, rm.PodNamespace, c.Name, c.ID)
	if fi, err := os.Lstat(link); err == nil && fi.Mode()&os.ModeSymlink != 0 && WithinDir(x.e.containerLogsDir(), link) {
		it := ItemResult{Kind: ItemLog, ID: link, Reason: ReasonContainerRemoved, Detail: "log link of container " + c.ID}
		out = append(out, x.removeLogged(it, JournalEntry{Reason: ReasonContainerRemoved, PodUID: c.PodUID, Name: c.Name},
			"remove container log link", func(context.Context) error { return removeLog(link, false) }))
	}
	return out
}

// realFileUnder reports whether path, inside dir, is a regular file reached
// through real directories only: no component between dir and the file is
// a symlink, which could lead anywhere on the node.
func realFileUnder(dir, path string) bool {
	rel, err := filepath.Rel(filepath.Clean(dir), path)
	if err != nil {
		return false
	}
	cur := filepath.Clean(dir)
	parts := strings.Split(rel, string(filepath.Separator))
	for i, part := range parts {
		cur = filepath.Join(cur, part)
		fi, err := os.Lstat(cur)
		if err != nil {
			return false
		}
		if i < len(parts)-1 && !fi.IsDir() || i == len(parts)-1 && !fi.Mode().IsRegular() {
			return false
		}
	}
	return true
}

// containerLogLink is the kubelet's logSymlink
// (pkg/kubelet/kuberuntime/legacy.go): <dir>/<pod>_<ns>_<name>-<id>.log,
// the name cut to ext4's 255 bytes.
func containerLogLink(dir, pod, ns, name, id string) string {
	const suffix = ".log"
	base := fmt.Sprintf("%s_%s_%s-%s", pod, ns, name, id)
	if len(base) > 255-len(suffix) {
		base = base[:255-len(suffix)]
	}
	return filepath.Join(dir, base+suffix)
}

// sandbox re-checks, stops and removes one sandbox: it must not be READY
// and no container may reference it.
func (x *executor) sandbox(rm SandboxRemoval, en *JournalEntry) ItemResult {
	it := ItemResult{Kind: ItemSandbox, ID: rm.ID, Reason: rm.Reason}
	cur, err := rt(x, func(ctx context.Context) (Sandbox, error) { return x.e.o.Reader.SandboxStatus(ctx, rm.ID) })
	if err != nil {
		return recheckFailed(it, err)
	}
	en.PodUID, en.Name = cur.PodUID, cur.PodNamespace+"/"+cur.PodName
	if cur.State == SandboxReady {
		return skipped(it, "ready since planning")
	}
	if cur.State != SandboxNotReady {
		return skipped(it, fmt.Sprintf("in state %s, which the CRI API does not define: kept as active", cur.State))
	}
	v, err := x.view.fresh(false)
	if err != nil {
		return recheckFailed(it, err)
	}
	if c, ok := v.bySandbox[rm.ID]; ok {
		return skipped(it, fmt.Sprintf("still holds container %s (%s)", c.Name, c.ID))
	}
	_, err = rt(x, func(ctx context.Context) (struct{}, error) { return struct{}{}, x.e.o.Remover.StopSandbox(ctx, rm.ID) })
	if err != nil && !errors.Is(err, ErrNotFound) {
		it.Outcome, it.Error = OutcomeFailed, fmt.Sprintf("stop sandbox: %v", err)
		return it
	}
	it = x.call(it, "remove sandbox", func(ctx context.Context) error { return x.e.o.Remover.RemoveSandbox(ctx, rm.ID) })
	if it.Outcome == OutcomeRemoved {
		x.e.log.Info("removed sandbox", "sandbox", rm.ID, "pod", cur.PodUID, "reason", rm.Reason, "pass", x.r.PassID())
	}
	return it
}

// logPath re-checks and removes one log path. Only absolute paths strictly
// inside the pod logs directory or /var/log/containers are ever touched;
// a pod directory whose pod runs a container again, a symlink whose target
// exists again or whose container has not exited, is skipped.
func (x *executor) logPath(rm LogRemoval) ItemResult {
	it := ItemResult{Kind: ItemLog, ID: rm.Path, Reason: rm.Reason}
	podDir, linkDir := x.e.o.Policy.PodLogsDir, x.e.containerLogsDir()
	// Only direct children: a nested path could pass through a symlinked
	// subdirectory to anywhere on the node.
	parent := filepath.Dir(rm.Path)
	inPods := WithinDir(podDir, rm.Path) && parent == filepath.Clean(podDir)
	inLinks := WithinDir(linkDir, rm.Path) && parent == filepath.Clean(linkDir)
	if !inPods && !inLinks {
		return skipped(it, fmt.Sprintf("not directly inside %s or %s", podDir, linkDir))
	}
	fi, err := os.Lstat(rm.Path)
	if errors.Is(err, os.ErrNotExist) {
		it.Outcome = OutcomeGone
		return it
	}
	if err != nil {
		return recheckFailed(it, err)
	}
	v, err := x.view.fresh(false)
	if err != nil {
		return recheckFailed(it, err)
	}
	if inLinks {
		if fi.Mode()&os.ModeSymlink == 0 {
			return skipped(it, "not a symlink")
		}
		if _, err := os.Stat(rm.Path); !errors.Is(err, os.ErrNotExist) {
			return skipped(it, "its target exists again")
		}
		if c, ok := v.byID[containerIDFromLink(rm.Path)]; ok && c.State != ContainerExited {
			return skipped(it, "its container has not exited")
		}
		return x.call(it, "remove log symlink", func(context.Context) error { return removeLog(rm.Path, false) })
	}
	if filepath.Dir(filepath.Clean(rm.Path)) != filepath.Clean(podDir) || !fi.IsDir() {
		return skipped(it, "not a pod log directory")
	}
	name := filepath.Base(rm.Path)
	uid := name[strings.LastIndexByte(name, '_')+1:]
	for _, c := range v.byPodUID[uid] {
		if !isDead(c.State) {
			return skipped(it, fmt.Sprintf("pod runs container %s again", c.Name))
		}
	}
	return x.call(it, "remove pod log directory", func(context.Context) error { return removeLog(rm.Path, true) })
}

// removeLog removes a symlink or a whole directory; a path already gone
// wraps ErrNotFound.
func removeLog(path string, dir bool) error {
	var err error
	if dir {
		err = os.RemoveAll(path)
	} else {
		err = os.Remove(path)
	}
	if errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("%s: %w", path, ErrNotFound)
	}
	return err
}

// WithinDir reports whether path is an absolute, clean path strictly inside
// dir (dir itself does not count). Log GC acts only on such paths, because
// runtimes report empty or relative log paths for containers other CRI
// clients made.
func WithinDir(dir, path string) bool {
	if !filepath.IsAbs(path) || !filepath.IsAbs(dir) || path != filepath.Clean(path) {
		return false
	}
	rel, err := filepath.Rel(filepath.Clean(dir), path)
	return err == nil && rel != "." && rel != ".." && !strings.HasPrefix(rel, "../") && !filepath.IsAbs(rel)
}

// recheckFailed records an item whose re-check could not be made: NotFound
// is already gone; anything else fails the item without removing it.
func recheckFailed(it ItemResult, err error) ItemResult {
	if errors.Is(err, ErrNotFound) {
		it.Outcome = OutcomeGone
		return it
	}
	it.Outcome, it.Error = OutcomeFailed, fmt.Sprintf("re-check: %v", err)
	return it
}

// skipped records an item the re-check kept.
func skipped(it ItemResult, why string) ItemResult {
	it.Outcome, it.Detail = OutcomeSkipped, why
	return it
}

// reconcileLocked settles the intents of an earlier, interrupted pass that
// have no outcome: it asks the runtime (or the filesystem, for logs)
// whether each item still exists and journals what happened, so that every
// item the runtime no longer has is in the journal. An item it cannot ask
// about stays open for the next try. A deleting engine runs it before its
// first snapshot, and again after a pass whose journal write failed. It
// returns notes for the next report; e.mu is held.
func (e *Engine) reconcileLocked(ctx context.Context) []string {
	if e.journal == nil || e.o.Remover == nil || e.reconciled {
		return nil
	}
	lines, err := ReadJournalLines(e.o.StateDir)
	if err != nil {
		return []string{fmt.Sprintf("journal not reconciled: %v", err)}
	}
	open := OpenIntents(lines)
	if len(open) == 0 {
		e.reconciled = true
		return nil
	}
	var removed, kept, unknown int
	for _, in := range open {
		exists, err := e.exists(ctx, in)
		if err != nil {
			unknown++
			e.log.Warn("reconcile journal intent", "kind", in.Kind, "id", in.ID, "err", err)
			continue
		}
		out := in
		out.Time, out.Reconciled, out.Op = e.now(), true, JournalRemoved
		if exists {
			out.Op = JournalNotRemoved
			kept++
		} else {
			removed++
		}
		if err := e.journal.write(out); err != nil {
			return []string{fmt.Sprintf("journal not reconciled: %v", err)}
		}
	}
	e.reconciled = unknown == 0
	note := fmt.Sprintf("journal: reconciled %d intents an interrupted pass left without outcome: %d removed, %d still there", removed+kept, removed, kept)
	if unknown > 0 {
		note += fmt.Sprintf(", %d could not be checked (left for the next try)", unknown)
	}
	e.log.Warn(note)
	return []string{note}
}

// exists asks whether the item of a journal intent still exists.
func (e *Engine) exists(ctx context.Context, in JournalEntry) (bool, error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), CallTimeout)
	defer cancel()
	var err error
	switch in.Kind {
	case ItemImage:
		_, err = e.o.Reader.ImageStatus(ctx, in.ID)
	case ItemContainer:
		_, err = e.o.Reader.ContainerStatus(ctx, in.ID)
	case ItemSandbox:
		_, err = e.o.Reader.SandboxStatus(ctx, in.ID)
	case ItemLog:
		_, err = os.Lstat(in.ID)
		if errors.Is(err, os.ErrNotExist) {
			return false, nil
		}
	default:
		return false, fmt.Errorf("unknown kind %q", in.Kind)
	}
	if errors.Is(err, ErrNotFound) {
		return false, nil
	}
	return err == nil, err
}
