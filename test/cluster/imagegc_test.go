package cluster

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/nodegc/nodegc/engine"
	"github.com/nodegc/nodegc/internal/kubetest"
	"github.com/nodegc/nodegc/internal/realnode"
	"github.com/nodegc/nodegc/nodeevents"
)

// attemptsSeries counts the agent's periodic image passes that met their
// target, started by the high threshold (labels in the order the agent
// writes them).
const attemptsSeries = `nodegc_image_gc_attempts_total{reason="threshold",result="success",trigger="periodic"}`

// freedSeries sums the bytes the agent's image passes freed, as the image
// filesystem's statfs saw them.
const freedSeries = `nodegc_image_gc_freed_bytes_total{measure="statfs",trigger="periodic"}`

// TestImageFsBackBelowLowAtTheAgentsPass: the image filesystem filled
// past the high threshold of the kubelet's config (read by the agent in
// its pod, as on a node) comes back to the low one or below at the
// agent's next periodic image pass, which removes only the unused images
// it imported and journals each. The Node then carries nodegc's Normal
// GarbageCollected event for that pass (events.k8s.io/v1, reporting
// controller nodegc), and a real Prometheus, finding the agent through
// the API server as deploy/examples/servicemonitor.yaml says, has the
// pass's attempt and the bytes it freed, equal to the agent's own figures.
func TestImageFsBackBelowLowAtTheAgentsPass(t *testing.T) {
	c := sharedCluster(t)
	agent := c.waitAgentReady(t)
	prom := c.startPrometheus(t)
	// Up: Prometheus found the pod through the Service's EndpointSlice
	// and scrapes it, with the node's name as the example relabels it.
	if !kubetest.WaitFor(time.Minute, func() bool {
		up := prom.query(t, fmt.Sprintf(`up{node=%q} == 1`, c.nodeName))
		return len(up) == 1
	}) {
		t.Fatalf("Prometheus does not scrape the agent; its targets:\n%s", prom.targets(t))
	}
	before := c.metrics(t, agent.Name)

	imgs := c.importImages(t, 16, 4<<20, "fill")
	if u, _ := c.usage(t); u >= imageGCHigh {
		t.Fatalf("the image filesystem is at %d%% before it is filled, at or above the high threshold %d%%", u, imageGCHigh)
	}
	filled := time.Now()
	c.fillPastHigh(t)
	// The agent's next image pass (every 2 s here) finds the usage at or
	// above the high threshold and frees down to the low one.
	var after []byte
	if !kubetest.WaitFor(time.Minute, func() bool {
		after = c.metrics(t, agent.Name)
		return metricValue(after, attemptsSeries) > metricValue(before, attemptsSeries)
	}) {
		u, fs := c.usage(t)
		t.Fatalf("no image pass of the agent met a threshold target within a minute of the fill (usage %d%%, %d of %d bytes available); its metrics:\n%s\nits log:\n%s",
			u, fs.AvailableBytes, fs.CapacityBytes, grep(after, "nodegc_image_"), c.agentLog())
	}
	u, fs := c.usage(t)
	if u > imageGCLow {
		t.Errorf("the image filesystem is at %d%% after the agent's pass (%d of %d bytes available), want at most the low threshold %d%%", u, fs.AvailableBytes, fs.CapacityBytes, imageGCLow)
	}
	if d := metricValue(after, attemptsSeries) - metricValue(before, attemptsSeries); d != 1 {
		t.Errorf("%s went up by %v, want 1 (one pass)", attemptsSeries, d)
	}
	freed := metricValue(after, freedSeries) - metricValue(before, freedSeries)
	if freed <= 0 {
		t.Errorf("the pass freed %v bytes by statfs", freed)
	}

	// Every image that went is in the journal with reason space, and
	// every image still listed is not.
	lines := c.journal(t)
	var pass engine.JournalPass
	removed := 0
	for _, l := range c.journalAgreesWithNode(t, lines, imgs) {
		removed++
		pass = l.Pass
		if l.Reason != "space" {
			t.Errorf("image %s removed for %q, want space", l.ID, l.Reason)
		}
	}
	if removed == 0 {
		t.Fatal("none of the imported images was removed")
	}
	t.Logf("pass %s removed %d of %d images; %.1f MiB freed by statfs; usage now %d%%", pass, removed, len(imgs), freed/(1<<20), u)

	t.Run("NodeEvent", func(t *testing.T) { c.checkNodeEvent(t, pass, filled) })
	t.Run("Prometheus", func(t *testing.T) {
		// Prometheus scrapes every second: wait for a scrape after the pass.
		for _, s := range []string{attemptsSeries, freedSeries} {
			want := metricValue(c.metrics(t, agent.Name), s)
			q := strings.Replace(s, "}", fmt.Sprintf(",node=%q}", c.nodeName), 1)
			var got []promSample
			if !kubetest.WaitFor(30*time.Second, func() bool {
				got = prom.query(t, q)
				return len(got) == 1 && got[0].value(t) == want
			}) {
				t.Errorf("PromQL %s = %+v, want one sample of %v (the agent's own figure)", q, got, want)
			}
		}
	})
}

