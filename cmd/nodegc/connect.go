package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/nodegc/nodegc/engine"
	"github.com/nodegc/nodegc/engine/cri"
	"github.com/nodegc/nodegc/internal/simfs"
	"github.com/nodegc/nodegc/internal/simnode"
)

// runtimeConn is a connection to the node's CRI runtime. A read-only
// connection has a nil Remover, and its Reader has no mutating method at
// all, so nothing given only the Reader can delete.
type runtimeConn struct {
	Reader engine.Reader
	// Remover is nil on a read-only connection.
	Remover  engine.Remover
	Endpoint string
	// Source says where the endpoint came from, for the plan's runtime line.
	Source string
	// Simulated is --simulated: the runtime is a simulated node (nodegc
	// simnode), whose pods have no log files on this machine: log GC must
	// not run against it, or it would take this machine's real logs for
	// dangling.
	Simulated bool
	// Statfs measures filesystems for the engine: nil (the real statfs)
	// unless --simulated.
	Statfs func(string) (engine.FsStats, error)
	// pods is the pod source; nil with --simulated and no --kubeconfig,
	// since a simulated node's pods are no API server's.
	pods   *podSources
	client *cri.Client
	// stateDir keeps the sandbox images the client learns for the next
	// run (engine.SaveSandboxImages); "" for a read-only command, which
	// never writes the state dir.
	stateDir string
}

// podSource is the engine's pod source for this connection; nil (not
// ready, limits only) on a simulated node without --kubeconfig.
func (c *runtimeConn) podSource() func(context.Context, engine.Snapshot) (engine.PodSource, error) {
	if c.pods == nil {
		return nil
	}
	return c.pods.PodSource
}

// podSourceGen is the generation of the connection's pod source
// (engine.Options.PodSourceGen); nil without one.
func (c *runtimeConn) podSourceGen() func() uint64 {
	if c.pods == nil {
		return nil
	}
	return c.pods.Generation
}

// scanLogs reports whether snapshots should list this machine's pod log
// directories and /var/log/containers for log GC.
func (c *runtimeConn) scanLogs() bool { return !c.Simulated }

// Close stops the pod source, keeps the sandbox images the client learned
// in the state dir when they changed, and closes the connection.
func (c *runtimeConn) Close() error {
	c.pods.Stop()
	if images, changed := c.client.SandboxImages(); changed {
		_ = engine.SaveSandboxImages(c.stateDir, images) // a cache: the next run asks again without it
	}
	return c.client.Close()
}

