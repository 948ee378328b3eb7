package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nodegc/nodegc/internal/simnode"
)

// TestSimulatedIsExplicit pins --simulated as the only way nodegc treats a
// runtime as a simulated node: a simulated node without the flag is
// refused (taken for a real runtime, its pods' dangling logs would be
// looked for among this machine's real ones, and removed), and so is the
// flag on a runtime that is not one. Both are one line and exit 2, before
// anything is removed.
func TestSimulatedIsExplicit(t *testing.T) {
	commands := [][]string{
		{"plan"},
		{"snapshot"},
		{"gc", "--yes", "--minimum-image-ttl-duration", "0s"},
		{"gc", "--containers", "--yes"},
	}
	for _, cmd := range commands {
		t.Run(strings.Join(cmd, " ")+" on a simulated node without --simulated", func(t *testing.T) {
			node, ep := startSimnode(t, testNode())
			// A log file no pod of the node writes: a pass that scanned
			// --pod-logs-dir would take it for dangling and remove it.
			logs := t.TempDir()
			stray := filepath.Join(logs, "default_gone_0123", "app", "0.log")
			if err := os.MkdirAll(filepath.Dir(stray), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(stray, []byte("x\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			c := newCLI("")
			code := c.run(append(cmd, "--runtime-endpoint", ep, "--state-dir", t.TempDir(), "--pod-logs-dir", logs,
				"--kubelet-config", os.DevNull, "--kubelet-pid", "-1", "--pod-source", "off")...)
			want := "nodegc: the runtime at " + ep + " is a simulated node (nodegc simnode): pass --simulated, so that this machine's pod logs are not taken for its own"
			refusedUntouched(t, c, code, want, node)
			if _, err := os.Stat(stray); err != nil {
				t.Errorf("the log file under --pod-logs-dir: %v", err)
			}
		})
	}
	for _, cmd := range commands {
		t.Run(strings.Join(cmd, " ")+" --simulated on a runtime that is no simulated node", func(t *testing.T) {
			o := testNode()
			o.Unmarked = true
			node, ep := startSimnode(t, o)
			c := newCLI("")
			code := c.run(append(cmd, "--simulated", "--runtime-endpoint", ep, "--state-dir", t.TempDir(),
				"--kubelet-config", os.DevNull, "--kubelet-pid", "-1", "--pod-source", "off")...)
			want := "nodegc: --simulated: the runtime at " + ep + " is not a simulated node (nodegc simnode); leave --simulated out for a real runtime"
			refusedUntouched(t, c, code, want, node)
		})
	}
}

// refusedUntouched checks that the command exited 2 with want as its one
// line, printed nothing else, and made no mutating call to the node.
func refusedUntouched(t *testing.T, c *cli, code int, want string, node *simnode.Node) {
	t.Helper()
	if lines := c.stderrLines(); code != exitUsage || len(lines) != 1 || lines[0] != want {
		t.Errorf("exit %d, stderr %q; want 2 and %q", code, lines, want)
	}
	if c.out.Len() != 0 {
		t.Errorf("stdout %q, want nothing", c.out.String()[:min(300, c.out.Len())])
	}
	if m := mutating(node); len(m) != 0 {
		t.Errorf("mutating calls: %v", m)
	}
}
