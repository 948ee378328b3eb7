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
	c.run("gc", "--runtime-endpoint", ep, "--state-dir", t.TempDir(), "--kubelet-config", "/dev/null", "--kubelet-pid", "-1",
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
