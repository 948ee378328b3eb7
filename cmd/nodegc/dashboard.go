package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/spf13/cobra"

	"github.com/nodegc/nodegc/agent"
	"github.com/nodegc/nodegc/cgroupfs"
	"github.com/nodegc/nodegc/engine"
	"github.com/nodegc/nodegc/forecast"
	"github.com/nodegc/nodegc/internal/proctune"
	"github.com/nodegc/nodegc/internal/simfs"
	"github.com/nodegc/nodegc/tui"
)

// rootOptions are the flags of nodegc itself: the dashboard, live or
// against a simulated node (--demo), or its headless plan.
type rootOptions struct {
	IO     *factory
	Global *globalOptions
	// Demo runs against an in-process simulated node.
	Demo bool
	// Scale is "small" or "large".
	Scale string
	Seed  int64
	// Warmup is how long the simulated node runs its workload before the
	// first view, so images age past the minimum TTL and the disk fills.
	Warmup time.Duration
	// RemoveLatency is how long each removal takes on the small demo
	// node (--demo-remove-latency).
	RemoveLatency time.Duration
	// Headless prints the plan table instead of opening the dashboard;
	// it is implied when stdin or stdout is not a terminal.
	Headless bool
	// Paused starts the periodic passes paused.
	Paused bool
	// ReadOnly connects without the ability to remove.
	ReadOnly bool
	// Refresh is the dashboard's refresh interval.
	Refresh time.Duration
	// Events makes the dashboard follow the runtime's container event
	// stream (where it has one) instead of polling every Refresh.
	Events bool
	// eventSource is the runtime's event stream, set by the caller of
	// dashboard; nil polls.
	eventSource engine.EventSource
	// listings are the engine's own listings of the node (its
	// OnSnapshot), set by the caller of dashboard; nil: the dashboard
	// lists the node itself for its safety net.
	listings <-chan tui.Listing
	// Parallel is the passes' pool width (--parallel).
	Parallel int
	Policy   policyFlags
	// runTUI runs the dashboard; tests replace it.
	runTUI func(context.Context, tui.Options) error
	// stateDir is the engine's state dir, whose journal the dashboard
	// names.
	stateDir string
	// newStateDir is the state dir when this run created it (it was
	// missing before the engine opened it); "" otherwise. The periodic
	// passes then start paused and the dashboard asks before starting
	// them (tui.Options.NewStateDir).
	newStateDir string
	// opening is the dashboard's first frame, drawn before the agent or
	// the engine is reached (openDashboard): the dashboard draws over it.
	// nil when none was drawn.
	opening *tui.Opening
	// opened releases the opening (openDashboard); nil when none was
	// drawn. It is called as soon as the dashboard has ended.
	opened func()
	// guard ends the process when the dashboard's way out outlives
	// shutdownDeadline; runRoot disarms it once everything is closed.
	guard *exitGuard
}

