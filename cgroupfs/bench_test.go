package cgroupfs

import (
	"fmt"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// benchFixture writes a node with 500 pods of 4 containers each (2,000
// containers), spread over the three QoS classes, and names them all.
func benchFixture(b *testing.B, mode Mode, driver Driver) (*fixture, *NameMap) {
	f := newFixture(b, mode)
	var names NameMap
	name := func(qos []string) string {
		if driver == DriverSystemd {
			return CgroupName(qos).ToSystemd()
		}
		return CgroupName(qos).ToCgroupfs()
	}
	f.add(fxNode{path: name([]string{"kubepods"}), mem: 1 << 30})
	for _, q := range qosClasses {
		f.add(fxNode{path: name([]string{"kubepods", q}), mem: 1 << 29})
	}
	for i := range 500 {
		uid := fmt.Sprintf("%08x-0000-0000-0000-%012x", i, i)
		cg := CgroupName{"kubepods", "pod" + uid}
		if q := i % 3; q < 2 {
			cg = CgroupName{"kubepods", qosClasses[q], "pod" + uid}
		}
		pod := name(cg)
		names.AddPod(uid, "ns", fmt.Sprintf("pod-%d", i))
		f.add(fxNode{path: pod, mem: 1 << 20, limit: 1 << 30, cpuNs: 1e9, pids: 4})
		for c := range 4 {
			id := fmt.Sprintf("%064x", i*4+c)
			leaf := id
			if driver == DriverSystemd {
				leaf = "cri-containerd-" + id + ".scope"
			}
			names.AddContainer(id, fmt.Sprintf("c%d", c), uid)
			f.add(fxNode{path: pod + "/" + leaf, mem: 1 << 18, limit: 1 << 29, cpuNs: 1e8, pids: 1})
		}
	}
	return f, &names
}

// benchLayouts are the layouts the benchmarks read: v1 (three stat files
// and a limit per cgroup, the machine this runs on) and v2 (plus two PSI
// files).
var benchLayouts = []struct {
	mode   Mode
	driver Driver
}{{ModeV1, DriverCgroupfs}, {ModeV2, DriverSystemd}}

// reportCPU reports the CPU time (user + system, all threads) per op when
// the benchmark ends: unlike ns/op it does not grow when other processes
// load the machine.
func reportCPU(b *testing.B) func() {
	cpu0 := cpuTime(b)
	return func() { b.ReportMetric(float64(cpuTime(b)-cpu0)/float64(b.N)/1e6, "cpu-ms/op") }
}

// BenchmarkReadTree measures one one-shot Read: discovery, allocatable and
// the walk of a kubepods tree of 500 pods and 2,000 containers, every file
// opened, read and closed.
func BenchmarkReadTree(b *testing.B) {
	for _, bc := range benchLayouts {
		b.Run(fmt.Sprintf("%s-%s", bc.mode, bc.driver), func(b *testing.B) {
			f, names := benchFixture(b, bc.mode, bc.driver)
			cfg := Config{Root: f.root, Meminfo: meminfo(b, 8<<20, 0), NumCPU: 8}
			b.ReportAllocs()
			b.ResetTimer()
			defer reportCPU(b)()
			for b.Loop() {
				tree, err := Read(cfg, names)
				if err != nil {
					b.Fatal(err)
				}
				if n := countNodes(tree.Root); n != 1+2+500+2000 {
					b.Fatalf("%d nodes, want 2503", n)
				}
			}
		})
	}
}

// BenchmarkReaderReread measures one dashboard refresh in the steady
// state: a Reader that has read the same tree before reads it again (the
// directory checks, a pread per kept file, the staggered limits, a fresh
// Tree). The open files are capped as DefaultMaxOpenFiles caps them.
func BenchmarkReaderReread(b *testing.B) {
	for _, bc := range benchLayouts {
		b.Run(fmt.Sprintf("%s-%s", bc.mode, bc.driver), func(b *testing.B) {
			f, names := benchFixture(b, bc.mode, bc.driver)
			r, err := NewReader(Config{Root: f.root, Meminfo: meminfo(b, 8<<20, 0), NumCPU: 8})
			if err != nil {
				b.Fatal(err)
			}
			defer r.Close()
			if _, err := r.Read(names); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			b.ResetTimer()
			defer reportCPU(b)()
			for b.Loop() {
				tree, err := r.Read(names)
				if err != nil {
					b.Fatal(err)
				}
				if n := countNodes(tree.Root); n != 1+2+500+2000 {
					b.Fatalf("%d nodes, want 2503", n)
				}
			}
			b.ReportMetric(float64(r.OpenFiles()), "open-files")
		})
	}
}

func countNodes(n *Node) int {
	if n == nil {
		return 0
	}
	c := 1
	for _, ch := range n.Children {
		c += countNodes(ch)
	}
	return c
}

// cpuTime returns the CPU time the process has used.
func cpuTime(b *testing.B) time.Duration {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
