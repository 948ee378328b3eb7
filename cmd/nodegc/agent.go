package main

import (
	"context"
	"log/slog"
	"time"

	"github.com/spf13/cobra"

	"github.com/nodegc/nodegc/agent"
	"github.com/nodegc/nodegc/control"
	"github.com/nodegc/nodegc/engine"
	"github.com/nodegc/nodegc/internal/proctune"
)

// defaultMetricsAddress is --metrics-bind-address's default.
const defaultMetricsAddress = agent.DefaultAddress

// agentOptions are nodegc agent's flags and dependencies.
type agentOptions struct {
	IO     *factory
	Global *globalOptions
	// MetricsAddress is --metrics-bind-address; "0" serves nothing.
	MetricsAddress string
	// LogLevel is --log-level: debug, info, warn or error.
	LogLevel string
	// Parallel is the passes' pool width (--parallel).
	Parallel int
	// ImagePeriod and ContainerPeriod are the periods of the passes: the
	// kubelet's 5m and 1m (hidden flags, for tests).
	ImagePeriod     time.Duration
	ContainerPeriod time.Duration
	Policy          policyFlags
	// Shadow is --shadow: plan every pass, remove nothing, and compare
	// with what others remove.
	Shadow bool
}

// agentLong is `nodegc agent --help`'s text: what the agent runs, what it
// logs and serves, how it stops, and its exit status.
const agentLong = `nodegc agent runs the dashboard's engine and scheduler without a screen, as the
kubelet runs its garbage collection: container GC every minute (dead
containers, then sandboxes, then logs), image GC every 5 minutes. It uses
the same policy sources (the kubelet's flags, its config, the kubelet's
defaults; a flag given here wins), pod source, runtime event stream, image
records and deletion journal as the dashboard and gc, and holds the state
dir's lock, so no second engine runs on the node. Its image records never
go stale, so a plan made beside it is the kubelet's plan.

One GC per node: its image GC band sits --image-gc-margin points (5)
below the kubelet's (80/75 under the kubelet's 85/80), so it acts first
and the kubelet's own image GC stays a backstop that never has to act; a
kubelet whose image GC is off does not turn the agent's off (the agent
takes the kubelet's default band, less the margin). What vanishes
otherwise (the kubelet's GC, crictl, a person) is counted apart, as
removed by others.

--shadow plans every pass and removes nothing (forced passes and applies
are refused too): pass by pass it records what it would have removed and
compares it with what others removed before its next pass
(nodegc_shadow_items_total: agreed, nodegc_only, other_only; a log line
per shadow pass; the dashboard's Overview). Roll out in shadow, watch
agreement, then drop --shadow to let it remove.

It logs JSON lines on stderr (log/slog): one per pass, one per deletion,
one per kubelet-style event; --log-level debug adds every item evaluated.

It serves, on --metrics-bind-address (default localhost:1017, both
127.0.0.1 and [::1]; 0 serves nothing):
  /metrics   what its passes measured, for Prometheus: image GC attempts by
             trigger, result and reason, their duration, bytes targeted and
             freed (runtime sizes and statfs), deletions and removals by
             reason and result, images kept by reason, the image fs against
             the GC band, journal, pod source and event stream state. A
             scrape reads no more than the state the passes left.
  /healthz   200 while the agent runs.
  /readyz    200 when the runtime answers, the state dir is usable, and the
             pod source has synced (or is off); else 503 naming what is not.
Nothing else: it takes no command and no credential on its port. The
fleet and kubectl nodegc NODE read its NodeGC object and send it commands
there, through the API server.

It serves a control socket, <state-dir>/control.sock (root only, HTTP and
JSON): while it runs, the dashboard, plan and gc on the node attach to it
and use its engine, records and passes instead of starting their own.

Its port should be one only root can bind (below 1024, as the default
is): it warns when any user could take it while the agent is down. When
another program holds the address, the agent says so in an error line,
runs its passes all the same, and keeps trying to bind it.

SIGTERM or SIGINT stops it: the items in flight finish and are journalled,
no new item starts, and it exits 0 within seconds (a pod's grace period
is 30 s).

Exit status: 0 stopped by a signal; 1 the runtime cannot be reached;
2 bad input (a flag, a metrics address that is malformed or that it may
not bind, the kubelet config, the state dir locked by another nodegc or
unusable, a control socket path it did not create).`

// agentExample is `nodegc agent --help`'s examples.
const agentExample = `  # On a node, as root: the kubelet's cadence, metrics on localhost
  sudo nodegc agent

  # Metrics for a Prometheus on the pod network, debug logs
  sudo nodegc agent --metrics-bind-address :1017 --log-level debug

  # Shadow mode: plan every pass beside the kubelet's GC, remove nothing
  sudo nodegc agent --shadow --image-gc-margin 0

  # Without the API server (container GC keeps to the limits), no metrics
  sudo nodegc agent --pod-source off --metrics-bind-address 0

  # What it measured
  curl -s localhost:1017/metrics | grep '^nodegc_image_gc_attempts_total'`

