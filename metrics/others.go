package metrics

import "github.com/nodegc/nodegc/engine"

// Kinds of what vanished from the node: the kind label of
// nodegc_gc_removed_by_others_total.
const (
	OtherImage     = "image"
	OtherContainer = "container"
)

// others tells what nodegc's own passes removed from what vanished
// otherwise (the kubelet's GC, crictl, a person). It compares the images
// and dead containers of consecutive snapshots: what a snapshot no longer
// lists and no pass reported removed is another's. A pass's report may
// reach the collector after the next snapshot (the scheduler's notices
// are delivered apart from the engine's snapshots), so what vanished
// waits one more snapshot for a report to claim it before it counts.
type others struct {
	// images maps the images of the latest snapshot to their sizes;
	// dead holds its dead containers; seen is false before one.
	images map[string]int64
	dead   map[string]struct{}
	seen   bool
	// mine is what passes removed, by ID, with the snapshot generation
	// at the report; an ID a snapshot shows vanished is claimed here.
	mine map[string]uint64
	// pending vanished at the latest snapshot with no claim yet.
	pending map[string]vanished
	gen     uint64
}

// vanished is one item a snapshot no longer lists.
type vanished struct {
	kind string
	size int64
}

// newOthers returns an others with nothing seen.
func newOthers() others {
	return others{mine: map[string]uint64{}, pending: map[string]vanished{}}
}

// claim records the items a pass removed: nodegc's, never another's.
func (o *others) claim(r engine.PassReport) {
	for _, it := range r.Items {
		if it.Outcome != engine.OutcomeRemoved || (it.Kind != engine.ItemImage && it.Kind != engine.ItemContainer) {
			continue
		}
		if _, ok := o.pending[it.ID]; ok {
			delete(o.pending, it.ID)
			continue
		}
		o.mine[it.ID] = o.gen
	}
}

// observe compares s with the previous snapshot and returns what others
// removed: the items that vanished at the previous snapshot and no report
// has claimed since.
func (o *others) observe(s engine.Snapshot) (settled []vanished) {
	for _, v := range o.pending {
		settled = append(settled, v)
	}
	clear(o.pending)
	images := make(map[string]int64, len(s.Images))
	for _, img := range s.Images {
		images[img.ID] = img.SizeBytes
	}
	dead := map[string]struct{}{}
	for _, ct := range s.Containers {
		if ct.State != engine.ContainerRunning {
			dead[ct.ID] = struct{}{}
		}
	}
	if o.seen {
		for id, size := range o.images {
			if _, ok := images[id]; !ok {
				o.vanish(id, vanished{kind: OtherImage, size: size})
			}
		}
		for id := range o.dead {
			if _, ok := dead[id]; !ok {
				o.vanish(id, vanished{kind: OtherContainer})
			}
		}
	}
	// A claim no snapshot matched within two is of an item the snapshots
	// never listed (created and removed between them): forget it.
	for id, g := range o.mine {
		if g+1 < o.gen {
			delete(o.mine, id)
		}
	}
	o.images, o.dead, o.seen = images, dead, true
	o.gen++
	return settled
}

// vanish notes that id vanished: nodegc's when a pass claimed it, else
// pending until the next snapshot.
func (o *others) vanish(id string, v vanished) {
	if _, ok := o.mine[id]; ok {
		delete(o.mine, id)
		return
	}
	o.pending[id] = v
}
