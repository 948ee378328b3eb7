package agent

import (
	"context"
	"errors"
	"net/http"
	"os"

	"github.com/nodegc/nodegc/control"
	"github.com/nodegc/nodegc/engine"
)

// controlOptions are the control socket's server's: the scheduler's
// passes and the engine, the agent's identity, and ctx, which ends the
// passes its commands start.
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
