package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/nodegc/nodegc/control"
	"github.com/nodegc/nodegc/fleet"
	"github.com/nodegc/nodegc/internal/kubeclient"
	"github.com/nodegc/nodegc/internal/texttable"
	"github.com/nodegc/nodegc/tui"
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
	Context   string
	Namespace string
	Selector  string
	Port      int
	// AgentTimeout bounds each agent's answer; Concurrency is how many are
	// asked at once.
	AgentTimeout time.Duration
	Concurrency  int
	Refresh      time.Duration
	// Output is -o: "" for the screen, json or wide for one read printed.
	Output   string
	ReadOnly bool
	// runTUI and runDashboard are the screens; tests replace them.
	runTUI       func(context.Context, tuifleet.Options) (tuifleet.Model, error)
	runDashboard func(context.Context, tui.Options) error
}

// newCmdFleet builds `nodegc fleet`.
func newCmdFleet(f *factory, g *globalOptions) *cobra.Command {
	opts := &fleetOptions{IO: f, Global: g, runTUI: tuifleet.Run, runDashboard: tui.Run}
	cmd := &cobra.Command{
		Use:   "fleet [NODE]",
		Short: "Every node's agent through the API server; enter opens a node's dashboard",
		Long: `nodegc fleet reads every node's agent (the DaemonSet of deploy/) through the
API server's pods proxy, with your kubeconfig: no SSH and no service of its
own. One row a node: the image filesystem against its GC band, the last
image GC (when, result, bytes freed), dead containers, images kept by
reason, the agent's pod source and runtime event stream, and errors. Each
agent is asked within --agent-timeout, --concurrency at once, so an agent
that does not answer shows as such and holds back no other row. Nodes
without an agent are listed as such.

Keys as in the dashboard: / filters, s and S sort, r reads again, enter
opens the selected node's dashboard attached to its agent through the same
path, with every key working as on the node (force, preview, apply,
pause); q there comes back here.

With NODE it opens that node's dashboard at once. Installed (or linked) as
kubectl-nodegc it is a kubectl plugin: kubectl nodegc, kubectl nodegc NODE.

Rights: list nodes, list pods in the agents' namespace, get pods/proxy
there. A node's dashboard needs, besides, get (to look) and update (to
force, apply, pause) on nodes.nodegc.io for that node (the nodegc-operator
roles of deploy/examples/operator-rbac.yaml): the agent asks the API
server to review your bearer token and your rights for every request,
since anyone on the network can reach its port. A kubeconfig that authenticates with a client
certificate has no token the agent could check, so it gets the fleet view
but not a node's dashboard.

Exit status: 0 ok; 1 the API server cannot be reached; 2 bad input (a
flag, the kubeconfig, a right the kubeconfig lacks, named in one line).`,
		Example: `  # The fleet, with your kubeconfig
  nodegc fleet
  kubectl nodegc

  # One node's dashboard through its agent
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
	fl.StringVarP(&opts.Namespace, "namespace", "n", fleet.DefaultNamespace, "namespace of the agents' pods")
	fl.StringVarP(&opts.Selector, "selector", "l", fleet.DefaultSelector, "label selector of the agents' pods")
	fl.IntVar(&opts.Port, "port", fleet.DefaultPort, "the agents' metrics port, when their pod names no port \"metrics\"")
	fl.DurationVar(&opts.AgentTimeout, "agent-timeout", fleet.DefaultTimeout, "how long each agent has to answer")
	fl.IntVar(&opts.Concurrency, "concurrency", fleet.DefaultParallel, "how many agents are asked at once")
	fl.DurationVar(&opts.Refresh, "refresh", 2*time.Second, "time between the end of one read and the next")
	fl.StringVarP(&opts.Output, "output", "o", "", "json: read once and print the rows as JSON, instead of the screen")
	fl.BoolVar(&opts.ReadOnly, "read-only", false, "a node's dashboard sends no command")
	return cmd
}

// fleetConfig loads the user's kubeconfig: --kubeconfig, else $KUBECONFIG,
// else ~/.kube/config, as kubectl does.
func fleetConfig(opts *fleetOptions) (*rest.Config, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	if opts.Global.Kubeconfig != "" {
		rules.ExplicitPath = opts.Global.Kubeconfig
	}
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules,
		&clientcmd.ConfigOverrides{CurrentContext: opts.Context}).ClientConfig()
	if err != nil {
		return nil, usageErrorf("--kubeconfig: %s", oneLine(err.Error()))
	}
	cfg.UserAgent = "nodegc-fleet/" + version
	cfg.QPS, cfg.Burst = -1, 0 // the reads are bounded by --concurrency, not by a client-side limiter
	return cfg, nil
}

// runFleet runs the fleet view, or one node's dashboard.
func runFleet(ctx context.Context, opts *fleetOptions, node string) error {
	switch {
	case opts.AgentTimeout <= 0:
		return usageErrorf("--agent-timeout: must be greater than 0")
	case opts.Concurrency < 1:
		return usageErrorf("--concurrency: must be at least 1")
	case opts.Refresh <= 0:
		return usageErrorf("--refresh: must be greater than 0")
	case opts.Output != "" && opts.Output != "json":
		return usageErrorf("-o: must be json, got %q", opts.Output)
	case opts.Output != "" && node != "":
		return usageErrorf("-o: a node's dashboard has no JSON output; use nodegc plan on the node")
	}
	cfg, err := fleetConfig(opts)
	if err != nil {
		return err
	}
	kc, err := kubeclient.New(fleet.BoundedConfig(cfg))
	if err != nil {
		return usageErrorf("--kubeconfig: %v", err)
	}
	r := fleet.NewReader(fleet.Options{Client: kc, Namespace: opts.Namespace, Selector: opts.Selector,
		Port: opts.Port, Timeout: opts.AgentTimeout, Parallel: opts.Concurrency})
	if node != "" {
		return enterNode(ctx, opts, cfg, r, node)
	}
	// The first read checks the rights, before any screen: a missing one
	// is one line naming the verb.
	start := time.Now()
	nodes, err := r.Read(ctx)
	took := time.Since(start)
	if err != nil {
		return fleetError(err)
	}
	for _, n := range nodes {
		if strings.HasPrefix(n.Err, "forbidden: get pods/proxy") {
			return usageErrorf("fleet: your kubeconfig may not get pods/proxy in namespace %s (forbidden)", opts.Namespace)
		}
	}
	if opts.Output == "json" || !opts.IO.OutIsTerminal() {
		enc := json.NewEncoder(opts.IO.Out)
		enc.SetIndent("", "  ")
		return enc.Encode(nodes)
	}
	restore := quietLibraryLogs(nil)
	defer restore()
	cursor, flash := "", ""
	for {
		m, err := opts.runTUI(ctx, tuifleet.Options{Read: r.Read, Refresh: opts.Refresh, Cursor: cursor, Flash: flash,
			Initial: nodes, InitialAt: start.Add(took), InitialTook: took})
		nodes = nil // back from a node's dashboard, the view reads afresh
		if err != nil || m.Enter == "" || ctx.Err() != nil {
			return err
		}
		cursor, flash = m.Enter, ""
		if err := enterNode(ctx, opts, cfg, r, m.Enter); err != nil {
			flash = errorLine(err)
		}
	}
}

// fleetError maps a read's error: a missing right is bad input (exit 2).
// Its message quotes the API server, so it is made printable.
func fleetError(err error) error {
	var fe *fleet.ForbiddenError
	if errors.As(err, &fe) {
		return &usageError{printableError{fmt.Errorf("fleet: %w", fe)}}
	}
	return printableError{fmt.Errorf("fleet: %w", err)}
}

// printableError is err whose message goes to the terminal with every
// control character written as \xNN (texttable.PrintableLine): it quotes
// what the API server or an agent said.
type printableError struct{ err error }

func (e printableError) Error() string { return texttable.PrintableLine(e.err.Error()) }
func (e printableError) Unwrap() error { return e.err }

// enterNode opens the node's dashboard attached to its agent through the
// API server's pods proxy. Every request carries the user's bearer token
// for the agent to review (control.RemoteHandler); a user whose rights
// stop at get gets a read-only dashboard.
func enterNode(ctx context.Context, opts *fleetOptions, cfg *rest.Config, r *fleet.Reader, node string) error {
	agent, err := r.Agent(ctx, node)
	if err != nil {
		return fleetError(err)
	}
	c, st, err := remoteAgent(ctx, cfg, agent, opts.ReadOnly)
	if err != nil {
		return err
	}
	defer c.Close()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	c.Watch(ctx, st)
	o := attachedOptions(c, st, c.ReadOnly())
	o.HideSelf = true // this process is not on the node
	return opts.runDashboard(ctx, o)
}

// remoteAgent returns a client of the agent through the pods proxy, and
// its status; read-only when asked or when the agent says the user may
// not send commands.
func remoteAgent(ctx context.Context, cfg *rest.Config, agent fleet.Node, readOnly bool) (*control.Client, control.Status, error) {
	base, rt, err := proxyTransport(cfg, agent)
	if err != nil {
		return nil, control.Status{}, err
	}
	c := control.NewRemoteClient(rt, base, readOnly)
	sctx, cancel := context.WithTimeout(ctx, control.RemoteProbeTimeout)
	defer cancel()
	st, err := c.StatusBrief(sctx)
	var re *control.RemoteError
	switch {
	case errors.As(err, &re) && (re.Status == http.StatusUnauthorized || re.Status == http.StatusForbidden):
		return nil, control.Status{}, &usageError{printableError{fmt.Errorf("node %s: %s", agent.Name, re.Reply.Error)}}
	case err != nil:
		return nil, control.Status{}, printableError{fmt.Errorf("node %s: the agent (pod %s/%s) through the API server: %w", agent.Name, agent.Namespace, agent.Pod, err)}
	}
	if st.ReadOnly && !readOnly {
		c.Close()
		c = control.NewRemoteClient(rt, base, true)
	}
	return c, st, nil
}

// proxyTransport is the agent's proxy URL on the API server and the
// user's transport to it, which copies the user's bearer token (set by
// client-go from a token, a token file, an exec plugin or an auth
// provider) into control.AuthorizationHeader: the API server drops
// Authorization before it proxies.
func proxyTransport(cfg *rest.Config, agent fleet.Node) (*url.URL, http.RoundTripper, error) {
	c := rest.CopyConfig(cfg)
	outer := c.WrapTransport
	c.WrapTransport = func(rt http.RoundTripper) http.RoundTripper {
		var w http.RoundTripper = tokenCopier{rt}
		if outer != nil {
			w = outer(w)
		}
		return w
	}
	rt, err := rest.TransportFor(c)
	if err != nil {
		return nil, nil, usageErrorf("--kubeconfig: %v", err)
	}
	host := cfg.Host
	if !strings.Contains(host, "://") {
		host = "https://" + host
	}
	u, err := url.Parse(host)
	if err != nil {
		return nil, nil, usageErrorf("--kubeconfig: server %q: %v", cfg.Host, err)
	}
	u.Path = strings.TrimSuffix(u.Path, "/") + kubeclient.ProxyPath(agent.Namespace, agent.Pod, agent.Port)
	return u, rt, nil
}

// tokenCopier copies the request's bearer token into
// control.AuthorizationHeader; it runs after client-go's authentication
// wrappers, next to the wire.
type tokenCopier struct{ rt http.RoundTripper }

func (t tokenCopier) RoundTrip(r *http.Request) (*http.Response, error) {
	if a := r.Header.Get("Authorization"); strings.HasPrefix(a, "Bearer ") {
		r = r.Clone(r.Context())
		r.Header.Set(control.AuthorizationHeader, a)
	}
	return t.rt.RoundTrip(r)
}
