package engine

import (
	"testing"
	"time"
)

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
