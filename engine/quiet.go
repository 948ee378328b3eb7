// Quiet periodic container passes: on a node that has not changed since
// the last full container pass, which planned nothing to remove, the
// scheduler's next periodic container pass plans the same nothing, so it
// is skipped without listing the node (RunPeriodic). A full pass that
// removed items counts too when every item it planned is gone (removed,
// or found already gone) and a plan of its listing less them removes
// nothing: the node is then that listing less its removals, unless
// something else changed; the stop and delete events of its own
// removals (ownRemovals) are not a change. What could change the
// plan is watched without polling: the runtime's container event stream
// (every event and every break of it), the clock (TimeStable), the pod
// source (Options.PodSourceGen) and the log directories (one stat each).
// A full pass runs at least every StreamSafetyInterval anyway, so an event
// the stream lost delays a removal by that much at most.

package engine

import (
	"fmt"
	"slices"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// StreamSafetyInterval is the longest a periodic container pass is
// skipped for: a full one runs once this long has passed since the last,
// as the kubelet's evented PLEG re-lists every 300 s
// (eventedPlegRelistPeriod, pkg/kubelet/kubelet.go, v1.36.3) in case an
// event was lost.
const StreamSafetyInterval = 5 * time.Minute

// quietMark is what a full container pass saw of the node's sources of
// change when its listing began; a later periodic pass that finds them all
// as they were, and the clock not past what the plan depends on, is
// skipped (Engine.skipQuiet).
type quietMark struct {
	// pass is the full pass's ID; at is when its listing began.
	pass int64
	at   time.Time
	// events is the engine's count of container events and stream
	// changes (Engine.streamGen) while the stream was live.
	events uint64
	// pods is the pod source's generation (Options.PodSourceGen).
	pods uint64
	// logs are the log directories' stamps (logStamps).
	logs [2]dirStamp
	// plan is the full pass's plan, which removes nothing, or the plan
	// of its listing less what it removed (removedAll): the skipped
	// pass's report shows it.
	plan Plan
	// removed is set when the full pass removed items: their own events
	// did not count (ownRemovals).
	removed bool
}

// dirStamp is one stat of a directory: its identity and modification
// time. A directory's mtime moves when an entry is added, removed or
// renamed in it.
type dirStamp struct {
	ok       bool
	dev, ino uint64
	mtime    int64 // nanoseconds since the epoch
}

// racyStamp is how recent a directory's mtime may be before its stamp is
// not trusted: a change in the same tick of the filesystem's coarse clock
// would leave the mtime as it was (git's "racily clean" entries).
const racyStamp = 2 * time.Second

// stampDir stats dir; a missing or unreadable dir stamps as not ok, and
// one changed less than racyStamp ago reports trusted false.
func stampDir(dir string) (st dirStamp, trusted bool) {
	var s unix.Stat_t
	if err := unix.Stat(dir, &s); err != nil {
		return dirStamp{}, true
	}
	// Dev's type differs by architecture.
	st = dirStamp{ok: true, dev: uint64(s.Dev), ino: s.Ino, mtime: s.Mtim.Nano()}
	return st, time.Since(time.Unix(0, st.mtime)) >= racyStamp
}

// logStamps stamps the log directories a snapshot reads (scanLogs): the
// pod logs dir and the container logs dir. Without log GC both are zero.
func (e *Engine) logStamps() (stamps [2]dirStamp, trusted bool) {
	if !e.o.ScanLogs {
		return stamps, true
	}
	a, okA := stampDir(e.o.Policy.PodLogsDir)
	b, okB := stampDir(e.containerLogsDir())
	return [2]dirStamp{a, b}, okA && okB
}

// podGen is the pod source's generation, and whether there is one: a pod
// source without a generation can change unseen.
func (e *Engine) podGen() (uint64, bool) {
	switch {
	case e.o.PodSource == nil:
		return 0, true
	case e.o.PodSourceGen == nil:
		return 0, false
	}
	return e.o.PodSourceGen(), true
}

// markQuiet notes the node's sources of change before a full container
// pass lists it; nil when a later pass could not be skipped on its word
// (the stream is not live, the pod source has no generation, a log dir
// changed just now). e.passMu is held.
func (e *Engine) markQuiet(at time.Time) *quietMark {
	// The last pass's removals are done: an event of theirs from now on
	// is counted (a later listing may have seen them, a late event moves
	// the generation and at worst costs a full pass).
	e.own.set(Plan{})
	// The generation is read before Following: a break after this read
	// moves it, one before it shows as not following.
	events := e.streamGen.Load()
	if !e.Following() {
		return nil
	}
	pods, ok := e.podGen()
	if !ok {
		return nil
	}
	logs, trusted := e.logStamps()
	if !trusted {
		return nil
	}
	return &quietMark{at: at, events: events, pods: pods, logs: logs}
}

// keepQuiet records the full container pass's mark when the pass leaves
// nothing for a later one to find unless the node changes: p, its plan
// (or, when it removed every item of it, the plan of its listing less
// them: removedAll), removes nothing, the pass ended without error, and
// no decision of p moves with the clock (TimeStable of the snapshot p
// was made of, checked by the caller as stable). Otherwise it forgets any
// mark. e.passMu is held.
func (e *Engine) keepQuiet(mark *quietMark, stable bool, p Plan, r PassReport, err error) {
	e.quiet = nil
	if mark == nil || !stable || err != nil || !r.OK() || !planEmpty(p) {
		return
	}
	mark.pass, mark.plan, mark.removed = r.ID, p, len(r.Items) > 0
	e.quiet = mark
}

// skipQuiet reports a periodic container pass skipped when the node is
// as the last full container pass saw it (see the file comment); ok is
// false when the pass must run in full. e.passMu is held.
func (e *Engine) skipQuiet() (r PassReport, ok bool) {
	q := e.quiet
	if q == nil {
		return PassReport{}, false
	}
	now := e.now()
	events := e.streamGen.Load()
	pods, podsOK := e.podGen()
	logs, _ := e.logStamps()
	switch {
	case !e.Following() || events != q.events, // an event, or a break
		now.Before(q.at) || now.Sub(q.at) >= StreamSafetyInterval,
		!podsOK || pods != q.pods,
		logs != q.logs:
		return PassReport{}, false
	}
	event := "no container event"
	if q.removed {
		event = "no container event but its own removals'"
	}
	why := fmt.Sprintf("unchanged since pass #%d (%s, nothing due by the clock", q.pass, event)
	if e.o.PodSource != nil {
		why += ", pod source unchanged"
	}
	if e.o.ScanLogs {
		why += ", log directories unchanged"
	}
	why += fmt.Sprintf("); a full pass runs by %s", q.at.Add(StreamSafetyInterval).Format(time.TimeOnly))
	r = PassReport{ID: e.passSeq.Add(1), Run: e.run, Kind: PassContainers, StartedAt: now, FinishedAt: now,
		Plan: q.plan, Items: []ItemResult{}, Events: []Event{}, Skipped: why}
	e.log.Info("pass skipped", "pass", r.PassID(), "kind", r.Kind, "why", why)
	return r, true
}

// removedAll returns s less the containers and sandboxes the pass r
// removed, when every item r planned is gone (removed, or found already
// gone) and only containers and sandboxes went: what the node holds after
// the pass if nothing else changed. ok is false when an item was left
// (skipped, not run, failed), or when a log went from a snapshot that
// lists the logs (the listing's log files would no longer be the node's).
func removedAll(s Snapshot, r PassReport) (rest Snapshot, ok bool) {
	gone := make(map[string]struct{}, len(r.Items))
	for _, it := range r.Items {
		if it.Outcome != OutcomeRemoved && it.Outcome != OutcomeGone {
			if it.Kind == ItemLog && it.Outcome == OutcomeSkipped && s.Logs == nil {
				continue // a log left alone, on a node whose logs are not planned
			}
			return Snapshot{}, false
		}
		switch it.Kind {
		case ItemContainer, ItemSandbox:
			gone[it.ID] = struct{}{}
		case ItemLog:
			if s.Logs != nil {
				return Snapshot{}, false
			}
		default:
			return Snapshot{}, false
		}
	}
	rest = s
	rest.Containers = slices.DeleteFunc(slices.Clone(s.Containers), func(c Container) bool { _, ok := gone[c.ID]; return ok })
	rest.Sandboxes = slices.DeleteFunc(slices.Clone(s.Sandboxes), func(sb Sandbox) bool { _, ok := gone[sb.ID]; return ok })
	return rest, true
}

// ownRemovals are the containers and sandboxes the container pass in
// flight (or the last one, until the next lists the node) plans to
// remove. Their stop and delete events come of its own calls (a stop
// before an UNKNOWN container's or a sandbox's removal, the removal
// itself) and say nothing the plan of its listing less its removals did
// not assume (removedAll), so the follower does not count them in
// streamGen. Any other event, of any type, is counted.
type ownRemovals struct {
	mu  sync.Mutex
	ids map[string]struct{}
}

// set makes p's container and sandbox removals the own ones, dropping
// any earlier.
func (o *ownRemovals) set(p Plan) {
	var ids map[string]struct{}
	if n := len(p.ContainerGC.Remove) + len(p.SandboxGC.Remove); n > 0 {
		ids = make(map[string]struct{}, n)
		for _, c := range p.ContainerGC.Remove {
			ids[c.ID] = struct{}{}
		}
		for _, sb := range p.SandboxGC.Remove {
			ids[sb.ID] = struct{}{}
		}
	}
	o.mu.Lock()
	o.ids = ids
	o.mu.Unlock()
}

// has reports whether ev is a stop or delete of one of the own removals.
func (o *ownRemovals) has(ev ContainerEvent) bool {
	if ev.Err != nil || (ev.Type != ContainerStoppedEvent && ev.Type != ContainerDeletedEvent) {
		return false
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	_, ok := o.ids[ev.ContainerID]
	return ok
}

// TimeStable reports whether planning s at any time from at on decides
// as plan does, given the same listing: every age the planner compares
// with a threshold has passed it already at at, so only the node can move
// the plan. The planner reads the clock in these places alone
// (planImages, planContainers): an image's age against MinAge (too
// young), its idle time against MaxAge (a plan with MaxAge on is never
// stable: idle times are spelled out in its details), a record of an
// image not in use last used at or after now (a clock step back), a dead
// container's age against the container MinAge, and the time stamped on
// the plan's events. The disk usage matters too: a triggered plan frees
// bytes counted from the available space, which a listing's comparison
// does not hold, so a triggered plan is not stable. A container pass's
// plan has no image decisions, and only its containers are checked. The
// dashboard keeps a shown plan on it (tui.keepable), and the scheduler
// skips a quiet container pass on it (RunPeriodic).
func TimeStable(s Snapshot, plan Plan, at time.Time) bool {
	if plan.Pass != PassContainers && !imagesTimeStable(s, plan, at) {
		return false
	}
	cutoff := at.Add(-plan.Policy.Container.MinAge)
	for _, c := range s.Containers {
		if c.State != ContainerRunning && c.CreatedAt.After(cutoff) {
			return false
		}
	}
	return true
}

// imagesTimeStable is TimeStable's part for the image plan.
func imagesTimeStable(s Snapshot, plan Plan, at time.Time) bool {
	ig := plan.ImageGC
	if ig.Triggered || len(ig.Events) > 0 || plan.Policy.Image.MaxAge != 0 {
		return false
	}
	for _, k := range ig.Keep {
		if k.Reason == KeepTooYoung {
			return false
		}
	}
	minAge := plan.Policy.Image.MinAge
	for _, r := range s.ImageRecords {
		if at.Sub(r.FirstDetected) < minAge || r.FirstDetected.After(at) {
			return false
		}
		// An image in use is last used when the listing was taken, and
		// kept whatever the clock says; one not in use is a candidate only
		// once last used before now.
		if r.LastUsed != nil && !r.LastUsed.Equal(s.TakenAt) && !r.LastUsed.Before(at) {
			return false
		}
	}
	return true
}
