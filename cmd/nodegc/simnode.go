package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/nodegc/nodegc/internal/simnode"
)

// simnodeOptions are nodegc simnode's flags and dependencies.
type simnodeOptions struct {
	IO *factory
	// Listen is the unix endpoint to serve on.
	Listen string
	// Preset is "", "demo", "large" or "scale": the starting options,
	// which the other flags override.
	Preset           string
	Images           int
	Pods             int
	DeadPerContainer int
	DeletedPods      int
	Seed             int64
	// Step, when positive, runs the preset's workload every Step.
	Step    time.Duration
	Changed map[string]bool
}

// newCmdSimnode builds `nodegc simnode`. runF, when set, replaces
// runSimnode.
func newCmdSimnode(f *factory, runF func(context.Context, *simnodeOptions) error) *cobra.Command {
	opts := &simnodeOptions{IO: f}
	cmd := &cobra.Command{
		Use:   "simnode --listen unix:///PATH [--images N] [--pods N] [--dead-per-container N] [--seed S]",
		Short: "Serve a simulated node's CRI API on a unix socket",
		Long: `Serve a simulated Kubernetes node: an in-memory container runtime that
speaks the real CRI v1 RuntimeService and ImageService over gRPC, with images
whose sizes fill an image filesystem, running pods, dead containers and
deleted pods. It is deterministic in its flags (the same --seed gives the same
node).

Other tools (crictl, nodegc itself, benchmarks) can then talk to it through
the socket exactly as to containerd; nodegc itself needs --simulated to, and
refuses it without. The socket is made 0600. It serves until interrupted
(SIGINT or SIGTERM).`,
		Example: `  # A small node, then plan against it
  nodegc simnode --listen unix:///tmp/sim.sock --images 50 --pods 20 --dead-per-container 2 &
  nodegc plan --simulated --runtime-endpoint unix:///tmp/sim.sock --state-dir /tmp/sim-state

  # The benchmark node: 10,000 images and 100,000 dead containers
  nodegc simnode --listen unix:///tmp/big.sock --preset scale

  # A node whose workload runs: pulls, restarts and deletions every second
  nodegc simnode --listen unix:///tmp/live.sock --preset demo --step 1s`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			opts.Changed = changedFlags(cmd)
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return runSimnode(cmd.Context(), opts)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&opts.Listen, "listen", "", "unix endpoint to serve on, e.g. unix:///tmp/sim.sock (required)")
	fl.StringVar(&opts.Preset, "preset", "", "start from a preset: demo, large or scale (the flags below override it)")
	fl.IntVar(&opts.Images, "images", 20, "images besides the sandbox image (running containers use the first half)")
	fl.IntVar(&opts.Pods, "pods", 10, "running pods")
	fl.IntVar(&opts.DeadPerContainer, "dead-per-container", 1, "exited earlier attempts of each container")
	fl.IntVar(&opts.DeletedPods, "deleted-pods", 0, "deleted pods whose stopped sandbox and dead containers remain")
	fl.Int64Var(&opts.Seed, "seed", 1, "random seed: the same seed gives the same node")
	fl.DurationVar(&opts.Step, "step", 0, "run the workload every interval (0: a static node)")
	withoutGlobalFlags(cmd)
	return cmd
}

// withoutGlobalFlags leaves the global flags out of cmd's help: cmd uses
// none of them (it talks to no runtime, reads no kubelet config, keeps
// no state), and listing them taught a reader that it did.
func withoutGlobalFlags(cmd *cobra.Command) {
	const section = `{{if .HasAvailableInheritedFlags}}

Global Flags:
{{.InheritedFlags.FlagUsages | trimTrailingWhitespaces}}{{end}}`
	cmd.SetUsageTemplate(strings.Replace(cmd.UsageTemplate(), section, "", 1))
}

// simnodeConfig turns the flags into simulator options.
func simnodeConfig(opts *simnodeOptions, now time.Time) (simnode.Options, error) {
	var o simnode.Options
	switch opts.Preset {
	case "":
		o = simnode.Options{Images: opts.Images, Pods: opts.Pods, DeadPerContainer: opts.DeadPerContainer}
	case "demo":
		o = simnode.Demo(opts.Seed)
	case "large":
		o = simnode.DemoLarge(opts.Seed)
	case "scale":
		o = simnode.Scale(opts.Seed)
	default:
		return o, usageErrorf("--preset: must be demo, large or scale, got %q", opts.Preset)
	}
	if opts.Step < 0 {
		return o, usageErrorf("--step: must not be negative, got %s", opts.Step)
	}
	set := func(name string, dst *int, v int) error {
		if v < 0 {
			return usageErrorf("--%s: must not be negative, got %d", name, v)
		}
		if limit := simnodeLimits[name]; v > limit {
			return usageErrorf("--%s: at most %d, got %d (the simulated node keeps everything in memory)", name, limit, v)
		}
		if opts.Preset == "" || opts.Changed[name] {
			*dst = v
		}
		return nil
	}
	for _, err := range []error{
		set("images", &o.Images, opts.Images),
		set("pods", &o.Pods, opts.Pods),
		set("dead-per-container", &o.DeadPerContainer, opts.DeadPerContainer),
		set("deleted-pods", &o.DeletedPods, opts.DeletedPods),
	} {
		if err != nil {
			return o, err
		}
	}
	if dead := int64(o.Pods+o.DeletedPods) * int64(o.DeadPerContainer+1); dead > maxSimContainers {
		return o, usageErrorf("--pods and --dead-per-container: about %d containers, more than the %d the simulated node holds", dead, maxSimContainers)
	}
	o.Seed = opts.Seed
	o.Start = now
	return o, nil
}

// simnodeLimits bound the counts a simulated node is asked to hold, so a
// typo such as --images 999999999999999 is one clear error rather than an
// out-of-memory panic.
var simnodeLimits = map[string]int{
	"images":             200_000,
	"pods":               100_000,
	"dead-per-container": 1_000,
	"deleted-pods":       100_000,
}

// maxSimContainers bounds pods × (dead per container + 1).
const maxSimContainers = 2_000_000

// runSimnode serves the node until the context ends.
func runSimnode(ctx context.Context, opts *simnodeOptions) error {
	if opts.Listen == "" {
		return usageErrorf("--listen: required, e.g. --listen unix:///tmp/sim.sock")
	}
	if _, err := simnode.SocketPath(opts.Listen); err != nil {
		return usageErrorf("--listen: %v", err)
	}
	o, err := simnodeConfig(opts, opts.IO.Now().UTC().Truncate(time.Second))
	if err != nil {
		return err
	}
	if opts.Step <= 0 {
		// A static node stamps what clients create (a pull, a pod) with
		// the real time.
		o.Now = opts.IO.Now
	}
	node := simnode.New(o)
	l, err := simnode.Listen(opts.Listen)
	if err != nil {
		return usageErrorf("--listen: %v", err)
	}
	served := make(chan error, 1)
	go func() { served <- node.Serve(l) }()
	fmt.Fprintf(opts.IO.Err, "%s; serving CRI on %s until interrupted\n", node, opts.Listen)

	var tick <-chan time.Time
	if opts.Step > 0 {
		t := time.NewTicker(opts.Step)
		defer t.Stop()
		tick = t.C
	}
	for {
		select {
		case <-ctx.Done():
			node.Stop()
			<-served
			fmt.Fprintln(opts.IO.Err, "simnode: stopped")
			return nil
		case err := <-served:
			return fmt.Errorf("simnode: %w", err)
		case now := <-tick:
			node.Step(now)
		}
	}
}
