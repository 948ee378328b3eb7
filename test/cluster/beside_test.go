package cluster

import (
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nodegc/nodegc/internal/kubetest"
)

// kubeletImageGCHigh is the kubelet's own image GC high threshold here:
// its default, 85 %, since its config file had no band when it started
// (startCluster writes the band the agent reads only afterwards).
const kubeletImageGCHigh = 85

// kubeletImageGCPeriod is the kubelet's image GC period (ImageGCPeriod in
// pkg/kubelet/kubelet.go): at its start, then every 5 minutes.
const kubeletImageGCPeriod = 5 * time.Minute

// What the kubelet v1.36.3 logs when its image GC finds the usage at or
// above its high threshold, before it removes anything
// (image_gc_manager.go GarbageCollect), and when an image GC ended well
// (kubelet.go StartGarbageCollection, at -v=4, or 1 after a failure).
const (
	kubeletOverHigh    = "Disk usage on image filesystem is over the high threshold"
	kubeletImageGCDone = "Image garbage collection succeeded"
)

// othersSeries counts the images that vanished with no pass of the agent.
const othersSeries = `nodegc_gc_removed_by_others_total{kind="image"}`

// TestAgentActsBeforeTheKubeletsImageGC: deploy/'s arrangement, one GC per
// node. The agent's band sits --image-gc-margin below the kubelet's; the
// image filesystem filled past the kubelet's own high threshold is brought
// below it by the agent within seconds, and at the kubelet's next image GC
// (every 5 minutes) the kubelet finds nothing to do: it never logs that
// usage is over its threshold, and nothing vanishes that the agent did not
// remove (nodegc_gc_removed_by_others_total stays).
func TestAgentActsBeforeTheKubeletsImageGC(t *testing.T) {
	c := sharedCluster(t)
	agent := c.waitAgentReady(t)
	before := c.metrics(t, agent.Name)
	if high := metricValue(before, "nodegc_image_gc_high_threshold_ratio"); high <= 0 || high*100 >= kubeletImageGCHigh {
		t.Fatalf("the agent's high threshold is %v, want above 0 and below the kubelet's %d %%", high, kubeletImageGCHigh)
	}
	imgs := c.importImages(t, 24, 8<<20, "beside")
	// The fill and the agent's pass (every 2 s here) fall between two of
	// the kubelet's image GCs, at least 30 s from either.
	for {
		phase := time.Since(c.kubeletStarted) % kubeletImageGCPeriod
		if phase >= 10*time.Second && phase <= kubeletImageGCPeriod-30*time.Second {
			break
		}
		time.Sleep(time.Second)
	}
	c.fillPast(t, kubeletImageGCHigh)
	filled := time.Now()
	// The agent removes every image it imported (the rest of the fill is
	// no image's: its pass ends above its own low threshold, and says so).
	if !kubetest.WaitFor(time.Minute, func() bool {
		listed := c.node.Must(t).State().Images
		for _, img := range imgs {
			if slices.Contains(listed, img.ID) {
				return false
			}
		}
		return true
	}) {
		t.Fatalf("the agent did not remove the imported images within a minute of the fill past the kubelet's threshold; its log:\n%s", c.agentLog())
	}
	u, _ := c.usage(t)
	if u >= kubeletImageGCHigh {
		t.Fatalf("the image filesystem is at %d%% after the agent's pass, want below the kubelet's high threshold %d%%", u, kubeletImageGCHigh)
	}
	removed := c.journalAgreesWithNode(t, c.journal(t), imgs)
	if len(removed) != len(imgs) {
		t.Errorf("the journal has %d of the %d images removed", len(removed), len(imgs))
	}
	t.Logf("the agent removed %d images within %s of the fill; usage now %d%%", len(removed), time.Since(filled).Round(time.Second), u)

	// Past the kubelet's next image GC, which must run and succeed, or
	// the test proves nothing.
	ran := c.kubeletLogCount(t, kubeletImageGCDone)
	next := kubeletImageGCPeriod - time.Since(c.kubeletStarted)%kubeletImageGCPeriod + 20*time.Second
	t.Logf("waiting %s for the kubelet's next image GC", next.Round(time.Second))
	select {
	case <-time.After(next):
	case <-t.Context().Done():
		t.Fatal(t.Context().Err())
	}
	if n := c.kubeletLogCount(t, kubeletImageGCDone); n <= ran {
		t.Fatalf("the kubelet logged no image GC that succeeded in the wait (%d before, %d after)", ran, n)
	}
	log, err := os.ReadFile(c.kubeletLog)
	if err != nil {
		t.Fatal(err)
	}
	if i := strings.Index(string(log), kubeletOverHigh); i >= 0 {
		t.Errorf("the kubelet's image GC found usage over its threshold: %.300s", log[i:])
	}
	final := c.metrics(t, agent.Name)
	if d := metricValue(final, othersSeries) - metricValue(before, othersSeries); d != 0 {
		t.Errorf("%s went up by %v: images vanished that the agent did not remove", othersSeries, d)
	}
}

// kubeletLogCount counts the kubelet's log lines that hold s.
func (c *cluster) kubeletLogCount(t *testing.T, s string) int {
	t.Helper()
	log, err := os.ReadFile(c.kubeletLog)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Count(string(log), s)
}