// newCmdDashboard builds the root command. runF, when set, replaces
// runRoot.
func newCmdDashboard(f *factory, g *globalOptions, runF func(context.Context, *rootOptions) error) *cobra.Command {
	opts := &rootOptions{IO: f, Global: g, runTUI: tui.Run}
	cmd := &cobra.Command{
		Use:   "nodegc [--demo [--demo-scale small|large]] [--read-only] [--paused]",
		Short: "Kubernetes node garbage collection with the kubelet's rules, explained",
		Long: `nodegc plans and runs image, container, sandbox and log garbage collection on a
Kubernetes node exactly as the kubelet does, over the node's CRI runtime
(containerd, CRI-O), and explains every decision: how full the image
filesystem is against the GC band, which images go first (LRU) and where
the cut line falls, why every other image stays, which dead containers each
pod still holds, and the kubepods cgroup tree with live usage.

Without a subcommand nodegc opens the dashboard on this node. Its engine runs
the kubelet's periodic passes (containers every minute, images every 5
minutes; --paused starts them paused) and lets you force a pass, pause, or
preview a pass as a dry-run before anything is deleted. --read-only can
never delete. When stdin or stdout is not a terminal, or with --headless,
nodegc prints the plan table instead.

With --demo the node is simulated: the real CRI API served in-process on a
private socket, with a workload that pulls images, restarts containers and
deletes pods, so everything runs as on a real node without one. Its image
filesystem climbs past the high threshold and image GC, run every minute
there (the kubelet's period is 5 minutes), brings it back to the low one;
its kubepods cgroup tree is simulated too, and its clock is the wall clock.

The policy flags take the kubelet's names. Their defaults come from the
node's kubelet config (/var/lib/kubelet/config.yaml, or --kubelet-config),
else the kubelet's defaults; a flag given on the command line wins, and
plan and gc say where each value came from.

Exit status: 0 ok; 1 the runtime cannot be reached, a pass had errors or the
confirmation was declined; 2 bad input (a flag, the kubelet config, a
snapshot file, or gc without a terminal and without --yes).`,
		Example: `  # Try it without a cluster
  nodegc --demo

  # The dashboard on this node, unable to delete anything
  sudo nodegc --read-only

  # What would GC do on this node, and why?
  sudo nodegc plan

  # Preview, then run, a pass
  sudo nodegc gc --dry-run
  sudo nodegc gc --images --yes

  # Save the node's state and plan from it elsewhere
  sudo nodegc snapshot -o snap.json
  nodegc plan --from snap.json --now 2026-01-02T15:04:05Z`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			opts.Policy.Changed = changedFlags(cmd)
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return runRoot(cmd.Context(), opts)
		},
	}
	fl := cmd.Flags()
	fl.BoolVar(&opts.Demo, "demo", false, "run against a simulated node in-process")
	fl.StringVar(&opts.Scale, "demo-scale", "small", "simulated node size: small (40 images, 20 pods) or large (2,000 images, 1,000 pods)")
	fl.Int64Var(&opts.Seed, "demo-seed", 1, "seed of the simulated node")
	fl.DurationVar(&opts.Warmup, "demo-warmup", defaultWarmup, "simulated time the demo node's workload runs before the first view")
	fl.DurationVar(&opts.RemoveLatency, "demo-remove-latency", demoRemoveLatency, "how long each removal takes on the small demo node, so a pass's progress can be watched (0: at once)")
	fl.BoolVar(&opts.Headless, "headless", false, "print the plan table instead of opening the dashboard")
	fl.BoolVar(&opts.Paused, "paused", false, "start with the periodic GC passes paused")
	fl.BoolVar(&opts.ReadOnly, "read-only", false, "connect without the ability to remove anything")
	fl.DurationVar(&opts.Refresh, "refresh", tui.DefaultRefreshInterval, "dashboard refresh interval")
	fl.BoolVar(&opts.Events, "events", true, "follow the runtime's container event stream and list the node only on a change (false: poll every --refresh)")
	addParallelFlag(fl, &opts.Parallel)
	addPolicyFlags(fl, &opts.Policy)
	return cmd
}

// runRoot opens the dashboard, or prints the plan when there is no
// terminal (or --headless).
func runRoot(ctx context.Context, opts *rootOptions) error {
	if opts.Scale != "small" && opts.Scale != "large" {
		return usageErrorf("--demo-scale: must be small or large, got %q", opts.Scale)
	}
	if opts.Demo && opts.Global.RuntimeEndpoint != "" {
		return usageErrorf("--demo: cannot be combined with --runtime-endpoint")
	}
	if opts.Warmup < 0 {
		return usageErrorf("--demo-warmup: must not be negative, got %s", opts.Warmup)
	}
	if opts.RemoveLatency < 0 {
		return usageErrorf("--demo-remove-latency: must not be negative, got %s", opts.RemoveLatency)
	}
	if opts.Refresh <= 0 {
		return usageErrorf("--refresh: must be greater than 0, got %s", opts.Refresh)
	}
	if err := checkParallel(opts.Parallel); err != nil {
		return err
	}
	headless := opts.Headless || !opts.IO.IsTerminal() || !opts.IO.OutIsTerminal()
	if !headless {
		opts.guard = &exitGuard{errw: opts.IO.Err}
		defer opts.guard.disarm()
	}
	switch {
	case opts.Demo:
		return runDemo(ctx, opts, headless)
	case headless:
		return runPlan(ctx, &planOptions{IO: opts.IO, Global: opts.Global, Output: "table", Policy: opts.Policy})
	}
	return runLiveDashboard(ctx, opts)
}

