package main

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/nodegc/nodegc/cgroupfs"
	"github.com/nodegc/nodegc/engine"
)

// cgroupsOptions are nodegc cgroups' flags and dependencies.
type cgroupsOptions struct {
	IO     *factory
	Global *globalOptions
	// Output is "tree" or "json".
	Output string
	// CgroupDriver and CgroupRoot override the kubelet config's.
	CgroupDriver string
	CgroupRoot   string
	// FsRoot reads a cgroup tree mounted elsewhere (a fixture, a chroot).
	FsRoot  string
	Changed map[string]bool
}

// newCmdCgroups builds `nodegc cgroups`. runF, when set, replaces
// runCgroups.
func newCmdCgroups(f *factory, g *globalOptions, runF func(context.Context, *cgroupsOptions) error) *cobra.Command {
	opts := &cgroupsOptions{IO: f, Global: g}
	cmd := &cobra.Command{
		Use:   "cgroups [-o tree|json]",
		Short: "Print the kubepods cgroup tree with live usage",
		Long: `Print the kubepods cgroup tree: QoS classes, pods and containers, each with
its memory usage and limit, cumulative CPU time and pids (and PSI where the
kernel offers it), under a header with the cgroup mode (v1, v2, hybrid), the
driver (cgroupfs or systemd), the mount points, and node allocatable as the
kubelet computes it beside the limits really set on kubepods.

The cgroup driver and root come from --cgroup-driver and --cgroup-root, else
the kubelet config, else they are detected. Pod and container names come from
the runtime when it can be reached (read-only); otherwise they are shown as
"unknown", never dropped.`,
		Example: `  # The tree, as systemd-cgls with numbers
  sudo nodegc cgroups

  # As JSON, for scripts
  sudo nodegc cgroups -o json | jq '.[0].children[].path'`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			opts.Changed = changedFlags(cmd)
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return runCgroups(cmd.Context(), opts)
		},
	}
	fl := cmd.Flags()
	fl.StringVarP(&opts.Output, "output", "o", "tree", "output format: tree or json")
	fl.StringVar(&opts.CgroupDriver, "cgroup-driver", "", `the kubelet's cgroup driver, "cgroupfs" or "systemd" (default: the kubelet config, else detected)`)
	fl.StringVar(&opts.CgroupRoot, "cgroup-root", "", "the kubelet's cgroupRoot (default: the kubelet config, else /)")
	fl.StringVar(&opts.FsRoot, "cgroupfs-root", "", "where the cgroup filesystems are mounted (default /sys/fs/cgroup)")
	_ = fl.MarkHidden("cgroupfs-root")
	return cmd
}

// runCgroups reads the tree and prints it.
func runCgroups(ctx context.Context, opts *cgroupsOptions) error {
	f := opts.IO
	if opts.Output != "tree" && opts.Output != "json" {
		return usageErrorf("--output: must be tree or json, got %q", opts.Output)
	}
	if d := opts.CgroupDriver; d != "" && d != "cgroupfs" && d != "systemd" {
		return usageErrorf(`--cgroup-driver: must be "cgroupfs" or "systemd", got %q`, d)
	}
	cfg, err := loadConfig(f, opts.Global, true)
	if err != nil {
		return err
	}
	c := cgroupfs.Config{Root: opts.FsRoot, CgroupDriver: opts.CgroupDriver, CgroupRoot: opts.CgroupRoot}
	if cfg != nil {
		if !opts.Changed["cgroup-driver"] {
			c.CgroupDriver = cfg.CgroupDriver
		}
		if !opts.Changed["cgroup-root"] {
			c.CgroupRoot = cfg.CgroupRoot
		}
		c.SystemReserved, c.KubeReserved = cfg.SystemReserved, cfg.KubeReserved
	}
	names, err := runtimeNames(ctx, f, opts.Global, cfg)
	if err != nil {
		return err
	}
	tree, err := cgroupfs.Read(c, names)
	if err != nil {
		return err
	}
	if opts.Output == "json" {
		b, err := tree.JSON()
		if err != nil {
			return err
		}
		_, err = f.Out.Write(b)
		return err
	}
	return tree.WriteText(f.Out)
}

// runtimeNames lists the runtime's sandboxes and containers (read-only)
// to name the pods and containers of the tree. When the runtime cannot be
// reached it warns and returns no names: cgroups are then "unknown", and
// the tree is still worth reading. Bad input (a malformed endpoint, a
// --simulated that does not match the runtime) is the operator's to fix,
// so it is returned as the usage error it is.
func runtimeNames(ctx context.Context, f *factory, g *globalOptions, cfg *kubeletConfig) (cgroupfs.Names, error) {
	conn, err := connect(ctx, f, g, cfg, true, false)
	if err != nil {
		if exitCode(err) == exitUsage {
			return nil, err
		}
		f.warnf("%v; pod and container names are unknown", err)
		return engine.CgroupNames(nil, nil), nil
	}
	defer conn.Close()
	sandboxes, err := conn.Reader.ListSandboxes(ctx)
	if err != nil {
		f.warnf("list sandboxes: %v; pod and container names are unknown", err)
		return engine.CgroupNames(nil, nil), nil
	}
	containers, err := conn.Reader.ListContainers(ctx)
	if err != nil {
		f.warnf("list containers: %v; container names are unknown", err)
	}
	return engine.CgroupNames(sandboxes, containers), nil
}
