package agent

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/nodegc/nodegc/control"
	"github.com/nodegc/nodegc/engine"
	"github.com/nodegc/nodegc/metrics"
)

// Options are what Run needs of the node cmd/nodegc opened, and of
// cmd/nodegc's helpers that the dashboard shares.
type Options struct {
	// Log receives the agent's JSON lines.
	Log *slog.Logger
	// Listener is from Listen; nil serves no HTTP.
	Listener *Listener
	// Address is --metrics-bind-address as given, for the start line.
	Address string
	// StateDir is the state dir the engine holds: Run serves the control
	// socket there, and /readyz checks it can hold the journal.
	StateDir string
	// Engine is the node's engine, open (it holds the state dir's lock).
	Engine *engine.Engine
	// Events is the runtime's container event stream; nil without one.
	Events engine.EventSource
	// Pods is the pod source; nil on a simulated node.
	Pods *Pods
	// RuntimeEndpoint names the runtime on the start line.
	RuntimeEndpoint string
	// Scheduler has the periods of the passes.
	Scheduler engine.SchedulerOptions
	// StartScheduler runs the scheduler's passes on the engine, following
	// events, until the stop it returns is called; its context ends then.
	StartScheduler func(context.Context, *engine.Engine, engine.SchedulerOptions, engine.EventSource) (context.Context, *engine.Scheduler, func() *engine.PassReport)
	// ProbeStateDir returns nil when a file can be written in the state
	// dir: /readyz's check.
	ProbeStateDir func(dir string) error
	// StoppedLine says what a pass cut short at the stop did and left.
	StoppedLine func(engine.PassReport) string
	// AfterPass, when set, runs after each pass is recorded.
	AfterPass func()
	// Version is nodegc's version.
	Version string
	// Started is when the agent started: its status and the fleet's row.
	Started time.Time
}

// Agent is the engine's surfaces while Run runs. Its zero value is ready:
// ObserveSnapshot can be given to the engine before it is opened.
type Agent struct {
	col *metrics.Collector
	fc  *forecaster
	// uptime, when set, replaces the monotonic clock the forecast's
	// history checks the wall clock against (tests on a simulated clock).
	uptime func() time.Duration
}

// ObserveSnapshot records a snapshot's image fs, images and dead
// containers in the metrics, once Run has started. It fits
// engine.Options.OnSnapshot.
func (a *Agent) ObserveSnapshot(s engine.Snapshot) {
	if a.col != nil { // set before the first snapshot Run takes
		a.col.ObserveSnapshot(s)
		a.fc.observe(s)
	}
}

// Run runs the engine's periodic passes, the control socket, the HTTP
// listener, the Node's events and its NodeGC object until ctx ends; then the items in
// flight finish and are journalled, and it returns nil. An error is one
// from the control socket (its path planted, say), before any pass.
func (a *Agent) Run(ctx context.Context, o Options) error {
	log := o.Log
	a.fc = newForecaster(log, o.StateDir, o.Engine.Policy(), o.Engine.Now(), a.uptime)
	a.col = metrics.New(metrics.Options{Policy: o.Engine.Policy(), Version: o.Version, Journal: o.Engine.JournalStats, PodSource: podSourceState(o.Pods),
		Extra: []prometheus.Collector{a.fc.out}, Started: o.Started, ImagePeriod: o.Scheduler.ImagePeriod, ContainerPeriod: o.Scheduler.ContainerPeriod})
	if w := o.Engine.Warning(); w != nil {
		log.Warn("state dir", "err", w)
	}
	// Detect the images now, as the kubelet's image manager does at
	// start: their records (first seen) begin with the agent, not with
	// its first image pass.
	if _, err := o.Engine.Snapshot(ctx); err != nil {
		log.Warn("first snapshot", "err", err)
	}
	so := o.Scheduler
	if so.Log == nil {
		so.Log = log // who paused and who ended it, on record
	}
	passCtx, s, stop := o.StartScheduler(ctx, o.Engine, so, a.col.WatchEvents(o.Events))
	stopControl, err := serveControl(passCtx, o, s)
	if err != nil {
		stop()
		return err
	}
	events := startNodeEvents(o.Pods, log)
	notices, unsubscribe := s.Subscribe()
	obj := newObjectWriter(o.Pods, log, a.col, s, o.Started)
	if obj != nil {
		obj.forecast = a.fc.evictionForecast
	}
	var wg sync.WaitGroup
	wg.Go(func() { followNotices(log, a.col, events, obj, notices, o.AfterPass) })
	if obj != nil {
		wg.Go(func() { obj.run(passCtx) })
		wg.Go(func() { watchCommands(passCtx, o.Pods, s, obj, log) })
	}
	stopForecast := a.fc.startForecast(s, &wg, events)
	srv := a.serveHTTP(o, &wg)
	logStarted(o)

	<-passCtx.Done()
	log.Info("stopping: finishing the items in flight")
	stopControl()
	if r := stop(); r != nil {
		log.Warn(o.StoppedLine(*r), "pass", r.PassID())
	}
	shutdown(ctx, srv)
	unsubscribe()
	stopForecast()
	wg.Wait()
	flush, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
	events.Stop(flush)
	cancel()
	log.Info("agent stopped")
	return nil
}

// serveHTTP serves /metrics, /healthz and /readyz on o.Listener, in wg,
// until shutdown; nil without a listener. Nothing else is served there:
// the agent takes no command and reviews no credential on its port (the
// control socket and the NodeGC object carry commands).
func (a *Agent) serveHTTP(o Options, wg *sync.WaitGroup) *http.Server {
	l := o.Listener
	if l == nil {
		return nil
	}
	srv := metricsServer(l.ml, metrics.NewHandler(a.col, readyChecks(o)...))
	wg.Go(func() {
		if err := srv.Serve(l.ml); !errors.Is(err, http.ErrServerClosed) {
			o.Log.Error("metrics listener", "err", err)
		}
	})
	return srv
}

// shutdown ends srv's requests, waiting at most 2 s for those in flight;
// nil does nothing.
func shutdown(ctx context.Context, srv *http.Server) {
	if srv == nil {
		return
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
	defer cancel()
	_ = srv.Shutdown(sctx)
	srv.Close() // whatever outlasted the wait
}

// logStarted logs the agent's start line: what it runs on and serves.
func logStarted(o Options) {
	var listening []string
	if o.Listener != nil {
		listening = o.Listener.ml.listening()
	}
	o.Log.Info("agent started", "pid", os.Getpid(), "version", o.Version,
		"runtime", o.RuntimeEndpoint, "stateDir", o.StateDir, "metrics", o.Address, "listening", listening, "control", control.SocketPath(o.StateDir),
		"podSource", describePods(o.Pods), "imageGCPeriod", o.Scheduler.ImagePeriod, "containerGCPeriod", o.Scheduler.ContainerPeriod,
		"imageGCHighThreshold", o.Engine.Policy().Image.HighThresholdPercent, "imageGCLowThreshold", o.Engine.Policy().Image.LowThresholdPercent, "shadow", o.Scheduler.Shadow)
}
