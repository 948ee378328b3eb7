package engine

import "time"

// RemovedByOthers counts what vanished from the node that no pass of this
// engine removed: the kubelet's GC, crictl, a person. Only images and
// dead containers are followed (what the kubelet's GC removes).
type RemovedByOthers struct {
	// Images, Containers and ImageBytes (the runtime's sizes of those
	// images) count since the counting began.
	Images     int64 `json:"images"`
	Containers int64 `json:"containers"`
	ImageBytes int64 `json:"imageBytes"`
	// LastPassImages and LastPassContainers count those since the latest
	// pass ended (real or shadow): what others removed meanwhile.
	LastPassImages     int64 `json:"lastPassImages"`
	LastPassContainers int64 `json:"lastPassContainers"`
}

// ShadowCounts judges the removals of one kind in shadow mode, item by
// item (OthersTracker): Agreed, one the shadow passes would have removed
// that another removed within the window; NodegcOnly, one they would
// have removed that another kept past the window, or until a shadow pass
// no longer planned it; OtherOnly, one another removed that the latest
// shadow pass would have kept.
type ShadowCounts struct {
	Agreed     int64 `json:"agreed"`
	NodegcOnly int64 `json:"nodegcOnly"`
	OtherOnly  int64 `json:"otherOnly"`
}

// WouldRemove is what the shadow passes would have removed and were
// judged: Agreed plus NodegcOnly.
func (c ShadowCounts) WouldRemove() int64 { return c.Agreed + c.NodegcOnly }

// OthersRemoved is what others removed: Agreed plus OtherOnly.
func (c ShadowCounts) OthersRemoved() int64 { return c.Agreed + c.OtherOnly }

// ShadowTally is the shadow comparison so far, by kind; zero until the
// first shadow pass of a kind.
type ShadowTally struct {
	Images     ShadowCounts `json:"images"`
	Containers ShadowCounts `json:"containers"`
	// Passes counts the shadow passes planned.
	Passes int64 `json:"passes"`
}

// Total is the tally of both kinds.
func (t ShadowTally) Total() ShadowCounts {
	return ShadowCounts{Agreed: t.Images.Agreed + t.Containers.Agreed,
		NodegcOnly: t.Images.NodegcOnly + t.Containers.NodegcOnly,
		OtherOnly:  t.Images.OtherOnly + t.Containers.OtherOnly}
}

// Vanished is one item another removed, as OthersTracker settles it.
type Vanished struct {
	Kind      ItemKind
	ID        string
	SizeBytes int64
}

// OthersTracker tells what this engine's passes removed from what
// vanished otherwise, and judges the shadow passes against the latter.
// It compares the images and dead containers of consecutive snapshots:
// what a snapshot no longer lists and no pass reported removed is
// another's. A pass's report may come after the next snapshot (the
// scheduler's notices are delivered apart from the engine's snapshots),
// so what vanished waits one more snapshot for a report to claim it
// before it counts.
//
// A shadow pass (PassReport.Shadow) removes nothing: the items it would
// have removed are the prediction of their kind. An item that vanishes
// while predicted is agreed. One still there at a shadow pass that no
// longer plans it (another freed the space otherwise), or predicted
// without a break for longer than its kind's window (the kubelet's
// period and the agent's: another had its chance and kept it), is
// nodegc-only, and a new window starts if it is still planned. A
// vanished item the prediction did not hold is other-only. An item is
// judged against the prediction in force when a snapshot first misses
// it, not when it settles, so that a shadow pass planned in between
// (which cannot list it any more) does not take its verdict.
//
// It is not safe for concurrent use.
type OthersTracker struct {
	// images maps the images of the latest snapshot to their sizes;
	// dead holds its dead containers; seen is false before one.
	images map[string]int64
	dead   map[string]struct{}
	seen   bool
	// mine is what passes removed, by ID, with the snapshot generation
	// at the report; an ID a snapshot shows vanished is claimed here.
	mine map[string]uint64
	// pending vanished at the latest snapshot with no claim yet.
	pending map[string]pendingVanish
	gen     uint64
	// predicted is, by kind, what the latest shadow pass of that kind
	// would have removed and has not vanished yet, with when its window
	// began; nil before one.
	predicted map[ItemKind]map[string]time.Time
	// window is how long an item may stay predicted before another's
	// keeping it counts as a disagreement, by kind (ShadowWindows).
	window map[ItemKind]time.Duration
	counts RemovedByOthers
	tally  ShadowTally
}

// pendingVanish is one item a snapshot no longer lists, not yet settled.
type pendingVanish struct {
	Vanished
	// judged is whether a shadow prediction of its kind was in force
	// when it vanished, and predicted whether it held the item.
	judged, predicted bool
}

// NewOthersTracker returns a tracker with nothing seen, judging shadow
// passes with the windows of ShadowWindows(imagePeriod, containerPeriod).
func NewOthersTracker(imagePeriod, containerPeriod time.Duration) *OthersTracker {
	return &OthersTracker{mine: map[string]uint64{}, pending: map[string]pendingVanish{},
		predicted: map[ItemKind]map[string]time.Time{}, window: ShadowWindows(imagePeriod, containerPeriod)}
}

