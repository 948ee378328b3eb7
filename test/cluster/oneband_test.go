package cluster

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodegc/nodegc/engine"
	"github.com/nodegc/nodegc/internal/kubetest"
	"github.com/nodegc/nodegc/internal/realnode"
)

// The kubelet's image GC at its default band, as it runs here (startCluster).
const (
	kubeletImageGCLow = 80
	// kubeletImageGCEnd begins the line the kubelet logs when an image
	// GC ends: "succeeded" (at -v=4) or "failed" (kubelet.go
	// StartGarbageCollection). The next one starts ImageGCPeriod later
	// (wait.Until: the period runs from the end of the last).
	kubeletImageGCEnd = "Image garbage collection "
	// kubeletRemoving is what the kubelet logs before each RemoveImage of
	// its image GC (image_gc_manager.go freeImage).
	kubeletRemoving = "Removing image to free bytes"
)

// oneBandFill is the usage the image filesystem is filled past: with the
// agent's first removals done it is still at or above the kubelet's 85 %.
const oneBandFill = 90

// oneBandImageSize is the size of each image TestBothAtOneBand imports:
// the agent's first engine.DefaultParallel removals free what its first
// 4 of 4 MiB freed at a pool of 4, whatever the default pool, so that
// the usage stays at or above 85 % after them: 2 MiB at 8 (at 16 with
// 4 MiB images its first removals would free four times as much).
const oneBandImageSize = (16 << 20) / engine.DefaultParallel

// oneBandImages is how many images TestBothAtOneBand imports: 224 MiB of
// them whatever their size (56 of 4 MiB).
const oneBandImages = (224 << 20) / oneBandImageSize

