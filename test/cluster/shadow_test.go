package cluster

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodegc/nodegc/internal/kubetest"
	"github.com/nodegc/nodegc/internal/realnode"
)

// kubeletDeleteUnused is what the kubelet v1.36.3 logs when its eviction
// manager reclaims every unused image (image_gc_manager.go
// DeleteUnusedImages), unlike its image GC, which frees down to the low
// threshold.
const kubeletDeleteUnused = "Attempting to delete unused images"

// shadowSeries is the agent's judgment of the shadow passes' images.
func shadowSeries(outcome string) string {
	return fmt.Sprintf(`nodegc_shadow_items_total{kind="image",outcome="%s"}`, outcome)
}

// TestShadowAgreesWithTheKubeletsImageGC: issue 39's shadow mode. The
// DaemonSet's one setting turned on (--shadow=true) and the agent's band
// made the kubelet's (85/80, its defaults here), the agent plans every
// pass and removes nothing while the kubelet's own image GC does the
// work. Four images imported and first seen by the kubelet more than its
// minimum age before its next image GC, and the image filesystem filled
// to 85 % between two of its image GCs (15.5 % available: not past the
// eviction manager's imagefs.available<15 %, which would reclaim every
// unused image instead), the kubelet's image GC finds usage over its
// threshold and removes them (its target, down to 80 %, is more than
// they hold, so which go does not hang on its order among equals); the
// agent's would-have-removed set equals what the kubelet removed: every
// image that vanished is agreed (none other_only), and nothing the agent
// planned stayed (none nodegc_only).
func TestShadowAgreesWithTheKubeletsImageGC(t *testing.T) {
	c := sharedCluster(t)
	old := c.waitAgentReady(t)
	// The kubelet runs its defaults (85/80, images at least 2 minutes
	// old); the config file the agent reads says otherwise since the
	// kubelet started (startCluster), so the agent is given them.
	pod := c.setAgentArgs(t, old, "--shadow=true", "--image-gc-margin=0",
		fmt.Sprintf("--image-gc-high-threshold=%d", kubeletImageGCHigh), fmt.Sprintf("--image-gc-low-threshold=%d", kubeletImageGCHigh-5),
		"--minimum-image-ttl-duration=2m")
	if m := c.metrics(t, pod.Name); metricValue(m, "nodegc_gc_shadow") != 1 || metricValue(m, "nodegc_image_gc_high_threshold_ratio")*100 != kubeletImageGCHigh {
		t.Fatalf("the agent is not in shadow mode at the kubelet's band:\n%s", grepLines(m, "nodegc_gc_shadow", "threshold_ratio"))
	}

	imgs := c.importImages(t, 4, 8<<20, "shadow")
	// The kubelet first sees images at an image GC (its detectImages);
	// they may go at the one after (its minimum age is 2 minutes). The
	// fill comes 90 s before that one.
	sleep(t, kubeletImageGCPeriod-time.Since(c.kubeletStarted)%kubeletImageGCPeriod+10*time.Second, "for the kubelet's next image GC to see the images")
	c.waitKubeletImageGCPhase(t, kubeletImageGCPeriod-90*time.Second)
	before := c.metrics(t, pod.Name)
	gcs, evictions := c.kubeletLogCount(t, kubeletOverHigh), c.kubeletLogCount(t, kubeletDeleteUnused)
	c.fillToAvailable(t, 155) // 15.5 % available: usage 85 %
	// A shadow image pass after the fill plans the imported images.
	if !kubetest.WaitFor(30*time.Second, func() bool {
		return metricValue(c.metrics(t, pod.Name), "nodegc_shadow_passes_total")-metricValue(before, "nodegc_shadow_passes_total") >= 4
	}) {
		t.Fatalf("no shadow pass within 30 s of the fill; agent log:\n%s", c.agentLog())
	}
	wait := kubeletImageGCPeriod - time.Since(c.kubeletStarted)%kubeletImageGCPeriod + 30*time.Second
	t.Logf("waiting at most %s for the kubelet to remove the imported images", wait.Round(time.Second))
	if !kubetest.WaitFor(wait, func() bool {
		listed := c.node.Must(t).State().Images
		return !slices.ContainsFunc(imgs, func(img realnode.ImageRef) bool { return slices.Contains(listed, img.ID) })
	}) {
		t.Fatalf("the kubelet did not remove the imported images by its next image GC (over-threshold lines %d before, %d now); agent log:\n%s",
			gcs, c.kubeletLogCount(t, kubeletOverHigh), c.agentLog())
	}
	if n := c.kubeletLogCount(t, kubeletOverHigh); n <= gcs {
		t.Fatalf("the imported images went, but not by the kubelet's image GC: it never logged usage over its threshold (%d lines before, %d after); its eviction manager's reclaims: %d before, %d after",
			gcs, n, evictions, c.kubeletLogCount(t, kubeletDeleteUnused))
	}
	if n := c.kubeletLogCount(t, kubeletDeleteUnused); n > evictions {
		t.Errorf("the kubelet's eviction manager reclaimed unused images too (%d times): the fill crossed imagefs.available", n-evictions)
	}
	// Two snapshots later (passes every 2 s) the vanished are settled.
	var after []byte
	delta := func(series string) float64 { return metricValue(after, series) - metricValue(before, series) }
	kubetest.WaitFor(30*time.Second, func() bool {
		after = c.metrics(t, pod.Name)
		return delta(othersSeries) >= float64(len(imgs)) && delta(shadowSeries("agreed"))+delta(shadowSeries("other_only")) == delta(othersSeries)
	})
	removed := delta(othersSeries)
	t.Logf("the kubelet removed %v images; shadow: agreed %v, nodegc_only %v, other_only %v", removed,
		delta(shadowSeries("agreed")), delta(shadowSeries("nodegc_only")), delta(shadowSeries("other_only")))
	if removed < float64(len(imgs)) || delta(shadowSeries("agreed")) != removed || delta(shadowSeries("other_only")) != 0 || delta(shadowSeries("nodegc_only")) != 0 {
		t.Errorf("the agent's would-have-removed set is not what the kubelet removed:\n%s", grepLines(after, "nodegc_shadow_", "removed_by_others"))
	}
	if d := delta(`nodegc_image_gc_deletions_total{reason="space",result="removed"}`); d != 0 {
		t.Errorf("the agent in shadow mode removed %v images", d)
	}
}

