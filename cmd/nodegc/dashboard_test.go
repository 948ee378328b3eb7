package main

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nodegc/nodegc/engine"
	"github.com/nodegc/nodegc/tui"
)

// runRootWithTUI runs the root command on a terminal with a fake
// dashboard that takes one snapshot through the options it is given.
func runRootWithTUI(t *testing.T, c *cli, args ...string) (tui.Options, engine.Snapshot, error) {
	t.Helper()
	var got tui.Options
	var snap engine.Snapshot
	g := &globalOptions{}
	cmd := newCmdDashboard(c.f, g, func(ctx context.Context, o *rootOptions) error {
		o.runTUI = func(ctx context.Context, to tui.Options) error {
			got = to
			var err error
			snap, err = to.Snapshot(ctx)
			return err
		}
		return runRoot(ctx, o)
	})
	addGlobalFlags(cmd.PersistentFlags(), g)
	cmd.SilenceErrors, cmd.SilenceUsage = true, true
	cmd.SetArgs(args)
	cmd.SetOut(c.out)
	err := cmd.ExecuteContext(context.Background())
	return got, snap, err
}

func TestRootOpensTheDashboardOnATerminal(t *testing.T) {
	t.Run("live: the scheduler controls a runtime that can remove", func(t *testing.T) {
		node, ep := startSimnode(t, testNode())
		c := newCLI("")
		c.tty = true
		o, snap, err := runRootWithTUI(t, c, "--simulated", "--runtime-endpoint", ep, "--state-dir", t.TempDir(), "--paused")
		if err != nil {
			t.Fatal(err)
		}
		if o.Controller == nil || o.ReadOnly || o.Cgroups == nil || o.Snapshot == nil {
			t.Errorf("options %+v", o)
		}
		if !o.Controller.Status().Paused {
			t.Error("--paused did not pause the scheduler")
		}
		if len(snap.Images) == 0 {
			t.Error("the dashboard's snapshot is empty")
		}
		if m := mutating(node); len(m) != 0 {
			t.Errorf("opening the dashboard paused mutated: %v", m)
		}
	})
	t.Run("live --read-only: the dashboard cannot remove", func(t *testing.T) {
		_, ep := startSimnode(t, testNode())
		c := newCLI("")
		c.tty = true
		o, _, err := runRootWithTUI(t, c, "--simulated", "--runtime-endpoint", ep, "--state-dir", t.TempDir(), "--read-only")
		if err != nil {
			t.Fatal(err)
		}
		if !o.ReadOnly {
			t.Error("--read-only dashboard is not read-only")
		}
	})
	t.Run("demo: the simulated node is warmed up and its clock reads the wall clock", func(t *testing.T) {
		c := newCLI("")
		c.tty = true
		o, snap, err := runRootWithTUI(t, c, "--demo", "--paused")
		if err != nil {
			t.Fatal(err)
		}
		if o.ReadOnly || o.Now == nil || snap.Runtime.Name != "simnode" {
			t.Errorf("options %+v, runtime %q", o, snap.Runtime.Name)
		}
		// Issue 12 bug 8: the warm-up runs before the wall clock's now, so
		// the times on screen are wall-clock times.
		if got := o.Now().Sub(fixedNow.Truncate(1e9)); got < 0 || got > 5*time.Second {
			t.Errorf("demo clock %s from the wall clock, want the wall clock", got)
		}
		if w := snap.TakenAt.Sub(o.Now()); w > 5*time.Second || w < -defaultWarmup/2 {
			t.Errorf("snapshot taken at %s, clock %s", snap.TakenAt, o.Now())
		}
	})
	t.Run("without a terminal the root prints the plan instead", func(t *testing.T) {
		c := newCLI("")
		o, _, err := runRootWithTUI(t, c, "--demo")
		if err != nil {
			t.Fatal(err)
		}
		if o.Snapshot != nil {
			t.Error("the dashboard was opened without a terminal")
		}
		if !strings.Contains(c.out.String(), "──── cut line:") {
			t.Errorf("no plan table:\n%s", c.out.String())
		}
	})
}

// TestDemoRunIsNamedByItsLaunch pins issue 41: the demo's run ID said
// 05:48:41 for a launch at 05:53:41, the simulated clock's reading at
// start, a warm-up before the wall clock. A pass of the demo's run is
// named by the launch.
func TestDemoRunIsNamedByItsLaunch(t *testing.T) {
	c := newCLI("")
	c.tty = true
	var run string
	g := &globalOptions{}
	cmd := newCmdDashboard(c.f, g, func(ctx context.Context, o *rootOptions) error {
		o.runTUI = func(ctx context.Context, to tui.Options) error {
			r, err := to.Controller.Force(ctx, engine.PassContainers)
			run = r.Run
			return err
		}
		return runRoot(ctx, o)
	})
	addGlobalFlags(cmd.PersistentFlags(), g)
	cmd.SilenceErrors, cmd.SilenceUsage = true, true
	cmd.SetArgs([]string{"--demo"})
	cmd.SetOut(c.out)
	if err := cmd.ExecuteContext(context.Background()); err != nil {
		t.Fatal(err)
	}
	if want := fixedNow.UTC().Format("20060102T150405Z") + "-"; !strings.HasPrefix(run, want) {
		t.Errorf("the demo's run is %q, want it named by its launch, %s…", run, want)
	}
}

// TestNewStateDirStartsPaused pins issue 41: a dashboard given a state dir
// that did not exist started its own periodic passes. Its scheduler starts
// paused in the new dir's name and the dashboard is told to ask; a dir
// that was there, or --paused, asks nothing.
func TestNewStateDirStartsPaused(t *testing.T) {
	for _, tt := range []struct {
		name  string
		fresh bool
		extra []string
		ask   bool
	}{
		{"a new dir starts paused and asks", true, nil, true},
		{"a dir that was there runs its passes", false, nil, false},
		{"--paused on a new dir is the operator's answer already", true, []string{"--paused"}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, ep := startSimnode(t, testNode())
			dir := t.TempDir()
			if tt.fresh {
				dir = filepath.Join(dir, "new")
			}
			c := newCLI("")
			c.tty = true
			o, _, err := runRootWithTUI(t, c, append([]string{"--simulated", "--runtime-endpoint", ep, "--state-dir", dir}, tt.extra...)...)
			if err != nil {
				t.Fatal(err)
			}
			st := o.Controller.Status()
			if asked := o.NewStateDir == dir; asked != tt.ask {
				t.Errorf("NewStateDir %q, want asked %v", o.NewStateDir, tt.ask)
			}
			if tt.ask && (!st.Paused || st.PausedBy != "new state dir") {
				t.Errorf("status paused %v by %q, want paused by the new state dir", st.Paused, st.PausedBy)
			}
			if !tt.fresh && st.Paused {
				t.Errorf("a dir that was there started paused (by %q)", st.PausedBy)
			}
		})
	}
}