// TestBothAtOneBand: the second arrangement of one node's two collectors,
// the agent at the kubelet's own band (--image-gc-margin=0, the kubelet's
// 85/80 read from its config). The image filesystem is filled past it
// just before an image GC of the kubelet's (the one after the GC that
// first sees the images: up to 10 minutes); the agent's pass starts first and
// its first removals are done when the kubelet's GC starts, whose own
// removals go through while the agent waits for the runtime's answers
// (held at the node's CRI socket until the kubelet's GC has ended, so that
// which collector removed an image is known: the runtime's RemoveImage
// succeeds for an image already gone, whoever asks). Then no pass of the
// agent failed, every image that went is counted once (the agent's
// removed lines plus nodegc_gc_removed_by_others_total equal what went,
// in items and in the runtime's bytes), and each image the kubelet removed
// is another's: in the removed-by-others series and never in the journal
// as removed by nodegc.
func TestBothAtOneBand(t *testing.T) {
	c := sharedCluster(t)
	agent, restore := c.atOneBand(t)
	defer restore()
	before := c.metrics(t, agent.Name)
	if high, low := metricValue(before, "nodegc_image_gc_high_threshold_ratio"), metricValue(before, "nodegc_image_gc_low_threshold_ratio"); high != kubeletImageGCHigh/100.0 || low != kubeletImageGCLow/100.0 {
		t.Fatalf("the agent's band is %v/%v at --image-gc-margin=0, want the kubelet's %d/%d %%", high, low, kubeletImageGCHigh, kubeletImageGCLow)
	}
	imgs := c.importImages(t, oneBandImages, oneBandImageSize, "oneband")
	// The kubelet removes no image at the image GC that first sees it
	// (imagesInEvictionOrder detects the images at the GC's own time, an
	// age of 0, below any minimum age), so one GC sees them first.
	seen := c.nextKubeletImageGC(t, 0)
	t.Logf("the kubelet's next image GC, which sees the images, at %s, in %s", seen.Format(time.TimeOnly), time.Until(seen).Round(time.Second))
	ended := c.kubeletLogCount(t, kubeletImageGCEnd)
	if !kubetest.WaitFor(time.Until(seen)+2*time.Minute, func() bool { return c.kubeletLogCount(t, kubeletImageGCEnd) > ended }) {
		t.Fatalf("the kubelet's image GC due at %s did not end; its log:\n%s", seen.Format(time.TimeOnly), kubetest.Tail(c.kubeletLog, 20))
	}
	gc := c.nextKubeletImageGC(t, 30*time.Second)
	t.Logf("the kubelet's image GC that acts at %s, in %s", gc.Format(time.TimeOnly), time.Until(gc).Round(time.Second))
	sleepUntil(t, gc.Add(-10*time.Second))
	ended = c.kubeletLogCount(t, kubeletImageGCEnd)
	calls := len(c.proxy.RemovedBy(c.kubeletPID))
	hold := c.proxy.HoldRemoveImage(t, c.kubeletPID)
	defer c.proxy.release(hold) // before restore: the agent's pass must end
	c.fillPast(t, oneBandFill)
	if !kubetest.WaitFor(30*time.Second, func() bool { return len(hold.Held()) >= engine.DefaultParallel }) {
		t.Fatalf("the agent's pass has %d removals done within 30 s of the fill, want %d; its log:\n%s", len(hold.Held()), engine.DefaultParallel, c.agentLog())
	}
	listed := c.node.Must(t).State().Images
	sizes := c.imageSizes(t)
	if !kubetest.WaitFor(time.Until(gc)+2*time.Minute, func() bool { return c.kubeletLogCount(t, kubeletImageGCEnd) > ended }) {
		t.Fatalf("the kubelet's image GC due at %s did not end; its log:\n%s", gc.Format(time.TimeOnly), kubetest.Tail(c.kubeletLog, 20))
	}
	byKubelet := gone(listed, c.node.Must(t).State().Images)
	held := hold.Held()
	// The agent's pass, held, is not yet among its passes.
	mid := c.metrics(t, agent.Name)
	c.proxy.release(hold)
	t.Logf("the agent's pass removed %d images before the kubelet's GC; the kubelet's GC removed %d; its end: %s",
		len(held), len(byKubelet), c.lastKubeletLine(t, kubeletImageGCEnd))
	if kubeletCalls := c.proxy.RemovedBy(c.kubeletPID)[calls:]; !sameSet(kubeletCalls, byKubelet) {
		t.Errorf("the kubelet's RemoveImage calls %v, the images gone while the agent waited %v", kubeletCalls, byKubelet)
	}
	if len(byKubelet) == 0 {
		t.Fatalf("the kubelet's image GC removed nothing: both collectors did not act; its log:\n%s", grep(c.kubeletLogBytes(t), "mage"))
	}

	// The agent's pass ends once its answers come; what vanished is
	// another's after two more snapshots (a pass's report may come one
	// snapshot late), so wait for three more passes.
	passes := func(b []byte) float64 { return metricSum(b, "nodegc_gc_passes_total{", "") }
	var after []byte
	if !kubetest.WaitFor(time.Minute, func() bool {
		after = c.metrics(t, agent.Name)
		return metricSum(after, "nodegc_gc_passes_total{", `kind="images"`) > metricSum(mid, "nodegc_gc_passes_total{", `kind="images"`)
	}) {
		t.Fatalf("the agent's image pass did not end within a minute of the kubelet's GC; its log:\n%s", c.agentLog())
	}
	ran := passes(after)
	if !kubetest.WaitFor(time.Minute, func() bool {
		after = c.metrics(t, agent.Name)
		return passes(after) >= ran+3
	}) {
		t.Fatalf("the agent ran no 3 passes after its image pass; its log:\n%s", c.agentLog())
	}
	c.checkCountedOnce(t, imgs, byKubelet, sizes, before, after)
	u, _ := c.usage(t)
	t.Logf("usage now %d%%: each collector freed towards %d%% by its own count, unaware of the other's removals", u, kubeletImageGCLow)
}

