package cluster

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/nodegc/nodegc/internal/kubetest"
	"github.com/nodegc/nodegc/internal/realnode"
)

// TestDeletedPodGoesAtTheAgentsPass: a crash-looping pod made through the
// API leaves dead containers; deleted through the API, its containers
// (the kubelet removes them as it kills the pod), its sandbox and its log
// directory are gone, the last two at the agent's next container pass,
// which counts them in its metrics as pod-removable: the pod source (the
// API server, through deploy/'s RBAC) and the hostPath mounts of the logs
// work in the pod. The agent's container pass runs every 2 s here (the
// kubelet's own GC runs every minute), so the agent's pass comes first.
func TestDeletedPodGoesAtTheAgentsPass(t *testing.T) {
	c := sharedCluster(t)
	agent := c.waitAgentReady(t)
	series := []string{
		`nodegc_container_gc_sandbox_removals_total{reason="pod-removable",result="removed"}`,
		`nodegc_container_gc_log_removals_total{reason="pod-removable",result="removed"}`,
	}
	before := c.metrics(t, agent.Name)

	m := c.node.Must(t)
	archive, img := m.BuildImage("nodegc/crash", "v1", 64<<10)
	m.Import(archive)
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "crash", Namespace: "default"},
		Spec: corev1.PodSpec{
			NodeName:                      c.nodeName,
			HostNetwork:                   true,
			RestartPolicy:                 corev1.RestartPolicyAlways,
			TerminationGracePeriodSeconds: new(int64),
			Containers: []corev1.Container{{
				Name: "crash", Image: img.Ref, ImagePullPolicy: corev1.PullNever, Args: []string{"exit", "1"},
			}},
		},
	}
	created, err := c.cs.CoreV1().Pods("default").Create(t.Context(), pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	uid := string(created.UID)
	if !kubetest.WaitFor(2*time.Minute, func() bool { return len(c.containersOf(t, uid)) >= 2 }) {
		t.Fatalf("pod %s left no dead containers (%d containers)", uid, len(c.containersOf(t, uid)))
	}
	logDir := filepath.Join(c.node.PodLogsDir(), "default_crash_"+uid)
	if _, err := os.Stat(logDir); err != nil {
		t.Fatalf("pod log directory: %v", err)
	}
	// The kubelet's own container GC removes a deleted pod's sandbox and
	// logs too, once a minute: delete the pod well away from its turn, so
	// the agent's pass (every 2 s) is the one that does.
	c.awayFromKubeletGC(t)
	if err := c.cs.CoreV1().Pods("default").Delete(t.Context(), "crash", metav1.DeleteOptions{GracePeriodSeconds: new(int64)}); err != nil {
		t.Fatal(err)
	}
	gone := kubetest.WaitFor(90*time.Second, func() bool {
		_, err := os.Stat(logDir)
		return len(c.containersOf(t, uid)) == 0 && len(c.sandboxesOf(t, uid)) == 0 && os.IsNotExist(err)
	})
	if !gone {
		t.Errorf("after the pod's deletion: %d containers, %d sandboxes of %s left; log directory %s still there", len(c.containersOf(t, uid)), len(c.sandboxesOf(t, uid)), uid, logDir)
	}
	after := c.metrics(t, agent.Name)
	// The kubelet removes a deleted pod's dead containers itself as it
	// kills the pod; its sandbox and log directory wait for a GC pass.
	for _, s := range series {
		if d := metricValue(after, s) - metricValue(before, s); d != 1 {
			t.Errorf("%s went up by %v over the pod's deletion, want 1; the agent's metrics:\n%s\nthe kubelet's own removals:\n%s",
				s, d, grep(after, "nodegc_container_gc_"), grep([]byte(kubetest.Tail(c.kubeletLog, 100000)), "Removing "))
		}
	}
	if t.Failed() || testing.Verbose() {
		t.Logf("agent log:\n%s", c.agentLog())
	}
}

// awayFromKubeletGC waits, if need be, until the kubelet's container GC
// (a few seconds after its start, then every minute) is at least 10 s
// behind and 15 s ahead.
func (c *cluster) awayFromKubeletGC(t testing.TB) {
	t.Helper()
	for {
		phase := time.Since(c.kubeletStarted) % time.Minute
		if phase >= 15*time.Second && phase <= 45*time.Second {
			return
		}
		select {
		case <-t.Context().Done():
			t.Fatal(t.Context().Err())
		case <-time.After(time.Second):
		}
	}
}

// metrics reads the agent's /metrics through the API server's proxy.
func (c *cluster) metrics(t testing.TB, pod string) []byte {
	t.Helper()
	body, err := c.cs.CoreV1().Pods("nodegc").ProxyGet("http", pod, strconv.Itoa(c.port), "/metrics", nil).DoRaw(t.Context())
	if err != nil {
		t.Fatalf("the agent's metrics through the API server: %v", err)
	}
	return body
}

// metricValue is the value of one series (name and labels, as the agent
// writes them) in a /metrics body; 0 when absent.
func metricValue(body []byte, series string) float64 {
	for line := range bytes.Lines(body) {
		if v, ok := bytes.CutPrefix(line, []byte(series+" ")); ok {
			f, _ := strconv.ParseFloat(string(bytes.TrimSpace(v)), 64)
			return f
		}
	}
	return 0
}

// containersOf lists the pod's containers through CRI.
func (c *cluster) containersOf(t *testing.T, uid string) []*runtimeapi.Container {
	t.Helper()
	resp, err := c.node.RuntimeClient().ListContainers(t.Context(), &runtimeapi.ListContainersRequest{
		Filter: &runtimeapi.ContainerFilter{LabelSelector: map[string]string{realnode.LabelPodUID: uid}}})
	if err != nil {
		t.Fatal(err)
	}
	return resp.GetContainers()
}

// sandboxesOf lists the pod's sandboxes through CRI.
func (c *cluster) sandboxesOf(t *testing.T, uid string) []*runtimeapi.PodSandbox {
	t.Helper()
	resp, err := c.node.RuntimeClient().ListPodSandbox(t.Context(), &runtimeapi.ListPodSandboxRequest{
		Filter: &runtimeapi.PodSandboxFilter{LabelSelector: map[string]string{realnode.LabelPodUID: uid}}})
	if err != nil {
		t.Fatal(err)
	}
	return resp.GetItems()
}

// grep returns the lines of b that contain s.
func grep(b []byte, s string) string {
	var out bytes.Buffer
	for _, line := range bytes.Split(b, []byte("\n")) {
		if bytes.Contains(line, []byte(s)) {
			fmt.Fprintf(&out, "%s\n", line)
		}
	}
	return out.String()
}
