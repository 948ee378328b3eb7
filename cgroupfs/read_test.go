package cgroupfs

import (
	"encoding/json"
	"fmt"
	"github.com/opencontainers/cgroups"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// Pods and containers of the workload every layout fixture holds.
const (
	uidG = "90000000-0000-0000-0000-000000000009" // guaranteed, named
	uidB = "b0000000-0000-0000-0000-00000000000b" // burstable, named
	uidE = "e0000000-0000-0000-0000-00000000000e" // besteffort, unknown to the runtime
)

// workloadNames is what the runtime knows: pod E and container bb02 are
// missing, so they must show as unknown.
func workloadNames() *NameMap {
	var m NameMap
	m.AddPod(uidG, "prod", "db-0")
	m.AddPod(uidB, "default", "web-7d9")
	m.AddContainer("9901", "postgres", uidG)
	m.AddContainer("bb5a", "POD", uidB)
	m.AddContainer("bb01", "nginx", uidB)
	return &m
}

// workloadPaths gives each logical cgroup of the workload its path under
// a driver, written out rather than computed.
type workloadPaths struct {
	root, guar, guarC, be, bePod, beSandbox, bu, buPod, buSandbox, buC1, buC2 string
}

var cgroupfsPaths = workloadPaths{
	root:      "/kubepods",
	guar:      "/kubepods/pod" + uidG,
	guarC:     "/kubepods/pod" + uidG + "/9901",
	be:        "/kubepods/besteffort",
	bePod:     "/kubepods/besteffort/pod" + uidE,
	beSandbox: "/kubepods/besteffort/pod" + uidE + "/be5a",
	bu:        "/kubepods/burstable",
	buPod:     "/kubepods/burstable/pod" + uidB,
	buSandbox: "/kubepods/burstable/pod" + uidB + "/bb5a",
	buC1:      "/kubepods/burstable/pod" + uidB + "/bb01",
	buC2:      "/kubepods/burstable/pod" + uidB + "/bb02",
}

var systemdPaths = workloadPaths{
	root:      "/kubepods.slice",
	guar:      "/kubepods.slice/kubepods-pod90000000_0000_0000_0000_000000000009.slice",
	guarC:     "/kubepods.slice/kubepods-pod90000000_0000_0000_0000_000000000009.slice/cri-containerd-9901.scope",
	be:        "/kubepods.slice/kubepods-besteffort.slice",
	bePod:     "/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pode0000000_0000_0000_0000_00000000000e.slice",
	beSandbox: "/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pode0000000_0000_0000_0000_00000000000e.slice/cri-containerd-be5a.scope",
	bu:        "/kubepods.slice/kubepods-burstable.slice",
	buPod:     "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-podb0000000_0000_0000_0000_00000000000b.slice",
	buSandbox: "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-podb0000000_0000_0000_0000_00000000000b.slice/cri-containerd-bb5a.scope",
	buC1:      "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-podb0000000_0000_0000_0000_00000000000b.slice/cri-containerd-bb01.scope",
	buC2:      "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-podb0000000_0000_0000_0000_00000000000b.slice/cri-containerd-bb02.scope",
}

// workloadFixture writes the workload; each node's pid count is distinct so
// that a value read from the wrong cgroup shows.
func workloadFixture(f *fixture, p workloadPaths) {
	f.add(
		fxNode{path: p.root, mem: 7000 << 10, limit: 6 << 30, cpuNs: 90e9, pids: 11},
		fxNode{path: p.guar, mem: 3000 << 10, limit: 1 << 30, cpuNs: 30e9, pids: 3},
		fxNode{path: p.guarC, mem: 2900 << 10, limit: 1 << 30, cpuNs: 29e9, pids: 2},
		fxNode{path: p.be, mem: 500 << 10, cpuNs: 5e9, pids: 1},
		fxNode{path: p.bePod, mem: 400 << 10, cpuNs: 4e9, pids: 1},
		fxNode{path: p.beSandbox, mem: 300 << 10, cpuNs: 3e6, pids: 1},
		fxNode{path: p.bu, mem: 3500 << 10, cpuNs: 55e9, pids: 7},
		fxNode{path: p.buPod, mem: 3400 << 10, limit: 512 << 20, cpuNs: 54e9, pids: 6},
		fxNode{path: p.buSandbox, mem: 100 << 10, cpuNs: 1e6, pids: 1},
		fxNode{path: p.buC1, mem: 2000 << 10, limit: 256 << 20, cpuNs: 40e9, pids: 4},
		fxNode{path: p.buC2, mem: 1200 << 10, cpuNs: 13e9, pids: 1},
	)
}

// node builds an expected node; psi adds the PSI that v2 fixtures write.
func node(kind Kind, path, qos string, mem, limit, cpu, pids uint64, psi bool, children ...*Node) *Node {
	n := &Node{Kind: kind, Path: path, QOS: qos, MemoryBytes: mem, CPUUsageNanos: cpu, Pids: pids, Children: children}
	if limit != 0 {
		n.MemoryLimitBytes = u64(limit)
	}
	if psi {
		s := &psiFixture{avg10: float64(pids)}
		n.PSI = &PSI{Memory: s.stats(), CPU: s.stats()}
	}
	if n.Children == nil {
		n.Children = []*Node{}
	}
	return n
}

type psiFixture struct{ avg10 float64 }

func (p psiFixture) stats() *cgroups.PSIStats {
	s := cgroups.PSIStats{}
	s.Some.Avg10, s.Some.Avg60, s.Some.Avg300, s.Some.Total = p.avg10, 0.5, 0.25, 1234
	return &s
}

func withPod(n *Node, uid, ns, name string) *Node {
	n.Pod = &PodRef{UID: uid, Namespace: ns, Name: name}
	for _, c := range n.Children {
		c.Pod = n.Pod
	}
	return n
}

func withContainer(n *Node, id, name string) *Node {
	n.Container = &ContainerRef{ID: id, Name: name}
	return n
}

// workloadTree is the tree every layout must read back.
func workloadTree(p workloadPaths, psi bool) *Node {
	const G, B, E = QOSGuaranteed, QOSBurstable, QOSBestEffort
	return node(KindRoot, p.root, "", 7000<<10, 6<<30, 90e9, 11, psi,
		node(KindQOS, p.be, E, 500<<10, 0, 5e9, 1, psi,
			withPod(node(KindPod, p.bePod, E, 400<<10, 0, 4e9, 1, psi,
				withContainer(node(KindContainer, p.beSandbox, E, 300<<10, 0, 3e6, 1, psi), "be5a", Unknown),
			), uidE, "", Unknown),
		),
		node(KindQOS, p.bu, B, 3500<<10, 0, 55e9, 7, psi,
			withPod(node(KindPod, p.buPod, B, 3400<<10, 512<<20, 54e9, 6, psi,
				withContainer(node(KindContainer, p.buSandbox, B, 100<<10, 0, 1e6, 1, psi), "bb5a", "POD"),
				withContainer(node(KindContainer, p.buC1, B, 2000<<10, 256<<20, 40e9, 4, psi), "bb01", "nginx"),
				withContainer(node(KindContainer, p.buC2, B, 1200<<10, 0, 13e9, 1, psi), "bb02", Unknown),
			), uidB, "default", "web-7d9"),
		),
		withPod(node(KindPod, p.guar, G, 3000<<10, 1<<30, 30e9, 3, psi,
			withContainer(node(KindContainer, p.guarC, G, 2900<<10, 1<<30, 29e9, 2, psi), "9901", "postgres"),
		), uidG, "prod", "db-0"),
	)
}

// assertTree compares whole trees and shows both as JSON when they differ.
func assertTree(t *testing.T, got, want *Node) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		g, _ := json.MarshalIndent(got, "", "  ")
		w, _ := json.MarshalIndent(want, "", "  ")
		t.Errorf("tree differs at line %s", firstDiff(string(g), string(w)))
	}
}

