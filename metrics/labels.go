package metrics

import "github.com/nodegc/nodegc/engine"

// PassLabels returns a real pass's trigger (periodic, forced,
// reclaim-all) and result (ok, error, stopped, skipped), as
// nodegc_gc_passes_total labels it: the agent's NodeGC object says the
// same words as its metrics.
func PassLabels(r engine.PassReport) (trigger, result string) {
	return passTrigger(r), passResult(r)
}

// ImageAttempt returns the result and reason of the pass's image GC
// attempt, as nodegc_image_gc_attempts_total labels them; ok is false
// for a pass that makes none (a container pass).
func ImageAttempt(r engine.PassReport) (result, reason string, ok bool) {
	return classify(r)
}
