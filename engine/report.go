package engine

import (
	"context"
	"slices"
	"time"

	"github.com/nodegc/nodegc/engine/rules"
	"github.com/nodegc/nodegc/engine/state"
)

// finishReport fills the report of a pass the executor ran: the image
// filesystem measured after it and the bytes it freed, the records of the
// images it removed. A pass whose journal write failed leaves its open
// intents to the next pass.
func (e *Engine) finishReport(ctx context.Context, r *PassReport, journalFailed bool) {
	removedImages := map[string]bool{}
	for _, it := range r.Items {
		if it.Kind == ItemImage && (it.Outcome == OutcomeRemoved || it.Outcome == OutcomeGone) {
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
}

// closeReport ends a pass's report: its events (passEvents), its end
// time, and its line in the log; empty: its plan removed nothing.
func (e *Engine) closeReport(r PassReport, p Plan, empty bool) PassReport {
	r.Events = passEvents(r, p, e.now())
	r.FinishedAt = e.now()
	if empty {
		e.log.Info("pass done", "pass", r.PassID(), "kind", r.Kind, "removed", 0, "nothing planned", true)
		return r
	}
	e.log.Info("pass done", "pass", r.PassID(), "kind", r.Kind, "removed", r.Count(OutcomeRemoved), "failed", r.Count(OutcomeFailed),
		"skipped", r.Count(OutcomeSkipped), "stopped", r.Stopped != "", "undone", r.Undone)
	return r
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
	if imageDeletionFailed(r) {
		// The kubelet's freeOldImages and freeSpace return their deletion
		// errors, and GarbageCollect returns before it would record
		// FreeDiskSpaceFailed (image_gc_manager.go v1.36): the failure is
		// the pass's failed items, and ImageGCFailed's message.
		return slices.DeleteFunc(r.Events, func(ev Event) bool { return ev.Reason == EventFreeDiskSpaceFailed })
	}
	if r.Stopped != "" || r.EstimatedBytesFreed >= p.ImageGC.BytesToFree || hasEvent(r.Events, EventFreeDiskSpaceFailed) {
		return r.Events
	}
	freed := spaceFreed(r)
	if !rules.SpacePassPlanned(p.ImageGC) {
		// The MaxAge pass alone brought usage under the high threshold:
		// no space pass ran, and the kubelet reports nothing.
		return r.Events
	}
	// The space pass expected to free enough, but removals were skipped
	// at the re-check: the kubelet would not have counted those images
	// either and reports the event.
	return append(r.Events, Event{Time: now, Reason: EventFreeDiskSpaceFailed, Warning: true,
		Message: rules.FreeDiskSpaceFailedMessage(p.ImageGC.UsagePercent, p.ImageGC.CapacityBytes, freed)})
}

// imageDeletionFailed reports whether an image removal of the MaxAge or
// the space pass failed, on which the kubelet's image GarbageCollect
// returns the deletion errors rather than FreeDiskSpaceFailed.
func imageDeletionFailed(r PassReport) bool {
	for _, it := range r.Items {
		if it.Kind == ItemImage && it.Outcome == OutcomeFailed &&
			(it.Reason == string(RemoveForAge) || it.Reason == string(RemoveForSpace)) {
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

// spaceFreed is what a pass's space pass removed (runtime-reported sizes):
// the kubelet's freeSpace counts only those, not its MaxAge pass.
func spaceFreed(r PassReport) int64 {
	var n int64
	for _, it := range r.Items {
		if it.Kind == ItemImage && it.Outcome == OutcomeRemoved && it.Reason == string(RemoveForSpace) {
			n = rules.AddBytes(n, it.SizeBytes)
		}
	}
	return n
}
