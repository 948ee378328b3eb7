package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"

	"github.com/nodegc/nodegc/fleet"
	"github.com/nodegc/nodegc/internal/texttable"
	tuifleet "github.com/nodegc/nodegc/tui/fleet"
)

// pluginName is the name under which the binary is kubectl's plugin:
// `kubectl nodegc` runs kubectl-nodegc, which is `nodegc fleet`.
const pluginName = "kubectl-nodegc"

// pluginArgs turns a run as kubectl-nodegc into `nodegc fleet ARGS`.
func pluginArgs(argv0 string, args []string) []string {
	if filepath.Base(argv0) == pluginName {
		return append([]string{"fleet"}, args...)
	}
	return args
}

// fleetOptions are nodegc fleet's flags.
type fleetOptions struct {
	IO     *factory
	Global *globalOptions
	// Context is --context, the kubeconfig context.
	Context string
	// Refresh is the longest time between two frames when nothing
	// changes.
	Refresh time.Duration
	// Output is -o: "" for the screen, json for one read printed.
	Output string
	// PauseFor is how long p in a node's view proposes to pause.
	PauseFor time.Duration
	// runTUI is the screen; tests replace it.
	runTUI func(context.Context, tuifleet.Options) (tuifleet.Model, error)
}

// newCmdFleet builds `nodegc fleet`.
func newCmdFleet(f *factory, g *globalOptions) *cobra.Command {
	opts := &fleetOptions{IO: f, Global: g, runTUI: tuifleet.Run}
	cmd := &cobra.Command{
		Use:   "fleet [NODE]",
		Short: "Every node's NodeGC object, by one watch; enter opens a node's view",
		Long: `nodegc fleet reads the NodeGC object each node's agent writes (the DaemonSet
of deploy/), with your kubeconfig: one list and one watch of the nodes and
one of the objects, however many nodes, and no request to any node. One
row a node: the image filesystem against its GC band, the last image GC
(when, result, bytes freed), dead containers, images kept by reason, the
agent's pod source and runtime event stream, its heartbeat, and errors. A
change reaches the screen as the watch brings it. A node whose object's
heartbeat is older than three 5-minute periods shows as stale, a node
without an object as no agent, and an object no agent would write (a
wrong field, no heartbeat) as an error in its row alone. A watch that
breaks is resumed, and the screen says so.

Keys as in the dashboard: / filters, s and S sort, r draws again, enter
opens the selected node's view: its object in full (both last passes,
the pause and who asked, the latest command's outcome), following the
watch; q there comes back here. In a node's view the node dashboard's
keys send commands through its NodeGC object, each after a confirm
naming the node and the action: i, x and R force an image, container or
reclaim-all pass, d previews a full pass (y then runs it), p pauses the
periodic passes until an expiry (--pause-for, + and - change it) or
resumes a pause sent this way. The agent acknowledges each in the
object's status, which the view shows. Nothing is sent to the node: no
credential and no command goes to a port on it.

With NODE it opens that node's view at once (with -o json, prints its
row). Installed (or linked) as kubectl-nodegc it is a kubectl plugin:
kubectl nodegc, kubectl nodegc NODE.

Rights: list and watch nodes and nodegcs.nodegc.io; patch nodegcs.nodegc.io
to send commands (the API server's audit log records who did).

Exit status: 0 ok; 1 the API server cannot be reached; 2 bad input (a
flag, the kubeconfig, a right the kubeconfig lacks, the NodeGC resource
not installed, named in one line).`,
		Example: `  # The fleet, with your kubeconfig
  nodegc fleet
  kubectl nodegc

  # One node's view
  kubectl nodegc worker-17

  # One read, as JSON (scripts)
  nodegc fleet -o json`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			node := ""
			if len(args) == 1 {
				node = args[0]
			}
			return runFleet(cmd.Context(), opts, node)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&opts.Context, "context", "", "the kubeconfig context (default: the current one)")
	fl.DurationVar(&opts.Refresh, "refresh", 2*time.Second, "the longest time between two frames when nothing changes (changes show at once)")
	fl.StringVarP(&opts.Output, "output", "o", "", "json: list once and print the rows as JSON, instead of the screen")
	fl.DurationVar(&opts.PauseFor, "pause-for", tuifleet.DefaultPauseFor, "how long p in a node's view proposes to pause its periodic passes (every pause from the fleet ends by itself)")
	return cmd
}

