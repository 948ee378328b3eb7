package fleet

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/nodegc/nodegc/internal/kubeclient"
	"github.com/nodegc/nodegc/internal/readcount"
	"github.com/nodegc/nodegc/metrics"
)

// fakeCluster is an API server with nodes, their agents' pods, and the
// pods proxy to each agent's summary.
type fakeCluster struct {
	nodes   []corev1.Node
	pods    []corev1.Pod
	summary map[string]func(w http.ResponseWriter) // by pod name
	mu      sync.Mutex
	asked   map[string]int // requests proxied to each pod
}

func readyNode(name string) corev1.Node {
	return corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name},
		Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}}}
}

// agentPod is node's agent pod, running and ready; change makes it
// otherwise.
func agentPod(node string, change func(*corev1.Pod)) corev1.Pod {
	p := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "nodegc-" + node, Namespace: DefaultNamespace},
		Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "nodegc"}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.0.0.1",
			Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}},
			ContainerStatuses: []corev1.ContainerStatus{{Name: "nodegc", Ready: true,
				State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}}}
	if change != nil {
		change(&p)
	}
	return p
}

func okSummary(w http.ResponseWriter) {
	_ = json.NewEncoder(w).Encode(metrics.Summary{Node: "n", UsagePercent: 40, High: 85, Low: 80, PodSource: "synced", EventStream: "live"})
}

func (f *fakeCluster) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	switch {
	case r.URL.Path == "/api/v1/nodes":
		_ = json.NewEncoder(w).Encode(corev1.NodeList{Items: f.nodes})
	case r.URL.Path == "/api/v1/namespaces/"+DefaultNamespace+"/pods":
		_ = json.NewEncoder(w).Encode(corev1.PodList{Items: f.pods})
	case strings.HasSuffix(r.URL.Path, "/proxy"+metrics.SummaryPath):
		pod, _, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/api/v1/namespaces/"+DefaultNamespace+"/pods/"), ":")
		f.mu.Lock()
		f.asked[pod]++
		f.mu.Unlock()
		if answer := f.summary[pod]; answer != nil {
			answer(w)
			return
		}
		okSummary(w)
	default:
		http.NotFound(w, r)
	}
}

// read reads the fake cluster as `nodegc fleet` does; read counts the
// bytes of the replies it read.
func (f *fakeCluster) read(t *testing.T) (rows map[string]Node, read int64) {
	t.Helper()
	f.asked = map[string]int{}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	var n atomic.Int64
	cfg := &rest.Config{Host: srv.URL}
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return readcount.Transport{RT: rt, N: &n} })
	kc, err := kubeclient.New(BoundedConfig(cfg))
	if err != nil {
		t.Fatal(err)
	}
	nodes, err := NewReader(Options{Client: kc}).Read(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	rows = map[string]Node{}
	for _, n := range nodes {
		rows[n.Name] = n
	}
	return rows, n.Load()
}

func TestAnAgentWhoseContainerIsNotReadyIsNeverAsked(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(*corev1.Pod)
		why    string
	}{
		{"crash-looping", func(p *corev1.Pod) {
			p.Status.Conditions[0].Status = corev1.ConditionFalse
			p.Status.ContainerStatuses[0] = corev1.ContainerStatus{Name: "nodegc", RestartCount: 5,
				State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}}}
		}, "container nodegc CrashLoopBackOff (5 restarts)"},
		{"running but failing its readiness probe", func(p *corev1.Pod) {
			p.Status.Conditions[0].Status = corev1.ConditionFalse
			p.Status.ContainerStatuses[0].Ready = false
		}, "container nodegc not ready"},
		{"its Ready condition false", func(p *corev1.Pod) {
			p.Status.Conditions[0].Status = corev1.ConditionFalse
		}, "Ready condition is not true"},
		{"no container status yet", func(p *corev1.Pod) {
			p.Status.ContainerStatuses = nil
		}, "container nodegc has no status"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &fakeCluster{nodes: []corev1.Node{readyNode("a"), readyNode("b")},
				pods: []corev1.Pod{agentPod("a", tc.change), agentPod("b", nil)}}
			rows, _ := f.read(t)
			if a := rows["a"]; a.State != Unready || !strings.Contains(a.Err, tc.why) {
				t.Errorf("node a: state %q, error %q; want %q naming %q", a.State, a.Err, Unready, tc.why)
			}
			if f.asked["nodegc-a"] != 0 {
				t.Errorf("the unready agent was sent %d requests, want none", f.asked["nodegc-a"])
			}
			if b := rows["b"]; b.State != OK {
				t.Errorf("node b: state %q (%s), want ok", b.State, b.Err)
			}
		})
	}
}

func TestAnAgentsOversizedReplyIsAnErrorOnItsRowAlone(t *testing.T) {
	const huge = 64 << 20
	for _, tc := range []struct {
		name   string
		answer func(w http.ResponseWriter)
	}{
		{"a long JSON string", func(w http.ResponseWriter) {
			_, _ = io.WriteString(w, `{"node":"`)
			chunk := strings.Repeat("A", 1<<20)
			for range huge >> 20 {
				if _, err := io.WriteString(w, chunk); err != nil {
					return
				}
			}
		}},
		{"a summary padded with blanks", func(w http.ResponseWriter) {
			chunk := strings.Repeat(" ", 1<<20)
			for range huge >> 20 {
				if _, err := io.WriteString(w, chunk); err != nil {
					return
				}
			}
			okSummary(w)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &fakeCluster{nodes: []corev1.Node{readyNode("a"), readyNode("b")},
				pods:    []corev1.Pod{agentPod("a", nil), agentPod("b", nil)},
				summary: map[string]func(http.ResponseWriter){"nodegc-a": tc.answer}}
			rows, read := f.read(t)
			a := rows["a"]
			if a.State != Failed || !strings.Contains(a.Err, "GET "+metrics.SummaryPath+" of pod nodegc/nodegc-a is larger than its bound of 16384 bytes") {
				t.Errorf("node a: state %q, error %q; want an error naming the request and its bound", a.State, a.Err)
			}
			if b := rows["b"]; b.State != OK {
				t.Errorf("node b: state %q (%s), want ok", b.State, b.Err)
			}
			// The lists and b's summary are a few KB; a's reply is read
			// no further than its bound.
			if read > MaxSummaryReply+1<<20 {
				t.Errorf("read %d bytes of replies, want no more than the summary's bound and the lists (%d)", read, MaxSummaryReply+1<<20)
			}
		})
	}
}
