package main

import (
	"context"
	"errors"

	"github.com/nodegc/nodegc/engine"
)

// liveNodeOptions say how to open an engine on this node's runtime.
type liveNodeOptions struct {
	Policy policyFlags
	// ReadOnly connects without the ability to remove.
	ReadOnly bool
	// Parallel is the passes' pool width (--parallel).
	Parallel int
	// LogToStateDir makes the engine log to <state dir>/nodegc.log when no
	// --log-file was given (the dashboard, whose screen logs would tear).
	LogToStateDir bool
	// OnSnapshot is engine.Options.OnSnapshot.
	OnSnapshot func(engine.Snapshot)
}

// liveNode is an engine on this node's runtime with the node's policy,
// pod source and state dir: what the dashboard and the agent run their
// scheduler on.
type liveNode struct {
	Config *kubeletConfig
	Conn   *runtimeConn
	Engine *engine.Engine
	// Events is the runtime's container event stream; nil when the
	// reader has none.
	Events engine.EventSource
}

// openLiveNode reads the kubelet's settings, resolves the policy, checks
// the state dir (when the engine can remove: every removal is journalled),
// connects to the runtime with its pod source and opens the engine, which
// takes the state dir's lock. Close releases them.
func openLiveNode(ctx context.Context, f *factory, g *globalOptions, o liveNodeOptions) (*liveNode, error) {
	cfg, err := loadConfig(f, g, true)
	if err != nil {
		return nil, err
	}
	policy, _, err := resolvePolicy(o.Policy, cfg)
	if err != nil {
		return nil, err
	}
	if !o.ReadOnly {
		// The engine can remove: its journal must be writable before it
		// connects.
		if err := checkStateDir(g.StateDir); err != nil {
			return nil, err
		}
	}
	if o.LogToStateDir {
		g.dashboardLogFile(g.StateDir, !o.ReadOnly)
	}
	conn, err := connect(ctx, f, g, cfg, o.ReadOnly, true)
	if err != nil {
		return nil, err
	}
	e, err := newEngine(f, g, engine.Options{
		Reader: conn.Reader, Remover: conn.Remover, Policy: policy, Statfs: conn.Statfs,
		StateDir: g.StateDir, ScanLogs: conn.scanLogs(), Parallel: o.Parallel, PodSource: conn.podSource(),
		PodSourceGen: conn.podSourceGen(), OnSnapshot: o.OnSnapshot,
	})
	if err != nil {
		conn.Close()
		return nil, err
	}
	events, _ := conn.Reader.(engine.EventSource)
	return &liveNode{Config: cfg, Conn: conn, Engine: e, Events: events}, nil
}

// Close releases the state dir's lock, stops the pod source and closes
// the connection.
func (n *liveNode) Close() error {
	return errors.Join(n.Engine.Close(), n.Conn.Close())
}

// startScheduler runs the scheduler's periodic passes on e, with e
// following the runtime's container event stream when events is set (a
// container created on an image is seen at once, and the scheduler's
// subscribers are told of every change of the node's containers), until
// the returned stop is called. The returned context ends at stop; the
// caller's commands (forced passes) use it. stop cancels it, so a pass in
// flight stops after its items in flight, waits until they are journalled
// and returns the report of a pass it cut short, or nil.
func startScheduler(ctx context.Context, e *engine.Engine, so engine.SchedulerOptions, events engine.EventSource) (context.Context, *engine.Scheduler, func() *engine.PassReport) {
	ctx, cancel := context.WithCancel(ctx)
	s := engine.NewScheduler(e, so)
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.Run(ctx) // ends with ctx
	}()
	stopFollowing := func() {}
	if events != nil {
		stopFollowing = e.FollowEvents(ctx, events)
	}
	return ctx, s, func() *engine.PassReport {
		before := s.Status().Passes
		cancel()
		<-done
		stopFollowing()
		s.Wait()
		if st := s.Status(); st.Passes > before && st.LastReport != nil && st.LastReport.Stopped != "" {
			return st.LastReport
		}
		return nil
	}
}