// runLiveDashboard opens the dashboard on this node's runtime, with a
// scheduler running the kubelet's periodic passes.
func runLiveDashboard(ctx context.Context, opts *rootOptions) error {
	opts.opened = openDashboard(opts)
	defer opts.opened()
	if c, st, err := probeAgent(ctx, opts.Global, opts.ReadOnly); err != nil {
		return err
	} else if c != nil {
		return runAttachedDashboard(ctx, opts, c, st)
	}
	note, listings := listingFeed()
	opts.listings = listings
	if dir := opts.Global.StateDir; !opts.ReadOnly && !opts.Paused && dir != "" {
		if _, err := os.Lstat(dir); errors.Is(err, os.ErrNotExist) {
			opts.newStateDir = dir
		}
	}
	n, err := openLiveNode(ctx, opts.IO, opts.Global, liveNodeOptions{Policy: opts.Policy, ReadOnly: opts.ReadOnly, Parallel: opts.Parallel, LogToStateDir: true, OnSnapshot: note})
	if err != nil {
		return err
	}
	defer n.Close()
	opts.eventSource = n.Events
	cg := cgroupfs.Config{}
	if cfg := n.Config; cfg != nil {
		cg = cgroupfs.Config{CgroupRoot: cfg.CgroupRoot, CgroupDriver: cfg.CgroupDriver, SystemReserved: cfg.SystemReserved, KubeReserved: cfg.KubeReserved}
	}
	opts.stateDir = opts.Global.StateDir
	return dashboard(ctx, opts, n.Engine, tui.CgroupsFrom(cg), nil, engine.SchedulerOptions{})
}

// dashboard runs the scheduler and the dashboard until the user quits.
// Library logs go to the log file meanwhile (or nowhere): they would tear
// the screen.
//
// so holds the scheduler's options: the kubelet's periods on a node, shorter
// ones in the demo.
func dashboard(ctx context.Context, opts *rootOptions, e *engine.Engine, cgroups func(context.Context, cgroupfs.Names) (*cgroupfs.Tree, error), now func() time.Time, so engine.SchedulerOptions) error {
	restore := quietLibraryLogs(opts.Global.logOut)
	defer restore()
	proctune.Dashboard()
	defer proctune.Profile(opts.IO.Err)()
	so.Paused, so.PausedBy = opts.Paused, "--paused"
	if opts.newStateDir != "" {
		// Asked on the first frame (tui.Options.NewStateDir).
		so.Paused, so.PausedBy = true, "new state dir"
	}
	// The passes follow the runtime's event stream whatever --events says
	// of the display: a container created on an image is seen at once. The
	// display refreshes on the scheduler's notices of that one stream; a
	// read-only engine, which runs no pass, follows it only for them.
	events := opts.eventSource
	if e.ReadOnly() && !opts.Events {
		events = nil
	}
	ctx, s, stop := startScheduler(ctx, e, so, events)
	mem := proctune.NewIdleMemory()
	defer proctune.WhileIdle(s, mem)()
	journal := ""
	if !e.ReadOnly() {
		journal = engine.JournalPath(opts.stateDir)
	}
	err := opts.runTUI(ctx, idleOptions(mem, tui.Options{
		Events:          opts.Events && events != nil,
		Controller:      s,
		Snapshot:        e.Snapshot,
		Plan:            e.PlanSnapshot,
		ImageFs:         e.RemeasureImageFs,
		Changed:         e.ContainersChanged,
		Policy:          e.Policy(),
		Cgroups:         cgroups,
		ReadOnly:        e.ReadOnly(),
		JournalPath:     journal,
		Journal:         journalReader(opts.stateDir),
		ForecastHistory: forecastHistory(opts.stateDir),
		RefreshInterval: opts.Refresh,
		Listings:        opts.listings,
		AfterRefresh:    mem.Release,
		Version:         version,
		Now:             now,
		Opening:         opts.opening,
		NewStateDir:     opts.newStateDir,
	}))
	// Quitting (q, a signal, the terminal gone) cancels ctx: a pass in
	// flight stops after its item in flight, and the process waits for it,
	// then releases the state dir, all within shutdownDeadline.
	opts.guard.arm(shutdownDeadline)
	if opts.opened != nil {
		opts.opened() // bounded by the guard: the terminal may be gone
	}
	r := stop()
	if cerr := e.Close(); cerr != nil && err == nil {
		err = fmt.Errorf("close the state dir: %w", cerr)
	}
	if r != nil {
		// The screen is gone: say on stderr what the quit left undone.
		fmt.Fprintln(opts.IO.Err, stoppedLine(*r))
	}
	return err
}

