package main

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"os"
	"time"

	"github.com/nodegc/nodegc/control"
	"github.com/nodegc/nodegc/engine"
	"github.com/nodegc/nodegc/metrics"
)

// agentHandler is what the agent serves on --metrics-bind-address: the
// metrics handler (/metrics, /healthz, /readyz), the fleet row
// (metrics.SummaryPath, counts only, like /metrics) and the control
// protocol under /v1/ for a dashboard through the API server's pods
// proxy, each request authorized by the API server (control.RemoteHandler)
// and each command logged to log with the user who sent it. The returned
// func stops what it started.
func agentHandler(ctx context.Context, log *slog.Logger, h http.Handler, col *metrics.Collector, n *liveNode, s *engine.Scheduler, started time.Time) (http.Handler, func()) {
	node := ""
	var auth control.Authorizer
	if ps := n.Conn.pods; ps != nil {
		node = ps.node
		if ps.client != nil {
			auth = &control.KubeAuthorizer{Post: ps.client.PostJSON, Node: ps.node}
		}
	}
	cs := control.NewServer(control.Options{Scheduler: s, Engine: n.Engine, PID: os.Getpid(), StartedAt: started, Version: version, Context: ctx, Log: log})
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+metrics.SummaryPath, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(col.Summary(node, started))
	})
	mux.Handle("/v1/", cs.RemoteHandler(auth))
	mux.Handle("/", h)
	return mux, cs.Close
}
