// Keeping the shown plan across a re-list that found the node as shown:
// the event stream's safety net lists the node every SafetyInterval, and
// on an idle node that listing reads exactly as the last one. Planning it
// again would give the same plan, so the re-list costs the listing and a
// comparison, not a plan and the panes' rows.

package tui

import (
	"reflect"
	"time"

	"github.com/nodegc/nodegc/engine"
)

// shown is what a keeping re-list compares its listing with: the snapshot
// on screen and the plan made from it. Both are only read.
type shown struct {
	snap engine.Snapshot
	plan engine.Plan
}

// keepable reports whether plan, made from old, is the plan of the
// listing cur at at: cur reads as old does (sameListing) and no decision
// of the plan moves between the plan's evaluation and at (timeStable).
// cfg is the configured policy: while it has a MaxAge, the engine's
// effective policy may still turn it on, and idle times are spelled out
// in removals' details, so such a plan is never kept.
func keepable(old engine.Snapshot, plan engine.Plan, cfg engine.Policy, cur engine.Snapshot, at time.Time) bool {
	return cfg.Image.MaxAge == 0 && !at.Before(plan.EvaluatedAt) &&
		timeStable(cur, plan, at) && sameListing(old, cur)
}

// timeStable reports whether planning s at any time from at on decides
// as plan does, given the same listing: every age the planner compares
// with a threshold has passed it already at at, so only the node can move
// the plan. The planner reads the clock in these places alone (engine's
// planImages, planContainers): an image's age against MinAge (too young),
// its idle time against MaxAge (not checked here: keepable needs MaxAge
// off), a record of an image not in use last used at or after now (a
// clock step back), a dead
// container's age against the container MinAge, and the time stamped on
// the plan's events. The disk usage matters too: a triggered plan frees
// bytes counted from the available space, which the digest does not
// hold, so a triggered plan is not kept.
func timeStable(s engine.Snapshot, plan engine.Plan, at time.Time) bool {
	ig := plan.ImageGC
	if ig.Triggered || len(ig.Events) > 0 || plan.Policy.Image.MaxAge != 0 {
		return false
	}
	for _, k := range ig.Keep {
		if k.Reason == engine.KeepTooYoung {
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
	cutoff := at.Add(-plan.Policy.Container.MinAge)
	for _, c := range s.Containers {
		if c.State != engine.ContainerRunning && c.CreatedAt.After(cutoff) {
			return false
		}
	}
	return true
}

// sameListing reports whether cur holds what old holds, but for when it
// was taken and the last-used times the listing itself stamps on the
// images in use (an image in use is last used at each listing, which
// moves no decision: every one in use is kept). The digest goes first:
// it tells most changes apart without walking the lists again.
func sameListing(old, cur engine.Snapshot) bool {
	if Digest(old) != Digest(cur) || len(old.ImageRecords) != len(cur.ImageRecords) {
		return false
	}
	for i, a := range old.ImageRecords {
		b := cur.ImageRecords[i]
		if a.ID != b.ID || !a.FirstDetected.Equal(b.FirstDetected) || !sameUse(a.LastUsed, b.LastUsed, old.TakenAt, cur.TakenAt) {
			return false
		}
	}
	o, c := old, cur
	o.TakenAt, c.TakenAt = time.Time{}, time.Time{}
	o.ImageRecords, c.ImageRecords = nil, nil
	return reflect.DeepEqual(o, c)
}

// sameUse compares two records' last-used times: equal, or each the time
// of its own listing (in use at both).
func sameUse(a, b *time.Time, atA, atB time.Time) bool {
	switch {
	case a == nil || b == nil:
		return a == nil && b == nil
	case a.Equal(*b):
		return true
	}
	return a.Equal(atA) && b.Equal(atB)
}