// newCmdAgent builds `nodegc agent`. runF, when set, replaces runAgent.
func newCmdAgent(f *factory, g *globalOptions, runF func(context.Context, *agentOptions) error) *cobra.Command {
	opts := &agentOptions{IO: f, Global: g}
	cmd := &cobra.Command{
		Use:     "agent [--metrics-bind-address ADDR] [--log-level LEVEL]",
		Short:   "Run the GC engine without a screen, with Prometheus metrics",
		Long:    agentLong,
		Example: agentExample,
		Args:    noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			opts.Policy.Changed = changedFlags(cmd)
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return runAgent(cmd.Context(), opts)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&opts.MetricsAddress, "metrics-bind-address", defaultMetricsAddress, "host:port to serve /metrics, /healthz and /readyz on (localhost: both 127.0.0.1 and [::1]); 0 serves nothing")
	fl.StringVar(&opts.LogLevel, "log-level", "info", "the least severe log lines written on stderr: debug, info, warn or error")
	fl.DurationVar(&opts.ImagePeriod, "image-gc-period", engine.ImageGCPeriod, "period of image GC (the kubelet's is 5m)")
	fl.DurationVar(&opts.ContainerPeriod, "container-gc-period", engine.ContainerGCPeriod, "period of container GC (the kubelet's is 1m); a periodic pass on a node unchanged since the last full one is skipped, for 5m at most")
	fl.BoolVar(&opts.Shadow, "shadow", false, "plan every pass and remove nothing; compare what it would have removed with what others (the kubelet's GC) removed")
	_ = fl.MarkHidden("image-gc-period")
	_ = fl.MarkHidden("container-gc-period")
	addParallelFlag(fl, &opts.Parallel)
	addPolicyFlags(fl, &opts.Policy)
	fl.IntVar(&opts.Policy.Margin, flagMargin, defaultMargin, "percentage points the agent's image GC band sits below the kubelet's, so the agent acts first and the kubelet's own image GC never has to (a kubelet whose image GC is off gives its default band, less this); 0 runs at the kubelet's band; --image-gc-high-threshold and --image-gc-low-threshold, when given, are used as they are")
	return cmd
}

// defaultMargin is --image-gc-margin's default: the agent's band 5
// points below the kubelet's (80/75 under the kubelet's 85/80).
const defaultMargin = 5

// agentLogger is the agent's logger: JSON lines on stderr from level on.
func agentLogger(opts *agentOptions) (*slog.Logger, error) {
	if opts.Global.LogFile != "" || opts.Global.Debug {
		return nil, usageErrorf("--log-file, --debug: the agent logs JSON lines on stderr; choose what with --log-level")
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(opts.LogLevel)); err != nil {
		return nil, usageErrorf("--log-level: must be debug, info, warn or error, got %q", opts.LogLevel)
	}
	return slog.New(slog.NewJSONHandler(opts.IO.Err, &slog.HandlerOptions{Level: level})), nil
}

// checkAgentOptions refuses bad flags (exit 2) and returns the agent's
// logger.
func checkAgentOptions(opts *agentOptions) (*slog.Logger, error) {
	if err := checkParallel(opts.Parallel); err != nil {
		return nil, err
	}
	if m := opts.Policy.Margin; m < 0 || m > 100 {
		return nil, usageErrorf("--%s: must be between 0 and 100 percentage points, got %d", flagMargin, m)
	}
	if opts.ImagePeriod <= 0 || opts.ContainerPeriod <= 0 {
		return nil, usageErrorf("--image-gc-period, --container-gc-period: must be greater than 0")
	}
	return agentLogger(opts)
}

// runAgent opens the node and runs the agent on it until a signal ends
// ctx.
func runAgent(ctx context.Context, opts *agentOptions) error {
	log, err := checkAgentOptions(opts)
	if err != nil {
		return err
	}
	g, started := opts.Global, time.Now()
	// A planted control socket is refused before anything is opened.
	if g.StateDir != "" {
		if err := control.CheckSocketPath(control.SocketPath(g.StateDir)); err != nil {
			return err
		}
	}
	// The listener first: a malformed address, or one the agent may not
	// bind, is refused before anything is opened, let alone removed. One
	// another program holds is logged and bound once it is free.
	l, err := agent.Listen(ctx, opts.MetricsAddress, log)
	if err != nil {
		return err
	}
	defer l.Close()
	// The engine, the pod source's client-go (klog) and the cgroup
	// library (logrus) log through the same JSON handler.
	g.log, g.logOut = log, agent.LibraryWriter(log)
	defer quietLibraryLogs(g.logOut)()
	proctune.Agent()
	defer proctune.Profile(opts.IO.Err)()
	var a agent.Agent
	n, err := openLiveNode(ctx, opts.IO, g, liveNodeOptions{Policy: opts.Policy, Parallel: opts.Parallel, OnSnapshot: a.ObserveSnapshot})
	if err != nil {
		return err
	}
	defer n.Close()
	return a.Run(ctx, agent.Options{Log: log, Listener: l, Address: opts.MetricsAddress, StateDir: g.StateDir,
		Engine: n.Engine, Events: n.Events, Pods: agentPods(n.Conn.pods, g), RuntimeEndpoint: n.Conn.Endpoint,
		Scheduler:      engine.SchedulerOptions{ImagePeriod: opts.ImagePeriod, ContainerPeriod: opts.ContainerPeriod, Shadow: opts.Shadow},
		StartScheduler: startScheduler, ProbeStateDir: probeStateDir, StoppedLine: stoppedLine, AfterPass: proctune.Release,
		Version: version, Started: started})
}

// agentPods is the agent's view of the pod source; nil on a simulated
// node.
func agentPods(ps *podSources, g *globalOptions) *agent.Pods {
	if ps == nil {
		return nil
	}
	return &agent.Pods{Source: ps.src, Client: ps.client, Node: ps.node, Off: g.PodSource == podSourceOff, Describe: ps.describe}
}
