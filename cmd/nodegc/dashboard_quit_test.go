package main

import (
	"context"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/nodegc/nodegc/engine"
	"github.com/nodegc/nodegc/tui"
)

// TestDashboardQuitDuringAPass pins issue 8 item 10 for the dashboard: q
// (the dashboard returning) during a pass stops it after the item in
// flight, every removal is journalled, and the process says on stderr how
// many planned items were left undone.
func TestDashboardQuitDuringAPass(t *testing.T) {
	node, ep := startSimnode(t, testNode())
	node.SetLatency(100 * time.Millisecond) // a pass long enough to quit in
	t.Cleanup(func() { node.SetLatency(0) })
	state := t.TempDir()
	c := newCLI("")
	c.tty = true
	g := &globalOptions{}
	passDone := make(chan engine.PassReport, 1)
	cmd := newCmdDashboard(c.f, g, func(ctx context.Context, o *rootOptions) error {
		o.runTUI = func(ctx context.Context, to tui.Options) error {
			go func() {
				r, _ := to.Controller.Force(ctx, engine.PassReclaimAll)
				passDone <- r
			}()
			// Quit once the first removal has been made (bounded: a hang
			// is a failure, not a slow machine).
			hang, stop := context.WithTimeout(context.Background(), 60*time.Second)
			defer stop()
			for len(mutating(node)) == 0 && hang.Err() == nil {
				time.Sleep(10 * time.Millisecond)
			}
			return nil // the user pressed q
		}
		return runRoot(ctx, o)
	})
	addGlobalFlags(cmd.PersistentFlags(), g)
	cmd.SilenceErrors, cmd.SilenceUsage = true, true
	cmd.SetArgs([]string{"--simulated", "--runtime-endpoint", ep, "--state-dir", state, "--paused", "--minimum-image-ttl-duration", "0s"})
	if err := cmd.ExecuteContext(context.Background()); err != nil {
		t.Fatal(err)
	}
	r := <-passDone
	if r.Undone == 0 || r.Stopped == "" {
		t.Fatalf("the pass ran to its end (%d items, undone %d): the quit did not stop it", len(r.Items), r.Undone)
	}
	removed := 0
	for _, call := range mutating(node) {
		if strings.Contains(call, "Remove") {
			removed++
		}
	}
	js, err := engine.ReadJournal(state)
	if err != nil {
		t.Fatal(err)
	}
	if removed == 0 || len(js) != removed {
		t.Errorf("%d removals, %d journal lines: every removal must be journalled", removed, len(js))
	}
	want := "planned items left undone"
	if !strings.Contains(c.err.String(), want) {
		t.Errorf("stderr %q, want it to say how many %s", c.err.String(), want)
	}
}

// TestDashboardLogInTheStateDirIsNotFollowed pins issue 8 item 6 for the
// dashboard's default log, <state-dir>/nodegc.log: a symlink planted there
// is refused (exit 2, naming it), never appended through.
func TestDashboardLogInTheStateDirIsNotFollowed(t *testing.T) {
	_, ep := startSimnode(t, testNode())
	state := t.TempDir()
	victim := filepath.Join(t.TempDir(), "victim")
	if err := os.WriteFile(victim, []byte("precious\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(victim, filepath.Join(state, "nodegc.log")); err != nil {
		t.Fatal(err)
	}
	c := newCLI("")
	c.tty = true
	_, _, err := runRootWithTUI(t, c, "--simulated", "--runtime-endpoint", ep, "--state-dir", state, "--paused")
	if err == nil || exitCode(err) != exitUsage || !strings.Contains(err.Error(), "symlink") {
		t.Errorf("err %v (exit %d), want exit %d naming the symlink", err, exitCode(err), exitUsage)
	}
	if b, _ := os.ReadFile(victim); string(b) != "precious\n" {
		t.Errorf("the symlink's target was written: %q", b)
	}
}

// TestExitGuard pins issue 23 item 22: once the dashboard's way out has
// begun, it ends the process at its deadline or at a second signal, after
// its cleanups, and never once disarmed. The guard's timers run on
// synctest's clock, so the deadline passes without the test waiting on
// the machine's speed.
func TestExitGuard(t *testing.T) {
	// The runtime starts its signal-mask goroutine at the first Notify;
	// started inside a bubble, its channels would belong to that bubble.
	warm := make(chan os.Signal, 1)
	signal.Notify(warm, syscall.SIGHUP)
	signal.Stop(warm)
	for _, tc := range []struct {
		name     string
		disarm   bool
		signal   bool
		wantExit bool
	}{
		{"a way out past the deadline exits", false, false, true},
		{"a second signal exits at once", false, true, true},
		{"a way out that ends in time does not exit", true, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				exited := make(chan int, 1)
				cleaned := make(chan struct{}, 1)
				var errw strings.Builder
				g := &exitGuard{errw: &errw, exit: func(code int) { exited <- code }}
				g.onExit(func() { cleaned <- struct{}{} })
				deadline := 200 * time.Millisecond
				if tc.signal {
					deadline = time.Hour
				}
				g.arm(deadline)
				if tc.disarm {
					g.disarm()
				}
				if tc.signal {
					g.sig <- syscall.SIGTERM
				} else {
					time.Sleep(2 * deadline) // the bubble's clock: past the deadline
				}
				synctest.Wait()
				select {
				case code := <-exited:
					if !tc.wantExit {
						t.Fatalf("exited %d after disarm", code)
					}
					if len(cleaned) != 1 {
						t.Error("exited without its cleanups")
					}
				default:
					if tc.wantExit {
						t.Fatal("no exit once the deadline passed or the signal came")
					}
				}
				g.disarm()
			})
		})
	}
}
