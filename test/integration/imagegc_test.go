package integration

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/nodegc/nodegc/engine"
	"github.com/nodegc/nodegc/internal/realnode"
)

// TestImageGC fills a real image filesystem above the high threshold and
// runs one real image GC pass through the engine and the CRI adapter. The
// images are first detected at different times (engine clocks over one
// state dir), and two were used by containers since removed, so the LRU
// order is known in advance.
func TestImageGC(t *testing.T) { forEachRuntime(t, testImageGC) }

func testImageGC(t *testing.T, rt realnode.Runtime) {
	n := startNode(t, rt, 128*MiB)
	m := n.Must(t)
	c := dial(t, n)
	ctx := context.Background()
	state := t.TempDir()
	policy := engine.DefaultPolicy()
	t0 := time.Now().Add(-time.Hour)

	// At t0: the sandbox image, old-0 (a running container's), old-1 (an
	// exited container's), old-2 and old-3 (unused), used-0 and used-1
	// (used at t0 by containers that are then removed).
	old := m.ImportImages(4, imageSize, "old")
	used := m.ImportImages(2, imageSize, "used")
	sb := m.RunPod("web", "default", podUID("imagegc-web"), realnode.QOSBestEffort)
	m.StartContainer(sb, "app", old[0].Ref, 0)
	m.ExitedContainer(sb, "job", old[1].Ref, 0, 0)
	var gone []string
	for i, img := range used {
		gone = append(gone, m.ExitedContainer(sb, fmt.Sprintf("used-%d", i), img.Ref, 0, 0))
	}
	detectAt(t, n, c, state, t0)
	for _, id := range gone {
		removeContainer(t, n, id)
	}

	// Then groups of never-used images, one minute apart, until the image
	// filesystem is well above the high threshold.
	want := []string{old[2].ID, old[3].ID} // the never-used images of t0
	slices.Sort(want)
	sizes := map[string]int64{}
	for _, img := range append(old, used...) {
		sizes[img.ID] = img.Size
	}
	for g := 1; ; g++ {
		if u, _ := fsUsage(t, n); u >= policy.Image.HighThresholdPercent+3 {
			break
		}
		if g > 20 {
			u, _ := fsUsage(t, n)
			t.Fatalf("image filesystem at %d%% after %d groups of images", u, g)
		}
		imgs := m.ImportImages(2, imageSize, fmt.Sprintf("g%d", g))
		detectAt(t, n, c, state, t0.Add(time.Duration(g)*time.Minute))
		group := ids(imgs)
		slices.Sort(group)
		want = append(want, group...)
		for _, img := range imgs {
			sizes[img.ID] = img.Size
		}
	}
	// Used images come after every never-used one, the kubelet's
	// byLastUsedAndDetected.
	usedIDs := ids(used)
	slices.Sort(usedIDs)
	want = append(want, usedIDs...)
	keep := []string{n.SandboxImage().ID, old[0].ID, old[1].ID}

	before, beforeFs := fsUsage(t, n)
	t.Logf("image filesystem before the pass: %d%% (%d of %d bytes available)", before, beforeFs.AvailableBytes, beforeFs.CapacityBytes)
	clk := newClock(t0.Add(30 * time.Minute))
	e := newEngine(t, n, engineOptions{Runtime: c, Policy: policy, StateDir: state, Clock: clk})
	r, err := e.Run(ctx, engine.PassImages)
	if err != nil {
		t.Fatalf("image pass: %v", err)
	}
	removed := itemsWith(r, engine.ItemImage, engine.OutcomeRemoved)
	after, afterFs := fsUsage(t, n)
	measured := "not measured"
	if r.MeasuredBytesFreed != nil {
		measured = fmt.Sprintf("measured %d", *r.MeasuredBytesFreed)
	}
	t.Logf("pass removed %d images: usage %d%% -> %d%%, estimated %d bytes freed, %s", len(removed), before, after, r.EstimatedBytesFreed, measured)

	t.Run("the pass was triggered and every removal succeeded", func(t *testing.T) {
		if !r.Plan.ImageGC.Triggered || r.Plan.ImageGC.BytesToFree <= 0 {
			t.Errorf("plan at %d%%: triggered %v, bytes to free %d", r.Plan.ImageGC.UsagePercent, r.Plan.ImageGC.Triggered, r.Plan.ImageGC.BytesToFree)
		}
		if !r.OK() || len(removed) == 0 || len(removed) != len(r.Items) {
			t.Errorf("report: ok %v, %d removed of %d items: %+v", r.OK(), len(removed), len(r.Items), r.Items)
		}
	})

	t.Run("one pass brings statfs usage to the low threshold or below", func(t *testing.T) {
		if before < policy.Image.HighThresholdPercent {
			t.Fatalf("usage before the pass %d%%, want at least %d%%", before, policy.Image.HighThresholdPercent)
		}
		if after > policy.Image.LowThresholdPercent {
			t.Errorf("usage after the pass %d%%, want at most the low threshold %d%%", after, policy.Image.LowThresholdPercent)
		}
	})

	t.Run("images of running and exited containers and the sandbox image stay", func(t *testing.T) {
		for _, id := range keep {
			if !listed(t, n, id) {
				t.Errorf("image %s was removed", id)
			}
			if slices.Contains(removed, id) {
				t.Errorf("image %s is in the removed items", id)
			}
		}
	})

	t.Run("the journal shows the removals in LRU order", func(t *testing.T) {
		got := journalIDs(t, state, engine.ItemImage, 0)
		if len(got) == 0 || !slices.Equal(got, want[:min(len(got), len(want))]) {
			t.Errorf("journal order:\n%v\nwant a prefix of the LRU order:\n%v", got, want)
		}
		if !slices.Equal(got, removed) {
			t.Errorf("journal %v, report removed %v", got, removed)
		}
		for _, id := range got {
			if listed(t, n, id) {
				t.Errorf("journaled image %s is still listed", id)
			}
		}
	})

	t.Run("the report gives the estimated and the measured bytes freed", func(t *testing.T) {
		var est int64
		for _, id := range removed {
			est += sizes[id]
		}
		if r.EstimatedBytesFreed <= 0 || r.EstimatedBytesFreed != est {
			t.Errorf("estimated %d bytes freed, want the CRI sizes of the removed images, %d", r.EstimatedBytesFreed, est)
		}
		if r.MeasuredBytesFreed == nil || r.ImageFsBefore == nil || r.ImageFsAfter == nil {
			t.Fatalf("no measurement: measured %v, before %v, after %v", r.MeasuredBytesFreed, r.ImageFsBefore, r.ImageFsAfter)
		}
		measured := *r.MeasuredBytesFreed
		if measured != r.ImageFsAfter.AvailableBytes-r.ImageFsBefore.AvailableBytes {
			t.Errorf("measured %d, want available after %d - before %d", measured, r.ImageFsAfter.AvailableBytes, r.ImageFsBefore.AvailableBytes)
		}
		// The image filesystem holds each image twice (blob and snapshot),
		// so the statfs delta is at least the CRI sizes.
		if measured < r.EstimatedBytesFreed {
			t.Errorf("measured %d bytes freed, want at least the estimate %d", measured, r.EstimatedBytesFreed)
		}
		if mine := afterFs.AvailableBytes - beforeFs.AvailableBytes; mine < r.EstimatedBytesFreed {
			t.Errorf("this test's statfs delta %d, want at least the estimate %d", mine, r.EstimatedBytesFreed)
		}
	})

	t.Run("a reclaim-all pass removes the rest in LRU order and still keeps the protected images", func(t *testing.T) {
		r2, err := e.Run(ctx, engine.PassReclaimAll)
		if err != nil {
			t.Fatalf("reclaim pass: %v", err)
		}
		got := itemsWith(r2, engine.ItemImage, engine.OutcomeRemoved)
		if !r2.OK() || !slices.Equal(got, want[len(removed):]) {
			t.Errorf("reclaim removed:\n%v\nwant the rest of the LRU order:\n%v\nitems %+v", got, want[len(removed):], r2.Items)
		}
		if all := journalIDs(t, state, engine.ItemImage, 0); !slices.Equal(all, want) {
			t.Errorf("journal after both passes:\n%v\nwant the whole LRU order:\n%v", all, want)
		}
		if imgs := m.State().Images; !sameSet(imgs, keep) {
			t.Errorf("images left %v, want only %v", imgs, keep)
		}
	})
}

// sameSet reports whether a and b hold the same strings.
func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}
