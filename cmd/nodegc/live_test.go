package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"

	"github.com/nodegc/nodegc/engine"
	"github.com/nodegc/nodegc/internal/simnode"
)

// testNode is a small simulated node whose image filesystem is above the
// high threshold, with dead attempts to collect.
func testNode() simnode.Options {
	return simnode.Options{Seed: 7, Images: 8, Pods: 3, DeadPerContainer: 2, DeletedPods: 1,
		MinImageBytes: 50 << 20, MaxImageBytes: 200 << 20, InitialUsagePercent: 95}
}

// mutating returns the node's recorded calls that mutate, as
// simnode.IsMutating classifies them.
func mutating(node *simnode.Node) []string {
	var out []string
	for _, c := range node.Calls() {
		if simnode.IsMutating(c) {
			out = append(out, c)
		}
	}
	return out
}

func TestReadOnlyCommandsMakeNoMutatingCall(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string // on stdout
	}{
		{"plan", []string{"plan", "--minimum-image-ttl-duration", "0s"}, "cut line"},
		{"plan as JSON", []string{"plan", "-o", "json", "--reclaim-all"}, `"kind":"GCPlan"`},
		{"gc --dry-run", []string{"gc", "--dry-run", "--minimum-image-ttl-duration", "0s"}, "Dry run: nothing was removed."},
		{"gc --dry-run --read-only as JSON", []string{"gc", "--dry-run", "--read-only", "-o", "json"}, `"dryRun":true`},
		{"snapshot", []string{"snapshot"}, `"kind":"NodeSnapshot"`},
	}
	for _, tt := range tests {
		t.Run(tt.name+" reads the runtime and never mutates it", func(t *testing.T) {
			node, ep := startSimnode(t, testNode())
			c := newCLI("")
			args := append(tt.args, "--simulated", "--runtime-endpoint", ep, "--state-dir", t.TempDir())
			if code := c.run(args...); code != 0 {
				t.Fatalf("exit %d: %s", code, c.err.String())
			}
			if !strings.Contains(c.out.String(), tt.want) {
				t.Errorf("stdout lacks %q:\n%s", tt.want, c.out.String())
			}
			if len(node.Calls()) == 0 {
				t.Fatal("no call reached the node")
			}
			if m := mutating(node); len(m) != 0 {
				t.Errorf("mutating calls: %v", m)
			}
		})
	}
}

func TestGCRefusesWithoutTerminal(t *testing.T) {
	for _, args := range [][]string{
		{"gc"},
		{"gc", "--images"},
		{"gc", "--reclaim-all"},
		{"gc", "--kubelet-config", "/nonexistent/kubelet.yaml"}, // refused before the config is read
	} {
		t.Run(strings.Join(args, " ")+" exits 2 before connecting", func(t *testing.T) {
			node, ep := startSimnode(t, testNode())
			c := newCLI("y\n") // an answer on stdin is not a terminal's
			code := c.run(append(args, "--simulated", "--runtime-endpoint", ep, "--state-dir", t.TempDir())...)
			if code != exitUsage {
				t.Errorf("exit %d, want 2", code)
			}
			if !strings.HasPrefix(c.err.String(), "nodegc: gc: stdin is not a terminal") {
				t.Errorf("stderr %q", c.err.String())
			}
			if calls := node.Calls(); len(calls) != 0 {
				t.Errorf("gc talked to the runtime before refusing: %v", calls)
			}
			if c.out.Len() != 0 {
				t.Errorf("stdout %q, want nothing", c.out.String())
			}
		})
	}
}

