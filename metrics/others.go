package metrics

import "github.com/nodegc/nodegc/engine"

// Kinds of what vanished from the node: the kind label of
// nodegc_gc_removed_by_others_total and nodegc_shadow_items_total.
const (
	OtherImage     = "image"
	OtherContainer = "container"
)

// Outcomes of nodegc_shadow_items_total: how a shadow pass's plan and
// what others removed compare, item by item (engine.ShadowCounts).
const (
	ShadowAgreed     = "agreed"
	ShadowNodegcOnly = "nodegc_only"
	ShadowOtherOnly  = "other_only"
)

// otherKind is the kind label of an item kind.
func otherKind(k engine.ItemKind) string {
	if k == engine.ItemImage {
		return OtherImage
	}
	return OtherContainer
}

// countOthers adds what others removed, as the tracker settled it, and
// the shadow tally's growth since the last call. c.mu is held.
func (c *Collector) countOthers(settled []engine.Vanished) {
	for _, v := range settled {
		c.vec.othersTotal.WithLabelValues(otherKind(v.Kind)).Inc()
		if v.Kind == engine.ItemImage {
			c.vec.othersBytes.Add(float64(max(v.SizeBytes, 0)))
		}
	}
	_, t := c.others.Counts()
	add := func(kind string, now, was engine.ShadowCounts) {
		c.vec.shadowItems.WithLabelValues(kind, ShadowAgreed).Add(float64(now.Agreed - was.Agreed))
		c.vec.shadowItems.WithLabelValues(kind, ShadowNodegcOnly).Add(float64(now.NodegcOnly - was.NodegcOnly))
		c.vec.shadowItems.WithLabelValues(kind, ShadowOtherOnly).Add(float64(now.OtherOnly - was.OtherOnly))
	}
	add(OtherImage, t.Images, c.tally.Images)
	add(OtherContainer, t.Containers, c.tally.Containers)
	c.vec.shadowPasses.Add(float64(t.Passes - c.tally.Passes))
	c.tally = t
}

// Shadow returns the shadow tally and what others removed so far, as
// the collector counted them: the agent's log line of a shadow pass.
func (c *Collector) Shadow() (engine.RemovedByOthers, engine.ShadowTally) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.others.Counts()
}