// listingFeed returns an engine.Options.OnSnapshot that tells the
// dashboard of every listing the engine makes (tui.Options.Listings): it
// keeps only the latest, and never blocks the engine, which calls it with
// its lock held.
func listingFeed() (note func(engine.Snapshot), listings <-chan tui.Listing) {
	ch := make(chan tui.Listing, 1)
	return func(s engine.Snapshot) {
		l := tui.Listing{At: s.TakenAt, Digest: tui.Digest(s)}
		for range 2 {
			select {
			case ch <- l:
				return
			default:
			}
			select {
			case <-ch: // an older one the dashboard has not taken
			default:
			}
		}
	}, ch
}

// journalReader reads the journal in the state dir for the dashboard's
// history and journal view; nil without a state dir.
func journalReader(stateDir string) func(context.Context) ([]engine.JournalEntry, error) {
	if stateDir == "" {
		return nil
	}
	return func(context.Context) ([]engine.JournalEntry, error) { return engine.ReadJournalLines(stateDir) }
}

// forecastHistory is the state dir's forecast history (an agent's), from
// which the Overview's forecast starts; none when the file is missing,
// unreadable to this user or corrupt: the forecast then starts afresh
// (the agent moves a corrupt file aside, not a dashboard).
func forecastHistory(stateDir string) []forecast.Reading {
	rs, _ := agent.ReadForecastHistory(stateDir)
	return rs
}

// stoppedLine tells the operator who quit during a pass what it did and
// what it left undone.
func stoppedLine(r engine.PassReport) string {
	return fmt.Sprintf("nodegc: the %s pass in flight %s: %d removed, %d planned items left undone", r.Kind, r.Stopped, r.Count(engine.OutcomeRemoved), r.Undone)
}

// quietLibraryLogs sends logrus (runc's cgroup library) to w, or nowhere
// when w is nil, while the dashboard owns the terminal, and returns a func
// that restores it.
func quietLibraryLogs(w io.Writer) func() {
	out := logrus.StandardLogger().Out
	if w == nil {
		w = io.Discard
	}
	logrus.SetOutput(w)
	return func() { logrus.SetOutput(out) }
}

// demoImagePeriod is the demo's image GC period (the kubelet's is 5m).
const demoImagePeriod = time.Minute

// demoRemoveLatency is how long each removal takes on the small demo node
// by default (--demo-remove-latency), about what a real containerd takes
// to remove an image, so that a pass's progress shows on the status line
// for a moment.
const demoRemoveLatency = 50 * time.Millisecond

// defaultWarmup is how long the demo node runs before the first view:
// past the default minimum image TTL, and long enough for the Demo
// workload to fill the disk past the high threshold.
const defaultWarmup = 5 * time.Minute

