package attacks

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodegc/nodegc/metrics"
)

// fleetCluster is an API server with nodes a and b, an agent pod each,
// and the pods proxy to them: what `nodegc fleet` and `kubectl nodegc
// NODE` read.
type fleetCluster struct {
	// podA is node a's agent pod.
	podA corev1.Pod
	// summaryA and statusA answer a's row and a's status.
	summaryA, statusA func(w io.Writer)
	mu                sync.Mutex
	asked             map[string]int // requests proxied to each pod
	served            atomic.Int64   // bytes written to a's proxy
}

func fleetAgentPod(node string) corev1.Pod {
	return corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "nodegc-" + node, Namespace: "nodegc"},
		Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "nodegc"}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.0.0.1",
			Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}},
			ContainerStatuses: []corev1.ContainerStatus{{Name: "nodegc", Ready: true,
				State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}}}
}

type countingWriter struct {
	w io.Writer
	n *atomic.Int64
}

func (c countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n.Add(int64(n))
	return n, err
}

func (f *fleetCluster) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	ready := []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}
	summary := func(w io.Writer) {
		_ = json.NewEncoder(w).Encode(metrics.Summary{UsagePercent: 40, High: 85, Low: 80, PodSource: "synced", EventStream: "live"})
	}
	switch p := r.URL.Path; {
	case p == "/api/v1/nodes":
		_ = json.NewEncoder(w).Encode(corev1.NodeList{Items: []corev1.Node{
			{ObjectMeta: metav1.ObjectMeta{Name: "a"}, Status: corev1.NodeStatus{Conditions: ready}},
			{ObjectMeta: metav1.ObjectMeta{Name: "b"}, Status: corev1.NodeStatus{Conditions: ready}}}})
	case p == "/api/v1/namespaces/nodegc/pods":
		_ = json.NewEncoder(w).Encode(corev1.PodList{Items: []corev1.Pod{f.podA, fleetAgentPod("b")}})
	case strings.HasPrefix(p, "/api/v1/namespaces/nodegc/pods/"):
		pod, rest, _ := strings.Cut(strings.TrimPrefix(p, "/api/v1/namespaces/nodegc/pods/"), ":")
		f.mu.Lock()
		f.asked[pod]++
		f.mu.Unlock()
		var out io.Writer = w
		if pod == "nodegc-a" {
			out = countingWriter{w, &f.served}
		}
		switch {
		case strings.HasSuffix(rest, metrics.SummaryPath) && pod == "nodegc-a" && f.summaryA != nil:
			f.summaryA(out)
		case strings.HasSuffix(rest, metrics.SummaryPath):
			summary(out)
		case strings.HasSuffix(rest, "/v1/status") && f.statusA != nil:
			f.statusA(out)
		default:
			http.NotFound(w, r)
		}
	default:
		http.NotFound(w, r)
	}
}

// start serves the cluster and returns a kubeconfig for it, with a token.
func (f *fleetCluster) start(t *testing.T) string {
	t.Helper()
	f.asked = map[string]int{}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	conf := filepath.Join(t.TempDir(), "kubeconfig")
	body := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: %q}}]
