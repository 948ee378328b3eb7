package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRemovingNeedsAJournal checks that a command that can remove refuses
// an unusable --state-dir before it touches the runtime, and that the
// read-only commands go on with in-memory records and a warning.
func TestRemovingNeedsAJournal(t *testing.T) {
	notDir := writeFile(t, "state", "a regular file")
	under := filepath.Join(notDir, "sub")
	tests := []struct {
		name string
		args []string
		code int
		// line is the one stderr line of a refusal; warn a substring of
		// the warning of a read-only run.
		line, warn string
	}{
		{"gc --yes with a state dir that is a regular file is bad input", []string{"gc", "--yes", "--state-dir", notDir}, 2,
			"nodegc: --state-dir: " + notDir + " is not a directory", ""},
		{"gc --yes with a state dir under a regular file is bad input", []string{"gc", "--yes", "--state-dir", under}, 2,
			"nodegc: --state-dir: " + under + " cannot be used (not a directory)", ""},
		{"gc --yes with an empty state dir is bad input", []string{"gc", "--yes", "--state-dir", ""}, 2,
			"nodegc: --state-dir: must not be empty when nodegc can remove: every removal is journalled there", ""},
		{"gc --dry-run with an unusable state dir warns and plans", []string{"gc", "--dry-run", "--state-dir", notDir}, 0,
			"", "image records are kept in memory only"},
		{"plan with an unusable state dir warns and plans", []string{"plan", "--state-dir", notDir}, 0,
			"", "image records are kept in memory only"},
		{"snapshot with an unusable state dir warns and snapshots", []string{"snapshot", "--state-dir", notDir}, 0,
			"", "image records are kept in memory only"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			node, ep := startSimnode(t, testNode())
			c := newCLI("")
			code := c.run(append(tt.args, "--simulated", "--runtime-endpoint", ep)...)
			if code != tt.code {
				t.Fatalf("exit %d, want %d (stderr %q)", code, tt.code, c.err.String())
			}
			lines := c.stderrLines()
			if tt.line != "" {
				if len(lines) != 1 || lines[0] != tt.line {
					t.Errorf("stderr\n got %q\nwant %q", lines, tt.line)
				}
				if calls := node.Calls(); len(calls) != 0 {
					t.Errorf("the runtime was called before the refusal: %v", calls)
				}
				return
			}
			if !strings.Contains(c.err.String(), tt.warn) {
				t.Errorf("stderr %q lacks the warning %q", c.err.String(), tt.warn)
			}
			if m := mutating(node); len(m) != 0 {
				t.Errorf("a read-only command mutated: %v", m)
			}
		})
	}
}

// TestDashboardNeedsAJournalToRemove checks the live dashboard: it can
// remove unless --read-only, so it refuses an unusable --state-dir before
// connecting; --read-only opens with in-memory records.
func TestDashboardNeedsAJournalToRemove(t *testing.T) {
	notDir := writeFile(t, "state", "a regular file")
	t.Run("the dashboard with a state dir that is a regular file is bad input", func(t *testing.T) {
		node, ep := startSimnode(t, testNode())
		c := newCLI("")
		c.tty = true
		o, _, err := runRootWithTUI(t, c, "--simulated", "--runtime-endpoint", ep, "--state-dir", notDir, "--paused")
		if exitCode(err) != exitUsage || err == nil || !strings.HasPrefix(err.Error(), "--state-dir: "+notDir+" is not a directory") {
			t.Fatalf("err %v (exit %d), want a --state-dir usage error", err, exitCode(err))
		}
		if o.Snapshot != nil {
			t.Error("the dashboard was opened")
		}
		if calls := node.Calls(); len(calls) != 0 {
			t.Errorf("the runtime was called before the refusal: %v", calls)
		}
	})
	t.Run("the dashboard with an empty state dir is bad input", func(t *testing.T) {
		_, ep := startSimnode(t, testNode())
		c := newCLI("")
		c.tty = true
		_, _, err := runRootWithTUI(t, c, "--simulated", "--runtime-endpoint", ep, "--state-dir", "", "--paused")
		if exitCode(err) != exitUsage || err == nil || !strings.HasPrefix(err.Error(), "--state-dir: must not be empty") {
			t.Fatalf("err %v (exit %d), want a --state-dir usage error", err, exitCode(err))
		}
	})
	t.Run("the read-only dashboard with an unusable state dir opens with a warning", func(t *testing.T) {
		_, ep := startSimnode(t, testNode())
		c := newCLI("")
		c.tty = true
		o, _, err := runRootWithTUI(t, c, "--simulated", "--runtime-endpoint", ep, "--state-dir", notDir, "--read-only")
		if err != nil {
			t.Fatal(err)
		}
		if !o.ReadOnly {
			t.Error("the dashboard is not read-only")
		}
		if !strings.Contains(c.err.String(), "image records are kept in memory only") {
			t.Errorf("stderr %q lacks the in-memory warning", c.err.String())
		}
	})
}

// TestNothingWrittenWhenNothingCanRun pins issue 41: with the runtime
// down, gc --yes, the agent and the dashboard given a --state-dir that did
// not exist left it behind, with a lock in it (the dashboard an empty dir
// for its log). A run that cannot reach its runtime writes nothing; one
// that can still makes its dir (alone), journal and log.
func TestNothingWrittenWhenNothingCanRun(t *testing.T) {
	down := "unix://" + filepath.Join(t.TempDir(), "none.sock")
	runs := []struct {
		name string
		run  func(c *cli, dir string) error
	}{
		{"gc --yes", func(c *cli, dir string) error {
			if code := c.run("gc", "--yes", "--state-dir", dir, "--runtime-endpoint", down); code != 1 {
				return fmt.Errorf("exit %d, want 1 (stderr %q)", code, c.err.String())
			}
			return nil
		}},
		{"agent", func(c *cli, dir string) error {
			if code := c.run("agent", "--state-dir", dir, "--runtime-endpoint", down, "--metrics-bind-address", "127.0.0.1:0"); code != 1 {
				return fmt.Errorf("exit %d, want 1 (stderr %q)", code, c.err.String())
			}
			return nil
		}},
		{"the dashboard", func(c *cli, dir string) error {
			c.tty = true
			if _, _, err := runRootWithTUI(t, c, "--state-dir", dir, "--runtime-endpoint", down); err == nil {
				return errors.New("the dashboard opened on a runtime that is down")
			}
			return nil
		}},
	}
	for _, r := range runs {
		t.Run(r.name+" on a runtime that is down", func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "new")
			if err := r.run(newCLI(""), dir); err != nil {
				t.Fatal(err)
			}
			if _, err := os.Lstat(dir); !errors.Is(err, os.ErrNotExist) {
				entries, _ := os.ReadDir(dir)
				t.Errorf("%s was left behind (%v), holding %v", dir, err, entries)
			}
		})
	}
	t.Run("the dashboard on a runtime that answers makes its dir and log", func(t *testing.T) {
		_, ep := startSimnode(t, testNode())
		dir := filepath.Join(t.TempDir(), "new")
		c := newCLI("")
		c.tty = true
		if _, _, err := runRootWithTUI(t, c, "--simulated", "--runtime-endpoint", ep, "--state-dir", dir, "--paused"); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(filepath.Join(dir, "nodegc.log")); err != nil {
			t.Errorf("no log in the new state dir: %v", err)
		}
	})
}