// ShadowWindows are the windows in which another's removal of what a
// shadow pass planned counts as agreement, by kind: the kubelet's GC
// period of the kind (its next pass comes within it) plus the agent's
// (the snapshot that sees the removal comes within that); zero periods
// are the kubelet's.
func ShadowWindows(imagePeriod, containerPeriod time.Duration) map[ItemKind]time.Duration {
	if imagePeriod <= 0 {
		imagePeriod = ImageGCPeriod
	}
	if containerPeriod <= 0 {
		containerPeriod = ContainerGCPeriod
	}
	return map[ItemKind]time.Duration{ItemImage: ImageGCPeriod + imagePeriod, ItemContainer: ContainerGCPeriod + containerPeriod}
}

// Counts returns what others removed and the shadow tally so far.
func (o *OthersTracker) Counts() (RemovedByOthers, ShadowTally) { return o.counts, o.tally }

// Report records a finished pass: the items a real pass removed are
// claimed (nodegc's, never another's); a shadow pass's items settle the
// previous prediction of their kinds and become the next. Other dry runs
// (previews) are ignored.
func (o *OthersTracker) Report(r PassReport) {
	switch {
	case r.Shadow && r.Error == "":
		o.predict(r)
	case r.Shadow:
		return // planned nothing: the prediction in force stays
	case r.DryRun:
		return
	default:
		for _, it := range r.Items {
			if it.Outcome != OutcomeRemoved || (it.Kind != ItemImage && it.Kind != ItemContainer) {
				continue
			}
			if _, ok := o.pending[it.ID]; ok {
				delete(o.pending, it.ID)
				continue
			}
			o.mine[it.ID] = o.gen
		}
	}
	o.counts.LastPassImages, o.counts.LastPassContainers = 0, 0
}

// predict replaces the prediction of each kind the shadow pass r
// planned with r's: what the previous held that r no longer plans, or
// held past its window, another kept (nodegc-only).
func (o *OthersTracker) predict(r PassReport) {
	o.tally.Passes++
	now := r.FinishedAt
	for _, kind := range []ItemKind{ItemImage, ItemContainer} {
		if !passCovers(r.Kind, kind) {
			continue
		}
		prev, next := o.predicted[kind], map[string]time.Time{}
		for _, it := range r.Items {
			if it.Kind != kind {
				continue
			}
			since, ok := prev[it.ID]
			switch {
			case !ok:
				since = now
			case now.Sub(since) > o.window[kind]:
				o.shadowCounts(kind).NodegcOnly++
				since = now
			}
			next[it.ID] = since
		}
		for id := range prev {
			if _, ok := next[id]; !ok {
				o.shadowCounts(kind).NodegcOnly++
			}
		}
		o.predicted[kind] = next
	}
}

// passCovers reports whether a pass of the kind plans removals of items
// of kind k (images or containers).
func passCovers(pass PassKind, k ItemKind) bool {
	switch pass {
	case PassFull, PassReclaimAll:
		return true
	case PassImages:
		return k == ItemImage
	case PassContainers:
		return k == ItemContainer
	}
	return false
}

// shadowCounts is the tally of kind.
func (o *OthersTracker) shadowCounts(kind ItemKind) *ShadowCounts {
	if kind == ItemImage {
		return &o.tally.Images
	}
	return &o.tally.Containers
}

// Snapshot compares s with the previous snapshot and returns what others
// removed: the items that vanished at the previous snapshot and no report
// has claimed since.
func (o *OthersTracker) Snapshot(s Snapshot) (settled []Vanished) {
	for _, v := range o.pending {
		settled = append(settled, v.Vanished)
		o.settle(v)
	}
	clear(o.pending)
	images := make(map[string]int64, len(s.Images))
	for _, img := range s.Images {
		images[img.ID] = img.SizeBytes
	}
	dead := map[string]struct{}{}
	for _, ct := range s.Containers {
		if ct.State != ContainerRunning {
			dead[ct.ID] = struct{}{}
		}
	}
	if o.seen {
		for id, size := range o.images {
			if _, ok := images[id]; !ok {
				o.vanish(Vanished{Kind: ItemImage, ID: id, SizeBytes: size})
			}
		}
		for id := range o.dead {
			if _, ok := dead[id]; !ok {
				o.vanish(Vanished{Kind: ItemContainer, ID: id})
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

// vanish notes that v vanished: nodegc's when a pass claimed it, else
// pending until the next snapshot, judged now against the prediction.
func (o *OthersTracker) vanish(v Vanished) {
	if _, ok := o.mine[v.ID]; ok {
		delete(o.mine, v.ID)
		return
	}
	p := pendingVanish{Vanished: v}
	if pred, ok := o.predicted[v.Kind]; ok {
		_, p.predicted = pred[v.ID]
		p.judged = true
		delete(pred, v.ID)
	}
	o.pending[v.ID] = p
}

// settle counts v as another's, and its shadow verdict.
func (o *OthersTracker) settle(v pendingVanish) {
	if v.Kind == ItemImage {
		o.counts.Images++
		o.counts.LastPassImages++
		o.counts.ImageBytes += max(v.SizeBytes, 0)
	} else {
		o.counts.Containers++
		o.counts.LastPassContainers++
	}
	switch {
	case !v.judged:
	case v.predicted:
		o.shadowCounts(v.Kind).Agreed++
	default:
		o.shadowCounts(v.Kind).OtherOnly++
	}
}
