package cgroupfs

import (
	"fmt"
	"github.com/opencontainers/cgroups"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// find returns the node with path p.
func find(n *Node, p string) *Node {
	if n == nil {
		return nil
	}
	if n.Path == p {
		return n
	}
	for _, c := range n.Children {
		if f := find(c, p); f != nil {
			return f
		}
	}
	return nil
}

func readFixture(t *testing.T, f *fixture, names Names) *Tree {
	t.Helper()
	tree, err := Read(Config{Root: f.root, Meminfo: meminfo(t, 8<<20, 0), NumCPU: 2}, names)
	if err != nil {
		t.Fatal(err)
	}
	if tree.Root == nil {
		t.Fatalf("no root: %v", tree.Errors)
	}
	return tree
}

func TestReadMissingAndBadFilesPerNode(t *testing.T) {
	p := cgroupfsPaths
	B := QOSBurstable
	pod := &PodRef{UID: uidB, Namespace: "default", Name: "web-7d9"}
	tests := []struct {
		name   string
		mode   Mode
		damage func(f *fixture)
		path   string
		want   *Node
	}{
		{"a missing pids.current zeroes pids and keeps the rest", ModeV1,
			func(f *fixture) { f.remove(p.buC1, "pids.current") }, p.buC1,
			&Node{Kind: KindContainer, Path: p.buC1, QOS: B, Pod: pod, Container: &ContainerRef{ID: "bb01", Name: "nginx"},
				MemoryBytes: 2000 << 10, MemoryLimitBytes: u64(256 << 20), CPUUsageNanos: 40e9,
				Errors: []string{"pids.current: missing"}, Children: []*Node{}}},
		{"a cgroup missing from the cpuacct hierarchy is reported, not fatal", ModeV1,
			func(f *fixture) {
				if err := os.RemoveAll(f.controllerDir("cpuacct") + p.buC2); err != nil {
					t.Fatal(err)
				}
			}, p.buC2,
			&Node{Kind: KindContainer, Path: p.buC2, QOS: B, Pod: pod, Container: &ContainerRef{ID: "bb02", Name: Unknown},
				MemoryBytes: 1200 << 10, Pids: 1, Errors: []string{"cpuacct.usage: missing"}, Children: []*Node{}}},
		{"a malformed limit is reported and read as no limit", ModeV1,
			func(f *fixture) { f.write(p.buPod, "memory.limit_in_bytes", "lots") }, p.buPod,
			&Node{Kind: KindPod, Path: p.buPod, QOS: B, Pod: pod, MemoryBytes: 3400 << 10, CPUUsageNanos: 54e9, Pids: 6,
				Errors: []string{`memory.limit_in_bytes: parse "lots": invalid syntax`}}},
		{"a negative memory counter (a kernel accounting bug) reads as 0", ModeV1,
			func(f *fixture) { f.write(p.buC1, "memory.usage_in_bytes", "-4096") }, p.buC1,
			&Node{Kind: KindContainer, Path: p.buC1, QOS: B, Pod: pod, Container: &ContainerRef{ID: "bb01", Name: "nginx"},
				MemoryLimitBytes: u64(256 << 20), CPUUsageNanos: 40e9, Pids: 4, Children: []*Node{}}},
		{"v2 without the memory controller enabled reports both memory files", ModeV2,
			func(f *fixture) { f.remove(p.buC1, "memory.current"); f.remove(p.buC1, "memory.max") }, p.buC1,
			&Node{Kind: KindContainer, Path: p.buC1, QOS: B, Pod: pod, Container: &ContainerRef{ID: "bb01", Name: "nginx"},
				CPUUsageNanos: 40e9, Pids: 4, PSI: &PSI{Memory: psiFixture{4}.stats(), CPU: psiFixture{4}.stats()},
				Errors: []string{"memory.current: missing", "memory.max: missing"}, Children: []*Node{}}},
		{"v2 without PSI has no pressure and no error", ModeV2,
			func(f *fixture) { f.remove(p.buC1, "memory.pressure"); f.remove(p.buC1, "cpu.pressure") }, p.buC1,
			&Node{Kind: KindContainer, Path: p.buC1, QOS: B, Pod: pod, Container: &ContainerRef{ID: "bb01", Name: "nginx"},
				MemoryBytes: 2000 << 10, MemoryLimitBytes: u64(256 << 20), CPUUsageNanos: 40e9, Pids: 4, Children: []*Node{}}},
		{"a v2 cpu.stat without usage_usec is reported", ModeV2,
			func(f *fixture) { f.write(p.buC1, "cpu.stat", "user_usec 5") }, p.buC1,
			&Node{Kind: KindContainer, Path: p.buC1, QOS: B, Pod: pod, Container: &ContainerRef{ID: "bb01", Name: "nginx"},
				MemoryBytes: 2000 << 10, MemoryLimitBytes: u64(256 << 20), Pids: 4,
				PSI:    &PSI{Memory: psiFixture{4}.stats(), CPU: psiFixture{4}.stats()},
				Errors: []string{"cpu.stat: no usage_usec"}, Children: []*Node{}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, tt.mode)
			workloadFixture(f, p)
			tt.damage(f)
			got := find(readFixture(t, f, workloadNames()).Root, tt.path)
			if got == nil {
				t.Fatalf("node %s dropped", tt.path)
			}
			if tt.want.Kind == KindPod {
				c := *got
				c.Children = nil // the pod's containers are checked elsewhere
				got = &c
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("node\n got %+v\nwant %+v", *got, *tt.want)
			}
		})
	}
}

