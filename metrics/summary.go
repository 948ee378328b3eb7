package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/nodegc/nodegc/engine"
)

// Summary is one node's row of `nodegc fleet`: what the agent's passes
// left in the collector, as JSON. It holds counts and times only (no
// image, pod or container names), the same class of data as /metrics,
// and is bounded whatever the node holds.
type Summary struct {
	Node    string `json:"node"`
	Version string `json:"version"`
	// ImageFs is the image filesystem as last measured; nil before the
	// first snapshot.
	ImageFs *engine.FsStats `json:"imageFs,omitempty"`
	// UsagePercent is the kubelet's usage of ImageFs (-1 when unknown).
	UsagePercent int `json:"usagePercent"`
	// High and Low are the GC band (the thresholds in percent).
	High int `json:"high"`
	Low  int `json:"low"`
	// LastAttempt is the latest image GC attempt; nil before one.
	LastAttempt *SummaryAttempt `json:"lastAttempt,omitempty"`
	// DeadContainers counts the containers that are not running, as the
	// latest snapshot and pass left them (-1 when unknown).
	DeadContainers int `json:"deadContainers"`
	// Kept counts the images the latest image plan kept, by reason.
	Kept map[engine.ImageKeepReason]int `json:"kept,omitempty"`
	// Passes counts the real passes by result (ok, error, stopped).
	Passes map[string]uint64 `json:"passes,omitempty"`
	// Paused and InFlight are the scheduler's state.
	Paused   bool `json:"paused"`
	InFlight bool `json:"inFlight"`
	// PodSource is "off", "syncing", "synced" or "error".
	PodSource string `json:"podSource"`
	// EventStream is "unknown", "live" or "down".
	EventStream string `json:"eventStream"`
	// StartedAt is when the agent started.
	StartedAt time.Time `json:"startedAt"`
}

// SummaryAttempt is an image GC attempt: when, its result and reason (the
// nodegc_image_gc_attempts_total labels), and the bytes it freed.
type SummaryAttempt struct {
	At     time.Time `json:"at"`
	Result string    `json:"result"`
	Reason string    `json:"reason"`
	// Target is the bytes the attempt set out to free.
	Target int64 `json:"target"`
	// Freed is the runtime's sizes of the images removed; Measured the
	// image filesystem's gain (nil when not measured).
	Freed    int64  `json:"freed"`
	Measured *int64 `json:"measured,omitempty"`
}

// Summary returns the collector's state as a fleet row for node. Like a
// scrape, it reads no more than the passes left.
func (c *Collector) Summary(node string, started time.Time) Summary {
	var ps PodSourceState
	if c.o.PodSource != nil {
		ps = c.o.PodSource()
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	s := Summary{
		Node: node, Version: c.o.Version, UsagePercent: -1, DeadContainers: -1,
		High: c.o.Policy.Image.HighThresholdPercent, Low: c.o.Policy.Image.LowThresholdPercent,
		Paused: c.paused, InFlight: c.inFlight, StartedAt: started,
		PodSource: "off", EventStream: "unknown",
	}
	if c.fs != nil {
		fs := *c.fs
		s.ImageFs = &fs
		if u, err := engine.UsagePercent(fs); err == nil {
			s.UsagePercent = u
		}
	}
	if c.haveDead {
		s.DeadContainers = c.dead
	}
	if c.last != nil {
		s.LastAttempt = &SummaryAttempt{At: c.last.at, Result: c.last.result, Reason: c.last.reason,
			Target: c.last.target, Freed: c.last.runtimeFreed, Measured: c.last.statfsFreed}
	}
	if c.kept != nil {
		s.Kept = make(map[engine.ImageKeepReason]int, len(c.kept))
		for k, v := range c.kept {
			s.Kept[k] = v
		}
	}
	s.Passes = sumByLabel(c.vec.passes, "result")
	switch {
	case !ps.Enabled:
	case !ps.LastError.IsZero():
		s.PodSource = "error"
	case ps.Synced:
		s.PodSource = "synced"
	default:
		s.PodSource = "syncing"
	}
	if c.streamKnown {
		s.EventStream = "down"
		if c.stream {
			s.EventStream = "live"
		}
	}
	return s
}

// sumByLabel sums the counters of vec by the value of one label; nil when
// vec has no series.
func sumByLabel(vec *prometheus.CounterVec, label string) map[string]uint64 {
	ch := make(chan prometheus.Metric)
	go func() {
		vec.Collect(ch)
		close(ch)
	}()
	var sums map[string]uint64
	for m := range ch {
		var d dto.Metric
		if m.Write(&d) != nil {
			continue
		}
		for _, lp := range d.GetLabel() {
			if lp.GetName() == label {
				if sums == nil {
					sums = map[string]uint64{}
				}
				sums[lp.GetValue()] += uint64(d.GetCounter().GetValue())
			}
		}
	}
	return sums
}
