package metrics

import (
	"context"
	"slices"
	"testing"

	"github.com/nodegc/nodegc/engine"
)

// shadowPass plans a shadow pass of kind as the scheduler in shadow mode
// does (a dry run marked Shadow) and feeds its report to c.
func shadowPass(t *testing.T, e *engine.Engine, c *Collector, kind engine.PassKind) engine.PassReport {
	t.Helper()
	r, err := e.DryRun(context.Background(), kind)
	if err != nil {
		t.Fatal(err)
	}
	r.Shadow = true
	c.ObserveReport(r)
	return r
}

// TestShadowJudgesAnotherRemovalsPassByPass: on a simulated node past the
// high threshold, a shadow image pass plans images; another (the
// kubelet's GC, here the CRI client) removes two of them and one the
// plan kept. Those two are agreed, the kept one other_only, and the
// first plan's others that the next shadow pass no longer plans (the
// space was freed otherwise) nodegc_only; every one of the three counts
// as removed by others. The next shadow pass comes
// between the snapshot that misses them and the one that settles them:
// each is judged against the plan in force when it vanished.
func TestShadowJudgesAnotherRemovalsPassByPass(t *testing.T) {
	var c *Collector
	e, client, _ := simEngine(t, &c)
	ctx := context.Background()
	r := shadowPass(t, e, c, engine.PassImages)
	planned := r.Plan.ImageGC.Remove
	var kept string
	for _, k := range r.Plan.ImageGC.Keep {
		if k.Reason == engine.KeepNotNeeded {
			kept = k.ID
			break
		}
	}
	if len(planned) < 3 || kept == "" {
		t.Fatalf("the shadow pass plans %d images and keeps none as not needed (%q): too few for the test", len(planned), kept)
	}
	for _, id := range []string{planned[0].ID, planned[1].ID, kept} {
		if err := client.RemoveImage(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	r2 := shadowPass(t, e, c, engine.PassImages) // its snapshot misses the three
	dropped := 0
	for _, rm := range planned[2:] {
		if !slices.ContainsFunc(r2.Plan.ImageGC.Remove, func(x engine.ImageRemoval) bool { return x.ID == rm.ID }) {
			dropped++
		}
	}
	if dropped == 0 {
		t.Fatalf("the second shadow pass plans all of the first's %d images left: the test proves nothing of nodegc_only", len(planned)-2)
	}
	if _, err := e.Snapshot(ctx); err != nil { // the snapshot that settles them
		t.Fatal(err)
	}
	img := func(outcome string) map[string]string {
		return map[string]string{"kind": OtherImage, "outcome": outcome}
	}
	expect(t, c, "nodegc_shadow_items_total", img(ShadowAgreed), 2)
	expect(t, c, "nodegc_shadow_items_total", img(ShadowNodegcOnly), float64(dropped))
	expect(t, c, "nodegc_shadow_items_total", img(ShadowOtherOnly), 1)
	expect(t, c, "nodegc_shadow_items_total", map[string]string{"kind": OtherContainer, "outcome": ShadowAgreed}, 0)
	expect(t, c, "nodegc_shadow_passes_total", nil, 2)
	expect(t, c, "nodegc_gc_removed_by_others_total", map[string]string{"kind": OtherImage}, 3)
	if got := total(t, c, "nodegc_image_gc_deletions_total", nil); got != 0 {
		t.Errorf("nodegc_image_gc_deletions_total = %v after shadow passes, want 0", got)
	}
}

// TestNoShadowVerdictBeforeAShadowPass: without shadow passes (an agent
// that removes), what others remove is counted as theirs and judged by no
// shadow series.
func TestNoShadowVerdictBeforeAShadowPass(t *testing.T) {
	c := New(Options{Policy: engine.DefaultPolicy()})
	c.ObserveSnapshot(engine.Snapshot{Images: []engine.Image{{ID: "a", SizeBytes: 10}}})
	c.ObserveSnapshot(engine.Snapshot{})
	c.ObserveSnapshot(engine.Snapshot{})
	expect(t, c, "nodegc_gc_removed_by_others_total", map[string]string{"kind": OtherImage}, 1)
	expect(t, c, "nodegc_shadow_items_total", map[string]string{"kind": OtherImage, "outcome": ShadowOtherOnly}, 0)
}