// checkCountedOnce checks that every image of imgs that went is counted
// once: byKubelet as another's, the rest as the agent's, and that no pass
// of the agent failed, by the metrics before and after and the journal.
// The kubelet's GC may also remove an unused image no test of this run
// imported (one an earlier test left): byKubelet holds it, and sizes (the
// runtime's, listed before the GC) give its bytes, which the agent counts
// as another's too.
func (c *cluster) checkCountedOnce(t *testing.T, imgs []realnode.ImageRef, byKubelet []string, sizes map[string]int64, before, after []byte) {
	t.Helper()
	d := func(name, match string) float64 {
		return metricSum(after, name, match) - metricSum(before, name, match)
	}
	if n := d("nodegc_gc_passes_total{", `result="error"`); n != 0 {
		t.Errorf("%v of the agent's passes failed", n)
	}
	listed := c.node.Must(t).State().Images
	lines := c.journal(t)
	var wentBytes, kubeletBytes int64
	went, mine := 0, 0
	for _, img := range imgs {
		if slices.Contains(listed, img.ID) {
			if _, ok := removedLine(lines, img.ID); ok {
				t.Errorf("image %s is still listed and the journal says removed", img.Ref)
			}
			continue
		}
		went++
		wentBytes += img.Size
		_, ok := removedLine(lines, img.ID)
		kubelets := slices.Contains(byKubelet, img.ID)
		switch {
		case kubelets && ok:
			t.Errorf("image %s, removed by the kubelet, is in the journal as removed by nodegc", img.Ref)
		case !kubelets && !ok:
			t.Errorf("image %s is gone, not by the kubelet, and the journal has no removed line for it", img.Ref)
		case kubelets:
			kubeletBytes += img.Size
		default:
			mine++
		}
		for _, l := range lines {
			if l.ID == img.ID && l.Op == engine.JournalFailed {
				t.Errorf("the journal has a failed removal of image %s: %s", img.Ref, l.Error)
			}
		}
	}
	removed := d("nodegc_image_gc_deletions_total{", `result="removed"`)
	others := d(othersSeries, "")
	t.Logf("%d images went: %d removed by the agent (its metrics: %v), %d by the kubelet (removed by others: %v)", went, mine, removed, len(byKubelet), others)
	if removed != float64(mine) || others != float64(len(byKubelet)) {
		t.Errorf("the agent counts %v removed and %v removed by others, want %d and %d (%d went)", removed, others, mine, len(byKubelet), went)
	}
	var notOurs int64
	for _, id := range byKubelet {
		if !slices.ContainsFunc(imgs, func(img realnode.ImageRef) bool { return img.ID == id }) {
			t.Logf("the kubelet also removed image %s (%d bytes), which this test did not import", id, sizes[id])
			notOurs += sizes[id]
		}
	}
	freed := d(`nodegc_image_gc_freed_bytes_total{measure="runtime"`, "")
	othersBytes := d("nodegc_image_gc_removed_by_others_bytes_total", "")
	if othersBytes != float64(kubeletBytes+notOurs) || freed+othersBytes != float64(wentBytes+notOurs) {
		t.Errorf("bytes: freed by the agent %v, removed by others %v (the kubelet's images: %d of this test's, %d of others), want a sum of %d (what went)", freed, othersBytes, kubeletBytes, notOurs, wentBytes+notOurs)
	}
}

// atOneBand runs the agent at the kubelet's own band: its config file
// says the kubelet's 85/80 and the DaemonSet's --image-gc-margin is 0. It
// returns the new agent's pod, and restore, which puts the band and the
// margin back and waits for that agent; the test defers it (a cleanup
// would have no context to call the API server with).
func (c *cluster) atOneBand(t *testing.T) (agent corev1.Pod, restore func()) {
	t.Helper()
	old := c.waitAgentReady(t)
	c.writeKubeletBand(t, kubeletImageGCHigh, kubeletImageGCLow)
	c.setAgentMargin(t, "5", "0")
	restore = func() {
		cur := c.waitAgentReady(t)
		c.writeKubeletBand(t, imageGCHigh+imageGCMargin, imageGCLow+imageGCMargin)
		c.setAgentMargin(t, "0", "5")
		c.waitNewAgentReady(t, cur.UID)
	}
	return c.waitNewAgentReady(t, old.UID), restore
}

