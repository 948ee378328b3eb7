package forecast

import (
	"time"

	"github.com/nodegc/nodegc/engine"
)

// ReadingOf returns the reading of a snapshot under a policy: the image
// filesystem, and as Reclaimable what the reclaim-all plan (the eviction
// manager's DeleteUnusedImages: unused, unpinned, non-sandbox images at
// least MinAge old) would free, plus the unused images it keeps only
// for being younger than MinAge: they become removable within MinAge (2
// minutes by default), far inside any horizon worth forecasting, and
// leaving them out made every pull, and every agent start (each image
// is first detected then), read as a step toward the eviction line. It
// returns the plan too: its DiskReserve resolves the eviction threshold
// (OptionsFor). Freed and Uptime are the caller's.
func ReadingOf(s engine.Snapshot, p engine.Policy) (Reading, engine.Plan) {
	plan := engine.PlanPass(s, p, engine.PassReclaimAll, s.TakenAt)
	reclaimable := plan.ImageGC.BytesFreed
	young := make(map[string]bool)
	for _, k := range plan.ImageGC.Keep {
		if k.Reason == engine.KeepTooYoung {
			young[k.ID] = true
		}
	}
	for _, img := range s.Images {
		if young[img.ID] && img.SizeBytes > 0 {
			reclaimable = engine.AddBytes(reclaimable, img.SizeBytes)
		}
	}
	return Reading{At: s.TakenAt, Capacity: s.ImageFs.CapacityBytes, Available: s.ImageFs.AvailableBytes, Reclaimable: reclaimable}, plan
}

// FreedBy returns what a real pass freed on the image filesystem: the
// available bytes after minus before (the runtime's estimate when not
// measured), 0 for a dry run, a pass that removed nothing, or a negative
// measure (pulls during the pass).
func FreedBy(r engine.PassReport) int64 {
	if r.DryRun || len(r.Items) == 0 {
		return 0
	}
	freed := r.EstimatedBytesFreed
	if r.MeasuredBytesFreed != nil {
		freed = *r.MeasuredBytesFreed
	}
	return max(freed, 0)
}

// OptionsFor returns the lines of a policy: the image GC high threshold
// (none when periodic image GC is off: high 100 without MaxAge) and
// imagefs.available's eviction threshold as a plan's DiskReserve
// resolved it against the capacity (the kubelet's evictionHard, default
// 15%, pkg/kubelet/eviction/defaults_linux.go).
func OptionsFor(p engine.Policy, d engine.DiskReserve, window time.Duration) Options {
	o := Options{HighThresholdPercent: p.Image.HighThresholdPercent, Window: window}
	if p.Image.PeriodicDisabled() {
		o.HighThresholdPercent = 0
	}
	for _, e := range d.Eviction {
		if e.Signal == "imagefs.available" && !e.Inodes {
			o.EvictionBytes = e.ThresholdAmount
		}
	}
	return o
}