// firstDiff shows where two texts first differ, with a little context.
func firstDiff(got, want string) string {
	g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
	for i := 0; i < max(len(g), len(w)); i++ {
		if i < len(g) && i < len(w) && g[i] == w[i] {
			continue
		}
		lo := max(0, i-8)
		return fmt.Sprintf("%d\n--- got:\n%s\n--- want:\n%s", i+1,
			strings.Join(g[lo:min(len(g), i+8)], "\n"), strings.Join(w[lo:min(len(w), i+8)], "\n"))
	}
	return "(none: the texts are equal, the values differ)"
}

func TestReadLayouts(t *testing.T) {
	v1Mounts := func(root string) []Mount {
		return []Mount{
			{Mountpoint: filepath.Join(root, "cpu,cpuacct"), Root: "/", Controllers: []string{"cpu", "cpuacct"}, Version: 1},
			{Mountpoint: filepath.Join(root, "memory"), Root: "/", Controllers: []string{"memory"}, Version: 1},
			{Mountpoint: filepath.Join(root, "pids"), Root: "/", Controllers: []string{"pids"}, Version: 1},
			{Mountpoint: filepath.Join(root, "systemd"), Root: "/", Controllers: []string{"systemd"}, Version: 1},
		}
	}
	hybridMounts := func(root string) []Mount {
		var ms []Mount
		for _, c := range []string{"cpu", "cpuacct", "memory", "pids", "systemd"} {
			ms = append(ms, Mount{Mountpoint: filepath.Join(root, c), Root: "/", Controllers: []string{c}, Version: 1})
		}
		return append(ms, Mount{Mountpoint: filepath.Join(root, "unified"), Root: "/", Controllers: []string{}, Version: 2})
	}
	v2Mounts := func(root string) []Mount {
		return []Mount{{Mountpoint: root, Root: "/", Controllers: []string{"cpuset", "cpu", "io", "memory", "hugetlb", "pids", "rdma", "misc"}, Version: 2}}
	}
	tests := []struct {
		name   string
		mode   Mode
		driver Driver
		paths  workloadPaths
		mounts func(root string) []Mount
	}{
		{"v1 with the cgroupfs driver reads kubepods/<qos>/pod<uid>/<id>", ModeV1, DriverCgroupfs, cgroupfsPaths, v1Mounts},
		{"v1 with the systemd driver reads slices and cri-containerd scopes", ModeV1, DriverSystemd, systemdPaths, v1Mounts},
		{"v2 with the cgroupfs driver reads one tree and its PSI", ModeV2, DriverCgroupfs, cgroupfsPaths, v2Mounts},
		{"v2 with the systemd driver reads slices, scopes and PSI", ModeV2, DriverSystemd, systemdPaths, v2Mounts},
		{"hybrid reads the v1 controllers and ignores the empty unified tree", ModeHybrid, DriverCgroupfs, cgroupfsPaths, hybridMounts},
		{"hybrid with the systemd driver reads the v1 controllers", ModeHybrid, DriverSystemd, systemdPaths, hybridMounts},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, tt.mode)
			workloadFixture(f, tt.paths)
			tree, err := Read(Config{Root: f.root, Meminfo: meminfo(t, 8<<20, 0), NumCPU: 4}, workloadNames())
			if err != nil {
				t.Fatal(err)
			}
			if tree.Mode != tt.mode || tree.Driver != tt.driver || tree.DriverFromConfig || tree.KubepodsPath != tt.paths.root {
				t.Errorf("mode %s driver %s (from config %v) kubepods %s; want %s %s (detected) %s",
					tree.Mode, tree.Driver, tree.DriverFromConfig, tree.KubepodsPath, tt.mode, tt.driver, tt.paths.root)
			}
			if want := tt.mounts(f.root); !reflect.DeepEqual(tree.Mounts, want) {
				t.Errorf("mounts\n got %+v\nwant %+v", tree.Mounts, want)
			}
			if len(tree.Errors) != 0 {
				t.Errorf("tree errors: %v", tree.Errors)
			}
			assertTree(t, tree.Root, workloadTree(tt.paths, tt.mode == ModeV2))
		})
	}
}