// demoSteps is the number of workload steps the demo node runs over its
// warm-up.
const demoSteps = 60

// runDemo serves a simulated node in-process on a private socket, dials it
// through the CRI adapter exactly as a real runtime, warms it up, and opens
// the dashboard on it (or prints its plan, headless).
func runDemo(ctx context.Context, opts *rootOptions, headless bool) error {
	so := demoPreset(opts.Scale, opts.Seed)
	policy, prov, err := resolvePolicy(opts.Policy, nil)
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "nodegc-demo-")
	if err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	defer os.RemoveAll(dir)
	opts.guard.onExit(func() { os.RemoveAll(dir) })

	// The simulated clock starts one warm-up before the wall clock, so that
	// once warmed up the times on screen are wall-clock times.
	start := opts.IO.Now().UTC().Truncate(time.Second).Add(-opts.Warmup)
	so.Start = start
	d, err := startDemoNode(ctx, so, filepath.Join(dir, "simnode.sock"))
	if err != nil {
		return err
	}
	defer d.Close()

	e, err := newDemoEngine(ctx, opts, d, dir, policy, start, headless)
	if err != nil {
		return err
	}
	if err := warmUpDemo(ctx, opts, d, e, start); err != nil {
		return err
	}
	if headless {
		return printDemoPlan(ctx, opts, e, prov)
	}
	// The workload goes on while the dashboard is open: one simulated
	// second per second.
	cgroups, err := d.startCgroups(dir, opts.Seed)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go d.run(ctx, time.Second)
	// The demo runs image GC every minute rather than every 5, so that a
	// person sees a real image pass soon after the disk fills.
	return dashboard(ctx, opts, e, cgroups, d.node.Now, engine.SchedulerOptions{ImagePeriod: demoImagePeriod})
}

// newDemoEngine seeds the demo node's image history under dir and makes
// the engine on it: read-only when headless or asked to be, logging as
// the dashboard does, its state in dir.
func newDemoEngine(ctx context.Context, opts *rootOptions, d *demoNode, dir string, policy engine.Policy, start time.Time, headless bool) (*engine.Engine, error) {
	// The node has a history: image records as nodegc would have kept
	// them over a week, so the least recently used order shows.
	if err := seedDemoHistory(ctx, d.client.ReadOnly(), filepath.Join(dir, "state"), start, opts.Seed); err != nil {
		return nil, err
	}
	eo := engine.Options{
		Reader:   d.client.ReadOnly(),
		Statfs:   simfs.Local(d.node),
		Policy:   policy,
		StateDir: filepath.Join(dir, "state"),
		Now:      d.node.Now,
		// The run is named by the launch, not by the simulated clock,
		// which reads a warm-up earlier until the warm-up is done.
		Started:   start.Add(opts.Warmup),
		PodSource: d.podSource,
		Parallel:  opts.Parallel,
	}
	if !opts.ReadOnly && !headless {
		eo.Remover = d.client
	}
	if !headless {
		opts.Global.dashboardLogFile(eo.StateDir, true)
	}
	var err error
	if eo.Logger, err = opts.Global.logger(); err != nil {
		return nil, err
	}
	e, err := engine.New(eo)
	if err != nil {
		return nil, err
	}
	opts.eventSource = d.client
	opts.stateDir = eo.StateDir
	return e, nil
}

// warmUpDemo runs the demo node through its warm-up. The first snapshot
// marks the images in use at start as used then (the others keep their
// seeded history); the workload then runs for the warm-up, so that images
// age past the minimum TTL, pods die and the disk fills, as on a node that
// has been up for a while.
func warmUpDemo(ctx context.Context, opts *rootOptions, d *demoNode, e *engine.Engine, start time.Time) error {
	if _, err := e.Snapshot(ctx); err != nil {
		return fmt.Errorf("demo: snapshot: %w", err)
	}
	for i := 1; i <= demoSteps; i++ {
		d.node.Step(start.Add(opts.Warmup * time.Duration(i) / demoSteps))
	}
	if opts.Scale != "large" {
		// The large node's passes take seconds as it is.
		d.node.SetMutatingLatency(opts.RemoveLatency)
	}
	return nil
}

