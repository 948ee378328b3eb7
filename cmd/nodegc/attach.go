package main

import (
	"context"
	"fmt"
	"time"

	"github.com/nodegc/nodegc/cgroupfs"
	"github.com/nodegc/nodegc/control"
	"github.com/nodegc/nodegc/engine"
	"github.com/nodegc/nodegc/internal/proctune"
	"github.com/nodegc/nodegc/tui"
)

// probeAgent returns a client of the agent that holds the state dir, or
// nil when none does.
func probeAgent(ctx context.Context, g *globalOptions, readOnly bool) (*control.Client, control.Status, error) {
	if g.StateDir == "" {
		return nil, control.Status{}, nil
	}
	return control.Probe(ctx, g.StateDir, readOnly)
}

// agentSource names the agent in a plan's runtime line.
func agentSource(st control.Status) string {
	return fmt.Sprintf("through agent pid %d: its policy and image records", st.PID)
}

// givenPolicyFlag returns the first policy flag given on the command
// line, "" when none was.
func (p policyFlags) givenPolicyFlag() string {
	for _, name := range []string{flagHighThreshold, flagLowThreshold, flagMinImageTTL, flagMaxImageAge,
		flagMinContainerTTL, flagMaxPerContainer, flagMaxContainers, flagLowDiskMB, flagPodLogsDir} {
		if p.Changed[name] {
			return name
		}
	}
	return ""
}

// attachedPlan is plan on a node with an agent: the agent's plan, made
// with its records and policy, as its next pass would make it. A policy
// flag plans the agent's snapshot (its records) with the flags' policy
// instead.
func attachedPlan(ctx context.Context, c *control.Client, st control.Status, opts *planOptions, kind engine.PassKind, now time.Time) (planView, error) {
	if opts.Policy.givenPolicyFlag() == "" {
		r, err := c.Plan(ctx, kind, now)
		if err != nil {
			return planView{}, err
		}
		return planView{Snapshot: r.Snapshot, Plan: r.Plan, EndpointSource: agentSource(st)}, nil
	}
	cfg, err := loadConfig(opts.IO, opts.Global, true)
	if err != nil {
		return planView{}, err
	}
	policy, prov, err := resolvePolicy(opts.Policy, cfg)
	if err != nil {
		return planView{}, err
	}
	r, err := c.Snapshot(ctx)
	if err != nil {
		return planView{}, err
	}
	at := r.Snapshot.TakenAt
	if !now.IsZero() {
		at = now
	}
	return planView{Snapshot: r.Snapshot, Plan: engine.PlanPass(r.Snapshot, policy, kind, at), Settings: prov,
		EndpointSource: fmt.Sprintf("image records of agent pid %d", st.PID)}, nil
}

// attachedGC is gc on a node with an agent: the agent plans the pass, gc
// shows it and asks as always, and the agent applies exactly that plan,
// re-checking every item. A signal stops the agent's pass after its
// items in flight, and gc prints what it did.
func attachedGC(ctx context.Context, c *control.Client, st control.Status, opts *gcOptions, kind engine.PassKind) error {
	f := opts.IO
	if name := opts.Policy.givenPolicyFlag(); name != "" {
		return usageErrorf("--%s: the agent (pid %d) holds this node and runs its passes with its own policy; drop the flag, or use plan to see what it would change", name, st.PID)
	}
	r, err := c.Plan(ctx, kind, time.Time{})
	if err != nil {
		return err
	}
	view := planView{Snapshot: r.Snapshot, Plan: r.Plan, EndpointSource: agentSource(st)}
	if f.OutWidth != nil {
		view.Width = f.OutWidth()
	}
	return showAndApply(ctx, f, opts, view, func(ctx context.Context, p engine.Plan) (engine.PassReport, error) {
		return applyThroughAgent(ctx, c, f, p)
	})
}

// applyThroughAgent has the agent apply p, with the progress line on
// stderr. A signal (ctx done) asks the agent to stop the pass, and the
// report of the stopped pass is still awaited.
func applyThroughAgent(ctx context.Context, c *control.Client, f *factory, p engine.Plan) (engine.PassReport, error) {
	detached := context.WithoutCancel(ctx)
	show, endLine := progressLine(f.Err, isTerminal(f.Err))
	defer endLine()
	nctx, stopNotices := context.WithCancel(detached)
	defer stopNotices()
	if notices, err := c.Notices(nctx); err == nil {
		go func() {
			for n := range notices {
				if n.Progress != nil {
					show(*n.Progress)
				}
			}
		}()
	}
	type result struct {
		r   engine.PassReport
		err error
	}
	done := make(chan result, 1)
	go func() {
		r, err := c.Apply(detached, p)
		done <- result{r, err}
	}()
	select {
	case res := <-done:
		return res.r, res.err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(detached, shutdownDeadline)
	defer cancel()
	c.Stop(sctx)
	res := <-done
	return res.r, res.err
}

// runAttachedDashboard opens the dashboard on the agent's engine: its
// snapshots, plans, passes and notices, through its control socket.
// Nothing of the state dir is opened here.
func runAttachedDashboard(ctx context.Context, opts *rootOptions, c *control.Client, st control.Status) error {
	defer c.Close()
	restore := quietLibraryLogs(nil)
	defer restore()
	proctune.Dashboard()
	cfg, err := loadConfig(opts.IO, opts.Global, true)
	if err != nil {
		return err
	}
	cg := cgroupfs.Config{}
	if cfg != nil {
		cg = cgroupfs.Config{CgroupRoot: cfg.CgroupRoot, CgroupDriver: cfg.CgroupDriver, SystemReserved: cfg.SystemReserved, KubeReserved: cfg.KubeReserved}
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	c.Watch(ctx, st)
	journal := ""
	if !opts.ReadOnly {
		journal = engine.JournalPath(opts.Global.StateDir)
	}
	o := attachedOptions(c, st, opts.ReadOnly)
	o.Cgroups, o.JournalPath, o.RefreshInterval, o.Opening = tui.CgroupsFrom(cg), journal, opts.Refresh, opts.opening
	o.ForecastHistory = forecastHistory(opts.Global.StateDir)
	err = opts.runTUI(ctx, o)
	opts.guard.arm(shutdownDeadline)
	if opts.opened != nil {
		opts.opened() // bounded by the guard: the terminal may be gone
	}
	return err
}

// attachedOptions is a dashboard fed by an agent through c (following
// it: Client.Watch): its snapshots, plans, usage, passes, pass history
// and journal, sent commands through it, with the agent's policy and
// identity on the engine line. The caller adds what depends on where the
// dashboard runs (cgroups, journal path, refresh).
func attachedOptions(c *control.Client, st control.Status, readOnly bool) tui.Options {
	return tui.Options{
		Controller: c,
		Snapshot:   c.NodeSnapshot,
		Plan:       c.PlanSnapshot,
		ImageFs:    c.ImageFs,
		Changed:    c.Changed,
		Journal:    c.Journal,
		History:    c.Reports,
		Policy:     st.Policy,
		ReadOnly:   readOnly,
		Version:    version,
		Agent:      &tui.Agent{PID: st.PID, StartedAt: st.StartedAt},
	}
}
