package main

import (
	"strings"
	"testing"

	"github.com/nodegc/nodegc/internal/simnode"
)

// TestGCExitsOneOnFreeDiskSpaceFailed: issue 9 found `gc --yes --images`
// exiting 0 although its pass reported FreeDiskSpaceFailed. The kubelet's
// image GarbageCollect returns an error there (image_gc_manager.go v1.36),
// so gc exits 1, whether or not it removed anything.
func TestGCExitsOneOnFreeDiskSpaceFailed(t *testing.T) {
	// Two small unused images cannot bring a full filesystem (1 GiB, all
	// but 10 MiB used by other data) down to the low threshold.
	full := simnode.Options{Seed: 7, Images: 2, Pods: 0, MinImageBytes: 1 << 20, MaxImageBytes: 2 << 20,
		CapacityBytes: 1 << 30, BaseUsageBytes: 1<<30 - 10<<20}
	tests := []struct {
		name       string
		node       simnode.Options
		args       []string
		code       int
		stdout     string
		stderrLine string // a prefix of the one line on stderr; "" means none
	}{
		{
			name:       "a pass that removes what it can but not enough exits 1 naming FreeDiskSpaceFailed",
			node:       full,
			args:       []string{"--minimum-image-ttl-duration", "0s"},
			code:       1,
			stdout:     "FreeDiskSpaceFailed",
			stderrLine: "nodegc: gc pass failed: FreeDiskSpaceFailed: Insufficient free disk space on the node's image filesystem (100% of 1.0 GiB used)",
		},
		{
			name:       "a pass with nothing it may remove exits 1 all the same",
			node:       full,
			args:       []string{"--minimum-image-ttl-duration", "100h"},
			code:       1,
			stdout:     "Nothing to remove.",
			stderrLine: "nodegc: gc pass failed: FreeDiskSpaceFailed: ",
		},
		{
			name:   "a dry run reports the event and exits 0",
			node:   full,
			args:   []string{"--minimum-image-ttl-duration", "0s", "--dry-run"},
			code:   0,
			stdout: "Dry run: nothing was removed.",
		},
		{
			name:   "a pass that frees enough exits 0",
			node:   testNode(),
			args:   []string{"--minimum-image-ttl-duration", "0s"},
			code:   0,
			stdout: "Pass 1 (images):",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, ep := startSimnode(t, tt.node)
			c := newCLI("")
			args := append([]string{"gc", "--images", "--yes", "--simulated", "--runtime-endpoint", ep, "--state-dir", t.TempDir()}, tt.args...)
			if code := c.run(args...); code != tt.code {
				t.Fatalf("exit %d, want %d; stderr %q\nstdout:\n%s", code, tt.code, c.err.String(), c.out.String())
			}
			if !strings.Contains(c.out.String(), tt.stdout) {
				t.Errorf("stdout lacks %q:\n%s", tt.stdout, c.out.String())
			}
			lines := c.stderrLines()
			switch {
			case tt.stderrLine == "" && len(lines) != 0:
				t.Errorf("stderr %q, want nothing", lines)
			case tt.stderrLine != "" && (len(lines) != 1 || !strings.HasPrefix(lines[0], tt.stderrLine)):
				t.Errorf("stderr %q, want one line starting %q", lines, tt.stderrLine)
			}
		})
	}
}
