package democgroups

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/nodegc/nodegc/cgroupfs"
)

// TestTheRealReaderReadsTheTree checks the simulated tree through the real
// cgroupfs reader: every pod and container shows with its QoS class and
// usage, usage moves between syncs, and a pod that went is gone.
func TestTheRealReaderReadsTheTree(t *testing.T) {
	root := filepath.Join(t.TempDir(), "cgroup")
	tr, err := New(root, 1)
	if err != nil {
		t.Fatal(err)
	}
	meminfo := filepath.Join(t.TempDir(), "meminfo")
	os.WriteFile(meminfo, []byte(Meminfo()), 0o600)
	cfg := cgroupfs.Config{Root: root, CgroupDriver: "systemd", Meminfo: meminfo, NumCPU: NumCPU}
	names := &cgroupfs.NameMap{}
	pods := []Pod{{UID: "0d4a-1", Containers: []string{"c1", "c2"}}, {UID: "0d4a-2", Containers: []string{"c3"}}, {UID: "0d4a-3"}}
	for _, p := range pods {
		names.AddPod(p.UID, "demo", "pod-"+p.UID)
		for _, c := range p.Containers {
			names.AddContainer(c, "ctr-"+c, p.UID)
		}
	}
	read := func() (map[string]*cgroupfs.Node, *cgroupfs.Tree) {
		t.Helper()
		tree, err := cgroupfs.Read(cfg, names)
		if err != nil {
			t.Fatal(err)
		}
		if tree.Root == nil || len(tree.Errors) > 0 {
			t.Fatalf("no kubepods root: %v", tree.Errors)
		}
		out := map[string]*cgroupfs.Node{}
		var walk func(n *cgroupfs.Node)
		walk = func(n *cgroupfs.Node) {
			if n.Pod != nil && n.Container == nil {
				out[n.Pod.UID] = n
			}
			if n.Container != nil {
				out[n.Container.ID] = n
			}
			for _, c := range n.Children {
				walk(c)
			}
		}
		walk(tree.Root)
		return out, tree
	}
	if err := tr.Sync(pods); err != nil {
		t.Fatal(err)
	}
	got, tree := read()
	for _, id := range []string{"0d4a-1", "0d4a-2", "0d4a-3", "c1", "c2", "c3"} {
		if got[id] == nil {
			t.Errorf("%s is not in the tree", id)
		}
	}
	if c := got["c1"]; c == nil || c.MemoryBytes == 0 || c.Pids == 0 || len(c.Errors) > 0 {
		t.Errorf("c1 = %+v, want usage and no errors", c)
	}
	if tree.Root.MemoryBytes == 0 || tree.Root.MemoryLimitBytes == nil {
		t.Errorf("kubepods = %+v, want usage and a limit", tree.Root)
	}
	cpu := got["c1"].CPUUsageNanos
	if err := tr.Sync(pods[:1]); err != nil {
		t.Fatal(err)
	}
	got, _ = read()
	if got["0d4a-2"] != nil || got["c3"] != nil {
		t.Error("a pod that went is still in the tree")
	}
	if got["c1"] == nil || got["c1"].CPUUsageNanos <= cpu {
		t.Errorf("c1's CPU time did not move on: %v", got["c1"])
	}
}
