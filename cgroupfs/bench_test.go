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

// BenchmarkReadTree measures one refresh: discovery, allocatable and the walk
// of a kubepods tree of 500 pods and 2,000 containers, every file read.
func BenchmarkReadTree(b *testing.B) {
	for _, bc := range []struct {
		mode   Mode
		driver Driver
	}{{ModeV1, DriverCgroupfs}, {ModeV2, DriverSystemd}} {
		b.Run(fmt.Sprintf("%s-%s", bc.mode, bc.driver), func(b *testing.B) {
			f, names := benchFixture(b, bc.mode, bc.driver)
			cfg := Config{Root: f.root, Meminfo: meminfo(b, 8<<20, 0), NumCPU: 8}
			b.ReportAllocs()
			b.ResetTimer()
			cpu0 := cpuTime(b)
			defer func() {
				// CPU time (user + system, all threads) per walk: unlike
				// ns/op it does not grow when other processes load the machine.
				b.ReportMetric(float64(cpuTime(b)-cpu0)/float64(b.N)/1e6, "cpu-ms/op")
			}()
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
