package forecast

import (
	"fmt"
	"time"
)

// MinSpacing is the closest two readings of a History may be: the
// kubelet's eviction manager observes the filesystems every 10 s
// (evictionMonitoringPeriod, pkg/kubelet/kubelet.go).
const MinSpacing = 10 * time.Second

// MaxClockSkew is how far the wall clock may move against the monotonic
// clock between two readings of one process before the History reads it
// as a clock jump (an NTP step, a VM resumed) and starts afresh.
const MaxClockSkew = time.Minute

// Reading is one reading of the image filesystem.
type Reading struct {
	// At is when it was taken (wall clock).
	At time.Time
	// Capacity and Available are the image filesystem's, as the kubelet
	// reads them (available to an unprivileged writer).
	Capacity, Available int64
	// Reclaimable is what a reclaim-all pass could free now: the
	// runtime-reported sizes of the unused, unpinned, non-sandbox images
	// at least MinAge old (the eviction manager's DeleteUnusedImages).
	Reclaimable int64
	// Freed is what GC passes freed since the previous reading, measured
	// as the image filesystem's available bytes after minus before: the
	// steps down of the saw-tooth, which the fit adds back.
	Freed int64
	// Uptime is the process's monotonic clock at the reading; 0 when not
	// known (a reading loaded from disk). It is not saved.
	Uptime time.Duration
}

// available returns Available clamped to [0, Capacity], as the kubelet
// clamps it.
func (r Reading) available() int64 { return min(max(r.Available, 0), r.Capacity) }

// afterReclaim returns the bytes available once every reclaimable image
// is gone: what GC can make free at best.
func (r Reading) afterReclaim() int64 {
	return min(r.available()+max(r.Reclaimable, 0), r.Capacity)
}

// Tier is one band of a History's downsampling: readings older than Age
// (before the next tier's) are kept one per Step.
type Tier struct {
	Age  time.Duration
	Step time.Duration
}

// DefaultTiers keep the last 6 hours at MinSpacing, two days at one
// reading a minute and a week at one per 10 minutes: at most about 5,400
// readings, 270 kB on disk. Older readings are dropped.
var DefaultTiers = []Tier{
	{Age: 6 * time.Hour, Step: MinSpacing},
	{Age: 48 * time.Hour, Step: time.Minute},
	{Age: 7 * 24 * time.Hour, Step: 10 * time.Minute},
}

// compactEvery is how many readings a History adds between compactions.
const compactEvery = 64

// History is the image filesystem's readings, oldest first, bounded by
// its tiers. Its zero value is empty and uses DefaultTiers.
type History struct {
	readings []Reading
	// pendingFreed is the Freed of readings dropped for MinSpacing, given
	// to the next reading kept.
	pendingFreed int64
	added        int
	tiers        []Tier
}

// NewHistory returns a History of the readings (oldest first), as Decode
// returns them, downsampled by tiers (nil: DefaultTiers).
func NewHistory(readings []Reading, tiers []Tier) *History {
	h := &History{readings: readings, tiers: tiers}
	h.compact()
	return h
}

// Readings returns the readings, oldest first. The slice is the
// History's: do not change it.
func (h *History) Readings() []Reading { return h.readings }

// Len is the number of readings.
func (h *History) Len() int { return len(h.readings) }

// Add appends a reading. A reading within MinSpacing of the last is
// dropped (its Freed carried to the next). A reading that cannot be
// believed against the last starts the history afresh, and the returned
// error says why, for a warning: the clock went back, the wall clock
// jumped against the monotonic one, or the capacity changed (a resize,
// another filesystem). A reading without capacity is refused.
func (h *History) Add(r Reading) error {
	if r.Capacity <= 0 {
		return fmt.Errorf("reading at %s: image filesystem capacity %d: not recorded", r.At.Format(time.RFC3339), r.Capacity)
	}
	// Compare wall clocks: with the monotonic readings a process's times
	// carry, a step of the wall clock would not show.
	r.At = r.At.Round(0)
	var restart error
	if n := len(h.readings); n > 0 {
		last := h.readings[n-1]
		restart = discontinuity(last, r)
		if restart == nil && r.At.Sub(last.At) < MinSpacing {
			h.pendingFreed += r.Freed
			return nil
		}
	}
	if restart != nil {
		h.readings, h.pendingFreed = nil, 0
	}
	r.Freed += h.pendingFreed
	h.pendingFreed = 0
	h.readings = append(h.readings, r)
	if h.added++; h.added%compactEvery == 0 {
		h.compact()
	}
	return restart
}

// discontinuity says why next cannot follow last in one history, or nil.
func discontinuity(last, next Reading) error {
	at := func(t time.Time) string { return t.UTC().Format(time.RFC3339) }
	switch {
	case next.Capacity != last.Capacity:
		return fmt.Errorf("image filesystem capacity changed from %d to %d bytes: forecast history started afresh", last.Capacity, next.Capacity)
	case next.At.Before(last.At):
		return fmt.Errorf("clock went back from %s to %s: forecast history started afresh", at(last.At), at(next.At))
	case last.Uptime > 0 && next.Uptime > 0:
		wall, mono := next.At.Sub(last.At), next.Uptime-last.Uptime
		if d := wall - mono; d > MaxClockSkew || d < -MaxClockSkew {
			return fmt.Errorf("wall clock jumped by %s against the monotonic clock (%s to %s): forecast history started afresh", d.Round(time.Second), at(last.At), at(next.At))
		}
	}
	return nil
}

// compact downsamples the readings by the tiers, counting ages from the
// newest reading: in each tier one reading per Step is kept (the last
// of its step, carrying the Freed of those it replaces), and readings
// older than the last tier are dropped.
func (h *History) compact() {
	if len(h.readings) == 0 {
		return
	}
	tiers := h.tiers
	if tiers == nil {
		tiers = DefaultTiers
	}
	newest := h.readings[len(h.readings)-1].At
	out := h.readings[:0]
	var carry int64
	for i, r := range h.readings {
		step, keep := stepFor(newest.Sub(r.At), tiers)
		if !keep {
			continue
		}
		r.Freed += carry
		carry = 0
		if i+1 < len(h.readings) {
			next := h.readings[i+1]
			nstep, _ := stepFor(newest.Sub(next.At), tiers)
			if nstep == step && step > MinSpacing && bucket(next.At, step) == bucket(r.At, step) {
				carry = r.Freed // the next reading of this step replaces it
				continue
			}
		}
		out = append(out, r)
	}
	clear(h.readings[len(out):])
	h.readings = out
}

// stepFor returns the step of the tier an age falls in; keep is false
// past the last tier.
func stepFor(age time.Duration, tiers []Tier) (step time.Duration, keep bool) {
	for _, t := range tiers {
		if age <= t.Age {
			return t.Step, true
		}
	}
	return 0, false
}

// bucket numbers the step-long interval t falls in.
func bucket(t time.Time, step time.Duration) int64 { return t.UnixNano() / int64(step) }