func TestGCConfirmation(t *testing.T) {
	tests := []struct {
		name     string
		answer   string
		code     int
		removes  bool
		stdoutIs string
	}{
		{"yes removes", "yes\n", 0, true, "Pass 1 (full):"},
		{"y removes", "y\n", 0, true, "Pass 1 (full):"},
		{"no removes nothing and exits 1", "n\n", 1, false, "Plan: remove"},
		{"an empty answer is no", "\n", 1, false, "Plan: remove"},
		{"end of input is no", "", 1, false, "Plan: remove"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			node, ep := startSimnode(t, testNode())
			c := newCLI(tt.answer)
			c.tty = true
			code := c.run("gc", "--simulated", "--runtime-endpoint", ep, "--state-dir", t.TempDir(), "--minimum-image-ttl-duration", "0s")
			if code != tt.code {
				t.Fatalf("exit %d, want %d: %s", code, tt.code, c.err.String())
			}
			if !strings.Contains(c.err.String(), "Remove these ") {
				t.Errorf("no confirmation prompt on stderr: %q", c.err.String())
			}
			if got := len(mutating(node)) > 0; got != tt.removes {
				t.Errorf("mutating calls %v, want removals %v", mutating(node), tt.removes)
			}
			if !strings.Contains(c.out.String(), tt.stdoutIs) {
				t.Errorf("stdout lacks %q:\n%s", tt.stdoutIs, c.out.String())
			}
		})
	}
}

func TestGCYes(t *testing.T) {
	t.Run("--yes removes without asking and journals every removal", func(t *testing.T) {
		node, ep := startSimnode(t, testNode())
		before := node.Counts()
		state := t.TempDir()
		c := newCLI("")
		code := c.run("gc", "--yes", "--simulated", "--runtime-endpoint", ep, "--state-dir", state, "--minimum-image-ttl-duration", "0s")
		if code != 0 {
			t.Fatalf("exit %d: %s", code, c.err.String())
		}
		if strings.Contains(c.err.String(), "Remove these") {
			t.Errorf("--yes asked: %q", c.err.String())
		}
		after := node.Counts()
		if after.Images >= before.Images || after.Containers >= before.Containers {
			t.Errorf("counts before %+v after %+v: nothing removed", before, after)
		}
		if after.Running != before.Running {
			t.Errorf("running containers %d -> %d", before.Running, after.Running)
		}
		journal, err := engine.ReadJournal(state)
		if err != nil || len(journal) == 0 {
			t.Errorf("journal %v, %v: want entries", journal, err)
		}
	})
	t.Run("--log-file receives one JSON line per deletion", func(t *testing.T) {
		_, ep := startSimnode(t, testNode())
		logFile := filepath.Join(t.TempDir(), "nodegc.log")
		c := newCLI("")
		if code := c.run("gc", "--containers", "--yes", "--simulated", "--runtime-endpoint", ep, "--state-dir", t.TempDir(), "--log-file", logFile); code != 0 {
			t.Fatalf("exit %d: %s", code, c.err.String())
		}
		data, err := os.ReadFile(logFile)
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimSpace(string(data)), "\n")
		var first map[string]any
		if len(lines) == 0 || json.Unmarshal([]byte(lines[0]), &first) != nil || first["level"] != "INFO" {
			t.Errorf("log %q: want JSON lines at INFO", data)
		}
		if fi, err := os.Stat(logFile); err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("log file mode %v, %v; want 0600", fi, err)
		}
	})
	t.Run("a failed removal exits 1 after the pass goes on", func(t *testing.T) {
		node, ep := startSimnode(t, testNode())
		node.InjectFault(simnode.Fault{Method: "RemoveContainer", Err: codes.Internal, Times: 1})
		c := newCLI("")
		code := c.run("gc", "--containers", "--yes", "--simulated", "--runtime-endpoint", ep, "--state-dir", t.TempDir())
		if code != exitFailure {
			t.Fatalf("exit %d, want 1: %s", code, c.err.String())
		}
		lines := c.stderrLines()
		if len(lines) != 1 || !strings.HasPrefix(lines[0], "nodegc: gc pass had 1 failed removals") {
			t.Errorf("stderr %q", lines)
		}
		if !strings.Contains(c.out.String(), "1 failed") {
			t.Errorf("report lacks the failure:\n%s", c.out.String())
		}
	})
	t.Run("--dry-run with --yes still removes nothing", func(t *testing.T) {
		node, ep := startSimnode(t, testNode())
		c := newCLI("")
		if code := c.run("gc", "--dry-run", "--yes", "--simulated", "--runtime-endpoint", ep, "--state-dir", t.TempDir()); code != 0 {
			t.Fatalf("exit %d: %s", code, c.err.String())
		}
		if m := mutating(node); len(m) != 0 {
			t.Errorf("mutating calls %v", m)
		}
	})
}

