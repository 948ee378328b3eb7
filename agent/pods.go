package agent

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/nodegc/nodegc/engine/podsource"
	"github.com/nodegc/nodegc/internal/kubeclient"
	"github.com/nodegc/nodegc/metrics"
)

// Pods is the node's pod source as the agent reports it: in /readyz, in
// the metrics, on its start line, and the API client its Node's events
// and its NodeGC object go through.
type Pods struct {
	// Source is the API server's pods bound to this node; nil without
	// one (turned off, or no API server found).
	Source *podsource.Source
	// Client is the API client; nil without one.
	Client *kubeclient.Client
	// Node is this node's name, as the kubelet names it.
	Node string
	// Off is --pod-source=off: the operator runs without a pod source,
	// so /readyz does not wait for one.
	Off bool
	// Describe is the source's state in one line.
	Describe func() string
}

// describePods is the pod source's state in one line; "none" on a
// simulated node.
func describePods(ps *Pods) string {
	if ps == nil {
		return "none (simulated node)"
	}
	return ps.Describe()
}

// readyChecks are /readyz's conditions: the runtime answers (its image
// fs, one small call), the state dir can hold the journal, and the pod
// source has synced or is off.
func readyChecks(o Options) []metrics.Check {
	return []metrics.Check{
		{Name: "runtime", Fn: func(ctx context.Context) error {
			_, err := o.Engine.ImageFs(ctx)
			return err
		}},
		{Name: "state dir", Fn: func(context.Context) error { return o.ProbeStateDir(o.StateDir) }},
		{Name: "pod source", Fn: func(context.Context) error {
			ps := o.Pods
			switch {
			case ps == nil || ps.Off:
				return nil // a simulated node, or off by the operator's choice
			case ps.Source == nil:
				return errors.New(ps.Describe() + " (--pod-source=off runs without it)")
			case !ps.Source.Synced():
				return errors.New(ps.Describe())
			}
			return nil
		}},
	}
}

// podSourceState returns the pod source's state for the metrics. It
// remembers when the source's current error was first seen.
func podSourceState(ps *Pods) func() metrics.PodSourceState {
	var (
		mu      sync.Mutex
		lastErr string
		since   time.Time
	)
	return func() metrics.PodSourceState {
		if ps == nil || ps.Source == nil {
			return metrics.PodSourceState{}
		}
		st := metrics.PodSourceState{Enabled: true, Synced: ps.Source.Synced()}
		if st.Synced {
			st.Pods = len(ps.Source.Pods())
		}
		mu.Lock()
		defer mu.Unlock()
		switch err := ps.Source.Err(); {
		case err == nil:
			lastErr, since = "", time.Time{}
		case err.Error() != lastErr:
			lastErr, since = err.Error(), time.Now()
		}
		st.LastError = since
		return st
	}
}
