package main

import (
	"context"
	"strings"
	"testing"
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
	cmd.SetArgs([]string{"--runtime-endpoint", ep, "--state-dir", state, "--paused", "--minimum-image-ttl-duration", "0s"})
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
