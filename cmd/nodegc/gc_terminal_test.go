package main

import (
	"regexp"
	"strings"
	"testing"

	"github.com/nodegc/nodegc/internal/simnode"
)

// Issue 23 item 16: gc on a terminal lists what it will remove before the
// question, and only counts what it keeps, so the removals do not scroll
// away behind thousands of kept rows.
func TestGCOnATerminalListsRemovalsAndCountsTheKept(t *testing.T) {
	_, ep := startSimnode(t, simnode.Options{Seed: 7, Images: 40, Pods: 6, DeadPerContainer: 3,
		MinImageBytes: 50 << 20, MaxImageBytes: 200 << 20, InitialUsagePercent: 95})
	c := newCLI("n\n")
	c.tty = true
	c.run("gc", "--simulated", "--runtime-endpoint", ep, "--state-dir", t.TempDir(), "--kubelet-config", "/dev/null", "--kubelet-pid", "-1",
		"--minimum-image-ttl-duration", "0s")
	out := c.out.String() + c.err.String()
	if !strings.Contains(out, "Remove these") {
		t.Fatalf("gc did not ask:\n%s", out)
	}
	if regexp.MustCompile(`(?m)^\s+\d+\s.*\bkeep \w`).MatchString(c.out.String()) {
		t.Errorf("gc on a terminal lists kept images:\n%s", c.out.String())
	}
	for _, want := range []string{"remove #1 ", "Images (", "kept: ", "Dead containers to remove ("} {
		if !strings.Contains(out, want) {
			t.Errorf("gc's output lacks %q:\n%s", want, out)
		}
	}
}

// Issue 23 item 15: plan and gc on a node without image records say that
// every image counts as first seen now, and when the first become
// eligible.
func TestNoRecordsSaysFirstSeenNow(t *testing.T) {
	_, ep := startSimnode(t, simnode.Options{Seed: 7, Images: 12, Pods: 2, MinImageBytes: 50 << 20, MaxImageBytes: 200 << 20, InitialUsagePercent: 95})
	for _, cmd := range [][]string{{"plan"}, {"gc", "--dry-run"}} {
		c := newCLI("")
		c.run(append(cmd, "--simulated", "--runtime-endpoint", ep, "--state-dir", t.TempDir(), "--kubelet-config", "/dev/null", "--kubelet-pid", "-1")...)
		for _, want := range []string{"no earlier record of these images", "counts as first seen at", "(in 2m0s, --minimum-image-ttl-duration 2m0s)"} {
			if !strings.Contains(c.out.String(), want) {
				t.Errorf("%s lacks %q:\n%s", cmd[0], want, c.out.String())
			}
		}
	}
}