func TestReadDriverFromConfig(t *testing.T) {
	tests := []struct {
		name       string
		cfg        Config
		wantDriver Driver
		wantRoot   bool
		wantErr    bool
	}{
		{"a configured driver is used even where both layouts exist", Config{CgroupDriver: "systemd"}, DriverSystemd, true, false},
		{"the driver name is case-insensitive", Config{CgroupDriver: "Cgroupfs"}, DriverCgroupfs, true, false},
		{"an unknown driver is an error", Config{CgroupDriver: "docker"}, "", false, true},
		{"a cgroupRoot without a kubepods cgroup leaves no root and says why", Config{CgroupDriver: "cgroupfs", CgroupRoot: "/elsewhere"}, DriverCgroupfs, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, ModeV2)
			workloadFixture(f, cgroupfsPaths)
			workloadFixture(f, systemdPaths)
			cfg := tt.cfg
			cfg.Root, cfg.Meminfo, cfg.NumCPU = f.root, meminfo(t, 8<<20, 0), 1
			tree, err := Read(cfg, nil)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, want error %v", err, tt.wantErr)
			}
			if err != nil {
				return
			}
			if tree.Driver != tt.wantDriver || !tree.DriverFromConfig {
				t.Errorf("driver %s from config %v, want %s from config", tree.Driver, tree.DriverFromConfig, tt.wantDriver)
			}
			if (tree.Root != nil) != tt.wantRoot {
				t.Errorf("root %v, want a root: %v", tree.Root, tt.wantRoot)
			}
			if !tt.wantRoot && len(tree.Errors) != 1 {
				t.Errorf("tree errors %v, want one naming the missing kubepods", tree.Errors)
			}
		})
	}
}

func TestReadNoKubepods(t *testing.T) {
	f := newFixture(t, ModeV1)
	tree, err := Read(Config{Root: f.root, Meminfo: meminfo(t, 1<<20, 0), NumCPU: 1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if tree.Root != nil || tree.Driver != "" || len(tree.Errors) != 1 {
		t.Errorf("root %v driver %q errors %v; want no root, no driver, one error", tree.Root, tree.Driver, tree.Errors)
	}
	b, err := tree.JSON()
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != "[]\n" {
		t.Errorf("JSON = %q, want an empty list", b)
	}
}

func TestDiscoverNothingMounted(t *testing.T) {
	if _, err := Read(Config{Root: t.TempDir()}, nil); err == nil {
		t.Error("an empty cgroup root read without error")
	}
}

func TestReadSystemdDetectedByKubepodsSlice(t *testing.T) {
	f := newFixture(t, ModeV1)
	workloadFixture(f, systemdPaths)
	// A leftover empty kubepods dir from a former cgroupfs driver must not win.
	f.add(fxNode{path: "/kubepods"})
	tree, err := Read(Config{Root: f.root, Meminfo: meminfo(t, 1<<20, 0), NumCPU: 1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if tree.Driver != DriverSystemd {
		t.Errorf("driver %s, want systemd: kubepods.slice holds the pods", tree.Driver)
	}
}

func TestMain(m *testing.M) {
	os.Exit(m.Run())
}
