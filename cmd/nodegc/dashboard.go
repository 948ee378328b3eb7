package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/nodegc/nodegc/engine"
	"github.com/nodegc/nodegc/engine/cri"
	"github.com/nodegc/nodegc/engine/simnode"
)

// demoOptions are the root command's flags: nodegc [--demo].
type demoOptions struct {
	IO     *factory
	Global *globalOptions
	// Demo runs against an in-process simulated node.
	Demo bool
	// Scale is "small" or "large".
	Scale string
	Seed  int64
	// Warmup is how long the simulated node runs its workload before the
	// plan, so images age past the minimum TTL and the disk fills.
	Warmup time.Duration
	Pass   passFlags
	Policy policyFlags
}

// demoSteps is the number of workload steps the demo node runs over its
// warm-up.
const demoSteps = 60

// newCmdDemo builds the root command. Without a subcommand it plans
// against the node's runtime; with --demo, against a simulated node served
// in-process on a private socket. runF, when set, replaces runDemo.
func newCmdDemo(f *factory, g *globalOptions, runF func(context.Context, *demoOptions) error) *cobra.Command {
	opts := &demoOptions{IO: f, Global: g}
	cmd := &cobra.Command{
		Use:   "nodegc [--demo [--demo-scale small|large]]",
		Short: "Kubernetes node garbage collection with the kubelet's rules, explained",
		Long: `nodegc plans and runs image, container, sandbox and log garbage collection on a
Kubernetes node exactly as the kubelet does, over the node's CRI runtime
(containerd, CRI-O), and explains every decision: how full the image
filesystem is against the GC band, which images go first (LRU) and where
the cut line falls, why every other image stays, and which dead containers
each pod still holds.

The policy flags take the kubelet's names. Their defaults come from the
node's kubelet config (/var/lib/kubelet/config.yaml, or --kubelet-config),
else the kubelet's defaults; a flag given on the command line wins, and
plan and gc say where each value came from.

Without a subcommand nodegc prints the plan for this node. With --demo it
starts a simulated node in-process (the real CRI API on a private socket),
lets its workload run for a while, and prints the plan for it.

Exit status: 0 ok; 1 the runtime cannot be reached, a pass had errors or the
confirmation was declined; 2 bad input (a flag, the kubelet config, a
snapshot file, or gc without a terminal and without --yes).`,
		Example: `  # Try it without a cluster
  nodegc --demo

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
			return runDemo(cmd.Context(), opts)
		},
	}
	fl := cmd.Flags()
	fl.BoolVar(&opts.Demo, "demo", false, "run against a simulated node in-process")
	fl.StringVar(&opts.Scale, "demo-scale", "small", "simulated node size: small (40 images, 20 pods) or large (2,000 images, 1,000 pods)")
	fl.Int64Var(&opts.Seed, "demo-seed", 1, "seed of the simulated node")
	fl.DurationVar(&opts.Warmup, "demo-warmup", 5*time.Minute, "simulated time the demo node's workload runs before the plan")
	addPassFlags(fl, &opts.Pass)
	addPolicyFlags(fl, &opts.Policy)
	return cmd
}

// runDemo prints the plan for the simulated node (--demo) or for this
// node's runtime.
func runDemo(ctx context.Context, opts *demoOptions) error {
	if !opts.Demo {
		return runPlan(ctx, &planOptions{IO: opts.IO, Global: opts.Global, Output: "table", Pass: opts.Pass, Policy: opts.Policy})
	}
	var so simnode.Options
	switch opts.Scale {
	case "small":
		so = simnode.Demo(opts.Seed)
	case "large":
		so = simnode.DemoLarge(opts.Seed)
	default:
		return usageErrorf("--demo-scale: must be small or large, got %q", opts.Scale)
	}
	if opts.Global.RuntimeEndpoint != "" {
		return usageErrorf("--demo: cannot be combined with --runtime-endpoint")
	}
	if opts.Warmup < 0 {
		return usageErrorf("--demo-warmup: must not be negative, got %s", opts.Warmup)
	}
	kind, err := opts.Pass.kind()
	if err != nil {
		return err
	}
	policy, prov, err := resolvePolicy(opts.Policy, nil)
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "nodegc-demo-")
	if err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	defer os.RemoveAll(dir)

	start := opts.IO.Now().UTC().Truncate(time.Second)
	so.Start = start
	d, err := startDemoNode(ctx, so, filepath.Join(dir, "simnode.sock"))
	if err != nil {
		return err
	}
	defer d.Close()

	e, err := engine.New(engine.Options{
		Reader:    d.client.ReadOnly(),
		Policy:    policy,
		StateDir:  filepath.Join(dir, "state"),
		Now:       d.node.Now,
		PodSource: d.podSource,
	})
	if err != nil {
		return err
	}
	// The first snapshot records every image as first seen at start; the
	// workload then runs for the warm-up, so that images age past the
	// minimum TTL, pods die and the disk fills, as on a node that has
	// been up for a while.
	if _, err := e.Snapshot(ctx); err != nil {
		return fmt.Errorf("demo: snapshot: %w", err)
	}
	for i := 1; i <= demoSteps; i++ {
		d.node.Step(start.Add(opts.Warmup * time.Duration(i) / demoSteps))
	}
	s, err := e.Snapshot(ctx)
	if err != nil {
		return fmt.Errorf("demo: snapshot: %w", err)
	}
	view := planView{
		Snapshot:       s,
		Plan:           engine.PlanPass(s, policy, kind, s.TakenAt),
		Settings:       prov,
		EndpointSource: "simulated node, --demo",
	}
	return renderPlanTable(opts.IO.Out, view)
}

// demoNode is a simulated node served on a private socket and a CRI client
// dialled to it, as to a real runtime.
type demoNode struct {
	node   *simnode.Node
	client *cri.Client
	served chan error
}

// startDemoNode serves a simulated node on socket (0600, in a private
// temp dir) and dials it through the CRI adapter.
func startDemoNode(ctx context.Context, o simnode.Options, socket string) (*demoNode, error) {
	node := simnode.New(o)
	endpoint := "unix://" + socket
	l, err := simnode.Listen(endpoint)
	if err != nil {
		return nil, fmt.Errorf("demo: %w", err)
	}
	d := &demoNode{node: node, served: make(chan error, 1)}
	go func() { d.served <- node.Serve(l) }()
	c, err := cri.Dial(ctx, endpoint, cri.Options{})
	if err != nil {
		node.Stop()
		<-d.served
		return nil, fmt.Errorf("demo: %w", err)
	}
	d.client = c
	return d, nil
}

// podSource stands in for the API server: the pods the simulated workload
// deleted are removable.
func (d *demoNode) podSource(context.Context) (engine.PodSource, error) {
	return engine.PodSource{Ready: true, RemovablePodUIDs: d.node.RemovablePods()}, nil
}

// Close closes the client and stops the node.
func (d *demoNode) Close() {
	d.client.Close()
	d.node.Stop()
	<-d.served
}
