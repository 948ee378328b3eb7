package rules

import (
	"errors"
	"math"
	"math/big"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/nodegc/nodegc/engine/internal/nodetest"
	"github.com/nodegc/nodegc/engine/model"
)

func TestUsagePercent(t *testing.T) {
	tests := []struct {
		name    string
		fs      model.FsStats
		want    int
		wantErr bool
	}{
		{name: "half full is 50%", fs: nodetest.Fs(1000, 500), want: 50},
		{name: "84.1% used rounds up to 85%", fs: nodetest.Fs(1000, 159), want: 85},
		{name: "exactly 84% used is 84%", fs: nodetest.Fs(1000, 160), want: 84},
		{name: "a sliver used rounds up to 1%", fs: nodetest.Fs(1000, 999), want: 1},
		{name: "empty is 0%", fs: nodetest.Fs(1000, 1000), want: 0},
		{name: "full is 100%", fs: nodetest.Fs(1000, 0), want: 100},
		{name: "available above capacity is clamped to 0%", fs: nodetest.Fs(1000, 5000), want: 0},
		{name: "negative available counts as full", fs: nodetest.Fs(1000, -5), want: 100},
		{name: "capacity 2^62 does not overflow", fs: nodetest.Fs(1<<62, 1<<61), want: 50},
		{name: "max int64 capacity does not overflow and rounds up", fs: nodetest.Fs(math.MaxInt64, math.MaxInt64/4), want: 76},
		{name: "capacity zero is an error", fs: nodetest.Fs(0, 0), wantErr: true},
		{name: "negative capacity is an error", fs: nodetest.Fs(-1, 0), wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := UsagePercent(tt.fs)
			if tt.wantErr {
				if !errors.Is(err, ErrInvalidCapacity) {
					t.Fatalf("UsagePercent(%+v) error = %v, want ErrInvalidCapacity", tt.fs, err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("UsagePercent(%+v) = %d, %v; want %d", tt.fs, got, err, tt.want)
			}
		})
	}
}

func TestBytesToFree(t *testing.T) {
	tests := []struct {
		name                string
		capacity, available int64
		low                 int
		want                int64
	}{
		{name: "target is capacity times (100-low)% minus available", capacity: 1000, available: 100, low: 80, want: 100},
		{name: "the target rounds down", capacity: 999, available: 100, low: 80, want: 99},
		{name: "it may be negative", capacity: 1000, available: 601, low: 40, want: -1},
		{name: "capacity 2^62 does not overflow", capacity: 1 << 62, available: 0, low: 0, want: 1 << 62},
		{name: "max int64 capacity at low 1 does not overflow", capacity: math.MaxInt64, available: 7, low: 1, want: exactTarget(math.MaxInt64, 1) - 7},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := bytesToFree(tt.capacity, tt.available, tt.low)
			if got != tt.want {
				t.Fatalf("bytesToFree(%d, %d, %d) = %d, want %d", tt.capacity, tt.available, tt.low, got, tt.want)
			}
		})
	}
}

// exactTarget computes floor(capacity*(100-low)/100) with big-number
// maths, independently of the planner's.
func exactTarget(capacity int64, low int) int64 {
	n := new(big.Int).Mul(big.NewInt(capacity), big.NewInt(int64(100-low)))
	return n.Div(n, big.NewInt(100)).Int64()
}

