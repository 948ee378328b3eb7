// Package fleet reads every node's agent through the API server, for
// `nodegc fleet`: the cluster's nodes, the agents' pods (the DaemonSet of
// deploy/), and each agent's row (metrics.SummaryPath) through the API
// server's pods proxy, with the user's kubeconfig; no SSH and no service
// of its own. Each agent is asked within a timeout of its own and at most
// Parallel at once, so an agent that does not answer shows as such and
// never holds back the others.
package fleet

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/rest"

	"github.com/nodegc/nodegc/control"
	"github.com/nodegc/nodegc/internal/kubeclient"
)

// Bounds of the replies the fleet reads (control.LimitReply): one past
// its bound fails that read, naming it. An agent's is its row's error.
const (
	// MaxSummaryReply bounds an agent's row: a metrics.Summary is counts
	// and times, about 600 bytes of JSON.
	MaxSummaryReply = 16 << 10
	// MaxListReply bounds the API server's list of nodes, or of the
	// agents' pods (one a node): 5,000 objects, the largest cluster
	// Kubernetes supports, of up to 64 KiB each (a Node lists at most 50
	// images, the kubelet's nodeStatusMaxImages; a DaemonSet's pod is a
	// few KB).
	MaxListReply = 5000 * 64 << 10
)

// BoundedConfig returns a copy of cfg whose every reply body is read no
// further than the bound its request's context carries (the Reader's
// requests each carry one), MaxListReply when it carries none. A Reader's
// Client is to be made from it (kubeclient.New(BoundedConfig(cfg))): on
// client-go's own transport, a reply is read whole before it is decoded.
func BoundedConfig(cfg *rest.Config) *rest.Config {
	c := rest.CopyConfig(cfg)
	c.Wrap(func(rt http.RoundTripper) http.RoundTripper { return boundedTransport{rt} })
	return c
}

// replyBound is a request's bound in its context.
type replyBound struct {
	what  string
	limit int64
}

type replyBoundKey struct{}

// withBound returns ctx whose requests' replies are bounded by limit.
func withBound(ctx context.Context, what string, limit int64) context.Context {
	return context.WithValue(ctx, replyBoundKey{}, replyBound{what, limit})
}

// boundedTransport bounds each reply body by its request's replyBound.
type boundedTransport struct{ rt http.RoundTripper }

func (t boundedTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := t.rt.RoundTrip(r)
	if err != nil {
		return resp, err
	}
	b, ok := r.Context().Value(replyBoundKey{}).(replyBound)
	if !ok {
		b = replyBound{r.Method + " " + r.URL.Path, MaxListReply}
	}
	resp.Body = struct {
		io.Reader
		io.Closer
	}{control.LimitReply(resp.Body, b.what, b.limit), resp.Body}
	return resp, nil
}

// Options configure a Reader.
type Options struct {
	Client *kubeclient.Client
	// Namespace and Selector find the agents' pods (deploy/: nodegc,
	// app.kubernetes.io/name=nodegc).
	Namespace, Selector string
	// Port is the agent's metrics port when its pod names none
	// (a container port named "metrics").
	Port int
	// Timeout bounds each agent's answer; Parallel is how many agents are
	// asked at once.
	Timeout  time.Duration
	Parallel int
}

// Defaults of Options.
const (
	DefaultNamespace = "nodegc"
	DefaultSelector  = "app.kubernetes.io/name=nodegc"
	DefaultPort      = 1017
	DefaultTimeout   = 2 * time.Second
	DefaultParallel  = 64
)

// Reader reads the fleet.
type Reader struct{ o Options }

// NewReader returns a reader; zero options take the defaults.
func NewReader(o Options) *Reader {
	o.Namespace = cmp.Or(o.Namespace, DefaultNamespace)
	o.Selector = cmp.Or(o.Selector, DefaultSelector)
	o.Port = cmp.Or(o.Port, DefaultPort)
	o.Timeout = cmp.Or(o.Timeout, DefaultTimeout)
	o.Parallel = cmp.Or(o.Parallel, DefaultParallel)
	return &Reader{o: o}
}

// Namespace is where the agents' pods are looked for.
func (r *Reader) Namespace() string { return r.o.Namespace }

// ForbiddenError is an API request the user's credentials may not make:
// Verb names the verb and resource ("list nodes").
type ForbiddenError struct {
	Verb string
	Err  error
}