// connect finds the endpoint (--runtime-endpoint, then
// CONTAINER_RUNTIME_ENDPOINT, then the running kubelet's
// --container-runtime-endpoint, then its config's
// containerRuntimeEndpoint, then the first well-known socket that answers)
// and dials it. exitDetails asks the runtime for each dead container's
// finished time and exit code (one status call per dead container the
// first time it is seen; the dashboard and snapshot show them; plan and
// gc plan without them, so that a plan costs one listing). The image each
// sandbox runs is learned once per sandbox; a command that may write the
// state dir keeps them there, so a later command, read-only too, asks only
// about sandboxes new since. An
// unreachable runtime is an error wrapping engine.ErrUnavailable (exit 1);
// a malformed endpoint is bad input (exit 2), and so is a runtime that is
// a simulated node when --simulated says otherwise (checkSimulated).
func connect(ctx context.Context, f *factory, g *globalOptions, cfg *kubeletConfig, readOnly, exitDetails bool) (*runtimeConn, error) {
	fromConfig, _, _ := cfg.runtimeEndpoint()
	ep, src, err := cri.Discover(ctx, g.RuntimeEndpoint, f.Getenv("CONTAINER_RUNTIME_ENDPOINT"), fromConfig)
	if err != nil {
		return nil, endpointError(err)
	}
	// With --debug, the client logs how many sandboxes it asked for their
	// image; a --log-file that cannot be opened is reported by the engine.
	log, _ := g.logger()
	c, err := cri.Dial(ctx, ep, cri.Options{ReadTimeout: g.Timeout, ExitDetails: exitDetails,
		SandboxImages: engine.LoadSandboxImages(g.StateDir), Logger: log})
	if err != nil {
		if src == cri.SourceProbe {
			return nil, endpointError(err)
		}
		// Name what chose the endpoint, so the operator knows what to fix.
		return nil, endpointError(fmt.Errorf("%s: %w", endpointOrigin(src, cfg), err))
	}
	conn := &runtimeConn{Reader: c.ReadOnly(), Endpoint: c.Endpoint(), Source: endpointSource(src, cfg), client: c}
	if !readOnly {
		conn.stateDir = g.StateDir
	}
	if _, err := c.ImageFs(ctx); err != nil {
		c.Close()
		return nil, fmt.Errorf("image filesystem of %s: %w", c.Endpoint(), err)
	}
	info, err := c.StatusInfo(ctx)
	if err != nil {
		c.Close()
		return nil, fmt.Errorf("runtime status of %s: %w", c.Endpoint(), err)
	}
	if err := checkSimulated(g.Simulated, c.Endpoint(), info); err != nil {
		c.Close()
		return nil, err
	}
	if g.Simulated {
		conn.Simulated, conn.Statfs = true, simfs.Statfs(remoteSimulatedFs(c))
	}
	// A simulated node's pods are no API server's, unless the operator
	// names one (--kubeconfig): test/fleet puts many simulated nodes
	// behind one API server, each agent with its node's pod watch. Its
	// pods (not in the API) make the source disagree with the node, so
	// it is never believed there; nothing real is at stake either way.
	if !conn.Simulated || g.Kubeconfig != "" {
		if conn.pods, err = startPodSource(ctx, f, g, cfg); err != nil {
			c.Close()
			return nil, err
		}
	}
	if !readOnly {
		conn.Remover = c
	}
	return conn, nil
}

// checkSimulated holds the runtime to what --simulated says it is, by the
// marker a simulated node publishes in its verbose status info
// (simnode.ImageFsInfoKey). The marker only checks the flag; it never
// changes what nodegc does. Either mismatch is bad input (exit 2), found
// before the node is listed or anything removed: --simulated on a real
// runtime would leave its logs unscanned and measure its disk through a
// marker it lacks; a simulated node taken for a real one would have this
// machine's real pod logs taken for its dangling logs, and removed.
func checkSimulated(simulated bool, endpoint string, info map[string]string) error {
	_, marked, err := simnode.ImageFsFromInfo(info)
	switch {
	case simulated && !marked:
		return usageErrorf("--simulated: the runtime at %s is not a simulated node (nodegc simnode); leave --simulated out for a real runtime", endpoint)
	case !simulated && marked:
		return usageErrorf("the runtime at %s is a simulated node (nodegc simnode): pass --simulated, so that this machine's pod logs are not taken for its own", endpoint)
	case err != nil:
		return fmt.Errorf("%s: %w", endpoint, err)
	}
	return nil
}

// endpointError makes a malformed endpoint a usage error.
func endpointError(err error) error {
	if errors.Is(err, cri.ErrInvalidEndpoint) {
		return &usageError{err}
	}
	return err
}

// endpointSource is the provenance of the endpoint, in the words the
// policy provenance uses.
func endpointSource(src cri.Source, cfg *kubeletConfig) string {
	switch src {
	case cri.SourceFlag:
		return "from " + sourceFlag
	case cri.SourceEnv:
		return "from " + sourceEnv
	case cri.SourceKubeletConfig:
		if _, _, source := cfg.runtimeEndpoint(); source != "" {
			return "from " + source
		}
	case cri.SourceProbe:
		return "found by probing the well-known sockets"
	}
	return "from " + string(src)
}

// endpointOrigin names the flag, variable or config field an endpoint
// came from.
func endpointOrigin(src cri.Source, cfg *kubeletConfig) string {
	if _, origin, _ := cfg.runtimeEndpoint(); src == cri.SourceKubeletConfig && origin != "" {
		return origin
	}
	return string(src)
}
