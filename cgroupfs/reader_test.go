package cgroupfs

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

// removeCgroup deletes cgroup path p from every hierarchy of the fixture.
func (f *fixture) removeCgroup(p string) {
	f.t.Helper()
	entries, err := os.ReadDir(f.root)
	if err != nil {
		f.t.Fatal(err)
	}
	dirs := []string{f.root}
	if f.mode != ModeV2 {
		dirs = dirs[:0]
		for _, e := range entries {
			if e.IsDir() {
				dirs = append(dirs, filepath.Join(f.root, e.Name()))
			}
		}
	}
	for _, d := range dirs {
		if err := os.RemoveAll(d + p); err != nil {
			f.t.Fatal(err)
		}
	}
}

// openFDs counts the open file descriptors of the process.
func openFDs(t *testing.T) int {
	t.Helper()
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(entries)
}

func newTestReader(t *testing.T, cfg Config) *Reader {
	t.Helper()
	r, err := NewReader(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

func mustRead(t *testing.T, r *Reader, names Names) *Tree {
	t.Helper()
	tree, err := r.Read(names)
	if err != nil {
		t.Fatal(err)
	}
	return tree
}

// assertSameTree compares two whole trees (layout, allocatable, nodes).
func assertSameTree(t *testing.T, got, want *Tree) {
	t.Helper()
	assertTree(t, got.Root, want.Root)
	got.Root, want.Root = nil, nil
	if !reflect.DeepEqual(got, want) {
		t.Errorf("tree\n got %+v\nwant %+v", got, want)
	}
}

func TestReaderMatchesOneShotRead(t *testing.T) {
	layouts := []struct {
		name  string
		mode  Mode
		paths workloadPaths
	}{
		{"v1 cgroupfs", ModeV1, cgroupfsPaths},
		{"v1 systemd", ModeV1, systemdPaths},
		{"v2 cgroupfs", ModeV2, cgroupfsPaths},
		{"v2 systemd", ModeV2, systemdPaths},
		{"hybrid cgroupfs", ModeHybrid, cgroupfsPaths},
		{"hybrid systemd", ModeHybrid, systemdPaths},
	}
	caps := []struct {
		name string
		max  int
	}{
		{"with every file kept open", 0},
		{"with a few files kept open and the rest opened each time", 7},
		{"with no file kept open", -1},
	}
	for _, l := range layouts {
		for _, c := range caps {
			t.Run(l.name+" "+c.name+" reads what Read reads, again and again", func(t *testing.T) {
				f := newFixture(t, l.mode)
				workloadFixture(f, l.paths)
				cfg := Config{Root: f.root, Meminfo: meminfo(t, 8<<20, 0), NumCPU: 4, MaxOpenFiles: c.max}
				r := newTestReader(t, cfg)
				for i := range 3 {
					got := mustRead(t, r, workloadNames())
					assertTree(t, got.Root, workloadTree(l.paths, l.mode == ModeV2))
					want, err := Read(cfg, workloadNames())
					if err != nil {
						t.Fatal(err)
					}
					assertSameTree(t, got, want)
					if t.Failed() {
						t.Fatalf("read %d differs", i+1)
					}
				}
				if c.max > 0 && r.OpenFiles() > c.max || c.max < 0 && r.OpenFiles() != 0 || c.max == 0 && r.OpenFiles() == 0 {
					t.Errorf("%d files open with MaxOpenFiles %d", r.OpenFiles(), c.max)
				}
			})
		}
	}
}

func TestReaderRereadSeesNewValues(t *testing.T) {
	for _, mode := range []Mode{ModeV1, ModeV2} {
		t.Run(string(mode)+": usage from kept files is fresh at every read, a limit within limitEvery reads", func(t *testing.T) {
			f := newFixture(t, mode)
			workloadFixture(f, cgroupfsPaths)
			r := newTestReader(t, Config{Root: f.root, Meminfo: meminfo(t, 8<<20, 0), NumCPU: 4})
			first := find(mustRead(t, r, workloadNames()).Root, cgroupfsPaths.buC1)
			if first.Pids != 4 || *first.MemoryLimitBytes != 256<<20 {
				t.Fatalf("first read: pids %d limit %d", first.Pids, *first.MemoryLimitBytes)
			}
			if r.OpenFiles() == 0 {
				t.Fatal("no file kept open: the re-read path is not under test")
			}
			// Rewrite the files in place, as the kernel changes them.
			f.add(fxNode{path: cgroupfsPaths.buC1, mem: 4000 << 10, limit: 128 << 20, cpuNs: 41e9, pids: 9})
			var limitSeen int
			for i := 1; i <= limitEvery; i++ {
				n := find(mustRead(t, r, workloadNames()).Root, cgroupfsPaths.buC1)
				if n.MemoryBytes != 4000<<10 || n.CPUUsageNanos != 41e9 || n.Pids != 9 || len(n.Errors) != 0 {
					t.Fatalf("read %d after the change: memory %d cpu %d pids %d errors %v", i, n.MemoryBytes, n.CPUUsageNanos, n.Pids, n.Errors)
				}
				switch *n.MemoryLimitBytes {
				case 128 << 20:
					if limitSeen == 0 {
						limitSeen = i
					}
				case 256 << 20:
					if limitSeen != 0 {
						t.Errorf("read %d shows the old limit after read %d showed the new one", i, limitSeen)
					}
				default:
					t.Errorf("read %d: limit %d", i, *n.MemoryLimitBytes)
				}
			}
			if limitSeen == 0 {
				t.Errorf("the new limit did not show within %d reads", limitEvery)
			}
		})
	}
}

func TestReaderFollowsCgroupsComingAndGoing(t *testing.T) {
	const uidN = "aa000000-0000-0000-0000-0000000000aa"
	newPod := "/kubepods/burstable/pod" + uidN
	tests := []struct {
		name    string
		change  func(f *fixture)
		gone    []string
		added   []string
		fewerFD bool
	}{
		{
			name:   "a new pod and its container show at the next read",
			change: func(f *fixture) { f.add(fxNode{path: newPod, pids: 2}, fxNode{path: newPod + "/cc01", pids: 1}) },
			added:  []string{newPod, newPod + "/cc01"},
		},
		{
			name:    "a removed container is gone at the next read and its files are closed",
			change:  func(f *fixture) { f.removeCgroup(cgroupfsPaths.buC2) },
			gone:    []string{cgroupfsPaths.buC2},
			fewerFD: true,
		},
		{
			name:    "a removed pod is gone with its containers",
			change:  func(f *fixture) { f.removeCgroup(cgroupfsPaths.bePod) },
			gone:    []string{cgroupfsPaths.bePod, cgroupfsPaths.beSandbox},
			fewerFD: true,
		},
		{
			name: "a container replaced by another in the same pod (same link count) is seen",
			change: func(f *fixture) {
				f.removeCgroup(cgroupfsPaths.buC2)
				f.add(fxNode{path: cgroupfsPaths.buPod + "/bb03", pids: 5})
			},
			gone:  []string{cgroupfsPaths.buC2},
			added: []string{cgroupfsPaths.buPod + "/bb03"},
		},
	}
	for _, mode := range []Mode{ModeV1, ModeV2, ModeHybrid} {
		for _, tt := range tests {
			t.Run(string(mode)+": "+tt.name, func(t *testing.T) {
				f := newFixture(t, mode)
				workloadFixture(f, cgroupfsPaths)
				cfg := Config{Root: f.root, Meminfo: meminfo(t, 8<<20, 0), NumCPU: 4}
				r := newTestReader(t, cfg)
				mustRead(t, r, workloadNames())
				mustRead(t, r, workloadNames())
				before := r.OpenFiles()
				tt.change(f)
				got := mustRead(t, r, workloadNames())
				for _, p := range tt.gone {
					if find(got.Root, p) != nil {
						t.Errorf("%s still in the tree", p)
					}
				}
				for _, p := range tt.added {
					if n := find(got.Root, p); n == nil || len(n.Errors) != 0 {
						t.Errorf("%s not in the tree, or with errors: %+v", p, n)
					}
				}
				if tt.fewerFD && r.OpenFiles() >= before {
					t.Errorf("%d files open after the removal, %d before", r.OpenFiles(), before)
				}
				want, err := Read(cfg, workloadNames())
				if err != nil {
					t.Fatal(err)
				}
				assertSameTree(t, got, want)
			})
		}
	}
}

func TestReaderCapsOpenFiles(t *testing.T) {
	for _, max := range []int{1, 10, 50} {
		t.Run("at most MaxOpenFiles descriptors stay open, all closed by Close", func(t *testing.T) {
			f := newFixture(t, ModeV2)
			workloadFixture(f, cgroupfsPaths)
			start := openFDs(t)
			r, err := NewReader(Config{Root: f.root, Meminfo: meminfo(t, 8<<20, 0), NumCPU: 4, MaxOpenFiles: max})
			if err != nil {
				t.Fatal(err)
			}
			for range 3 {
				if _, err := r.Read(workloadNames()); err != nil {
					t.Fatal(err)
				}
			}
			if n := openFDs(t) - start; n > max || r.OpenFiles() != max {
				t.Errorf("%d more descriptors open, reader counts %d; want %d (the workload needs more)", n, r.OpenFiles(), max)
			}
			if err := r.Close(); err != nil {
				t.Fatal(err)
			}
			if n := openFDs(t) - start; n != 0 || r.OpenFiles() != 0 {
				t.Errorf("%d descriptors still open after Close (reader counts %d)", n, r.OpenFiles())
			}
			if _, err := r.Read(nil); err == nil {
				t.Error("Read after Close did not fail")
			}
		})
	}
}

func TestReaderResolvesNamesAtEachRead(t *testing.T) {
	f := newFixture(t, ModeV1)
	workloadFixture(f, cgroupfsPaths)
	cfg := Config{Root: f.root, Meminfo: meminfo(t, 8<<20, 0), NumCPU: 4}
	r := newTestReader(t, cfg)
	if n := find(mustRead(t, r, nil).Root, cgroupfsPaths.buC1); n.Container.Name != Unknown || n.Pod.Name != Unknown {
		t.Fatalf("without names: container %+v pod %+v", n.Container, n.Pod)
	}
	got := mustRead(t, r, workloadNames())
	assertTree(t, got.Root, workloadTree(cgroupfsPaths, false))
}

func TestReaderKubepodsComingAndGoing(t *testing.T) {
	f := newFixture(t, ModeV1)
	r := newTestReader(t, Config{Root: f.root, Meminfo: meminfo(t, 8<<20, 0), NumCPU: 4, CgroupDriver: "cgroupfs"})
	if tree := mustRead(t, r, nil); tree.Root != nil || len(tree.Errors) != 1 {
		t.Fatalf("before kubepods exists: root %v errors %v", tree.Root, tree.Errors)
	}
	workloadFixture(f, cgroupfsPaths)
	if tree := mustRead(t, r, workloadNames()); tree.Root == nil {
		t.Fatalf("kubepods created, but not read: %v", tree.Errors)
	} else {
		assertTree(t, tree.Root, workloadTree(cgroupfsPaths, false))
	}
	f.removeCgroup("/kubepods")
	if tree := mustRead(t, r, nil); tree.Root != nil || len(tree.Errors) != 1 || r.OpenFiles() != 0 {
		t.Errorf("kubepods removed: root %v errors %v open files %d", tree.Root, tree.Errors, r.OpenFiles())
	}
}

// TestReaderTreesShareNothing checks that a Read does not change the tree an
// earlier Read returned, which the dashboard keeps to compute CPU rates.
func TestReaderTreesShareNothing(t *testing.T) {
	f := newFixture(t, ModeV2)
	workloadFixture(f, cgroupfsPaths)
	r := newTestReader(t, Config{Root: f.root, Meminfo: meminfo(t, 8<<20, 0), NumCPU: 4})
	old := mustRead(t, r, workloadNames())
	f.add(fxNode{path: cgroupfsPaths.buC1, mem: 1, limit: 2, cpuNs: 3000, pids: 4})
	mustRead(t, r, nil)
	assertTree(t, old.Root, workloadTree(cgroupfsPaths, true))
}

// TestReaderRealCgroupfs checks on this machine's real /sys/fs/cgroup (v1 or
// hybrid) what fixtures cannot show: a pread at offset 0 of a kept cgroup
// file returns fresh values, and a cgroup replaced between two reads
// without changing its parent's link count is found through the ENODEV its
// kept files return. It works under its own cgroupRoot and removes
// everything it made.
func TestReaderRealCgroupfs(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to create cgroups")
	}
	layout, err := Discover(Config{})
	if err != nil {
		t.Skipf("no cgroup filesystem: %v", err)
	}
	if layout.Mode == ModeV2 {
		t.Skip("this test builds v1 hierarchies")
	}
	const uid = "7e570000-0000-0000-0000-000000000002"
	cgroupRoot := fmt.Sprintf("/nodegc-reader-test-%d", os.Getpid())
	pod := cgroupRoot + "/kubepods/besteffort/pod" + uid
	id1, id2 := strings.Repeat("1", 64), strings.Repeat("2", 64)
	var mounts []string
	seen := map[string]bool{}
	for _, ctrl := range []string{"memory", "cpuacct", "pids"} {
		if mp, ok := layout.Mountpoint(ctrl, "/"); ok && !seen[mp] {
			seen[mp] = true
			mounts = append(mounts, mp)
		}
	}
	mkdir := func(p string) {
		t.Helper()
		for _, mp := range mounts {
			if err := os.MkdirAll(mp+p, 0o755); err != nil {
				t.Fatalf("create cgroup: %v", err)
			}
		}
	}
	rmdir := func(p string) {
		t.Helper()
		for _, mp := range mounts {
			if err := os.Remove(mp + p); err != nil && !os.IsNotExist(err) {
				t.Errorf("remove cgroup: %v", err)
			}
		}
	}
	t.Cleanup(func() {
		for _, p := range []string{pod + "/" + id1, pod + "/" + id2, pod, cgroupRoot + "/kubepods/besteffort", cgroupRoot + "/kubepods", cgroupRoot} {
			rmdir(p)
		}
	})
	mkdir(pod + "/" + id1)

	r := newTestReader(t, Config{CgroupRoot: cgroupRoot})
	if n := find(mustRead(t, r, nil).Root, pod+"/"+id1); n == nil || n.Pids != 0 || len(n.Errors) != 0 {
		t.Fatalf("first read of %s: %+v", id1, n)
	}
	if r.OpenFiles() == 0 {
		t.Fatal("no file kept open: the re-read path is not under test")
	}

	cmd := exec.Command("sleep", "600")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	for _, mp := range mounts {
		if err := os.WriteFile(mp+pod+"/"+id1+"/cgroup.procs", []byte(strconv.Itoa(cmd.Process.Pid)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if n := find(mustRead(t, r, nil).Root, pod+"/"+id1); n == nil || n.Pids != 1 {
		t.Fatalf("after moving a process in, the kept pids.current reads %+v, want 1 task", n)
	}
	_ = cmd.Process.Kill()
	_ = cmd.Wait()

	rmdir(pod + "/" + id1)
	mkdir(pod + "/" + id2)
	tree := mustRead(t, r, nil)
	if find(tree.Root, pod+"/"+id1) != nil {
		t.Errorf("%s still in the tree after it was removed", id1)
	}
	if n := find(tree.Root, pod+"/"+id2); n == nil || len(n.Errors) != 0 {
		t.Errorf("%s, created in its place, read as %+v", id2, n)
	}
}
