package engine

import (
	"testing"
	"time"
)

// TestShadowWindow: an image a shadow pass keeps planning is agreed when
// another removes it within the window (the kubelet's image GC period
// plus the agent's), nodegc-only once per window it outlives, and
// nodegc-only when a pass stops planning it while it is still there.
func TestShadowWindow(t *testing.T) {
	o := NewOthersTracker(time.Minute, time.Minute) // image window: 5m + 1m
	snap := func(ids ...string) {
		var s Snapshot
		for _, id := range ids {
			s.Images = append(s.Images, Image{ID: id, SizeBytes: 1})
		}
		o.Snapshot(s)
	}
	pass := func(at time.Duration, ids ...string) {
		r := PassReport{Kind: PassImages, DryRun: true, Shadow: true, FinishedAt: execNow.Add(at)}
		for _, id := range ids {
			r.Items = append(r.Items, ItemResult{Kind: ItemImage, ID: id, Outcome: OutcomePlanned})
		}
		o.Report(r)
	}
	snap("a", "b", "c")
	pass(0, "a", "b", "c")
	pass(5*time.Minute, "a", "b", "c") // within the window: nothing judged
	if _, tl := o.Counts(); tl.Images != (ShadowCounts{}) {
		t.Fatalf("judged within the window: %+v", tl.Images)
	}
	snap("b", "c")                       // another removed a, 5 minutes after it was first planned
	pass(6*time.Minute+time.Second, "b") // b outlived its window; c is no longer planned
	snap("b", "c")
	if _, tl := o.Counts(); tl.Images != (ShadowCounts{Agreed: 1, NodegcOnly: 2}) {
		t.Errorf("tally %+v, want a agreed, b (past its window) and c (no longer planned) nodegc-only", tl.Images)
	}
	pass(8*time.Minute, "b") // b's new window began at 6m1s
	if _, tl := o.Counts(); tl.Images.NodegcOnly != 2 {
		t.Errorf("b counted again within its new window: %+v", tl.Images)
	}
}