func TestPlanImages(t *testing.T) {
	defaultPolicy := model.ImagePolicy{HighThresholdPercent: 85, LowThresholdPercent: 80, MinAge: 2 * time.Minute}
	tests := []struct {
		name       string
		fs         model.FsStats
		policy     *model.ImagePolicy
		images     []model.Image
		records    []model.ImageRecord
		containers []model.Container
		sandboxes  []model.Sandbox
		pauseRefs  []string
		// wantRemove is "id:reason" in execution order.
		wantRemove []string
		wantKeep   map[string]model.ImageKeepReason
		wantEvents string
		check      func(t *testing.T, p model.ImagePlan)
	}{
		{
			name:       "usage below the high threshold removes nothing and keeps candidates as not needed",
			fs:         nodetest.Fs(1000, 500),
			images:     []model.Image{{ID: "a", SizeBytes: 100}},
			records:    []model.ImageRecord{nodetest.Old("a")},
			wantRemove: []string{},
			wantKeep:   map[string]model.ImageKeepReason{"a": model.KeepNotNeeded},
			check: func(t *testing.T, p model.ImagePlan) {
				if p.Triggered || p.UsagePercent != 50 || p.CutLine != 0 {
					t.Errorf("triggered=%v usage=%d cut=%d, want false 50 0", p.Triggered, p.UsagePercent, p.CutLine)
				}
				if d := p.Keep[0].Detail; !strings.Contains(d, "usage 50% below the high threshold 85%") {
					t.Errorf("detail = %q", d)
				}
			},
		},
		{
			name:       "84.1% used rounds up to 85% and triggers the space pass",
			fs:         nodetest.Fs(1000, 159),
			images:     []model.Image{{ID: "a", SizeBytes: 100}},
			records:    []model.ImageRecord{nodetest.Old("a")},
			wantRemove: []string{"a:space"},
			wantKeep:   map[string]model.ImageKeepReason{},
			check: func(t *testing.T, p model.ImagePlan) {
				if !p.Triggered || p.UsagePercent != 85 || p.BytesToFree != 41 || p.BytesFreed != 100 {
					t.Errorf("triggered=%v usage=%d toFree=%d freed=%d, want true 85 41 100", p.Triggered, p.UsagePercent, p.BytesToFree, p.BytesFreed)
				}
			},
		},
		{
			name:       "84% used does not trigger",
			fs:         nodetest.Fs(1000, 160),
			images:     []model.Image{{ID: "a", SizeBytes: 100}},
			records:    []model.ImageRecord{nodetest.Old("a")},
			wantRemove: []string{},
			wantKeep:   map[string]model.ImageKeepReason{"a": model.KeepNotNeeded},
		},
		{
			name:   "the space pass stops once freed reaches the rounded-down target",
			fs:     nodetest.Fs(999, 100), // usage 90%, target floor(199.8) - 100 = 99
			images: []model.Image{{ID: "a", SizeBytes: 50}, {ID: "b", SizeBytes: 49}, {ID: "c", SizeBytes: 10}},
			records: []model.ImageRecord{
				nodetest.Used("a", 3*time.Hour), nodetest.Used("b", 2*time.Hour), nodetest.Used("c", time.Hour),
			},
			wantRemove: []string{"a:space", "b:space"},
			wantKeep:   map[string]model.ImageKeepReason{"c": model.KeepNotNeeded},
			check: func(t *testing.T, p model.ImagePlan) {
				if p.BytesToFree != 99 || p.BytesFreed != 99 || p.CutLine != 2 {
					t.Errorf("toFree=%d freed=%d cut=%d, want 99 99 2", p.BytesToFree, p.BytesFreed, p.CutLine)
				}
				if !reflect.DeepEqual(p.Order, []string{"a", "b", "c"}) {
					t.Errorf("order = %v", p.Order)
				}
				if d := p.Keep[0].Detail; !strings.Contains(d, "cut line") {
					t.Errorf("detail = %q, want it to mention the cut line", d)
				}
			},
		},
		{
			name:       "a target of zero still removes one image",
			fs:         nodetest.Fs(1000, 500),
			policy:     &model.ImagePolicy{HighThresholdPercent: 50, LowThresholdPercent: 50},
			images:     []model.Image{{ID: "a", SizeBytes: 10}, {ID: "b", SizeBytes: 10}},
			records:    []model.ImageRecord{nodetest.Used("a", 2*time.Hour), nodetest.Used("b", time.Hour)},
			wantRemove: []string{"a:space"},
			wantKeep:   map[string]model.ImageKeepReason{"b": model.KeepNotNeeded},
			check: func(t *testing.T, p model.ImagePlan) {
				if p.BytesToFree != 0 {
					t.Errorf("toFree = %d, want 0", p.BytesToFree)
				}
			},
		},
		{
			name:       "a negative target still removes one image",
			fs:         nodetest.Fs(1000, 601), // usage 40%, target 600 - 601 = -1
			policy:     &model.ImagePolicy{HighThresholdPercent: 40, LowThresholdPercent: 40},
			images:     []model.Image{{ID: "a", SizeBytes: 10}, {ID: "b", SizeBytes: 10}},
			records:    []model.ImageRecord{nodetest.Used("a", 2*time.Hour), nodetest.Used("b", time.Hour)},
			wantRemove: []string{"a:space"},
			wantKeep:   map[string]model.ImageKeepReason{"b": model.KeepNotNeeded},
			check: func(t *testing.T, p model.ImagePlan) {
				if p.BytesToFree != -1 || p.Events == nil || len(p.Events) != 0 {
					t.Errorf("toFree = %d events=%v, want -1 and none", p.BytesToFree, p.Events)
				}
			},
		},
		{
			// Issue 9: the plan said bytesToFree -100 here. The kubelet
			// computes amountToFree only once usage >= high
			// (image_gc_manager.go GarbageCollect); nothing is to be freed
			// below it.
			name:       "below the high threshold bytesToFree is 0, not the negative formula",
			fs:         nodetest.Fs(1000, 300), // usage 70% < high 85%; floor(1000*20/100) - 300 = -100
			images:     []model.Image{{ID: "a", SizeBytes: 10}},
			records:    []model.ImageRecord{nodetest.Used("a", 2*time.Hour)},
			wantRemove: []string{},
			wantKeep:   map[string]model.ImageKeepReason{"a": model.KeepNotNeeded},
			check: func(t *testing.T, p model.ImagePlan) {
				if p.Triggered || p.BytesToFree != 0 {
					t.Errorf("triggered=%v toFree=%d, want false and 0", p.Triggered, p.BytesToFree)
				}
			},
		},
		{
			name:       "capacity zero gives InvalidDiskCapacity and no space pass",
			fs:         nodetest.Fs(0, 0),
			policy:     &model.ImagePolicy{HighThresholdPercent: 0},
			images:     []model.Image{{ID: "a", SizeBytes: 10}},
			records:    []model.ImageRecord{nodetest.Old("a")},
			wantRemove: []string{},
			wantKeep:   map[string]model.ImageKeepReason{"a": model.KeepNotNeeded},
			wantEvents: model.EventInvalidDiskCapacity,
			check: func(t *testing.T, p model.ImagePlan) {
				if p.Triggered {
					t.Error("triggered with capacity 0")
				}
				if m := p.Events[0].Message; m != "invalid capacity 0 on image filesystem" || !p.Events[0].Warning {
					t.Errorf("event = %+v", p.Events[0])
				}
			},
		},
		{
			name:       "negative capacity gives InvalidDiskCapacity",
			fs:         nodetest.Fs(-10, 0),
			images:     []model.Image{{ID: "a", SizeBytes: 10}},
			records:    []model.ImageRecord{nodetest.Old("a")},
			wantRemove: []string{},
			wantKeep:   map[string]model.ImageKeepReason{"a": model.KeepNotNeeded},
			wantEvents: model.EventInvalidDiskCapacity,
		},
		{
			name:       "capacity zero still runs the MaxAge pass, which the kubelet runs before it reads the filesystem",
			fs:         nodetest.Fs(0, 0),
			policy:     &model.ImagePolicy{HighThresholdPercent: 85, LowThresholdPercent: 80, MinAge: time.Minute, MaxAge: time.Hour},
			images:     []model.Image{{ID: "a", SizeBytes: 10}},
			records:    []model.ImageRecord{nodetest.Used("a", 2*time.Hour)},
			wantRemove: []string{"a:age"},
			wantKeep:   map[string]model.ImageKeepReason{},
			wantEvents: model.EventInvalidDiskCapacity,
		},
		{
			name:       "available above capacity is clamped",
			fs:         nodetest.Fs(1000, 2000),
			policy:     &model.ImagePolicy{HighThresholdPercent: 0, LowThresholdPercent: 0},
			images:     []model.Image{{ID: "a", SizeBytes: 10}, {ID: "b", SizeBytes: 10}},
			records:    []model.ImageRecord{nodetest.Used("a", 2*time.Hour), nodetest.Used("b", time.Hour)},
			wantRemove: []string{"a:space"},
			wantKeep:   map[string]model.ImageKeepReason{"b": model.KeepNotNeeded},
			check: func(t *testing.T, p model.ImagePlan) {
				if p.UsagePercent != 0 || p.BytesToFree != 0 {
					t.Errorf("usage=%d toFree=%d, want 0 0 (available clamped to 1000)", p.UsagePercent, p.BytesToFree)
				}
			},
		},
		{
			name:       "an image exactly MinAge old is eligible",
			fs:         nodetest.Fs(1000, 100),
			images:     []model.Image{{ID: "a", SizeBytes: 10}},
			records:    []model.ImageRecord{{ID: "a", FirstDetected: nodetest.Ago(2 * time.Minute)}},
			wantRemove: []string{"a:space"},
			wantKeep:   map[string]model.ImageKeepReason{},
			wantEvents: model.EventFreeDiskSpaceFailed,
		},
		{
			name:       "an image just under MinAge is too young and says when it becomes eligible",
			fs:         nodetest.Fs(1000, 100),
			images:     []model.Image{{ID: "a", SizeBytes: 10}},
			records:    []model.ImageRecord{{ID: "a", FirstDetected: nodetest.Ago(50 * time.Second)}},
			wantRemove: []string{},
			wantKeep:   map[string]model.ImageKeepReason{"a": model.KeepTooYoung},
			wantEvents: model.EventFreeDiskSpaceFailed,
			check: func(t *testing.T, p model.ImagePlan) {
				k := p.Keep[0]
				if k.EligibleAt == nil || !k.EligibleAt.Equal(nodetest.T0.Add(70*time.Second)) || k.Detail != "eligible in 1m10s" {
					t.Errorf("keep = %+v, want eligible at t0+70s, detail \"eligible in 1m10s\"", k)
				}
			},
		},
		{
			name:       "an image without a record was first detected now and is too young",
			fs:         nodetest.Fs(1000, 100),
			images:     []model.Image{{ID: "a", SizeBytes: 10}},
			wantRemove: []string{},
			wantKeep:   map[string]model.ImageKeepReason{"a": model.KeepTooYoung},
			wantEvents: model.EventFreeDiskSpaceFailed,
		},
		{
			name:       "an image without a record is eligible at once with MinAge 0",
			fs:         nodetest.Fs(1000, 100),
			policy:     &model.ImagePolicy{HighThresholdPercent: 85, LowThresholdPercent: 80},
			images:     []model.Image{{ID: "a", SizeBytes: 1000}},
			wantRemove: []string{"a:space"},
			wantKeep:   map[string]model.ImageKeepReason{},
		},
		{
			name:   "LRU order: never used first, then oldest lastUsed, then firstDetected, then ID",
			fs:     nodetest.Fs(1000, 0),
			policy: &model.ImagePolicy{HighThresholdPercent: 85, LowThresholdPercent: 80},
			images: []model.Image{
				{ID: "used-1h", SizeBytes: 1}, {ID: "used-3h-b", SizeBytes: 1}, {ID: "used-3h-a", SizeBytes: 1},
				{ID: "never-new", SizeBytes: 1}, {ID: "never-old", SizeBytes: 1}, {ID: "used-3h-older", SizeBytes: 1},
			},
			records: []model.ImageRecord{
				nodetest.Used("used-1h", time.Hour), nodetest.Used("used-3h-b", 3*time.Hour), nodetest.Used("used-3h-a", 3*time.Hour),
				{ID: "never-new", FirstDetected: nodetest.Ago(time.Hour)}, {ID: "never-old", FirstDetected: nodetest.Ago(5 * time.Hour)},
				{ID: "used-3h-older", FirstDetected: nodetest.Ago(48 * time.Hour), LastUsed: nodetest.At(3 * time.Hour)},
			},
			wantRemove: []string{"never-old:space", "never-new:space", "used-3h-older:space", "used-3h-a:space", "used-3h-b:space", "used-1h:space"},
			wantKeep:   map[string]model.ImageKeepReason{},
			wantEvents: model.EventFreeDiskSpaceFailed,
		},
		{
			// image_gc_manager.go v1.36 GarbageCollect: the message quotes
			// usagePercent, formatSize(capacity) and the bytes freed.
			name:       "FreeDiskSpaceFailed carries kubelet 1.36's message when candidates run out",
			fs:         nodetest.Fs(1000, 100), // usage 90%, target 100
			images:     []model.Image{{ID: "a", SizeBytes: 30}},
			records:    []model.ImageRecord{nodetest.Old("a")},
			wantRemove: []string{"a:space"},
			wantKeep:   map[string]model.ImageKeepReason{},
			wantEvents: model.EventFreeDiskSpaceFailed,
			check: func(t *testing.T, p model.ImagePlan) {
				want := "Insufficient free disk space on the node's image filesystem (90% of 1000 B used). " +
					"Failed to free sufficient space by deleting unused images (freed 30 bytes). " +
					"Investigate disk usage, as it could be used by active images, logs, volumes, or other data."
				if p.Events[0].Message != want || !p.Events[0].Warning {
					t.Errorf("event = %+v, want message %q", p.Events[0], want)
				}
			},
		},
		{
			name:       "a pinned image is kept",
			fs:         nodetest.Fs(1000, 0),
			images:     []model.Image{{ID: "a", SizeBytes: 10, Pinned: true}},
			records:    []model.ImageRecord{nodetest.Old("a")},
			wantRemove: []string{},
			wantKeep:   map[string]model.ImageKeepReason{"a": model.KeepPinned},
			wantEvents: model.EventFreeDiskSpaceFailed,
		},
		{
			name:       "an image used by an exited container is in use and names it",
			fs:         nodetest.Fs(1000, 0),
			images:     []model.Image{{ID: "sha256:app", SizeBytes: 10}},
			records:    []model.ImageRecord{nodetest.Old("sha256:app")},
			containers: []model.Container{nodetest.Dead("c1", "uid-1", "web", 0, time.Hour)},
			sandboxes:  []model.Sandbox{{ID: "sb-uid-1", PodUID: "uid-1", PodName: "web-0", PodNamespace: "shop", State: model.SandboxNotReady}},
			wantRemove: []string{},
			wantKeep:   map[string]model.ImageKeepReason{"sha256:app": model.KeepInUse},
			wantEvents: model.EventFreeDiskSpaceFailed,
			check: func(t *testing.T, p model.ImagePlan) {
				if d := p.Keep[0].Detail; d != "in use by shop/web-0/web (exited)" {
					t.Errorf("detail = %q", d)
				}
				if !reflect.DeepEqual(p.Order, []string{"sha256:app"}) {
					t.Errorf("order = %v", p.Order)
				}
			},
		},
		{
			name:   "an in-use image ranks last and names a running user first, by pod UID without a sandbox",
			fs:     nodetest.Fs(1000, 0),
			images: []model.Image{{ID: "sha256:app", SizeBytes: 10}, {ID: "b", SizeBytes: 1}},
			records: []model.ImageRecord{
				{ID: "sha256:app", FirstDetected: nodetest.Ago(48 * time.Hour)}, nodetest.Used("b", time.Hour),
			},
			containers: []model.Container{
				nodetest.Dead("c1", "uid-1", "web", 0, time.Hour),
				{ID: "c2", PodUID: "uid-2", Name: "api", ImageID: "sha256:app", State: model.ContainerRunning, CreatedAt: nodetest.Ago(time.Hour)},
			},
			wantRemove: []string{"b:space"},
			wantKeep:   map[string]model.ImageKeepReason{"sha256:app": model.KeepInUse},
			wantEvents: model.EventFreeDiskSpaceFailed,
			check: func(t *testing.T, p model.ImagePlan) {
				if d := p.Keep[0].Detail; d != "in use by uid-2/api (running) and 1 more" {
					t.Errorf("detail = %q", d)
				}
				if !reflect.DeepEqual(p.Order, []string{"b", "sha256:app"}) {
					t.Errorf("order = %v", p.Order)
				}
			},
		},
		{
			name:       "a container with no imageId uses the image named by its imageRef",
			fs:         nodetest.Fs(1000, 0),
			images:     []model.Image{{ID: "sha256:app", SizeBytes: 10}},
			records:    []model.ImageRecord{nodetest.Old("sha256:app")},
			containers: []model.Container{{ID: "c1", PodUID: "u", Name: "x", ImageRef: "sha256:app", State: model.ContainerExited, CreatedAt: nodetest.Ago(time.Hour)}},
			wantRemove: []string{},
			wantKeep:   map[string]model.ImageKeepReason{"sha256:app": model.KeepInUse},
			wantEvents: model.EventFreeDiskSpaceFailed,
		},
		{
			name:   "nodegc is stricter than the kubelet: a container naming an image by tag or digest uses it",
			fs:     nodetest.Fs(1000, 0),
			images: []model.Image{{ID: "sha256:a", RepoTags: []string{"nginx:1.27"}, SizeBytes: 10}, {ID: "sha256:b", RepoDigests: []string{"redis@sha256:dd"}, SizeBytes: 10}},
			records: []model.ImageRecord{
				nodetest.Old("sha256:a"), nodetest.Old("sha256:b"),
			},
			containers: []model.Container{
				{ID: "c1", PodUID: "u", Name: "x", ImageID: "nginx:1.27", State: model.ContainerExited, CreatedAt: nodetest.Ago(time.Hour)},
				{ID: "c2", PodUID: "u", Name: "y", ImageID: "sha256:other", ImageRef: "redis@sha256:dd", State: model.ContainerExited, CreatedAt: nodetest.Ago(time.Hour)},
			},
			wantRemove: []string{},
			wantKeep:   map[string]model.ImageKeepReason{"sha256:a": model.KeepInUse, "sha256:b": model.KeepInUse},
			wantEvents: model.EventFreeDiskSpaceFailed,
		},
		{
			// Issue 9: the unpinned sandbox image was reported as
			// "pinned", which the runtime had not said.
			name:       "the sandbox image is kept by tag even unpinned, and not called pinned",
			fs:         nodetest.Fs(1000, 0),
			images:     []model.Image{{ID: "sha256:pause", RepoTags: []string{"registry.k8s.io/pause:3.9"}, SizeBytes: 10}},
			records:    []model.ImageRecord{nodetest.Old("sha256:pause")},
			pauseRefs:  []string{"registry.k8s.io/pause:3.9"},
			wantRemove: []string{},
			wantKeep:   map[string]model.ImageKeepReason{"sha256:pause": model.KeepSandboxImage},
			wantEvents: model.EventFreeDiskSpaceFailed,
			check: func(t *testing.T, p model.ImagePlan) {
				if want := "sandbox image (not pinned by the runtime)"; p.Keep[0].Detail != want {
					t.Errorf("detail = %q, want %q", p.Keep[0].Detail, want)
				}
			},
		},
		{
			name:       "a sandbox image the runtime pins is kept as pinned and says both",
			fs:         nodetest.Fs(1000, 0),
			images:     []model.Image{{ID: "sha256:pause", RepoTags: []string{"registry.k8s.io/pause:3.9"}, SizeBytes: 10, Pinned: true}},
			records:    []model.ImageRecord{nodetest.Old("sha256:pause")},
			pauseRefs:  []string{"registry.k8s.io/pause:3.9"},
			wantRemove: []string{},
			wantKeep:   map[string]model.ImageKeepReason{"sha256:pause": model.KeepPinned},
			wantEvents: model.EventFreeDiskSpaceFailed,
			check: func(t *testing.T, p model.ImagePlan) {
				if want := "sandbox image, pinned by the runtime"; p.Keep[0].Detail != want {
					t.Errorf("detail = %q, want %q", p.Keep[0].Detail, want)
				}
			},
		},
		{
			name:       "the sandbox image is kept by ID",
			fs:         nodetest.Fs(1000, 0),
			images:     []model.Image{{ID: "sha256:pause", SizeBytes: 10}, {ID: "other", SizeBytes: 10}},
			records:    []model.ImageRecord{nodetest.Old("sha256:pause"), nodetest.Old("other")},
			pauseRefs:  []string{"sha256:pause"},
			wantRemove: []string{"other:space"},
			wantKeep:   map[string]model.ImageKeepReason{"sha256:pause": model.KeepSandboxImage},
			wantEvents: model.EventFreeDiskSpaceFailed,
		},
		{
			name:       "MaxAge removes an image idle longer than MaxAge even below the high threshold",
			fs:         nodetest.Fs(1000, 900),
			policy:     &model.ImagePolicy{HighThresholdPercent: 85, LowThresholdPercent: 80, MinAge: time.Minute, MaxAge: 2 * time.Hour},
			images:     []model.Image{{ID: "idle", SizeBytes: 10}, {ID: "fresh", SizeBytes: 10}},
			records:    []model.ImageRecord{nodetest.Used("idle", 3*time.Hour), nodetest.Used("fresh", time.Hour)},
			wantRemove: []string{"idle:age"},
			wantKeep:   map[string]model.ImageKeepReason{"fresh": model.KeepNotNeeded},
			check: func(t *testing.T, p model.ImagePlan) {
				if d := p.Remove[0].Detail; d != "idle 3h0m0s > MaxAge 2h0m0s" {
					t.Errorf("detail = %q", d)
				}
				if p.CutLine != 0 {
					t.Errorf("cut line = %d, want 0 (nothing removed for space)", p.CutLine)
				}
			},
		},
		{
			name:       "an image idle exactly MaxAge stays",
			fs:         nodetest.Fs(1000, 900),
			policy:     &model.ImagePolicy{HighThresholdPercent: 85, LowThresholdPercent: 80, MinAge: time.Minute, MaxAge: 2 * time.Hour},
			images:     []model.Image{{ID: "a", SizeBytes: 10}},
			records:    []model.ImageRecord{nodetest.Used("a", 2*time.Hour)},
			wantRemove: []string{},
			wantKeep:   map[string]model.ImageKeepReason{"a": model.KeepNotNeeded},
		},
		{
			name:   "a never-used image is idle since first detected, not forever",
			fs:     nodetest.Fs(1000, 900),
			policy: &model.ImagePolicy{HighThresholdPercent: 85, LowThresholdPercent: 80, MinAge: time.Minute, MaxAge: 2 * time.Hour},
			images: []model.Image{{ID: "pulled-1h", SizeBytes: 10}, {ID: "pulled-3h", SizeBytes: 10}},
			records: []model.ImageRecord{
				{ID: "pulled-1h", FirstDetected: nodetest.Ago(time.Hour)}, {ID: "pulled-3h", FirstDetected: nodetest.Ago(3 * time.Hour)},
			},
			wantRemove: []string{"pulled-3h:age"},
			wantKeep:   map[string]model.ImageKeepReason{"pulled-1h": model.KeepNotNeeded},
		},
		{
			name:   "the MaxAge pass runs first and its bytes count toward the space target",
			fs:     nodetest.Fs(1000, 100), // usage 90%, target 100
			policy: &model.ImagePolicy{HighThresholdPercent: 85, LowThresholdPercent: 80, MaxAge: 5 * time.Hour},
			images: []model.Image{{ID: "lru", SizeBytes: 60}, {ID: "ancient", SizeBytes: 30}, {ID: "next", SizeBytes: 80}, {ID: "last", SizeBytes: 80}},
			records: []model.ImageRecord{
				{ID: "lru", FirstDetected: nodetest.Ago(4 * time.Hour)}, // never used, idle 4h
				nodetest.Used("ancient", 6*time.Hour), nodetest.Used("next", 3*time.Hour), nodetest.Used("last", 2*time.Hour),
			},
			// available after the age pass: 130 -> usage 87% still >= 85%.
			wantRemove: []string{"ancient:age", "lru:space", "next:space"},
			wantKeep:   map[string]model.ImageKeepReason{"last": model.KeepNotNeeded},
			check: func(t *testing.T, p model.ImagePlan) {
				if p.BytesFreed != 170 || p.CutLine != 3 || len(p.Events) != 0 {
					t.Errorf("freed=%d cut=%d events=%v, want 170 3 none", p.BytesFreed, p.CutLine, p.Events)
				}
				if !reflect.DeepEqual(p.Order, []string{"lru", "ancient", "next", "last"}) {
					t.Errorf("order = %v", p.Order)
				}
			},
		},
		{
			name:   "the space pass is skipped when the MaxAge pass alone brings usage below the high threshold",
			fs:     nodetest.Fs(1000, 140), // usage 86%
			policy: &model.ImagePolicy{HighThresholdPercent: 85, LowThresholdPercent: 80, MaxAge: 5 * time.Hour},
			images: []model.Image{{ID: "ancient", SizeBytes: 20}, {ID: "other", SizeBytes: 80}},
			records: []model.ImageRecord{
				nodetest.Used("ancient", 6*time.Hour), nodetest.Used("other", time.Hour),
			},
			wantRemove: []string{"ancient:age"},
			wantKeep:   map[string]model.ImageKeepReason{"other": model.KeepNotNeeded},
			check: func(t *testing.T, p model.ImagePlan) {
				if !p.Triggered || len(p.Events) != 0 {
					t.Errorf("triggered=%v events=%v, want true and none", p.Triggered, p.Events)
				}
				if d := p.Keep[0].Detail; !strings.Contains(d, "MaxAge pass brought usage to 84%") {
					t.Errorf("detail = %q", d)
				}
			},
		},
		{
			name:       "a record last used in the future counts as in use, as lastUsed >= now does in the kubelet",
			fs:         nodetest.Fs(1000, 0),
			images:     []model.Image{{ID: "a", SizeBytes: 10}},
			records:    []model.ImageRecord{{ID: "a", FirstDetected: nodetest.Ago(time.Hour), LastUsed: nodetest.At(-time.Minute)}},
			wantRemove: []string{},
			wantKeep:   map[string]model.ImageKeepReason{"a": model.KeepInUse},
			wantEvents: model.EventFreeDiskSpaceFailed,
		},
		{
			name:       "a duplicated image ID is planned once",
			fs:         nodetest.Fs(1000, 100),
			images:     []model.Image{{ID: "a", SizeBytes: 10}, {ID: "a", SizeBytes: 10}},
			records:    []model.ImageRecord{nodetest.Old("a")},
			wantRemove: []string{"a:space"},
			wantKeep:   map[string]model.ImageKeepReason{},
			wantEvents: model.EventFreeDiskSpaceFailed,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := nodetest.BaseSnapshot()
			s.ImageFs = tt.fs
			s.Images, s.ImageRecords, s.Containers, s.Sandboxes = tt.images, tt.records, tt.containers, tt.sandboxes
			s.Runtime.SandboxImages = tt.pauseRefs
			p := defaultPolicy
			if tt.policy != nil {
				p = *tt.policy
			}
			got := planImageGC(s, p, nodetest.T0)
			if r := nodetest.ImageRemovals(got); !reflect.DeepEqual(r, tt.wantRemove) {
				t.Errorf("remove = %v, want %v", r, tt.wantRemove)
			}
			if k := nodetest.ImageKeeps(got); !reflect.DeepEqual(k, tt.wantKeep) {
				t.Errorf("keep = %v, want %v", k, tt.wantKeep)
			}
			if e := nodetest.EventReasons(got.Events); e != tt.wantEvents {
				t.Errorf("events = %q, want %q", e, tt.wantEvents)
			}
			if len(got.Remove)+len(got.Keep) != len(got.Order) || len(got.Order) != countUnique(tt.images) {
				t.Errorf("%d removed + %d kept, order has %d: every image must be accounted for once", len(got.Remove), len(got.Keep), len(got.Order))
			}
			if tt.check != nil {
				tt.check(t, got)
			}
		})
	}
}

