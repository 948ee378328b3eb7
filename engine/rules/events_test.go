package rules

import (
	"testing"
	"time"

	"github.com/nodegc/nodegc/engine/internal/nodetest"
	"github.com/nodegc/nodegc/engine/model"
)

// TestFormatSize pins the kubelet's formatSize (image_gc_manager.go
// v1.36), which its FreeDiskSpaceFailed message quotes.
func TestFormatSize(t *testing.T) {
	tests := []struct {
		name string
		n    int64
		want string
	}{
		{name: "below 1 KiB is whole bytes", n: 1023, want: "1023 B"},
		{name: "KiB with one decimal", n: 1536, want: "1.5 KiB"},
		{name: "MiB with one decimal", n: 256 << 20, want: "256.0 MiB"},
		{name: "GiB with one decimal", n: 20<<30 + 400<<20, want: "20.4 GiB"},
		{name: "TiB from 1 TiB up", n: 3 << 40, want: "3.0 TiB"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := formatSize(tt.n); got != tt.want {
				t.Errorf("formatSize(%d) = %q, want %q", tt.n, got, tt.want)
			}
		})
	}
}

// TestFreeDiskSpaceFailedAfterTheMaxAgePass: the kubelet measures the
// filesystem again after freeOldImages, and its freeSpace counts only
// what the space pass freed (image_gc_manager.go v1.36 GarbageCollect), so
// the message quotes the usage after the MaxAge pass and the space pass's
// bytes alone.
func TestFreeDiskSpaceFailedAfterTheMaxAgePass(t *testing.T) {
	s := nodetest.BaseSnapshot()
	s.ImageFs = model.FsStats{CapacityBytes: 1000, AvailableBytes: 50} // usage 95%
	s.Images = []model.Image{{ID: "idle", SizeBytes: 20}, {ID: "recent", SizeBytes: 30}}
	s.ImageRecords = []model.ImageRecord{nodetest.Used("idle", 10*time.Hour), nodetest.Used("recent", time.Hour)}
	p := model.ImagePolicy{HighThresholdPercent: 85, LowThresholdPercent: 80, MinAge: time.Minute, MaxAge: 5 * time.Hour}
	got := planImageGC(s, p, nodetest.T0)
	// MaxAge frees 20: available 70, usage 93%. The space pass frees 30
	// of the 130 still needed.
	want := "Insufficient free disk space on the node's image filesystem (93% of 1000 B used). " +
		"Failed to free sufficient space by deleting unused images (freed 30 bytes). " +
		"Investigate disk usage, as it could be used by active images, logs, volumes, or other data."
	if len(got.Events) != 1 || got.Events[0].Reason != model.EventFreeDiskSpaceFailed || got.Events[0].Message != want {
		t.Errorf("events = %+v\nwant one FreeDiskSpaceFailed: %q", got.Events, want)
	}
}
