package cgroupfs

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

// v1UnlimitedText is what a v1 memory.limit_in_bytes holds without a limit
// on 4 KiB pages.
const v1UnlimitedText = "9223372036854771712"

// fxNode is one cgroup of a fixture tree with the values its files hold.
type fxNode struct {
	path  string // cgroup path, /kubepods/...
	mem   uint64
	limit uint64 // 0 = unlimited
	cpuNs uint64 // a multiple of 1000, so that v2's microseconds hold it
	pids  uint64
}

// fixture builds a fake /sys/fs/cgroup of one mode in a temp dir.
type fixture struct {
	t    testing.TB
	root string
	mode Mode
}

// newFixture makes the hierarchies of mode: v1 has memory, cpu,cpuacct
// (with cpu and cpuacct symlinks, as distributions mount it), pids and
// systemd; hybrid has memory, cpu, cpuacct, pids and systemd mounted apart
// plus an empty unified tree, as on this machine; v2 is one tree.
func newFixture(t testing.TB, mode Mode) *fixture {
	t.Helper()
	f := &fixture{t: t, root: t.TempDir(), mode: mode}
	switch mode {
	case ModeV2:
		f.write("", "cgroup.controllers", "cpuset cpu io memory hugetlb pids rdma misc")
	case ModeV1:
		for _, d := range []string{"memory", "cpu,cpuacct", "pids", "systemd"} {
			f.mkdir(filepath.Join(f.root, d))
		}
		for _, l := range []string{"cpu", "cpuacct"} {
			if err := os.Symlink("cpu,cpuacct", filepath.Join(f.root, l)); err != nil {
				t.Fatal(err)
			}
		}
	case ModeHybrid:
		for _, d := range []string{"memory", "cpu", "cpuacct", "pids", "systemd"} {
			f.mkdir(filepath.Join(f.root, d))
		}
		f.mkdir(filepath.Join(f.root, "unified"))
		f.writeAt(filepath.Join(f.root, "unified"), "cgroup.controllers", "")
	}
	return f
}

func (f *fixture) mkdir(dir string) {
	f.t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		f.t.Fatal(err)
	}
}

func (f *fixture) writeAt(dir, file, content string) {
	f.t.Helper()
	f.mkdir(dir)
	if err := os.WriteFile(filepath.Join(dir, file), []byte(content+"\n"), 0o644); err != nil {
		f.t.Fatal(err)
	}
}

// controllerDir is the directory of a controller's hierarchy.
func (f *fixture) controllerDir(ctrl string) string {
	switch {
	case f.mode == ModeV2:
		return f.root
	case f.mode == ModeV1 && (ctrl == "cpu" || ctrl == "cpuacct"):
		return filepath.Join(f.root, "cpu,cpuacct")
	}
	return filepath.Join(f.root, ctrl)
}

// write writes a file of cgroup path p in the hierarchy its name belongs to.
func (f *fixture) write(p, file, content string) {
	f.t.Helper()
	ctrl := file[:len(file)-len(filepath.Ext(file))]
	if ctrl == "cgroup" {
		ctrl = "memory"
	}
	f.writeAt(f.controllerDir(ctrl)+p, file, content)
}

// remove deletes a file of cgroup path p.
func (f *fixture) remove(p, file string) {
	f.t.Helper()
	ctrl := file[:len(file)-len(filepath.Ext(file))]
	if err := os.Remove(filepath.Join(f.controllerDir(ctrl)+p, file)); err != nil {
		f.t.Fatal(err)
	}
}

// add writes the files of the nodes in every hierarchy, as the mode keeps
// them. v2 nodes also get PSI files whose some avg10 is the pid count.
func (f *fixture) add(nodes ...fxNode) {
	f.t.Helper()
	u := func(v uint64) string { return strconv.FormatUint(v, 10) }
	for _, n := range nodes {
		if f.mode == ModeV2 {
			limit := "max"
			if n.limit != 0 {
				limit = u(n.limit)
			}
			f.write(n.path, "memory.current", u(n.mem))
			f.write(n.path, "memory.max", limit)
			f.write(n.path, "cpu.stat", "usage_usec "+u(n.cpuNs/1000)+"\nuser_usec 1\nsystem_usec 2\nnr_periods 0")
			f.write(n.path, "pids.current", u(n.pids))
			psi := "some avg10=" + u(n.pids) + ".00 avg60=0.50 avg300=0.25 total=1234\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0"
			f.write(n.path, "memory.pressure", psi)
			f.write(n.path, "cpu.pressure", psi)
			continue
		}
		limit := v1UnlimitedText
		if n.limit != 0 {
			limit = u(n.limit)
		}
		f.write(n.path, "memory.usage_in_bytes", u(n.mem))
		f.write(n.path, "memory.limit_in_bytes", limit)
		f.write(n.path, "cpuacct.usage", u(n.cpuNs))
		f.write(n.path, "pids.current", u(n.pids))
		// cpu.shares lives in the cpu hierarchy; give every node one, as the
		// kernel does.
		f.write(n.path, "cpu.shares", "1024")
	}
}

// meminfo writes a /proc/meminfo with MemTotal and Hugetlb in kB.
func meminfo(t testing.TB, totalKB, hugeKB int64) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "meminfo")
	content := "MemTotal:       " + strconv.FormatInt(totalKB, 10) + " kB\nMemFree:         1000 kB\nHugetlb:        " + strconv.FormatInt(hugeKB, 10) + " kB\n"
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func u64(v uint64) *uint64 { return &v }