func countUnique(images []model.Image) int {
	seen := map[string]bool{}
	for _, i := range images {
		seen[i.ID] = true
	}
	return len(seen)
}

func TestPlanImagesReclaim(t *testing.T) {
	t.Run("reclaim removes every eligible unused image in LRU order whatever the thresholds", func(t *testing.T) {
		s := nodetest.BaseSnapshot()
		s.ImageFs = nodetest.Fs(1000, 990) // 1% used
		s.Images = []model.Image{
			{ID: "b", SizeBytes: 5}, {ID: "a", SizeBytes: 5}, {ID: "young", SizeBytes: 5},
			{ID: "pinned", SizeBytes: 5, Pinned: true}, {ID: "sha256:app", SizeBytes: 5}, {ID: "pause", SizeBytes: 5},
		}
		s.ImageRecords = []model.ImageRecord{nodetest.Used("b", time.Hour), nodetest.Used("a", 2*time.Hour), {ID: "young", FirstDetected: nodetest.Ago(time.Second)}, nodetest.Old("pinned"), nodetest.Old("sha256:app"), nodetest.Old("pause")}
		s.Containers = []model.Container{nodetest.Dead("c1", "u", "x", 0, time.Hour)}
		s.Runtime.SandboxImages = []string{"pause"}
		got := planImages(s, model.ImagePolicy{HighThresholdPercent: 85, LowThresholdPercent: 80, MinAge: time.Minute}, nodetest.T0, true)
		if r := nodetest.ImageRemovals(got); !reflect.DeepEqual(r, []string{"a:reclaim", "b:reclaim"}) {
			t.Errorf("remove = %v", r)
		}
		want := map[string]model.ImageKeepReason{"young": model.KeepTooYoung, "pinned": model.KeepPinned, "sha256:app": model.KeepInUse, "pause": model.KeepSandboxImage}
		if k := nodetest.ImageKeeps(got); !reflect.DeepEqual(k, want) {
			t.Errorf("keep = %v, want %v", k, want)
		}
		if len(got.Events) != 0 {
			t.Errorf("events = %v, want none", got.Events)
		}
	})
}