// printDemoPlan prints the warmed-up demo node's plan table, with the
// engine's effective policy and where each setting came from.
func printDemoPlan(ctx context.Context, opts *rootOptions, e *engine.Engine, prov provenance) error {
	s, err := e.Snapshot(ctx)
	if err != nil {
		return fmt.Errorf("demo: snapshot: %w", err)
	}
	// The engine's effective policy, as the dashboard and gc plan.
	p, err := e.PlanSnapshot(s, engine.PassFull, s.TakenAt)
	if err != nil {
		return fmt.Errorf("demo: plan: %w", err)
	}
	return renderPlanTable(opts.IO.Out, planView{
		Snapshot:       s,
		Plan:           p,
		Settings:       prov,
		EndpointSource: "simulated node, --demo",
	})
}

// shutdownDeadline bounds the dashboard's way out once its screen is
// gone: the pass in flight stops after its item in flight, the scheduler
// and the event stream end, the state dir is released and the demo's node
// stops. That takes well under a second; a runtime call that hangs must
// not keep the process (and the state-dir lock every later gc needs)
// forever.
const shutdownDeadline = 3 * time.Second

// exitGuard ends the process when the dashboard's way out takes longer
// than its deadline, or at a second signal (the first one started the way
// out): os.Exit releases the state-dir lock, and a journal intent left
// without its outcome is settled at the next start, as after kill -9.
// A nil guard does nothing.
type exitGuard struct {
	// errw gets the one line saying why the process ended.
	errw io.Writer
	// exit ends the process; nil is os.Exit.
	exit func(code int)

	mu       sync.Mutex
	cleanups []func()
	done     chan struct{}
	sig      chan os.Signal
}

// onExit adds f to what a forced exit still does (removing a temp dir).
func (g *exitGuard) onExit(f func()) {
	if g == nil {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.cleanups = append(g.cleanups, f)
}

// arm starts the deadline, once.
func (g *exitGuard) arm(d time.Duration) {
	if g == nil {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.done != nil {
		return
	}
	g.done = make(chan struct{})
	g.sig = make(chan os.Signal, 1)
	signal.Notify(g.sig, syscall.SIGHUP, syscall.SIGTERM, syscall.SIGINT)
	go g.watch(d, g.done, g.sig)
}

// watch waits for disarm, the deadline or a signal, and ends the process
// on either of the last two.
func (g *exitGuard) watch(d time.Duration, done <-chan struct{}, sig <-chan os.Signal) {
	t := time.NewTimer(d)
	defer t.Stop()
	var why string
	select {
	case <-done:
		return
	case s := <-sig:
		why = fmt.Sprintf("%s while shutting down", s)
	case <-t.C:
		why = fmt.Sprintf("still shutting down after %s", d)
	}
	g.mu.Lock()
	cleanups := g.cleanups
	g.mu.Unlock()
	for _, f := range cleanups {
		f()
	}
	// The terminal may be gone or stuck: the line is best effort.
	said := make(chan struct{})
	go func() {
		fmt.Fprintf(g.errw, "nodegc: %s: exiting now (an intent left without its outcome is settled at the next start)\n", why)
		close(said)
	}()
	select {
	case <-said:
	case <-time.After(100 * time.Millisecond):
	}
	exit := g.exit
	if exit == nil {
		exit = os.Exit
	}
	exit(1)
}

// disarm stops the deadline: the way out is over.
func (g *exitGuard) disarm() {
	if g == nil {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.done == nil {
		g.done = make(chan struct{}) // a later arm does nothing
		close(g.done)
		return
	}
	select {
	case <-g.done:
	default:
		signal.Stop(g.sig)
		close(g.done)
	}
}
