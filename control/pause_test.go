package control

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/nodegc/nodegc/engine"
	"github.com/nodegc/nodegc/engine/cri"
	"github.com/nodegc/nodegc/internal/simfs"
	"github.com/nodegc/nodegc/internal/simnode"

	"github.com/nodegc/nodegc/internal/proctest"
)

// simAgent serves a real scheduler over a real engine on a simulated
// node on a control socket of the test's own, as an agent does, with
// the periodic passes an hour off; it returns the scheduler, the socket's
// path and the agent's log. t.Cleanup ends it all.
func simAgent(t *testing.T) (*engine.Scheduler, string, *proctest.Log) {
	t.Helper()
	n, ep := simnode.ServeTemp(t, simnode.Options{Seed: 1, Images: 4, Pods: 2, DeadPerContainer: 2})
	c, err := cri.Dial(context.Background(), ep, cri.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	e, err := engine.New(engine.Options{Reader: c, Remover: c, Statfs: simfs.Local(n), Policy: engine.DefaultPolicy(), Now: n.Now})
	if err != nil {
		t.Fatal(err)
	}
	log := &proctest.Log{}
	logger := slog.New(slog.NewTextHandler(log, nil))
	s := engine.NewScheduler(e, engine.SchedulerOptions{ImagePeriod: time.Hour, ContainerPeriod: time.Hour, Log: logger})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { s.Run(ctx); close(done) }()
	srv := NewServer(Options{Scheduler: s, Engine: e, PID: os.Getpid(), Context: ctx, Log: logger})
	path := SocketPath(t.TempDir())
	l, err := Listen(path)
	if err != nil {
		t.Fatal(err)
	}
	hs := HTTPServer(srv.Handler())
	go hs.Serve(l)
	t.Cleanup(func() {
		hs.Close()
		l.Close()
		srv.Close()
		cancel()
		<-done
		e.Close()
	})
	return s, path, log
}

// untilStatus waits for a notice of s whose status satisfies ok.
func untilStatus(t *testing.T, ch <-chan engine.Notice, ok func(engine.Status) bool) {
	t.Helper()
	timeout := time.After(30 * time.Second)
	for {
		select {
		case n := <-ch:
			if ok(n.Status) {
				return
			}
		case <-timeout:
			t.Fatal("no such status")
		}
	}
}

func TestAHeldPauseEndsWhenItsClientGoes(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the client serves only a root peer: needs root")
	}
	s, path, log := simAgent(t)
	c := NewClient(path, false)
	defer c.Close()
	dashboard, leave := context.WithCancel(context.Background())
	defer leave()
	if err := c.Pause(dashboard, engine.Pause{Held: true}); err != nil {
		t.Fatal(err)
	}
	me := fmt.Sprintf("uid %d pid %d", os.Getuid(), os.Getpid())
	if st := s.Status(); !st.Paused || st.PausedBy != me || !st.PauseHeld || st.PausedSince.IsZero() {
		t.Fatalf("the agent's status after a held pause: %+v", st)
	}
	if err := c.Resume(context.Background()); err != nil { // another command on the same client
		t.Fatal(err)
	}
	if err := c.Pause(dashboard, engine.Pause{Held: true}); err != nil {
		t.Fatal(err)
	}
	notices, unsubscribe := s.Subscribe()
	defer unsubscribe()
	leave() // the dashboard quits
	untilStatus(t, notices, func(st engine.Status) bool { return !st.Paused })
	out := log.String()
	for _, want := range []string{
		`msg="periodic passes paused" by="` + me + `" held=true`,
		`msg="periodic passes resumed" pausedBy="` + me + `"`,
		`endedBy="` + me + `" reason="its holder left"`,
		`endedBy="` + me + `" reason=resumed`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the agent's log lacks %s:\n%s", want, out)
		}
	}
}

func TestAPauseWithAnExpiryOutlivesItsClient(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the client serves only a root peer: needs root")
	}
	s, path, _ := simAgent(t)
	c := NewClient(path, false)
	until := time.Now().Add(time.Hour)
	if err := c.Pause(context.Background(), engine.Pause{Until: until}); err != nil {
		t.Fatal(err)
	}
	c.Close()
	if st := s.Status(); !st.Paused || !st.PausedUntil.Equal(until) || st.PauseHeld {
		t.Fatalf("the agent's status after a pause until %s: %+v", until, st)
	}
}
