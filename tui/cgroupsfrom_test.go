package tui

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/nodegc/nodegc/cgroupfs"
)

// TestCgroupsFromKeepsOneReader checks that the dashboard's cgroup reads go
// through one long-lived cgroupfs.Reader: the files of the first read stay
// open, and a later read still sees changed values and new cgroups.
func TestCgroupsFromKeepsOneReader(t *testing.T) {
	root := t.TempDir()
	write := func(rel, file, content string) {
		t.Helper()
		dir := filepath.Join(root, rel)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, file), []byte(content+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("", "cgroup.controllers", "cpu memory pids")
	cgroup := func(rel, pids string) {
		write(rel, "memory.current", "1024")
		write(rel, "memory.max", "max")
		write(rel, "cpu.stat", "usage_usec 1")
		write(rel, "pids.current", pids)
	}
	cgroup("kubepods", "1")
	meminfo := filepath.Join(t.TempDir(), "meminfo")
	if err := os.WriteFile(meminfo, []byte("MemTotal: 1000 kB\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	read := CgroupsFrom(cgroupfs.Config{Root: root, Meminfo: meminfo, NumCPU: 1, CgroupDriver: "cgroupfs"})
	fds := func() int {
		entries, err := os.ReadDir("/proc/self/fd")
		if err != nil {
			t.Fatal(err)
		}
		return len(entries)
	}
	before := fds()
	tree, err := read(context.Background(), nil)
	if err != nil || tree.Root == nil || tree.Root.Pids != 1 {
		t.Fatalf("first read: %+v, %v", tree, err)
	}
	if fds() <= before {
		t.Error("no file kept open after the first read: no Reader is kept between refreshes")
	}
	cgroup("kubepods", "2")
	cgroup("kubepods/podabc", "1")
	tree, err = read(context.Background(), nil)
	if err != nil || tree.Root == nil {
		t.Fatalf("second read: %+v, %v", tree, err)
	}
	if tree.Root.Pids != 2 || len(tree.Root.Children) != 1 || tree.Root.Children[0].Pod.UID != "abc" {
		t.Errorf("second read: pids %d children %d; want the new value and the new pod", tree.Root.Pids, len(tree.Root.Children))
	}
}
