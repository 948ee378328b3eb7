package kubelet

import (
	"context"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodegc/nodegc/internal/proctest"
)

// TestAgentEventsOnTheNode runs `nodegc agent` beside a real kubelet
// registered with a real kube-apiserver, with an image GC band it cannot
// meet (both thresholds 0: every byte used must go) and no minimum age.
// Its first image pass removes the unused image and fails to free enough,
// its second fails again: the Node object must then carry, from
// reporting controller nodegc, a Normal GarbageCollected event and the
// kubelet's FreeDiskSpaceFailed and ImageGCFailed warnings, found as
// `kubectl describe node` finds events (core/v1, involvedObject the Node).
func TestAgentEventsOnTheNode(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	c := startCluster(ctx, t, "events")
	agent := proctest.Start(t, c.nodegc, "agent", "--metrics-bind-address", "0",
		"--kubeconfig", c.kubeconfig, "--node-name", c.k.nodeName, "--kubelet-pid", "-1",
		"--runtime-endpoint", c.n.Endpoint(), "--pod-logs-dir", c.n.PodLogsDir(), "--state-dir", t.TempDir(),
		"--image-gc-high-threshold", "0", "--image-gc-low-threshold", "0", "--minimum-image-ttl-duration", "0",
		"--image-gc-period", "2s", "--container-gc-period", "1h")
	agent.WaitLine(t, time.Minute, proctest.Contains(`"msg":"agent started"`))

	want := map[string]string{"GarbageCollected": corev1.EventTypeNormal, "FreeDiskSpaceFailed": corev1.EventTypeWarning, "ImageGCFailed": corev1.EventTypeWarning}
	found := map[string]corev1.Event{}
	selector := "involvedObject.kind=Node,involvedObject.name=" + c.k.nodeName
	waitFor(time.Minute, func() bool {
		l, err := c.cs.CoreV1().Events(metav1.NamespaceDefault).List(ctx, metav1.ListOptions{FieldSelector: selector})
		if err != nil {
			t.Logf("list events: %v", err)
			return false
		}
		for _, ev := range l.Items {
			if ev.ReportingController == "nodegc" {
				if _, ok := found[ev.Reason]; !ok {
					found[ev.Reason] = ev
				}
			}
		}
		return len(found) >= len(want)
	})
	agent.Stop(t)
	for reason, typ := range want {
		ev, ok := found[reason]
		switch {
		case !ok:
			t.Errorf("no %s event from nodegc on Node %s; found %v; agent log:\n%s", reason, c.k.nodeName, slices.Sorted(maps.Keys(found)), strings.Join(agent.Seen, "\n"))
		case ev.Type != typ || string(ev.InvolvedObject.UID) != c.k.nodeName || ev.ReportingInstance != "nodegc-"+c.k.nodeName || ev.Message == "":
			t.Errorf("%s event: type %s, regarding %+v, instance %q, message %q", reason, ev.Type, ev.InvolvedObject, ev.ReportingInstance, ev.Message)
		default:
			t.Logf("%s %s: %s", ev.Type, reason, ev.Message)
		}
	}
	for reason := range found {
		if _, ok := want[reason]; !ok {
			t.Errorf("unexpected %s event from nodegc: %s", reason, found[reason].Message)
		}
	}
}
