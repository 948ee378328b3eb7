package engine

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/nodegc/nodegc/internal/proctest"
)

// pauseScheduler is a running scheduler on a fake clock whose log the
// test reads.
func pauseScheduler(t *testing.T) (*Scheduler, *fakeClock, *proctest.Log) {
	t.Helper()
	clk := newFakeClock(execNow)
	e, err := New(Options{Reader: newFakeRuntime(), Policy: DefaultPolicy(), Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	log := &proctest.Log{}
	s := NewScheduler(e, SchedulerOptions{After: clk.After, Log: slog.New(slog.NewTextHandler(log, nil))})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { s.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	return s, clk, log
}

// waitStatus waits for a notice whose status satisfies ok.
func waitStatus(t *testing.T, ch <-chan Notice, ok func(Status) bool) Status {
	t.Helper()
	timeout := time.After(30 * time.Second)
	for {
		select {
		case n := <-ch:
			if ok(n.Status) {
				return n.Status
			}
		case <-timeout:
			t.Fatal("no such status")
		}
	}
}

func TestHeldPauseEndsWhenItsHolderLeaves(t *testing.T) {
	s, _, log := pauseScheduler(t)
	notices, unsubscribe := s.Subscribe()
	defer unsubscribe()
	holder, leave := context.WithCancel(WithActor(context.Background(), "uid 0 pid 4242"))
	if err := s.Pause(holder, Pause{Held: true}); err != nil {
		t.Fatal(err)
	}
	st := s.Status()
	if !st.Paused || st.PausedBy != "uid 0 pid 4242" || !st.PausedSince.Equal(execNow) || !st.PauseHeld {
		t.Fatalf("status after a held pause: %+v", st)
	}
	leave()
	waitStatus(t, notices, func(st Status) bool { return !st.Paused })
	if st := s.Status(); st.Paused || st.PausedBy != "" || !st.PausedSince.IsZero() {
		t.Errorf("status after the holder left: %+v", st)
	}
	out := log.String()
	for _, want := range []string{`msg="periodic passes paused" by="uid 0 pid 4242" held=true`,
		`msg="periodic passes resumed" pausedBy="uid 0 pid 4242"`, `reason="its holder left"`} {
		if !strings.Contains(out, want) {
			t.Errorf("the log lacks %s:\n%s", want, out)
		}
	}
}

func TestAHolderLeavingEndsOnlyItsOwnPause(t *testing.T) {
	s, _, _ := pauseScheduler(t)
	if err := s.Pause(WithActor(context.Background(), "uid 0 pid 1"), Pause{Held: true}); err != nil {
		t.Fatal(err)
	}
	s.mu.Lock()
	first := s.pauseGen
	s.mu.Unlock()
	if err := s.Pause(WithActor(context.Background(), "user alice"), Pause{}); err != nil {
		t.Fatal(err)
	}
	s.endPause(first, "uid 0 pid 1", "its holder left") // what the first holder's leaving runs
	if st := s.Status(); !st.Paused || st.PausedBy != "user alice" {
		t.Fatalf("the first holder's leaving ended alice's pause: %+v", st)
	}
}

func TestPauseExpiresAtItsUntil(t *testing.T) {
	s, clk, log := pauseScheduler(t)
	notices, unsubscribe := s.Subscribe()
	defer unsubscribe()
	until := execNow.Add(10 * time.Second)
	// The loop waits for its first periodic pass before the pause, so
	// that the pause's wake is the only one and the loop's one wait for
	// until is armed before the clock moves.
	clk.waitIdle()
	if err := s.Pause(WithActor(context.Background(), "uid 0 pid 7"), Pause{Until: until}); err != nil {
		t.Fatal(err)
	}
	if st := s.Status(); !st.Paused || !st.PausedUntil.Equal(until) {
		t.Fatalf("status: %+v", st)
	}
	clk.waitArmed(until)
	clk.advance(9 * time.Second)
	if st := s.Status(); !st.Paused {
		t.Fatalf("the pause ended before its expiry: %+v", st)
	}
	clk.advance(time.Second)
	waitStatus(t, notices, func(st Status) bool { return !st.Paused })
	out := log.String()
	for _, want := range []string{`msg="periodic passes paused" by="uid 0 pid 7" held=false until=`,
		`msg="periodic passes resumed" pausedBy="uid 0 pid 7"`, `reason="expired at `} {
		if !strings.Contains(out, want) {
			t.Errorf("the log lacks %s:\n%s", want, out)
		}
	}
}

func TestResumeNamesWhoEndedThePause(t *testing.T) {
	s, _, log := pauseScheduler(t)
	if err := s.Pause(WithActor(context.Background(), "user bob"), Pause{}); err != nil {
		t.Fatal(err)
	}
	if err := s.Resume(WithActor(context.Background(), "uid 0 pid 9")); err != nil {
		t.Fatal(err)
	}
	if st := s.Status(); st.Paused {
		t.Fatalf("still paused: %+v", st)
	}
	if out := log.String(); !strings.Contains(out, `pausedBy="user bob"`) || !strings.Contains(out, `endedBy="uid 0 pid 9" reason=resumed`) {
		t.Errorf("the log:\n%s", out)
	}
}