// checkNodeEvent waits for nodegc's Normal GarbageCollected event about
// the pass on the Node, as `kubectl events --for node/<name>` lists it.
func (c *cluster) checkNodeEvent(t *testing.T, pass engine.JournalPass, since time.Time) {
	t.Helper()
	var mine []eventsv1.Event
	found := kubetest.WaitFor(30*time.Second, func() bool {
		list, err := c.cs.EventsV1().Events(metav1.NamespaceDefault).List(t.Context(), metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		mine = mine[:0]
		for _, ev := range list.Items {
			if ev.Regarding.Kind == "Node" && ev.Regarding.Name == c.nodeName && ev.ReportingController == nodeevents.Controller {
				mine = append(mine, ev)
				// The pass's own event or, when an earlier image pass's
				// event stands for the window (6 minutes from its last
				// occurrence, client-go's series), that one: the pass is
				// a repeat counted on its series, written when the series
				// ends or every 30 minutes.
				if ev.Type == corev1.EventTypeNormal && ev.Reason == nodeevents.ReasonGarbageCollected && ev.Action == nodeevents.ActionImageGC &&
					(strings.Contains(ev.Note, string(pass)) || standing(ev, since)) {
					return true
				}
			}
		}
		return false
	})
	if !found {
		for _, ev := range mine {
			t.Logf("nodegc event: %s %s %s: %s", ev.EventTime, ev.Type, ev.Reason, ev.Note)
		}
		t.Fatalf("no Normal %s event from %s names pass %s (%d events from nodegc on node %s)", nodeevents.ReasonGarbageCollected, nodeevents.Controller, pass, len(mine), c.nodeName)
	}
	ev := mine[len(mine)-1]
	if ev.ReportingInstance != nodeevents.Controller+"-"+c.nodeName || ev.Action != nodeevents.ActionImageGC ||
		!strings.Contains(ev.Note, string(pass)) && !standing(ev, since) || !strings.Contains(ev.Note, "image") {
		t.Errorf("the event: instance %q, action %q, time %s (the fill at %s), note %q", ev.ReportingInstance, ev.Action, ev.EventTime, since, ev.Note)
	}
	t.Logf("event on node %s: %s %s: %s", c.nodeName, ev.Type, ev.Reason, ev.Note)
}

// standing reports whether ev, an earlier event, may still stand for the
// series window at since: its last occurrence (its time, or its series')
// less than 7 minutes before (6, and the recorder's one-minute tick).
func standing(ev eventsv1.Event, since time.Time) bool {
	last := ev.EventTime.Time
	if ev.Series != nil {
		last = ev.Series.LastObservedTime.Time
	}
	return since.Sub(last) < 7*time.Minute
}

// importImages imports count images of about size bytes each, never used
// by any container; t.Cleanup removes those left, straight through the
// runtime's own socket.
func (c *cluster) importImages(t *testing.T, count int, size int64, prefix string) []realnode.ImageRef {
	t.Helper()
	imgs := c.node.Must(t).ImportImages(count, size, fmt.Sprintf("%s-%d", prefix, time.Now().UnixNano()))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		listed := c.node.Must(t).State().Images
		for _, img := range imgs {
			if !slices.Contains(listed, img.ID) {
				continue
			}
			if _, err := c.node.ImageClient().RemoveImage(ctx, &runtimeapi.RemoveImageRequest{Image: &runtimeapi.ImageSpec{Image: img.ID}}); err != nil {
				t.Errorf("remove image %s: %v", img.Ref, err)
			}
		}
	})
	return imgs
}

