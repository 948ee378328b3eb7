package rules

import (
	"math"
	"slices"
	"testing"
	"time"

	"github.com/nodegc/nodegc/engine/internal/nodetest"
	"github.com/nodegc/nodegc/engine/model"
)

// Issue 8 item 4: an image whose runtime-reported size is impossible (a
// wrapped unsigned size reads negative) is kept with a reason, and no sum
// of sizes wraps; before, the freed-bytes sum went negative and the space
// pass removed every eligible image.
func TestImpossibleSizes(t *testing.T) {
	p := model.ImagePolicy{HighThresholdPercent: 85, LowThresholdPercent: 80, MinAge: 2 * time.Minute}
	tests := []struct {
		name       string
		images     []model.Image
		lastUsed   map[string]time.Duration
		wantRemove []string
		wantKeep   map[string]model.ImageKeepReason
	}{
		{
			name: "a negative size is kept and the pass stops at the target",
			images: []model.Image{
				{ID: "wrapped", SizeBytes: -1 << 62}, {ID: "b", SizeBytes: 100}, {ID: "c", SizeBytes: 100}, {ID: "d", SizeBytes: 100},
			},
			lastUsed:   map[string]time.Duration{"wrapped": 4 * time.Hour, "b": 3 * time.Hour, "c": 2 * time.Hour, "d": time.Hour},
			wantRemove: []string{"b:space", "c:space"},
			wantKeep:   map[string]model.ImageKeepReason{"wrapped": model.KeepBadSize, "d": model.KeepNotNeeded},
		},
		{
			name:       "sizes whose sum overflows stop the pass instead of wrapping",
			images:     []model.Image{{ID: "h1", SizeBytes: math.MaxInt64 - 10}, {ID: "h2", SizeBytes: math.MaxInt64 - 10}, {ID: "c", SizeBytes: 100}},
			lastUsed:   map[string]time.Duration{"h1": 3 * time.Hour, "h2": 2 * time.Hour, "c": time.Hour},
			wantRemove: []string{"h1:space"},
			wantKeep:   map[string]model.ImageKeepReason{"h2": model.KeepNotNeeded, "c": model.KeepNotNeeded},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := nodetest.BaseSnapshot()
			s.Images = tt.images
			for _, im := range tt.images {
				s.ImageRecords = append(s.ImageRecords, nodetest.Used(im.ID, tt.lastUsed[im.ID]))
			}
			s.ImageFs = nodetest.Fs(1000, 50) // 95% used; bytesToFree = 200 - 50 = 150
			plan := planImageGC(s, p, nodetest.T0)
			if got := nodetest.ImageRemovals(plan); !slices.Equal(got, tt.wantRemove) {
				t.Errorf("remove %v, want %v", got, tt.wantRemove)
			}
			if got := nodetest.ImageKeeps(plan); len(tt.wantKeep) > 0 {
				for id, want := range tt.wantKeep {
					if got[id] != want {
						t.Errorf("keep %s = %q, want %q", id, got[id], want)
					}
				}
			}
			if plan.BytesFreed < 0 {
				t.Errorf("bytes freed %d wrapped negative", plan.BytesFreed)
			}
		})
	}
}

func TestAddBytesSaturates(t *testing.T) {
	for _, tt := range []struct{ a, b, want int64 }{
		{1, 2, 3},
		{math.MaxInt64, 1, math.MaxInt64},
		{math.MinInt64, -1, math.MinInt64},
		{math.MaxInt64, math.MinInt64, -1},
	} {
		if got := AddBytes(tt.a, tt.b); got != tt.want {
			t.Errorf("AddBytes(%d, %d) = %d, want %d", tt.a, tt.b, got, tt.want)
		}
	}
}
