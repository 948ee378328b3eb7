package engine

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// StopTimeout is how long an UNKNOWN container is given to stop before it is
// removed.
const StopTimeout = 10 * time.Second

// executor applies one plan. It re-checks every item against the runtime
// just before it removes it, so a plan that went stale between planning
// and applying can only remove less, never more.
type executor struct {
	e   *Engine
	ctx context.Context
	r   *PassReport
	// sandboxRefs are the runtime's sandbox image references, read once
	// per pass; infoErr is set when they could not be read, and then no
	// image is removed (the sandbox-image guard must not fail open).
	sandboxRefs []string
	infoErr     error
	// live is the container list read after the container phase, for the
	// sandbox and log re-checks; nil until needed.
	live []Container
	// stop is the caller's context: once it is done, no new item starts.
	// ctx, detached from it, carries the runtime calls of the item in
	// flight to their end.
	stop context.Context
}

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

// applyLocked performs p; e.mu is held.
//
// Stopping: when ctx is cancelled the pass stops after the item in flight.
// That item finishes (its runtime calls use a context detached from ctx,
// bounded by the runtime client's own timeouts) and is journalled; no
// further item starts, and each is reported as OutcomeNotRun. A journal
// write that fails stops the pass the same way, before the next removal,
// because a removal that leaves no journal line is a removal nobody can
// account for.
func (e *Engine) applyLocked(ctx context.Context, p Plan, start time.Time) PassReport {
	r := PassReport{ID: e.passSeq.Add(1), Run: e.run, Kind: p.Pass, StartedAt: start, Plan: p, Items: []ItemResult{}, Events: planEvents(p)}
	x := &executor{e: e, ctx: context.WithoutCancel(ctx), stop: ctx, r: &r}
	planned := plannedItems(p)
	if err := e.journal.checkSpace(len(planned)); err != nil {
		x.halt(err.Error(), true)
	}
	if before, err := e.imageFs(x.ctx); err == nil {
		r.ImageFsBefore = &before
	}
	if !x.halted() {
		if info, err := e.o.Reader.Info(x.ctx); err == nil {
			x.sandboxRefs = info.SandboxImages
		} else {
			x.infoErr = fmt.Errorf("runtime info (for the sandbox images): %w", err)
		}
	}
	i := 0
	next := func(do func() ItemResult) {
		it := planned[i]
		i++
		if x.halted() {
			it.Outcome, it.Detail = OutcomeNotRun, r.Stopped
			r.Undone++
			x.add(it)
			return
		}
		x.add(do())
	}
	for _, c := range p.ContainerGC.Remove {
		next(func() ItemResult { return x.container(c) })
	}
	for _, s := range p.SandboxGC.Remove {
		next(func() ItemResult { return x.sandbox(s) })
	}
	for _, l := range p.LogGC.Remove {
		next(func() ItemResult { return x.logPath(l) })
	}
	removedImages := map[string]bool{}
	for _, im := range p.ImageGC.Remove {
		next(func() ItemResult { return x.image(im) })
		it := r.Items[len(r.Items)-1]
		if it.Outcome == OutcomeRemoved {
			r.EstimatedBytesFreed = AddBytes(r.EstimatedBytesFreed, im.SizeBytes)
		}
		if it.Outcome == OutcomeRemoved || it.Outcome == OutcomeGone {
			removedImages[im.ID] = true
		}
	}
	if after, err := e.imageFs(x.ctx); err == nil {
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
	e.log.Info("pass done", "pass", r.PassID(), "kind", r.Kind, "removed", r.Count(OutcomeRemoved), "failed", r.Count(OutcomeFailed), "skipped", r.Count(OutcomeSkipped), "undone", r.Undone)
	return r
}

// halted reports whether the pass must start no further item, noting the
// cancellation of the caller's context the first time it is seen.
func (x *executor) halted() bool {
	if x.r.Stopped == "" && x.stop.Err() != nil {
		x.halt("stopped on request after the item in flight", false)
	}
	return x.r.Stopped != ""
}

// halt stops the pass; failed makes it a pass-level failure too.
func (x *executor) halt(why string, failed bool) {
	if x.r.Stopped != "" {
		return
	}
	x.r.Stopped = why
	if failed {
		x.r.Error = why
	}
	x.e.log.Warn("pass stopped", "pass", x.r.PassID(), "why", why)
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

// add stamps and records an item result.
func (x *executor) add(it ItemResult) {
	it.Time = x.e.now()
	x.r.Items = append(x.r.Items, it)
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

// journal appends a deletion to the journal. A write that fails stops the
// pass before the next removal and fails it.
func (x *executor) journal(en JournalEntry) {
	en.Time, en.Pass, en.PassKind = x.e.now(), JournalPass(x.r.PassID()), x.r.Plan.Pass
	if err := x.e.journal.append(en); err != nil {
		x.e.log.Error("journal", "err", err)
		x.halt(fmt.Sprintf("journal write failed after removing %s %s (%v): no further removal", en.Kind, en.ID, err), true)
	}
}

// image re-checks and removes one image: it must still exist, be unpinned,
// not be a sandbox image and be used by no container in any state.
func (x *executor) image(rm ImageRemoval) ItemResult {
	it := ItemResult{Kind: ItemImage, ID: rm.ID, Reason: string(rm.Reason), Detail: rm.Detail, SizeBytes: rm.SizeBytes}
	if x.infoErr != nil {
		return recheckFailed(it, x.infoErr)
	}
	img, err := x.e.o.Reader.ImageStatus(x.ctx, rm.ID)
	if err != nil {
		return recheckFailed(it, err)
	}
	if img.Pinned {
		return skipped(it, "pinned since planning")
	}
	if img.SizeBytes < 0 {
		return skipped(it, fmt.Sprintf("the runtime reports an impossible size (%d bytes)", img.SizeBytes))
	}
	if IsSandboxImage(img, x.sandboxRefs) {
		return skipped(it, "sandbox image")
	}
	containers, err := x.e.o.Reader.ListContainers(x.ctx)
	if err != nil {
		return recheckFailed(it, err)
	}
	if users := ImagesInUse([]Image{img}, containers)[img.ID]; len(users) > 0 {
		return skipped(it, fmt.Sprintf("in use since planning by container %s (%s)", users[0].Name, users[0].ID))
	}
	it = outcome(it, "remove image", x.e.o.Remover.RemoveImage(x.ctx, rm.ID))
	if it.Outcome == OutcomeRemoved {
		x.journal(JournalEntry{Kind: ItemImage, ID: rm.ID, RepoTags: img.RepoTags, RepoDigests: img.RepoDigests, SizeBytes: img.SizeBytes, Reason: string(rm.Reason)})
		x.e.log.Info("removed image", "image", rm.ID, "tags", img.RepoTags, "size", img.SizeBytes, "reason", rm.Reason, "pass", x.r.PassID())
	}
	return it
}

// container re-checks and removes one dead container. A container running
// again is skipped; an UNKNOWN one is stopped first, as the kubelet does.
func (x *executor) container(rm ContainerRemoval) ItemResult {
	it := ItemResult{Kind: ItemContainer, ID: rm.ID, Reason: string(rm.Reason), Detail: rm.Detail}
	cur, err := x.e.o.Reader.ContainerStatus(x.ctx, rm.ID)
	if err != nil {
		return recheckFailed(it, err)
	}
	switch {
	case cur.State == ContainerRunning:
		return skipped(it, "running since planning")
	case !isDead(cur.State):
		return skipped(it, fmt.Sprintf("in state %s, which the CRI API does not define: kept as active", cur.State))
	case cur.State == ContainerUnknown:
		if err := x.e.o.Remover.StopContainer(x.ctx, rm.ID, StopTimeout); err != nil && !errors.Is(err, ErrNotFound) {
			it.Outcome, it.Error = OutcomeFailed, fmt.Sprintf("stop unknown-state container: %v", err)
			return it
		}
	}
	it = outcome(it, "remove container", x.e.o.Remover.RemoveContainer(x.ctx, rm.ID))
	if it.Outcome == OutcomeRemoved {
		x.journal(JournalEntry{Kind: ItemContainer, ID: rm.ID, Reason: string(rm.Reason), PodUID: cur.PodUID, Name: cur.Name})
		x.e.log.Info("removed container", "container", rm.ID, "pod", cur.PodUID, "name", cur.Name, "reason", rm.Reason, "pass", x.r.PassID())
	}
	return it
}

// liveContainers lists the containers once, after the container phase, for
// the sandbox and log re-checks.
func (x *executor) liveContainers() ([]Container, error) {
	if x.live != nil {
		return x.live, nil
	}
	cs, err := x.e.o.Reader.ListContainers(x.ctx)
	if err != nil {
		return nil, err
	}
	if cs == nil {
		cs = []Container{}
	}
	x.live = cs
	return cs, nil
}

// sandbox re-checks, stops and removes one sandbox: it must not be READY
// and no container may reference it.
func (x *executor) sandbox(rm SandboxRemoval) ItemResult {
	it := ItemResult{Kind: ItemSandbox, ID: rm.ID, Reason: rm.Reason}
	cur, err := x.e.o.Reader.SandboxStatus(x.ctx, rm.ID)
	if err != nil {
		return recheckFailed(it, err)
	}
	if cur.State == SandboxReady {
		return skipped(it, "ready since planning")
	}
	if cur.State != SandboxNotReady {
		return skipped(it, fmt.Sprintf("in state %s, which the CRI API does not define: kept as active", cur.State))
	}
	cs, err := x.liveContainers()
	if err != nil {
		return recheckFailed(it, err)
	}
	for _, c := range cs {
		if c.PodSandboxID == rm.ID {
			return skipped(it, fmt.Sprintf("still holds container %s (%s)", c.Name, c.ID))
		}
	}
	if err := x.e.o.Remover.StopSandbox(x.ctx, rm.ID); err != nil && !errors.Is(err, ErrNotFound) {
		it.Outcome, it.Error = OutcomeFailed, fmt.Sprintf("stop sandbox: %v", err)
		return it
	}
	it = outcome(it, "remove sandbox", x.e.o.Remover.RemoveSandbox(x.ctx, rm.ID))
	if it.Outcome == OutcomeRemoved {
		x.journal(JournalEntry{Kind: ItemSandbox, ID: rm.ID, Reason: rm.Reason, PodUID: cur.PodUID, Name: cur.PodNamespace + "/" + cur.PodName})
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
	cs, err := x.liveContainers()
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
		id := containerIDFromLink(rm.Path)
		for _, c := range cs {
			if c.ID == id && c.State != ContainerExited {
				return skipped(it, "its container has not exited")
			}
		}
		it = outcome(it, "remove log symlink", removeLog(rm.Path, false))
		if it.Outcome == OutcomeRemoved {
			x.journal(JournalEntry{Kind: ItemLog, ID: rm.Path, Reason: rm.Reason})
		}
		return it
	}
	if filepath.Dir(filepath.Clean(rm.Path)) != filepath.Clean(podDir) || !fi.IsDir() {
		return skipped(it, "not a pod log directory")
	}
	name := filepath.Base(rm.Path)
	uid := name[strings.LastIndexByte(name, '_')+1:]
	for _, c := range cs {
		if c.PodUID == uid && !isDead(c.State) {
			return skipped(it, fmt.Sprintf("pod runs container %s again", c.Name))
		}
	}
	it = outcome(it, "remove pod log directory", removeLog(rm.Path, true))
	if it.Outcome == OutcomeRemoved {
		x.journal(JournalEntry{Kind: ItemLog, ID: rm.Path, Reason: rm.Reason, PodUID: uid})
	}
	return it
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
