package forecast

import (
	"math"
	"testing"
	"time"
)

// fill is readings every minute for d of a 100 GiB filesystem whose
// available bytes start at start and fall by perMin each minute; every
// gcEvery minutes (0: never) a pass frees gcBytes.
func fill(d time.Duration, start, perMin int64, gcEvery int, gcBytes int64) []Reading {
	var rs []Reading
	avail := start
	for m := 0; time.Duration(m)*time.Minute <= d; m++ {
		r := reading(time.Duration(m)*time.Minute, avail)
		if gcEvery > 0 && m > 0 && m%gcEvery == 0 {
			r.Available += gcBytes
			avail += gcBytes
			r.Freed = gcBytes
		}
		rs = append(rs, r)
		avail -= perMin
	}
	return rs
}

func TestPredictGCThreshold(t *testing.T) {
	o := Options{HighThresholdPercent: 85}
	// The kubelet (image_gc_manager.go): usagePercent := 100 -
	// int(available*100/capacity), GC when usagePercent >= High. With
	// High 85 that is available below 16% of capacity: 16 GiB here.
	tests := []struct {
		name   string
		rs     []Reading
		status Status
		est    time.Duration // for StatusFilling
	}{
		{"a steady fill of 100 MiB a minute, 4 GiB above the line", fill(time.Hour, 80*gib, 100<<20, 0, 0), StatusFilling, 0},
		{"the same fill with GC passes freeing 1 GiB every 5 minutes", fill(time.Hour, 80*gib, 100<<20, 5, gib), StatusFilling, 0},
		{"a node that does not change", fill(time.Hour, 40*gib, 0, 0, 0), StatusNotFilling, 0},
		{"a node emptying", fill(time.Hour, 40*gib, -(10 << 20), 0, 0), StatusNotFilling, 0},
		{"15 minutes of history", fill(15*time.Minute, 40*gib, 100<<20, 0, 0), StatusNotEnoughHistory, 0},
		{"available just below 16% is crossed", []Reading{reading(0, 16*gib-1)}, StatusCrossed, 0},
		{"available at 16% exactly is not", fill(time.Hour, 16*gib, 0, 0, 0), StatusNotFilling, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := PredictLine(tt.rs, LineGCThreshold, o)
			if f.Status != tt.status {
				t.Fatalf("status %s, want %s (%+v)", f.Status, tt.status, f)
			}
			if tt.status != StatusFilling {
				return
			}
			last := tt.rs[len(tt.rs)-1]
			want := float64(last.Available-16*gib) / (100 << 20) * 60
			if math.Abs(f.Estimate-want) > 1 {
				t.Errorf("estimate %.0f s, want %.0f s", f.Estimate, want)
			}
			if !(f.Lower <= f.Estimate && f.Estimate <= f.Upper) {
				t.Errorf("bounds [%.0f, %.0f] do not hold the estimate %.0f", f.Lower, f.Upper, f.Estimate)
			}
		})
	}
}

// TestPredictEviction: what GC cannot remove grows by 50 MiB a minute
// (images that stay in use) while GC keeps usage in its band; the line
// is 15 GiB available (imagefs.available 15% of 100 GiB).
func TestPredictEviction(t *testing.T) {
	var rs []Reading
	for m := range 120 {
		r := reading(time.Duration(m)*time.Minute, 18*gib)
		r.Reclaimable = 40*gib - int64(m)*(50<<20)
		rs = append(rs, r)
	}
	f := PredictLine(rs, LineEviction, Options{EvictionBytes: 15 * gib})
	last := rs[len(rs)-1]
	want := float64(last.Available+last.Reclaimable-15*gib) / (50 << 20) * 60
	if f.Status != StatusFilling || math.Abs(f.Estimate-want) > 1 {
		t.Fatalf("%s in %.0f s, want filling in %.0f s", f.Status, f.Estimate, want)
	}
	if g := PredictLine(rs, LineEviction, Options{}); g.Status != StatusNoLine {
		t.Errorf("without an eviction threshold: %s, want %s", g.Status, StatusNoLine)
	}
}

// TestPredictBurstyBounds: pulls of 2 GiB every 40 minutes are the same
// mean rate as a steady fill, but the bounds are wider.
func TestPredictBurstyBounds(t *testing.T) {
	steady := fill(3*time.Hour, 90*gib, 2*gib/40, 0, 0)
	bursty := fill(3*time.Hour, 90*gib, 0, 0, 0)
	avail := 90 * gib
	for i := range bursty {
		if i%40 == 39 {
			avail -= 2 * gib
		}
		bursty[i].Available = avail
	}
	s, b := PredictLine(steady, LineGCThreshold, Options{HighThresholdPercent: 85}), PredictLine(bursty, LineGCThreshold, Options{HighThresholdPercent: 85})
	if b.Status != StatusFilling {
		t.Fatalf("bursty: %s", b.Status)
	}
	if b.Upper-b.Lower <= 2*(s.Upper-s.Lower) {
		t.Errorf("bursty bounds [%.0f, %.0f] not wider than steady [%.0f, %.0f]", b.Lower, b.Upper, s.Lower, s.Upper)
	}
}

func TestWarner(t *testing.T) {
	h := 3600.0
	filling := func(est float64) Forecast { return Forecast{Status: StatusFilling, Estimate: est} }
	steps := []struct {
		name string
		f    Forecast
		want bool
	}{
		{"a day away: quiet", filling(24 * h), false},
		{"3 hours away: warns", filling(3 * h), true},
		{"2 hours away: already warned", filling(2 * h), false},
		{"back to 5 hours: near the horizon, quiet", filling(5 * h), false},
		{"3 hours again: no repeat, it never left", filling(3 * h), false},
		{"not filling: leaves the horizon", Forecast{Status: StatusNotFilling, Estimate: math.Inf(1)}, false},
		{"crossed: warns again", Forecast{Status: StatusCrossed}, true},
		{"not enough history: leaves", Forecast{Status: StatusNotEnoughHistory, Estimate: math.NaN()}, false},
		{"9 hours away: quiet", filling(9 * h), false},
		{"4 hours exactly: warns", filling(4 * h), true},
	}
	var w Warner
	for _, s := range steps {
		if got := w.Warn(s.f); got != s.want {
			t.Errorf("%s: Warn = %v, want %v", s.name, got, s.want)
		}
	}
}
