package agent

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os"

	"github.com/nodegc/nodegc/control"
	"github.com/nodegc/nodegc/engine"
	"github.com/nodegc/nodegc/metrics"
)

// agentHandler is what the agent serves on --metrics-bind-address: the
// metrics handler (/metrics, /healthz, /readyz), the fleet row
// (metrics.SummaryPath, counts only, like /metrics) and the control
// protocol under /v1/ for a dashboard through the API server's pods
// proxy, each request authorized by the API server (control.RemoteHandler)
// and each command logged to o.Log with the user who sent it. The
// returned func stops what it started.
func agentHandler(ctx context.Context, o Options, h http.Handler, col *metrics.Collector, s *engine.Scheduler) (http.Handler, func()) {
	node := ""
	var auth control.Authorizer
	if ps := o.Pods; ps != nil {
		node = ps.Node
		if ps.Client != nil {
			auth = &control.KubeAuthorizer{Post: ps.Client.PostJSON, Node: ps.Node}
		}
	}
	cs := control.NewServer(controlOptions(ctx, o, s))
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+metrics.SummaryPath, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(col.Summary(node, o.Started))
	})
	mux.Handle("/v1/", cs.RemoteHandler(auth))
	mux.Handle("/", h)
	return mux, cs.Close
}

// controlOptions are the control server's, on the socket and on the
// listener alike: the scheduler's passes and the engine, the agent's
// identity, and ctx, which ends the passes its commands start.
func controlOptions(ctx context.Context, o Options, s *engine.Scheduler) control.Options {
	return control.Options{Scheduler: s, Engine: o.Engine, PID: os.Getpid(), StartedAt: o.Started, Version: o.Version, Context: ctx, Log: o.Log,
		Journal: func(context.Context) ([]engine.JournalEntry, error) { return engine.ReadJournalLines(o.StateDir) }}
}

// serveControl serves the agent's control socket in the state dir until
// the returned stop is called. The caller holds the state dir's lock
// (the engine is open), so a root-owned socket left by a dead agent is
// removed; anything else at the path is refused.
func serveControl(ctx context.Context, o Options, s *engine.Scheduler) (func(), error) {
	l, err := control.Listen(control.SocketPath(o.StateDir))
	if err != nil {
		return nil, err
	}
	cs := control.NewServer(controlOptions(ctx, o, s))
	srv := control.HTTPServer(cs.Handler())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := srv.Serve(l); !errors.Is(err, http.ErrServerClosed) {
			o.Log.Error("control socket", "err", err)
		}
	}()
	return func() {
		// Streams (a dashboard's notices) never end by themselves: close
		// them rather than wait.
		srv.Close()
		<-done
		l.Close()
		cs.Close()
	}, nil
}
