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
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/nodegc/nodegc/internal/kubeclient"
	"github.com/nodegc/nodegc/metrics"
)

// State is what the fleet view knows of a node's agent.
type State string

// States, from worst to best for the default order.
const (
	// NoAnswer: the agent's pod runs but did not answer in time.
	NoAnswer State = "no answer"
	// Failed: the agent answered with an error, or its answer was not a
	// summary.
	Failed State = "error"
	// NotReady: the agent's pod exists but is not running (pending,
	// failed, no IP yet).
	NotReady State = "not running"
	// NoAgent: no agent's pod is bound to the node.
	NoAgent State = "no agent"
	// OK: the agent answered.
	OK State = "ok"
)

// Node is one row of the fleet view.
type Node struct {
	Name string
	// Ready is the Node's Ready condition.
	Ready bool
	// Pod and Namespace name the agent's pod; "" without one.
	Pod, Namespace string
	// Port is the agent's metrics port.
	Port  int
	State State
	// Err says why State is not OK.
	Err string
	// Summary is the agent's row; nil unless State is OK.
	Summary *metrics.Summary
	// Took is how long the agent's answer took.
	Took time.Duration
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
	DefaultPort      = 10263
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

// Read lists the nodes and the agents' pods, and asks every running
// agent for its row. The rows are sorted by name. Only the two lists
// can fail it; an agent's failure is its row's State.
func (r *Reader) Read(ctx context.Context) ([]Node, error) {
	c := r.o.Client
	var (
		nodes *corev1.NodeList
		pods  *corev1.PodList
		nerr  error
		perr  error
		wg    sync.WaitGroup
	)
	wg.Go(func() { nodes, nerr = c.Nodes(ctx) })
	wg.Go(func() { pods, perr = c.PodsIn(ctx, r.o.Namespace, r.o.Selector) })
	wg.Wait()
	if nerr != nil {
		return nil, forbidden("list nodes", nerr)
	}
	if perr != nil {
		return nil, forbidden("list pods in namespace "+r.o.Namespace, perr)
	}
	agents := map[string]*corev1.Pod{}
	for i := range pods.Items {
		p := &pods.Items[i]
		if p.Spec.NodeName == "" || p.DeletionTimestamp != nil && agents[p.Spec.NodeName] != nil {
			continue
		}
		// Of two pods on a node (a rolling update), the running one.
		if old := agents[p.Spec.NodeName]; old == nil || !running(old) && running(p) {
			agents[p.Spec.NodeName] = p
		}
	}
	rows := make([]Node, len(nodes.Items))
	sem := make(chan struct{}, r.o.Parallel)
	for i := range nodes.Items {
		n := &nodes.Items[i]
		row := &rows[i]
		row.Name, row.Ready = n.Name, nodeReady(n)
		p := agents[n.Name]
		switch {
		case p == nil:
			row.State = NoAgent
			continue
		case !running(p):
			row.Pod, row.Namespace, row.State = p.Name, p.Namespace, NotReady
			row.Err = string(p.Status.Phase)
			continue
		}
		row.Pod, row.Namespace, row.Port = p.Name, p.Namespace, portOf(p, r.o.Port)
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			r.ask(ctx, row)
		})
	}
	wg.Wait()
	slices.SortFunc(rows, func(a, b Node) int { return strings.Compare(a.Name, b.Name) })
	return rows, nil
}

// ask fills row with its agent's answer, within the timeout.
func (r *Reader) ask(ctx context.Context, row *Node) {
	ctx, cancel := context.WithTimeout(ctx, r.o.Timeout)
	defer cancel()
	start := time.Now()
	body, err := r.o.Client.ProxyGet(ctx, row.Namespace, row.Pod, row.Port, metrics.SummaryPath, r.o.Timeout)
	row.Took = time.Since(start)
	switch {
	case errors.Is(err, context.DeadlineExceeded) || apierrors.IsTimeout(err) || ctx.Err() != nil:
		row.State, row.Err = NoAnswer, fmt.Sprintf("no answer within %s", r.o.Timeout)
		return
	case err != nil:
		row.State, row.Err = Failed, oneLine(err.Error())
		if apierrors.IsForbidden(err) {
			row.Err = "forbidden: get pods/proxy in " + row.Namespace
		}
		return
	}
	var s metrics.Summary
	if err := json.Unmarshal(body, &s); err != nil {
		row.State, row.Err = Failed, "not an agent's summary: "+oneLine(err.Error())
		return
	}
	row.State, row.Summary = OK, &s
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

// Agent returns the agent pod of the named node, for `enter`: its
// namespace, name and port; an error naming why there is none.
func (r *Reader) Agent(ctx context.Context, node string) (Node, error) {
	pods, err := r.o.Client.PodsIn(ctx, r.o.Namespace, r.o.Selector)
	if err != nil {
		return Node{}, forbidden("list pods in namespace "+r.o.Namespace, err)
	}
	var found *corev1.Pod
	for i := range pods.Items {
		p := &pods.Items[i]
		if p.Spec.NodeName == node && (found == nil || !running(found) && running(p)) {
			found = p
		}
	}
	switch {
	case found == nil:
		return Node{}, fmt.Errorf("node %s: no nodegc agent pod (namespace %s, selector %s)", node, r.o.Namespace, r.o.Selector)
	case !running(found):
		return Node{}, fmt.Errorf("node %s: the agent's pod %s is %s", node, found.Name, found.Status.Phase)
	}
	return Node{Name: node, Pod: found.Name, Namespace: found.Namespace, Port: portOf(found, r.o.Port), State: OK}, nil
}