func TestSnapshotThenPlanFrom(t *testing.T) {
	_, ep := startSimnode(t, testNode())
	out := filepath.Join(t.TempDir(), "snap.json")
	c := newCLI("")
	if code := c.run("snapshot", "-o", out, "--simulated", "--runtime-endpoint", ep, "--state-dir", t.TempDir()); code != 0 {
		t.Fatalf("snapshot exit %d: %s", code, c.err.String())
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	s, err := engine.DecodeSnapshot(data)
	if err != nil {
		t.Fatalf("the written snapshot does not decode: %v", err)
	}
	if len(s.Images) != 9 || s.Runtime.Name != simnode.DefaultRuntimeName {
		t.Errorf("snapshot has %d images from %q", len(s.Images), s.Runtime.Name)
	}
	if entries, _ := os.ReadDir(filepath.Dir(out)); len(entries) != 1 {
		t.Errorf("temporary files left beside the snapshot: %v", entries)
	}
	c = newCLI("")
	if code := c.run("plan", "--from", out, "-o", "json"); code != 0 {
		t.Fatalf("plan exit %d: %s", code, c.err.String())
	}
	var p engine.Plan
	if err := json.Unmarshal(c.out.Bytes(), &p); err != nil || p.Kind != engine.KindPlan {
		t.Fatalf("plan: %v %q", err, p.Kind)
	}
}

func TestEndpointFromEnvironment(t *testing.T) {
	node, ep := startSimnode(t, testNode())
	c := newCLI("")
	c.env["CONTAINER_RUNTIME_ENDPOINT"] = ep
	if code := c.run("plan", "--simulated", "--state-dir", t.TempDir()); code != 0 {
		t.Fatalf("exit %d: %s", code, c.err.String())
	}
	if !strings.Contains(c.out.String(), "(from env CONTAINER_RUNTIME_ENDPOINT)") {
		t.Errorf("runtime line does not say the endpoint came from the environment:\n%s", c.out.String()[:min(600, c.out.Len())])
	}
	if len(node.Calls()) == 0 {
		t.Error("the node was not called")
	}
	t.Run("the flag wins over the environment", func(t *testing.T) {
		c := newCLI("")
		c.env["CONTAINER_RUNTIME_ENDPOINT"] = "unix:///nonexistent/env.sock"
		if code := c.run("plan", "--simulated", "--runtime-endpoint", ep, "--state-dir", t.TempDir()); code != 0 {
			t.Fatalf("exit %d: %s", code, c.err.String())
		}
	})
	t.Run("the kubelet config's endpoint is used without flag or environment", func(t *testing.T) {
		cfg := writeFile(t, "k.yaml", "containerRuntimeEndpoint: "+ep+"\n")
		c := newCLI("")
		if code := c.run("plan", "--simulated", "--kubelet-config", cfg, "--state-dir", t.TempDir()); code != 0 {
			t.Fatalf("exit %d: %s", code, c.err.String())
		}
		if !strings.Contains(c.out.String(), "(from kubelet config "+cfg+")") {
			t.Errorf("runtime line does not name the config")
		}
	})
}

func TestDemo(t *testing.T) {
	c := newCLI("")
	if code := c.run("--demo"); code != 0 {
		t.Fatalf("exit %d: %s", code, c.err.String())
	}
	out := c.out.String()
	for _, want := range []string{"simulated node, --demo", "Image fs:", "──── cut line:", "Dead containers", "Plan: remove"} {
		if !strings.Contains(out, want) {
			t.Errorf("demo output lacks %q", want)
		}
	}
}