func TestReadControllerNotMounted(t *testing.T) {
	f := newFixture(t, ModeV1)
	workloadFixture(f, cgroupfsPaths)
	if err := os.RemoveAll(filepath.Join(f.root, "pids")); err != nil {
		t.Fatal(err)
	}
	tree := readFixture(t, f, workloadNames())
	count := 0
	var check func(n *Node)
	check = func(n *Node) {
		count++
		if !reflect.DeepEqual(n.Errors, []string{"pids: controller not mounted"}) || n.Pids != 0 || n.MemoryBytes == 0 {
			t.Errorf("%s: errors %v pids %d memory %d; want only the pids error", n.Path, n.Errors, n.Pids, n.MemoryBytes)
		}
		for _, c := range n.Children {
			check(c)
		}
	}
	check(tree.Root)
	if count != 11 {
		t.Errorf("%d nodes read, want all 11", count)
	}
}

func TestReadCRIOScopes(t *testing.T) {
	const uid = "c0000000-0000-0000-0000-00000000000c"
	pod := "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-podc0000000_0000_0000_0000_00000000000c.slice"
	for _, mode := range []Mode{ModeV1, ModeV2} {
		t.Run(string(mode)+": crio and crio-conmon scopes are both the container, conmon flagged", func(t *testing.T) {
			f := newFixture(t, mode)
			f.add(fxNode{path: "/kubepods.slice"}, fxNode{path: "/kubepods.slice/kubepods-burstable.slice"},
				fxNode{path: pod, mem: 10},
				fxNode{path: pod + "/crio-f00d.scope", mem: 8, pids: 2},
				fxNode{path: pod + "/crio-conmon-f00d.scope", mem: 2, pids: 1})
			var names NameMap
			names.AddPod(uid, "kube-system", "coredns")
			names.AddContainer("f00d", "coredns", uid)
			tree := readFixture(t, f, &names)
			podNode := find(tree.Root, pod)
			if podNode == nil || podNode.Pod.Name != "coredns" || len(podNode.Children) != 2 {
				t.Fatalf("pod node %+v", podNode)
			}
			ctr, conmon := podNode.Children[0], podNode.Children[1]
			wantCtr := ContainerRef{ID: "f00d", Name: "coredns"}
			if *ctr.Container != wantCtr || ctr.Conmon || ctr.Pids != 2 || ctr.Kind != KindContainer {
				t.Errorf("container node %+v", *ctr)
			}
			if *conmon.Container != wantCtr || !conmon.Conmon || conmon.Pids != 1 || conmon.Kind != KindContainer {
				t.Errorf("conmon node %+v", *conmon)
			}
		})
	}
}

func TestReadUnknownCgroupsAreKept(t *testing.T) {
	tests := []struct {
		name   string
		paths  []string // created after the workload
		driver Driver
		want   *Node
	}{
		{"a stray directory under kubepods is an unknown pod", []string{"/kubepods/stray"}, DriverCgroupfs,
			&Node{Kind: KindPod, Path: "/kubepods/stray", QOS: QOSGuaranteed, Pod: &PodRef{Name: Unknown},
				Errors: []string{"cgroup name is no pod, QoS class or container the kubelet creates"}, Children: []*Node{}}},
		{"a pod cgroup no sandbox claims is kept as unknown", []string{"/kubepods/besteffort/pod42"}, DriverCgroupfs,
			&Node{Kind: KindPod, Path: "/kubepods/besteffort/pod42", QOS: QOSBestEffort, Pod: &PodRef{UID: "42", Name: Unknown}, Children: []*Node{}}},
		{"an odd leaf in a pod is an unknown container", []string{"/kubepods/burstable/pod" + uidB + "/odd.leaf"}, DriverCgroupfs,
			&Node{Kind: KindContainer, Path: "/kubepods/burstable/pod" + uidB + "/odd.leaf", QOS: QOSBurstable,
				Pod: &PodRef{UID: uidB, Namespace: "default", Name: "web-7d9"}, Container: &ContainerRef{ID: "odd.leaf", Name: Unknown},
				Errors: []string{"cgroup name is no container cgroup of a known runtime"}, Children: []*Node{}}},
		{"a scope where a pod slice belongs is an unknown pod", []string{"/kubepods.slice/kubepods-besteffort.slice/x.scope"}, DriverSystemd,
			&Node{Kind: KindPod, Path: "/kubepods.slice/kubepods-besteffort.slice/x.scope", QOS: QOSBestEffort, Pod: &PodRef{Name: Unknown},
				Errors: []string{"cgroup name is no pod, QoS class or container the kubelet creates"}, Children: []*Node{}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, ModeV1)
			paths := cgroupfsPaths
			if tt.driver == DriverSystemd {
				paths = systemdPaths
			}
			workloadFixture(f, paths)
			for _, p := range tt.paths {
				f.add(fxNode{path: p})
			}
			got := find(readFixture(t, f, workloadNames()).Root, tt.want.Path)
			if got == nil {
				t.Fatalf("%s was dropped", tt.want.Path)
			}
			want := *tt.want
			want.MemoryLimitBytes = nil
			if !reflect.DeepEqual(got, &want) {
				t.Errorf("node\n got %+v\nwant %+v", *got, want)
			}
		})
	}
}

