package engine

import (
	"context"
	"fmt"
	"sync"
)

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
	// ahead is how many tasks have their intents written or being written
	// by the background write of the next group.
	ahead := 0
feed:
	for i, t := range tasks {
		for !x.written[t.idx] && x.writingAhead {
			x.cond.Wait()
		}
		if !x.written[t.idx] && !x.stoppingLocked() {
			ahead = min(i+window, len(tasks))
			x.writeIntents(tasks[i:ahead])
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
		x.work <- t
		// Halfway through a group, the next group's intents are written
		// in the background, so the feeder seldom waits for an fsync.
		if ahead < len(tasks) && i >= ahead-window/4 && !x.writingAhead {
			next := tasks[ahead:min(ahead+window, len(tasks))]
			ahead += len(next)
			window = min(2*window, maxIntentWindow)
			x.writingAhead = true
			lines := x.intentLines(next)
			x.ahead.Go(func() { x.writeAhead(next, lines) })
		}
	}
	for x.inflight > 0 {
		x.cond.Wait()
	}
	x.mu.Unlock()
	x.ahead.Wait() // a group still being written ahead
	x.mu.Lock()
	// Close the intents of the tasks that never reached the runtime.
	for _, t := range tasks {
		if x.written[t.idx] && !x.closed[t.idx] {
			x.closeIntent(t)
		}
	}
}

// intentLines are the tasks' intent lines; x.mu is held.
func (x *executor) intentLines(tasks []task) []JournalEntry {
	lines := make([]JournalEntry, len(tasks))
	for i, t := range tasks {
		lines[i] = x.stamp(JournalIntent, *t.intent)
	}
	return lines
}

// writeIntents writes the tasks' intent lines in one group and waits for
// them to be on disk; x.mu is held and released meanwhile.
func (x *executor) writeIntents(tasks []task) {
	lines := x.intentLines(tasks)
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

// writeAhead writes the intent lines of a group the feeder has not
// reached yet, marks them written, and wakes the feeder. A pass that stops
// meanwhile closes the intents the group wrote, as any other.
func (x *executor) writeAhead(tasks []task, lines []JournalEntry) {
	err := x.e.journal.write(lines...)
	x.mu.Lock()
	defer x.mu.Unlock()
	if err != nil {
		x.journalFailedLocked(err)
	} else {
		for _, t := range tasks {
			x.written[t.idx] = true
		}
	}
	x.writingAhead = false
	x.cond.Broadcast()
}

// closeIntent writes the outcome line of a task whose intent is on disk,
// from its result (not-run when it has none); x.mu is held.
func (x *executor) closeIntent(t task) {
	x.closed[t.idx] = true
	if err := x.e.journal.writeLazy(x.outcomeLine(t, x.results[t.idx])); err != nil {
		x.journalFailedLocked(err)
	}
}

// outcomeLine is the journal's outcome line of a task from its results
// (not-run when it has none).
func (x *executor) outcomeLine(t task, its []ItemResult) JournalEntry {
	en := *t.intent
	op := JournalNotRun
	if len(its) > 0 {
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
	return x.stamp(op, en)
}

// stamp fills a journal line's op, time and pass, and an intent's boot
// ID.
func (x *executor) stamp(op JournalOp, en JournalEntry) JournalEntry {
	en.Op, en.Time, en.Pass, en.PassKind = op, x.e.now(), JournalPass(x.passID), x.kind
	if op == JournalIntent {
		en.Boot = x.e.boot
	}
	return en
}

// journalFailedLocked records the first failed journal write: the pass
// stops before its next removal. x.mu is held.
func (x *executor) journalFailedLocked(err error) {
	if x.jerr == nil {
		x.jerr = err
		x.e.log.Error("journal write failed: the pass stops", "err", err, "pass", x.passID)
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
	if err := x.e.journal.failed(); err != nil {
		// A worker's outcome write failed and it has not recorded it
		// yet: no removal starts meanwhile.
		x.journalFailedLocked(err)
	}
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
	x.e.log.Warn("pass stopped", "pass", x.passID, "why", why)
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

// startWorkers starts the pool's x.parallel workers, which run the tasks
// the feeder sends until stop is called. Long-lived workers keep their
// grown stacks: a goroutine per task would grow a fresh stack through
// every runtime call.
func (x *executor) startWorkers() (stop func()) {
	x.work = make(chan task, x.parallel)
	var wg sync.WaitGroup
	for range x.parallel {
		wg.Go(func() {
			for t := range x.work {
				x.do(t)
			}
		})
	}
	return func() {
		close(x.work)
		wg.Wait()
	}
}

// do runs one task and records it.
func (x *executor) do(t task) {
	its := t.run()
	now := x.e.now()
	for i := range its {
		its[i].Time = now
	}
	// The outcome line is written outside x.mu: the other workers and
	// the feeder do not wait for its write.
	jerr := x.e.journal.writeLazy(x.outcomeLine(t, its))
	x.mu.Lock()
	defer x.mu.Unlock()
	x.results[t.idx] = its
	x.closed[t.idx] = true
	if jerr != nil {
		x.journalFailedLocked(jerr)
	}
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
// the pool writes its outcome. The item's started line is handed to the
// kernel first: without it, reconciliation may take the call for never
// sent, so the call is not made when that write fails.
func (x *executor) call(it ItemResult, what string, call func(ctx context.Context) error) ItemResult {
	if err := x.e.journal.writeOut(x.stamp(JournalStarted, JournalEntry{Kind: it.Kind, ID: it.ID})); err != nil {
		x.mu.Lock()
		x.journalFailedLocked(err)
		x.mu.Unlock()
		it.Outcome, it.Error = OutcomeFailed, fmt.Sprintf("not removed: %v", err)
		return it
	}
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