func (e *ForbiddenError) Error() string {
	why := "forbidden"
	if apierrors.IsUnauthorized(e.Err) {
		why = "unauthorized: the API server did not accept the credentials"
	}
	return fmt.Sprintf("your kubeconfig may not %s (%s)", e.Verb, why)
}
func (e *ForbiddenError) Unwrap() error { return e.Err }

// forbidden wraps a 401 or 403 as a ForbiddenError naming verb.
func forbidden(verb string, err error) error {
	if apierrors.IsForbidden(err) || apierrors.IsUnauthorized(err) {
		return &ForbiddenError{Verb: verb, Err: err}
	}
	return fmt.Errorf("%s: %w", verb, err)
}

func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}

func running(p *corev1.Pod) bool {
	return p.Status.Phase == corev1.PodRunning && p.Status.PodIP != ""
}

// unready says why a running agent pod is not to be asked anything: its
// Ready condition is not true, or one of its containers is not running
// and ready (a restart in progress, CrashLoopBackOff, a failing readiness
// probe). The kubelet clears both as soon as a container dies, so while
// the agent restarts its port is never taken for the agent's. "" when the
// pod is ready.
func unready(p *corev1.Pod) string {
	ready := false
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			ready = c.Status == corev1.ConditionTrue
		}
	}
	for _, c := range p.Spec.Containers {
		i := slices.IndexFunc(p.Status.ContainerStatuses, func(s corev1.ContainerStatus) bool { return s.Name == c.Name })
		if i < 0 {
			return "agent not ready: container " + c.Name + " has no status"
		}
		cs := &p.Status.ContainerStatuses[i]
		if cs.Ready && cs.State.Running != nil {
			continue
		}
		why := "not ready"
		if w := cs.State.Waiting; w != nil && w.Reason != "" {
			why = w.Reason
		} else if cs.State.Terminated != nil {
			why = "terminated"
		}
		return fmt.Sprintf("agent not ready: container %s %s (%d restarts)", c.Name, why, cs.RestartCount)
	}
	if !ready {
		return "agent not ready: the pod's Ready condition is not true"
	}
	return ""
}

// better says whether agent pod p is to be asked rather than old: a
// ready pod before a running one, a running one before the rest.
func better(p, old *corev1.Pod) bool {
	rank := func(p *corev1.Pod) int {
		switch {
		case !running(p):
			return 0
		case unready(p) != "":
			return 1
		}
		return 2
	}
	return rank(p) > rank(old)
}

func nodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// portOf is the pod's container port named "metrics", else def.
func portOf(p *corev1.Pod, def int) int {
	for _, c := range p.Spec.Containers {
		for _, port := range c.Ports {
			if port.Name == "metrics" {
				return int(port.ContainerPort)
			}
		}
	}
	return def
}

// AgentPod is a node's agent pod, for `enter`.
type AgentPod struct {
	// Name is the node's name.
	Name string
	// Pod and Namespace name the agent's pod.
	Pod, Namespace string
	// Port is the agent's metrics port.
	Port int
}

// Agent returns the agent pod of the named node, for `enter`: its
// namespace, name and port; an error naming why there is none.
func (r *Reader) Agent(ctx context.Context, node string) (AgentPod, error) {
	pods, err := r.o.Client.PodsIn(withBound(ctx, "list pods in namespace "+r.o.Namespace, MaxListReply), r.o.Namespace, r.o.Selector)
	if err != nil {
		return AgentPod{}, forbidden("list pods in namespace "+r.o.Namespace, err)
	}
	var found *corev1.Pod
	for i := range pods.Items {
		p := &pods.Items[i]
		if p.Spec.NodeName == node && (found == nil || better(p, found)) {
			found = p
		}
	}
	switch {
	case found == nil:
		return AgentPod{}, fmt.Errorf("node %s: no nodegc agent pod (namespace %s, selector %s)", node, r.o.Namespace, r.o.Selector)
	case !running(found):
		return AgentPod{}, fmt.Errorf("node %s: the agent's pod %s is %s", node, found.Name, found.Status.Phase)
	}
	if why := unready(found); why != "" {
		return AgentPod{}, fmt.Errorf("node %s: pod %s: %s", node, found.Name, why)
	}
	return AgentPod{Name: node, Pod: found.Name, Namespace: found.Namespace, Port: portOf(found, r.o.Port)}, nil
}
