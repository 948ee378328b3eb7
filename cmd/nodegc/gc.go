package main

import (
	"bufio"
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/nodegc/nodegc/engine"
)

// gcOptions are nodegc gc's flags and dependencies.
type gcOptions struct {
	IO     *factory
	Global *globalOptions
	Pass   passFlags
	Policy policyFlags
	// DryRun plans and prints, never asks and never mutates.
	DryRun bool
	// Yes skips the confirmation.
	Yes bool
	// ReadOnly gives the engine no remover: only --dry-run is possible.
	ReadOnly bool
	// Output is "table" or "json" (the pass report).
	Output string
	// Parallel is the pass's pool width (--parallel).
	Parallel int
}

// newCmdGC builds `nodegc gc`. runF, when set, replaces runGC.
func newCmdGC(f *factory, g *globalOptions, runF func(context.Context, *gcOptions) error) *cobra.Command {
	opts := &gcOptions{IO: f, Global: g}
	cmd := &cobra.Command{
		Use:   "gc [--images] [--containers] [--reclaim-all] [--dry-run] [--yes]",
		Short: "Run one garbage collection pass now",
		Long: `Plan one garbage collection pass, show it, ask for confirmation, and apply it.

By default the pass is the kubelet's container GC (dead containers, then
sandboxes, then pod logs) followed by its image GC (the MaxAge pass, then the
space pass down to the low threshold). --images or --containers runs only
one of them; --reclaim-all is the eviction manager's node-level reclaim, for
a node in DiskPressure: every dead container of terminated pods and every
unused, unpinned image older than --minimum-image-ttl-duration, whatever the
thresholds.

On a terminal, gc prints the plan and asks before removing anything. Without
a terminal it refuses unless --yes is given, before it connects to anything.
--dry-run prints the plan and never asks and never removes. Each item is
re-checked just before it is removed (still unused, still not running, still
not pinned) and skipped with a reason otherwise; every removal is appended
to the journal in --state-dir, so gc refuses (exit 2) before it connects
when --state-dir is empty or cannot be written.

Exit status: 0 when the pass ran without errors (or was a dry run), 1 when
the runtime cannot be reached, a removal failed, the pass reports
FreeDiskSpaceFailed or InvalidDiskCapacity (as the kubelet's image GC
returns an error then), or the confirmation was declined, 2 on bad input or
without a terminal and without --yes.`,
		Example: `  # Preview a full pass: nothing is removed
  sudo nodegc gc --dry-run

  # Remove unused images now, without asking (for scripts)
  sudo nodegc gc --images --yes

  # The node is in DiskPressure: reclaim everything that can go
  sudo nodegc gc --reclaim-all

  # Dead containers only, keeping up to 2 per container
  sudo nodegc gc --containers --maximum-dead-containers-per-container 2 --yes`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			opts.Policy.Changed = changedFlags(cmd)
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return runGC(cmd.Context(), opts)
		},
	}
	fl := cmd.Flags()
	addPassFlags(fl, &opts.Pass)
	fl.BoolVar(&opts.DryRun, "dry-run", false, "print the plan; never ask, never remove")
	fl.BoolVarP(&opts.Yes, "yes", "y", false, "remove without asking for confirmation")
	fl.BoolVar(&opts.ReadOnly, "read-only", false, "connect without the ability to remove (only with --dry-run)")
	fl.StringVarP(&opts.Output, "output", "o", "table", "output format: table or json (the pass report)")
	addParallelFlag(fl, &opts.Parallel)
	addPolicyFlags(fl, &opts.Policy)
	return cmd
}

// runGC checks the input, then plans, confirms and applies one pass.
func runGC(ctx context.Context, opts *gcOptions) error {
	f := opts.IO
	// Refuse first: without a terminal nobody can confirm, and nothing
	// may be touched before that is known.
	if !opts.DryRun && !opts.Yes && !f.IsTerminal() {
		return usageErrorf("gc: stdin is not a terminal, so nobody can confirm; pass --yes to remove without confirmation, or --dry-run to preview")
	}
	if opts.ReadOnly && !opts.DryRun {
		return usageErrorf("--read-only: gc cannot remove anything with a read-only runtime; add --dry-run to preview")
	}
	if err := checkOutput(opts.Output); err != nil {
		return err
	}
	if err := checkParallel(opts.Parallel); err != nil {
		return err
	}
	kind, err := opts.Pass.kind()
	if err != nil {
		return err
	}
	readOnly := opts.DryRun || opts.ReadOnly
	// An agent holds the node: it runs the pass.
	if c, st, err := probeAgent(ctx, opts.Global, readOnly); err != nil {
		return err
	} else if c != nil {
		defer c.Close()
		return attachedGC(ctx, c, st, opts, kind)
	}
	cfg, err := loadConfig(f, opts.Global, true)
	if err != nil {
		return err
	}
	policy, prov, err := resolvePolicy(opts.Policy, cfg)
	if err != nil {
		return err
	}
	if !readOnly {
		// The journal must be writable before anything is connected to,
		// let alone removed.
		if err := checkStateDir(opts.Global.StateDir); err != nil {
			return err
		}
	}
	conn, err := connect(ctx, f, opts.Global, cfg, readOnly, false)
	if err != nil {
		return err
	}
	defer conn.Close()
	eo := engine.Options{Reader: conn.Reader, Statfs: conn.Statfs, Policy: policy, StateDir: opts.Global.StateDir, ScanLogs: conn.scanLogs(), Parallel: opts.Parallel, PodSource: conn.podSource()}
	if !readOnly {
		eo.Remover = conn.Remover
	}
	return gcPass(ctx, f, conn, eo, kind, prov, opts)
}