users: [{name: u, user: {token: operator-token}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
`, srv.URL)
	if err := os.WriteFile(conf, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return conf
}

// huge writes n bytes of one JSON string, or until the reader goes.
func huge(n int) func(w io.Writer) {
	return func(w io.Writer) {
		_, _ = io.WriteString(w, `{"node":"`)
		chunk := strings.Repeat("A", 1<<20)
		for range n >> 20 {
			if _, err := io.WriteString(w, chunk); err != nil {
				return
			}
		}
		_, _ = io.WriteString(w, `"}`)
	}
}

// fleetRows runs `nodegc fleet -o json` and returns its rows by node.
func fleetRows(t *testing.T, conf string) (map[string]map[string]any, run) {
	t.Helper()
	r := nodegc(t, "fleet", "--kubeconfig", conf, "-o", "json")
	var rows []map[string]any
	if err := json.Unmarshal([]byte(r.stdout), &rows); err != nil {
		return nil, r
	}
	byName := map[string]map[string]any{}
	for _, row := range rows {
		byName[fmt.Sprint(row["Name"])] = row
	}
	return byName, r
}

func TestAttacksFleet(t *testing.T) {
	runAttacks(t, []attack{
		{1, "an agent pod whose container crash-loops (not Ready) while another process holds its port is never asked: its node shows agent not ready", func(t *testing.T) error {
			f := &fleetCluster{podA: fleetAgentPod("a")}
			f.podA.Status.Conditions[0].Status = corev1.ConditionFalse
			f.podA.Status.ContainerStatuses[0] = corev1.ContainerStatus{Name: "nodegc", RestartCount: 7,
				State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}}}
			f.summaryA = func(w io.Writer) {
				_, _ = io.WriteString(w, `{"usagePercent":3,"podSource":"synced","eventStream":"live"}`)
			}
			rows, r := fleetRows(t, f.start(t))
			switch a := rows["a"]; {
			case rows == nil:
				return fmt.Errorf("no JSON rows: exit %d, stderr %s", r.code, r.stderr)
			case a["State"] != "not ready" || !strings.Contains(fmt.Sprint(a["Err"]), "agent not ready: container nodegc CrashLoopBackOff (7 restarts)"):
				return fmt.Errorf("node a: state %v, error %v; want not ready, naming the container's state", a["State"], a["Err"])
			case f.asked["nodegc-a"] != 0:
				return fmt.Errorf("the crash-looping agent's port was sent %d requests", f.asked["nodegc-a"])
			case rows["b"]["State"] != "ok":
				return fmt.Errorf("node b: %v, want ok", rows["b"]["State"])
			}
			r = nodegc(t, "fleet", "--kubeconfig", f.start(t), "a")
			if r.code == 0 || !strings.Contains(r.stderr, "agent not ready") || f.asked["nodegc-a"] != 0 {
				return fmt.Errorf("kubectl nodegc a: exit %d, %d requests to the agent, stderr %q; want an error saying the agent is not ready, and no request", r.code, f.asked["nodegc-a"], r.stderr)
			}
			return nil
		}},
		{6, "an agent's 256 MB row is an error on its row naming the bound; the other rows stay", func(t *testing.T) error {
			f := &fleetCluster{podA: fleetAgentPod("a"), summaryA: huge(256 << 20)}
			rows, r := fleetRows(t, f.start(t))
			switch a := rows["a"]; {
			case rows == nil:
				return fmt.Errorf("no JSON rows: exit %d, stderr %s", r.code, r.stderr)
			case a["State"] != "error" || !strings.Contains(fmt.Sprint(a["Err"]), "is larger than its bound of 16384 bytes"):
				return fmt.Errorf("node a: state %v, error %v; want an error naming the bound", a["State"], a["Err"])
			case rows["b"]["State"] != "ok":
				return fmt.Errorf("node b: %v, want ok", rows["b"]["State"])
			case f.served.Load() > 64<<20:
				// The kernel's socket buffers take some past the bound.
				return fmt.Errorf("%d bytes of a's row were read", f.served.Load())
			}
			return nil
		}},
		{6, "an agent's 256 MB status ends kubectl nodegc NODE with an error naming the request and its bound", func(t *testing.T) error {
			f := &fleetCluster{podA: fleetAgentPod("a"), statusA: huge(256 << 20)}
			r := nodegc(t, "fleet", "--kubeconfig", f.start(t), "a")
			switch {
			case r.code != 1 || !strings.Contains(r.stderr, "the reply to GET /v1/status?brief=true is larger than its bound of 1048576 bytes"):
				return fmt.Errorf("exit %d, stderr %q; want 1 and an error naming the status and its bound", r.code, r.stderr)
			case f.served.Load() > 64<<20:
				return fmt.Errorf("%d bytes of a's status were read", f.served.Load())
			}
			return nil
		}},
	})
}
