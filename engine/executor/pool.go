package executor

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/nodegc/nodegc/engine/model"
)

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

// runPhases runs the phases one after another in the pool; each phase's
// views are listed again (the phase before removed what they hold). A
// pinned pool (x.parallel above 0) keeps x.parallel removals in flight;
// the adaptive one (AutoParallel) starts each phase at one and finds the runtime's knee
// (knee.go): each kind of removal has its own.
func (x *executor) runPhases(phases [][]task) {
	widest := x.parallel
	if x.parallel == AutoParallel {
		widest = 0
		for _, ph := range phases {
			widest = max(widest, min(len(ph), MaxParallel))
		}
	}
	stop := x.startWorkers(widest)
	for i, ph := range phases {
		if i > 0 {
			x.views.invalidate()
		}
		if x.parallel == AutoParallel {
			x.mu.Lock()
			x.knee = x.d.KneeFor(min(len(ph), MaxParallel))
			x.mu.Unlock()
			endProbe := x.startProbe()
			x.runPhase(ph)
			endProbe()
			continue
		}
		x.runPhase(ph)
	}
	stop()
}

// width is how many removals may be in flight now; x.mu is held.
func (x *executor) width() int {
	if x.knee != nil {
		return x.knee.limit()
	}
	return x.parallel
}

// startProbe starts making the calls the kubelet's PLEG makes while
// removals are in flight, every kneeProbeEvery or every kneeProbeCost
// times what they took, whichever is longer, and gives their latency to
// the phase's knee until the returned func is called. A probe that fails
// gives nothing: a pool that has no serial pace yet stays serial.
func (x *executor) startProbe() (stop func()) {
	ctx, cancel := context.WithCancel(x.calls)
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTimer(0)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			// Only a probe made while removals run measures what they
			// cost (the first removal waits for its intent's fsync).
			x.mu.Lock()
			busy := x.inflight > 0
			x.mu.Unlock()
			if !busy {
				t.Reset(kneeProbeEvery / 5)
				continue
			}
			wait := kneeProbeEvery
			if d, err := probePLEG(ctx, x.d.Reader, time.Now); err == nil {
				wait = max(wait, kneeProbeCost*d)
				x.mu.Lock()
				was := x.knee.limit()
				x.noteKnee(x.knee.probed(d), was)
				x.mu.Unlock()
			}
			t.Reset(wait)
		}
	})
	return func() {
		cancel()
		wg.Wait()
	}
}

// noteKnee logs a change of the adaptive pool's width from was, by the
// decision d, and wakes the feeder; x.mu is held.
func (x *executor) noteKnee(d kneeDecision, was int) {
	if w := x.knee.limit(); w != was {
		x.d.Log.Debug("pool width", "pass", x.passID, "decision", string(d), "from", was, "width", w)
		x.cond.Broadcast()
	}
}

// runPhase runs one phase's tasks in a pool of x.width(), starting them in
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
			if x.inflight >= x.width() {
				x.cond.Wait()
				continue
			}
			if t.space && !x.spaceMayStart() {
				if x.spaceN == 0 {
					// Nothing in flight can change it: the target is
					// reached, as the serial pass would find.
					for _, rest := range tasks[i:] {
						x.results[rest.idx] = []model.ItemResult{skipped(x.planned(rest), "the space pass freed enough before it")}
					}
					break feed
				}
				x.cond.Wait()
				continue
			}
			break
		}
		x.inflight++
		if x.knee != nil {
			x.knee.started(x.inflight)
		}
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
			lines := x.journal.intents(next)
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
			x.closed[t.idx] = true
			x.journal.close(t, x.results[t.idx])
		}
	}
}

// writeIntents writes the tasks' intent lines in one group and waits for
// them to be on disk; x.mu is held and released meanwhile.
func (x *executor) writeIntents(tasks []task) {
	lines := x.journal.intents(tasks)
	x.mu.Unlock()
	err := x.journal.writeIntents(lines)
	x.mu.Lock()
	if err == nil {
		x.markWritten(tasks)
	}
}

// writeAhead writes the intent lines of a group the feeder has not
// reached yet, marks them written, and wakes the feeder. A pass that stops
// meanwhile closes the intents the group wrote, as any other.
func (x *executor) writeAhead(tasks []task, lines []model.JournalEntry) {
	err := x.journal.writeIntents(lines)
	x.mu.Lock()
	defer x.mu.Unlock()
	if err == nil {
		x.markWritten(tasks)
	}
	x.writingAhead = false
	x.cond.Broadcast()
}

// markWritten marks the tasks' intents on disk; x.mu is held.
func (x *executor) markWritten(tasks []task) {
	for _, t := range tasks {
		x.written[t.idx] = true
	}
}

// planned is the report line of a task that never ran.
func (x *executor) planned(t task) model.ItemResult {
	it := x.plan[t.idx]
	it.Time = x.d.Now()
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
	switch jerr := x.journal.failed(); {
	case x.r.Stopped != "":
	case jerr != nil:
		x.haltLocked(fmt.Sprintf("journal write failed (%v): no further removal", jerr), true)
	case x.stop.Err() != nil:
		x.haltLocked("stopped on request after the items in flight", false)
	}
	return x.r.Stopped != ""
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
	x.d.Log.Warn("pass stopped", "pass", x.passID, "why", why)
}

// notRunLocked reports the planned item idx as never started; x.mu is held.
func (x *executor) notRunLocked(idx int) {
	if x.results[idx] != nil {
		return
	}
	it := x.plan[idx]
	it.Outcome, it.Detail, it.Time = model.OutcomeNotRun, x.r.Stopped, x.d.Now()
	x.results[idx] = []model.ItemResult{it}
	x.r.Undone++
}

// startWorkers starts n workers, the pool's widest, which run the tasks
// the feeder sends until stop is called. Long-lived workers keep their
// grown stacks: a goroutine per task would grow a fresh stack through
// every runtime call.
func (x *executor) startWorkers(n int) (stop func()) {
	x.work = make(chan task, n)
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			for t := range x.work {
				x.done(t, x.run(t))
			}
		})
	}
	return func() {
		close(x.work)
		wg.Wait()
	}
}

// run re-checks one task's item (its kind's recheck), removes it when it
// is still to go (passJournal.send) and writes its outcome line (outside
// x.mu: the other workers and the feeder do not wait for it). The item's
// result comes first, then what went before it.
func (x *executor) run(t task) []model.ItemResult {
	c := t.check.recheck(x, t.intent)
	its := []model.ItemResult{c.it}
	if c.remove != nil {
		it, before := x.journal.send(x.calls, c.it, c.remove)
		its = append([]model.ItemResult{it}, before...)
	}
	now := x.d.Now()
	for i := range its {
		its[i].Time = now
	}
	x.journal.close(t, its)
	return its
}

// done records a finished task and wakes the feeder.
func (x *executor) done(t task, its []model.ItemResult) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.results[t.idx] = its
	x.closed[t.idx] = true
	x.inflight--
	if x.knee != nil {
		was := x.knee.limit()
		x.noteKnee(x.knee.finished(), was)
	}
	removed := its[0].Outcome == model.OutcomeRemoved
	if t.space {
		x.spaceN--
		x.spaceBytes -= t.size
		if removed {
			x.spaceOK++
		}
	}
	if t.item.Kind == model.ItemImage && removed {
		x.freed += t.size
	}
	x.prog.ItemsDone++
	x.prog.BytesDone += t.size
	x.d.Publish(x.prog)
	x.cond.Broadcast()
}
