package engine

import (
	"testing"
	"time"
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
	s := baseSnapshot()
	s.ImageFs = FsStats{CapacityBytes: 1000, AvailableBytes: 50} // usage 95%
	s.Images = []Image{{ID: "idle", SizeBytes: 20}, {ID: "recent", SizeBytes: 30}}
	s.ImageRecords = []ImageRecord{used("idle", 10*time.Hour), used("recent", time.Hour)}
	p := ImagePolicy{HighThresholdPercent: 85, LowThresholdPercent: 80, MinAge: time.Minute, MaxAge: 5 * time.Hour}
	got := planImageGC(s, p, t0)
	// MaxAge frees 20: available 70, usage 93%. The space pass frees 30
	// of the 130 still needed.
	want := "Insufficient free disk space on the node's image filesystem (93% of 1000 B used). " +
		"Failed to free sufficient space by deleting unused images (freed 30 bytes). " +
		"Investigate disk usage, as it could be used by active images, logs, volumes, or other data."
	if len(got.Events) != 1 || got.Events[0].Reason != EventFreeDiskSpaceFailed || got.Events[0].Message != want {
		t.Errorf("events = %+v\nwant one FreeDiskSpaceFailed: %q", got.Events, want)
	}
}

// TestImageGCFailedMessage: the kubelet's ImageGCFailed event carries the
// error its image GarbageCollect returned (kubelet.go v1.36
// StartGarbageCollection; image_gc_manager.go GarbageCollect, freeOldImages
// and freeSpace).
func TestImageGCFailedMessage(t *testing.T) {
	fdsf := Event{Reason: EventFreeDiskSpaceFailed, Message: "Insufficient free disk space ..."}
	plan := Plan{Policy: Policy{Image: ImagePolicy{MaxAge: 3 * time.Hour}}, ImageGC: ImagePlan{BytesToFree: 100}}
	item := func(reason ImageRemoveReason, o Outcome, size int64, err string) ItemResult {
		return ItemResult{Kind: ItemImage, Reason: string(reason), Outcome: o, SizeBytes: size, Error: err}
	}
	tests := []struct {
		name string
		r    PassReport
		err  error
		want string
	}{
		{
			name: "a pass-level error is returned as is",
			err:  errTest("list images: unavailable"),
			want: "list images: unavailable",
		},
		{
			name: "FreeDiskSpaceFailed: its message, which GarbageCollect returns",
			r:    PassReport{Plan: plan, Events: []Event{fdsf}},
			want: fdsf.Message,
		},
		{
			name: "InvalidDiskCapacity: its message",
			r:    PassReport{Plan: plan, Events: []Event{{Reason: EventInvalidDiskCapacity, Message: "invalid capacity 0 on image filesystem"}}},
			want: "invalid capacity 0 on image filesystem",
		},
		{
			name: "space-pass deletion errors: freeSpace's error, counting only what it freed, before FreeDiskSpaceFailed",
			r: PassReport{Plan: plan, Events: []Event{fdsf}, Items: []ItemResult{
				item(RemoveForAge, OutcomeRemoved, 500, ""),
				item(RemoveForSpace, OutcomeRemoved, 30, ""),
				item(RemoveForSpace, OutcomeFailed, 40, "boom"),
				item(RemoveForSpace, OutcomeFailed, 40, "bang"),
			}},
			want: "wanted to free 100 bytes, but freed 30 bytes space with errors in image deletion: [boom, bang]",
		},
		{
			name: "MaxAge-pass deletion errors come first: freeOldImages returns before the space pass",
			r: PassReport{Plan: plan, Events: []Event{fdsf}, Items: []ItemResult{
				item(RemoveForAge, OutcomeFailed, 10, "boom"),
				item(RemoveForSpace, OutcomeFailed, 40, "bang"),
			}},
			want: "wanted to free images older than 3h0m0s, encountered errors in image deletion: boom",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := imageGCFailedMessage(tt.r, tt.err); got != tt.want {
				t.Errorf("got  %q\nwant %q", got, tt.want)
			}
		})
	}
}

type errTest string

func (e errTest) Error() string { return string(e) }