// fleetConfig loads the user's kubeconfig: --kubeconfig, else $KUBECONFIG,
// else ~/.kube/config, as kubectl does.
func fleetConfig(opts *fleetOptions) (*rest.Config, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	if opts.Global.Kubeconfig != "" {
		rules.ExplicitPath = opts.Global.Kubeconfig
	}
	loader := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules,
		&clientcmd.ConfigOverrides{CurrentContext: opts.Context})
	cfg, err := loader.ClientConfig()
	switch {
	case clientcmd.IsEmptyConfig(err):
		return nil, usageErrorf("--kubeconfig: no kubeconfig found (not given, $KUBECONFIG unset, no ~/.kube/config): pass --kubeconfig FILE")
	case err != nil && opts.Context != "" && contextMissing(loader, opts.Context):
		return nil, usageErrorf("--context: %q is not a context of the kubeconfig", opts.Context)
	case err != nil:
		return nil, usageErrorf("--kubeconfig: %s", oneLine(err.Error()))
	}
	cfg.UserAgent = "nodegc-fleet/" + version
	return cfg, nil
}

// contextMissing reports whether the kubeconfig loads but has no context
// named name: the fault is --context's, not the file's.
func contextMissing(loader clientcmd.ClientConfig, name string) bool {
	raw, err := loader.RawConfig()
	if err != nil {
		return false
	}
	_, ok := raw.Contexts[name]
	return !ok
}

// runFleet runs the fleet view, or one node's view, or prints the rows.
func runFleet(ctx context.Context, opts *fleetOptions, node string) error {
	switch {
	case opts.Refresh <= 0:
		return usageErrorf("--refresh: must be greater than 0")
	case opts.Output != "" && opts.Output != "json":
		return usageErrorf("-o: must be json, got %q", opts.Output)
	case opts.PauseFor <= 0:
		return usageErrorf("--pause-for: must be greater than 0")
	}
	cfg, err := fleetConfig(opts)
	if err != nil {
		return err
	}
	// client-go logs a broken watch through klog, which would tear the
	// screen: the screen says so itself; the lines go to --log-file.
	klog.LogToStderr(false)
	klog.SetOutput(cmp.Or[io.Writer](opts.Global.logOut, io.Discard))
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	w, err := fleet.Watch(ctx, fleet.WatchOptions{Config: cfg})
	if err != nil {
		return usageErrorf("--kubeconfig: %v", err)
	}
	defer w.Stop()
	// The first lists and watches check the rights and the resource,
	// before any screen: a missing one is one line naming it.
	if err := w.Ready(ctx); err != nil {
		return fleetError(err)
	}
	if opts.Output == "json" || !opts.IO.OutIsTerminal() {
		return printRows(opts, w.Rows(time.Now()), node)
	}
	cmds, err := fleet.NewCommands(cfg)
	if err != nil {
		return usageErrorf("--kubeconfig: %v", err)
	}
	restore := quietLibraryLogs(nil)
	defer restore()
	_, err = opts.runTUI(ctx, tuifleet.Options{Source: w, Refresh: opts.Refresh, Node: node, Commands: cmds, PauseFor: opts.PauseFor})
	return err
}

// printRows prints the rows as JSON, or node's alone.
func printRows(opts *fleetOptions, rows []fleet.Node, node string) error {
	enc := json.NewEncoder(opts.IO.Out)
	enc.SetIndent("", "  ")
	if node == "" {
		return enc.Encode(rows)
	}
	i := slices.IndexFunc(rows, func(r fleet.Node) bool { return r.Name == node })
	if i < 0 {
		return usageErrorf("NODE: the cluster has no node %q", node)
	}
	return enc.Encode(rows[i])
}

// fleetError maps a read's error: a missing right or a missing NodeGC
// resource is bad input (exit 2). Its message quotes the API server, so
// it is made printable.
func fleetError(err error) error {
	var (
		fe *fleet.ForbiddenError
		ni *fleet.NotInstalledError
	)
	if errors.As(err, &fe) || errors.As(err, &ni) {
		return &usageError{printableError{fmt.Errorf("fleet: %w", err)}}
	}
	return printableError{fmt.Errorf("fleet: %w", err)}
}

// printableError is err whose message goes to the terminal with every
// control character written as \xNN (texttable.PrintableLine): it quotes
// what the API server or an agent said.
type printableError struct{ err error }

func (e printableError) Error() string { return texttable.PrintableLine(e.err.Error()) }
func (e printableError) Unwrap() error { return e.err }