// setAgentArgs sets the given flags (--name=value, replacing one of the
// same name) on the DaemonSet's agent, waits for the new pod to be
// Ready, and returns it; t.Cleanup puts the arguments back and waits
// for that pod.
func (c *cluster) setAgentArgs(t *testing.T, old corev1.Pod, flags ...string) corev1.Pod {
	t.Helper()
	dss := c.cs.AppsV1().DaemonSets("nodegc")
	ds, err := dss.Get(t.Context(), "nodegc", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	orig := slices.Clone(ds.Spec.Template.Spec.Containers[0].Args)
	args := slices.Clone(orig)
	for _, f := range flags {
		name, _, _ := strings.Cut(f, "=")
		args = slices.DeleteFunc(args, func(a string) bool { return strings.HasPrefix(a, name+"=") })
		args = append(args, f)
	}
	// A cleanup's t.Context() is done: the arguments are put back on a
	// context of their own.
	set := func(ctx context.Context, args []string) {
		t.Helper()
		ds, err := dss.Get(ctx, "nodegc", metav1.GetOptions{})
		if err == nil {
			ds.Spec.Template.Spec.Containers[0].Args = args
			_, err = dss.Update(ctx, ds, metav1.UpdateOptions{})
		}
		if err != nil {
			t.Fatalf("set the agent's arguments: %v", err)
		}
	}
	set(t.Context(), args)
	pod := c.waitNewAgentReady(t, old.UID)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		set(ctx, orig)
		if !kubetest.WaitFor(3*time.Minute, func() bool {
			pods, err := c.cs.CoreV1().Pods("nodegc").List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=nodegc"})
			return err == nil && len(pods.Items) == 1 && pods.Items[0].UID != pod.UID && podReady(pods.Items[0])
		}) {
			t.Errorf("the agent with its arguments put back is not Ready within 3 minutes; its log:\n%s", c.agentLog())
		}
	})
	return pod
}

// fillToAvailable writes a file on the image filesystem, no image's,
// that leaves permille thousandths of its capacity available; t.Cleanup
// removes it.
func (c *cluster) fillToAvailable(t *testing.T, permille int64) {
	t.Helper()
	_, fs := c.usage(t)
	size := fs.AvailableBytes - fs.CapacityBytes*permille/1000
	if size <= 0 {
		t.Fatalf("the image filesystem has less than %d‰ available already (%d of %d bytes)", permille, fs.AvailableBytes, fs.CapacityBytes)
	}
	c.fill(t, size)
	u, fs := c.usage(t)
	t.Logf("image filesystem filled: usage %d%%, %d of %d bytes available", u, fs.AvailableBytes, fs.CapacityBytes)
}

// podReady reports whether the pod's Ready condition is true.
func podReady(pod corev1.Pod) bool {
	for _, cond := range pod.Status.Conditions {
		if cond.Type == corev1.PodReady {
			return cond.Status == corev1.ConditionTrue
		}
	}
	return false
}

// waitKubeletImageGCPhase waits until the kubelet's image GC period is
// at phase (the time since its latest image GC), the next time it is.
func (c *cluster) waitKubeletImageGCPhase(t *testing.T, phase time.Duration) {
	t.Helper()
	now := time.Since(c.kubeletStarted) % kubeletImageGCPeriod
	sleep(t, (phase-now+kubeletImageGCPeriod)%kubeletImageGCPeriod, fmt.Sprintf("for the kubelet's image GC period to be at %s", phase))
}

// sleep waits d, or fails when the test's context ends first.
func sleep(t *testing.T, d time.Duration, why string) {
	t.Helper()
	t.Logf("waiting %s %s", d.Round(time.Second), why)
	select {
	case <-time.After(d):
	case <-t.Context().Done():
		t.Fatal(t.Context().Err())
	}
}

// grepLines is body's lines that hold any of subs.
func grepLines(body []byte, subs ...string) string {
	var out []string
	for line := range strings.Lines(string(body)) {
		for _, s := range subs {
			if strings.Contains(line, s) && !strings.HasPrefix(line, "#") {
				out = append(out, strings.TrimSpace(line))
				break
			}
		}
	}
	return strings.Join(out, "\n")
}