func TestImagesInUse(t *testing.T) {
	images := []model.Image{
		{ID: "sha256:a", RepoTags: []string{"a:1"}},
		{ID: "sha256:b", RepoDigests: []string{"b@sha256:1"}},
		{ID: "sha256:c"},
	}
	containers := []model.Container{
		{ID: "1", ImageID: "sha256:a", ImageRef: "a:1", State: model.ContainerExited},
		{ID: "2", ImageRef: "b@sha256:1", State: model.ContainerRunning},
		{ID: "3", ImageID: "sha256:a", State: model.ContainerUnknown},
	}
	got := ImagesInUse(images, containers)
	ids := func(cs []model.Container) []string {
		out := []string{}
		for _, c := range cs {
			out = append(out, c.ID)
		}
		return out
	}
	t.Run("a container matching an image by ID and by tag is listed once", func(t *testing.T) {
		if g := ids(got["sha256:a"]); !reflect.DeepEqual(g, []string{"1", "3"}) {
			t.Errorf("users of a = %v, want [1 3]", g)
		}
	})
	t.Run("a container naming an image by digest uses it", func(t *testing.T) {
		if g := ids(got["sha256:b"]); !reflect.DeepEqual(g, []string{"2"}) {
			t.Errorf("users of b = %v", g)
		}
	})
	t.Run("an image nobody uses is absent", func(t *testing.T) {
		if _, ok := got["sha256:c"]; ok || len(got) != 2 {
			t.Errorf("got %v", got)
		}
	})
}

func TestIsSandboxImage(t *testing.T) {
	img := model.Image{ID: "sha256:p", RepoTags: []string{"registry.k8s.io/pause:3.9"}, RepoDigests: []string{"registry.k8s.io/pause@sha256:d"}}
	tests := []struct {
		name string
		refs []string
		want bool
	}{
		{name: "matches by ID", refs: []string{"sha256:p"}, want: true},
		{name: "matches by tag", refs: []string{"registry.k8s.io/pause:3.9"}, want: true},
		{name: "matches by digest", refs: []string{"registry.k8s.io/pause@sha256:d"}, want: true},
		{name: "another tag does not match", refs: []string{"registry.k8s.io/pause:3.10"}},
		{name: "an empty ref never matches", refs: []string{""}},
		{name: "no refs never match"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := model.IsSandboxImage(img, tt.refs); got != tt.want {
				t.Errorf("IsSandboxImage(%v) = %v, want %v", tt.refs, got, tt.want)
			}
		})
	}
}