// usage is the image filesystem's usage as the kubelet computes it.
func (c *cluster) usage(t testing.TB) (int, engine.FsStats) {
	t.Helper()
	fs, err := engine.Statfs(c.node.ImageFsMount())
	if err != nil {
		t.Fatal(err)
	}
	u, err := engine.UsagePercent(fs)
	if err != nil {
		t.Fatal(err)
	}
	return u, fs
}

// fillPastHigh writes a file on the image filesystem, no image's, that
// leaves 1 MiB less available than the high threshold allows: the usage
// is one point above it. t.Cleanup removes the file.
func (c *cluster) fillPastHigh(t *testing.T) { c.fillPast(t, imageGCHigh) }

// fillPast is fillPastHigh for a high threshold of high percent.
func (c *cluster) fillPast(t *testing.T, high int) {
	t.Helper()
	_, fs := c.usage(t)
	want := fs.CapacityBytes*int64(100-high)/100 - 1<<20
	size := fs.AvailableBytes - want
	if size <= 0 {
		t.Fatalf("the image filesystem is already past the high threshold (%d of %d bytes available)", fs.AvailableBytes, fs.CapacityBytes)
	}
	c.fill(t, size)
	if u, _ := c.usage(t); u < high {
		t.Fatalf("the image filesystem is at %d%% after the fill, want at least %d%%", u, high)
	}
}

// journal reads the agent's deletion journal in the state dir on the host.
func (c *cluster) journal(t testing.TB) []engine.JournalEntry {
	t.Helper()
	lines, err := engine.ReadJournalLines(filepath.Join(c.dir, "state"))
	if err != nil {
		t.Fatal(err)
	}
	return lines
}

// journalAgreesWithNode checks that every one of imgs the runtime no
// longer lists has a removed line in the journal, and no image still
// listed has one; it returns the removed lines of imgs.
func (c *cluster) journalAgreesWithNode(t *testing.T, lines []engine.JournalEntry, imgs []realnode.ImageRef) []engine.JournalEntry {
	t.Helper()
	listed := c.node.Must(t).State().Images
	var removed []engine.JournalEntry
	for _, img := range imgs {
		l, ok := removedLine(lines, img.ID)
		gone := !slices.Contains(listed, img.ID)
		switch {
		case gone && !ok:
			t.Errorf("image %s is gone and the journal has no removed line for it", img.Ref)
		case !gone && ok:
			t.Errorf("image %s is still listed and the journal says removed", img.Ref)
		case ok:
			removed = append(removed, l)
		}
	}
	return removed
}

// removedLine returns the journal's removed line for the image.
func removedLine(lines []engine.JournalEntry, id string) (engine.JournalEntry, bool) {
	for _, l := range lines {
		if l.Kind == engine.ItemImage && l.ID == id && l.Op == engine.JournalRemoved {
			return l, true
		}
	}
	return engine.JournalEntry{}, false
}

// fill takes size bytes of the image filesystem with a file of its own
// (fallocate: no write), removed when the test ends.
func (c *cluster) fill(t *testing.T, size int64) {
	t.Helper()
	p := filepath.Join(c.node.ImageFsMount(), fmt.Sprintf("nodegc-cluster-fill-%d", time.Now().UnixNano()))
	f, err := os.OpenFile(p, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Remove(p) })
	err = syscall.Fallocate(int(f.Fd()), 0, 0, size)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatalf("fill %s with %d bytes: %v", p, size, err)
	}
}

// imageSizes is the runtime's size of each image it lists, by ID.
func (c *cluster) imageSizes(t testing.TB) map[string]int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	resp, err := c.node.ImageClient().ListImages(ctx, &runtimeapi.ListImagesRequest{})
	if err != nil {
		t.Fatalf("list images: %v", err)
	}
	sizes := make(map[string]int64, len(resp.GetImages()))
	for _, img := range resp.GetImages() {
		sizes[img.GetId()] = int64(img.GetSize())
	}
	return sizes
}