// setAgentMargin changes the DaemonSet's --image-gc-margin from one value
// to another, which rolls the agent out.
func (c *cluster) setAgentMargin(t *testing.T, from, to string) {
	t.Helper()
	dss := c.cs.AppsV1().DaemonSets("nodegc")
	ds, err := dss.Get(t.Context(), "nodegc", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	args := ds.Spec.Template.Spec.Containers[0].Args
	i := slices.Index(args, "--image-gc-margin="+from)
	if i < 0 {
		t.Fatalf("the DaemonSet's args %q lack --image-gc-margin=%s", args, from)
	}
	args[i] = "--image-gc-margin=" + to
	if _, err := dss.Update(t.Context(), ds, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// nextKubeletImageGC is when the kubelet's next image GC starts, from the
// end of its last in its log, or the one after when that is less than
// lead away.
func (c *cluster) nextKubeletImageGC(t *testing.T, lead time.Duration) time.Time {
	t.Helper()
	line := c.lastKubeletLine(t, kubeletImageGCEnd)
	if line == "" {
		t.Fatalf("the kubelet logged no image GC; its log:\n%s", kubetest.Tail(c.kubeletLog, 20))
	}
	last, err := klogTime(line, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	next := last.Add(kubeletImageGCPeriod)
	for time.Until(next) < lead {
		next = next.Add(kubeletImageGCPeriod)
	}
	return next
}

// klogTime reads the time in a klog line's header ("I1129 13:49:42.123456
// ..."), in the year of now, local time.
func klogTime(line string, now time.Time) (time.Time, error) {
	f := strings.Fields(line)
	if len(f) < 2 || len(f[0]) != 5 {
		return time.Time{}, fmt.Errorf("no klog header in %q", line)
	}
	ts, err := time.ParseInLocation("0102 15:04:05.000000", f[0][1:]+" "+f[1], time.Local)
	if err != nil {
		return time.Time{}, fmt.Errorf("klog header of %q: %w", line, err)
	}
	return ts.AddDate(now.Year(), 0, 0), nil
}

// lastKubeletLine is the kubelet's last log line that holds s.
func (c *cluster) lastKubeletLine(t *testing.T, s string) string {
	t.Helper()
	last := ""
	sc := bufio.NewScanner(bytes.NewReader(c.kubeletLogBytes(t)))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if strings.Contains(sc.Text(), s) {
			last = sc.Text()
		}
	}
	return last
}

// kubeletLogBytes is the kubelet's log so far.
func (c *cluster) kubeletLogBytes(t *testing.T) []byte {
	t.Helper()
	b, err := os.ReadFile(c.kubeletLog)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// sleepUntil waits until at, or fails when the test's context ends.
func sleepUntil(t *testing.T, at time.Time) {
	t.Helper()
	select {
	case <-time.After(time.Until(at)):
	case <-t.Context().Done():
		t.Fatal(t.Context().Err())
	}
}

// gone returns the images of before that after does not list.
func gone(before, after []string) []string {
	var out []string
	for _, id := range before {
		if !slices.Contains(after, id) {
			out = append(out, id)
		}
	}
	return out
}

// sameSet reports whether a and b hold the same strings.
func sameSet(a, b []string) bool {
	a, b = slices.Sorted(slices.Values(a)), slices.Sorted(slices.Values(b))
	return slices.Equal(slices.Compact(a), slices.Compact(b))
}

// metricSum sums the series of a /metrics body whose line begins with
// prefix and holds match.
func metricSum(body []byte, prefix, match string) float64 {
	sum := 0.0
	for line := range bytes.Lines(body) {
		if !bytes.HasPrefix(line, []byte(prefix)) || !bytes.Contains(line, []byte(match)) {
			continue
		}
		if i := bytes.LastIndexByte(line, ' '); i > 0 {
			var v float64
			if _, err := fmt.Sscan(string(bytes.TrimSpace(line[i:])), &v); err == nil {
				sum += v
			}
		}
	}
	return sum
}