// gcPass is the part of gc after the input checks: plan, show, confirm,
// apply, report.
func gcPass(ctx context.Context, f *factory, conn *runtimeConn, eo engine.Options, kind engine.PassKind, prov provenance, opts *gcOptions) error {
	e, err := newEngine(f, opts.Global, eo)
	if err != nil {
		return err
	}
	// The state dir's lock goes with the pass, not with the process: a
	// caller that runs gc again in the same process must find it free.
	defer e.Close()
	// A pass follows the runtime's event stream from before its plan, so
	// a container created on a planned image is seen at once.
	if src, ok := eo.Reader.(engine.EventSource); ok && eo.Remover != nil {
		defer e.FollowEvents(ctx, src)()
	}
	s, p, err := e.PlanAt(ctx, kind, time.Time{})
	if err != nil {
		return fmt.Errorf("snapshot %s: %w", conn.Endpoint, err)
	}
	view := planView{Snapshot: s, Plan: p, Settings: prov, EndpointSource: conn.Source}
	// On a terminal the prompt follows the removals, not every kept row.
	view.RemovalsOnly = f.OutIsTerminal != nil && f.OutIsTerminal()
	if f.OutWidth != nil {
		view.Width = f.OutWidth()
	}
	return showAndApply(ctx, f, opts, view, func(ctx context.Context, p engine.Plan) (engine.PassReport, error) {
		show, endLine := progressLine(f.Err, isTerminal(f.Err))
		unsubscribe := e.OnProgress(show)
		defer endLine()
		defer unsubscribe()
		return e.Apply(ctx, p)
	})
}

// showAndApply prints the plan, confirms, applies it with apply and
// prints the report: gc's part after the plan, the same whether its own
// engine or the agent's applies it.
func showAndApply(ctx context.Context, f *factory, opts *gcOptions, view planView, apply func(context.Context, engine.Plan) (engine.PassReport, error)) error {
	json := opts.Output == "json"
	if !json {
		if err := renderPlanTable(f.Out, view); err != nil {
			return err
		}
	}
	if opts.DryRun {
		r := engine.DryRunReport(view.Plan)
		if json {
			return writeJSON(f.Out, r, f.OutIsTerminal())
		}
		fmt.Fprintln(f.Out, "Dry run: nothing was removed.")
		return nil
	}
	if planItems(view.Plan) == 0 {
		// A real pass that found nothing to do, not a preview: its image
		// GC still fails when it cannot free what it must.
		r := engine.DryRunReport(view.Plan)
		r.DryRun = false
		if json {
			if err := writeJSON(f.Out, r, f.OutIsTerminal()); err != nil {
				return err
			}
		} else {
			fmt.Fprintln(f.Out, "Nothing to remove.")
		}
		if _, failed := r.ImageGCError(); failed {
			return &passError{report: r}
		}
		return nil
	}
	if !opts.Yes {
		if json { // the table was not printed; show what will go
			fmt.Fprintln(f.Err, planSummary(view.Plan))
		}
		ok, err := confirm(ctx, f, fmt.Sprintf("Remove these %d items? [y/N] ", planItems(view.Plan)))
		if err != nil {
			return err
		}
		if !ok {
			return errDeclined
		}
	}
	r, err := apply(ctx, view.Plan)
	for _, n := range r.Notes {
		f.warnf("%s", n)
	}
	if err != nil {
		return fmt.Errorf("apply: %w", err)
	}

	if json {
		if err := writeJSON(f.Out, r, f.OutIsTerminal()); err != nil {
			return err
		}
	} else {
		renderReport(f.Out, r)
	}
	if _, failed := r.ImageGCError(); failed || !r.OK() {
		// The kubelet's image GarbageCollect returns an error on
		// FreeDiskSpaceFailed and InvalidDiskCapacity: so does gc.
		return &passError{report: r}
	}
	return nil
}

// confirm asks on stderr and reads one line from stdin; only y or yes
// (any case) confirms. A signal (ctx done) ends the wait at once with
// errInterrupted: the read blocks, and a Ctrl-C at the prompt must not be
// swallowed until the operator also presses Enter.
func confirm(ctx context.Context, f *factory, prompt string) (bool, error) {
	fmt.Fprint(f.Err, prompt)
	type answer struct {
		line string
		err  error
	}
	got := make(chan answer, 1) // the reader never blocks on a send nobody takes
	go func() {
		line, err := bufio.NewReader(f.In).ReadString('\n')
		got <- answer{line, err}
	}()
	var a answer
	select {
	case <-ctx.Done():
		fmt.Fprintln(f.Err)
		return false, errInterrupted
	case a = <-got:
	}
	if a.err != nil && a.line == "" {
		fmt.Fprintln(f.Err)
		return false, nil
	}
	switch strings.ToLower(strings.TrimSpace(a.line)) {
	case "y", "yes":
		return true, nil
	}
	return false, nil
}
