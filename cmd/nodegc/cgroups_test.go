package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nodegc/nodegc/cgroupfs"
	"github.com/nodegc/nodegc/engine"
	"github.com/nodegc/nodegc/engine/cri"
)

// cgroupFixture builds a cgroup v2 tree (cgroupfs driver) holding the
// container's cgroup under kubepods/besteffort/pod<uid>.
func cgroupFixture(t *testing.T, c engine.Container) string {
	t.Helper()
	root := t.TempDir()
	write := func(rel, file, content string) {
		dir := filepath.Join(root, rel)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, file), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("", "cgroup.controllers", "cpu memory pids\n")
	for _, rel := range []string{"kubepods", "kubepods/besteffort", "kubepods/besteffort/pod" + c.PodUID, "kubepods/besteffort/pod" + c.PodUID + "/" + c.ID} {
		write(rel, "memory.current", "4096\n")
		write(rel, "memory.max", "max\n")
		write(rel, "cpu.stat", "usage_usec 10\n")
		write(rel, "pids.current", "1\n")
	}
	return root
}

// findContainer returns the first container node of the tree.
func findContainer(nodes []*cgroupfs.Node) *cgroupfs.Node {
	for _, n := range nodes {
		if n.Kind == cgroupfs.KindContainer {
			return n
		}
		if c := findContainer(n.Children); c != nil {
			return c
		}
	}
	return nil
}

func TestCgroupsNames(t *testing.T) {
	node, ep := startSimnode(t, testNode())
	client, err := cri.Dial(context.Background(), ep, cri.Options{})
	if err != nil {
		t.Fatal(err)
	}
	cs, err := client.ListContainers(context.Background())
	client.Close()
	if err != nil {
		t.Fatal(err)
	}
	var running engine.Container
	for _, c := range cs {
		if c.State == engine.ContainerRunning {
			running = c
			break
		}
	}
	root := cgroupFixture(t, running)
	node.ResetCalls()

	tests := []struct {
		name     string
		endpoint string
		wantName string
		wantWarn bool
	}{
		{"names come from the runtime, read-only", ep, running.Name, false},
		{"an unreachable runtime leaves the names unknown, with a warning", "unix:///nonexistent/x.sock", cgroupfs.Unknown, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newCLI("")
			code := c.run("cgroups", "-o", "json", "--cgroupfs-root", root, "--cgroup-driver", "cgroupfs", "--simulated", "--runtime-endpoint", tt.endpoint)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, c.err.String())
			}
			var nodes []*cgroupfs.Node
			if err := json.Unmarshal(c.out.Bytes(), &nodes); err != nil {
				t.Fatalf("not a JSON list of nodes: %v\n%s", err, c.out.String())
			}
			cn := findContainer(nodes)
			if cn == nil || cn.Container == nil || cn.Container.ID != running.ID {
				t.Fatalf("no container node for %s in %s", running.ID, c.out.String())
			}
			if cn.Container.Name != tt.wantName {
				t.Errorf("container name %q, want %q", cn.Container.Name, tt.wantName)
			}
			if got := strings.Contains(c.err.String(), "nodegc: warning: "); got != tt.wantWarn {
				t.Errorf("stderr %q, want a warning: %v", c.err.String(), tt.wantWarn)
			}
			if m := mutating(node); len(m) != 0 {
				t.Errorf("mutating calls %v", m)
			}
		})
	}
	badInput := []struct {
		name string
		args []string
		want string
	}{
		{"a malformed endpoint is bad input", []string{"--simulated", "--runtime-endpoint", "tcp://x"}, "--runtime-endpoint"},
		{"a simulated node without --simulated is bad input", []string{"--runtime-endpoint", ep}, "--simulated"},
	}
	for _, tt := range badInput {
		t.Run(tt.name, func(t *testing.T) {
			c := newCLI("")
			args := append([]string{"cgroups", "--cgroupfs-root", root, "--cgroup-driver", "cgroupfs"}, tt.args...)
			if code := c.run(args...); code != 2 {
				t.Fatalf("exit %d, want 2: %s", code, c.err.String())
			}
			if lines := strings.Count(strings.TrimSpace(c.err.String()), "\n") + 1; lines != 1 || !strings.Contains(c.err.String(), tt.want) {
				t.Errorf("stderr %q: want one line naming %s", c.err.String(), tt.want)
			}
			if c.out.Len() != 0 {
				t.Errorf("a tree was printed: %s", c.out.String())
			}
		})
	}
	t.Run("the tree output has the header and the pod", func(t *testing.T) {
		c := newCLI("")
		if code := c.run("cgroups", "--cgroupfs-root", root, "--cgroup-driver", "cgroupfs", "--simulated", "--runtime-endpoint", ep); code != 0 {
			t.Fatalf("exit %d: %s", code, c.err.String())
		}
		if !strings.Contains(c.out.String(), running.Name) {
			t.Errorf("tree lacks the container name %q:\n%s", running.Name, c.out.String())
		}
	})
}