func TestReadContainerClaimedByAnotherPod(t *testing.T) {
	f := newFixture(t, ModeV2)
	workloadFixture(f, cgroupfsPaths)
	names := workloadNames()
	names.AddContainer("bb02", "sidecar", uidG)
	got := find(readFixture(t, f, names).Root, cgroupfsPaths.buC2)
	want := []string{"runtime says the container belongs to pod " + uidG}
	if got.Container.Name != "sidecar" || !reflect.DeepEqual(got.Errors, want) {
		t.Errorf("container %+v errors %v; want sidecar with %v", got.Container, got.Errors, want)
	}
}

func TestReadHybridPSIFromTheUnifiedTree(t *testing.T) {
	f := newFixture(t, ModeHybrid)
	workloadFixture(f, systemdPaths)
	// systemd mirrors its slices into the unified tree, where every cgroup
	// has PSI files whatever controllers it has.
	unified := filepath.Join(f.root, "unified")
	f.writeAt(unified+systemdPaths.buC1, "memory.pressure", "some avg10=1.50 avg60=1.00 avg300=0.50 total=99\nfull avg10=0.25 avg60=0.00 avg300=0.00 total=7")
	f.writeAt(unified+systemdPaths.buC1, "cpu.pressure", "some avg10=3.00 avg60=2.00 avg300=1.00 total=5")
	tree := readFixture(t, f, workloadNames())
	got := find(tree.Root, systemdPaths.buC1).PSI
	want := &PSI{Memory: &cgroups.PSIStats{}, CPU: &cgroups.PSIStats{}}
	want.Memory.Some = cgroups.PSIData{Avg10: 1.5, Avg60: 1, Avg300: 0.5, Total: 99}
	want.Memory.Full = cgroups.PSIData{Avg10: 0.25, Total: 7}
	want.CPU.Some = cgroups.PSIData{Avg10: 3, Avg60: 2, Avg300: 1, Total: 5}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("PSI %+v, want %+v", got, want)
	}
	// Cgroups without PSI files in the unified tree have none, and no error.
	if n := find(tree.Root, systemdPaths.buC2); n.PSI != nil || len(n.Errors) != 0 {
		t.Errorf("bb02: PSI %+v errors %v; want neither", n.PSI, n.Errors)
	}
}

func TestReadManyNodesInParallelKeepsValuesApart(t *testing.T) {
	f := newFixture(t, ModeV2)
	f.add(fxNode{path: "/kubepods"}, fxNode{path: "/kubepods/burstable"})
	var names NameMap
	for i := range 100 {
		uid := fmt.Sprintf("pod-%03d", i)
		pod := "/kubepods/burstable/pod" + uid
		f.add(fxNode{path: pod, pids: uint64(1000 + i)})
		for c := range 3 {
			id := fmt.Sprintf("%03d%d", i, c)
			names.AddContainer(id, id, uid)
			f.add(fxNode{path: pod + "/" + id, pids: uint64(i*10 + c), mem: uint64(i*10 + c)})
		}
	}
	tree := readFixture(t, f, &names)
	pods := find(tree.Root, "/kubepods/burstable").Children
	if len(pods) != 100 {
		t.Fatalf("%d pods, want 100", len(pods))
	}
	for i, p := range pods {
		if p.Pids != uint64(1000+i) || len(p.Children) != 3 {
			t.Errorf("%s: pids %d children %d", p.Path, p.Pids, len(p.Children))
		}
		for c, ctr := range p.Children {
			if want := uint64(i*10 + c); ctr.Pids != want || ctr.MemoryBytes != want {
				t.Errorf("%s: pids %d memory %d, want %d", ctr.Path, ctr.Pids, ctr.MemoryBytes, want)
			}
		}
	}
}
