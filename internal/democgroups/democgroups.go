// Package democgroups keeps a simulated kubepods cgroup tree on disk for
// the demo: a cgroup v2 hierarchy with the systemd driver, as a node with
// containerd lays it out (kubepods.slice, a slice per QoS class, a slice per
// pod, a cri-containerd-<id>.scope per container), with memory.current,
// memory.max, cpu.stat, pids.current and PSI files whose values move. The
// real cgroupfs reader reads it exactly as it reads /sys/fs/cgroup, so
// `nodegc --demo` shows the cgroup tree the dashboard shows on a node.
package democgroups

import (
	"errors"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// Pod is a running pod of the simulated node and its running containers.
type Pod struct {
	UID        string
	Containers []string // container IDs
}

// Tree is the simulated hierarchy under one root directory. It is not safe
// for concurrent use.
type Tree struct {
	root  string
	rng   *rand.Rand
	cgs   map[string]*cgroup // by path relative to root
	tick  uint64
	total uint64 // the node's memory, for kubepods' memory.max
	// order is every cgroup path in a stable order; each flush writes the
	// files of at most writesPerFlush of them, in turn, plus the new ones,
	// so a large demo node costs little per second.
	order []string
	next  int
}

// writesPerFlush bounds the cgroups whose files one Sync rewrites.
const writesPerFlush = 300

// cgroup is the moving state of one simulated cgroup.
type cgroup struct {
	mem, limit uint64 // bytes; limit 0 is "max"
	cpuUsec    uint64
	cpuRate    uint64 // microseconds of CPU per tick
	pids       uint64
	leaf       bool
	fresh      bool // its files are not written yet
}

// MemTotal is the simulated node's memory (64 GiB); Meminfo writes it.
const MemTotal = 64 << 30

// NumCPU is the simulated node's CPU count.
const NumCPU = 16

// New creates the hierarchy's fixed part under root (created 0700): the v2
// root with its controllers, kubepods.slice limited to the node's memory,
// and the three QoS slices.
func New(root string, seed int64) (*Tree, error) {
	t := &Tree{root: root, rng: rand.New(rand.NewPCG(uint64(seed), 0x6e6f6465)), cgs: map[string]*cgroup{}, total: MemTotal}
	if err := os.MkdirAll(root, 0o700); err != nil {
		return nil, fmt.Errorf("demo cgroups: %w", err)
	}
	if err := os.WriteFile(filepath.Join(root, "cgroup.controllers"), []byte("cpuset cpu io memory hugetlb pids\n"), 0o600); err != nil {
		return nil, fmt.Errorf("demo cgroups: %w", err)
	}
	for _, p := range []string{"kubepods.slice", "kubepods.slice/kubepods-burstable.slice", "kubepods.slice/kubepods-besteffort.slice"} {
		if err := t.ensure(p, false); err != nil {
			return nil, err
		}
	}
	t.cgs["kubepods.slice"].limit = MemTotal // allocatable: no reservations configured
	return t, t.flush()
}

// Meminfo is a /proc/meminfo of the simulated node, for cgroupfs.Config.
func Meminfo() string {
	return fmt.Sprintf("MemTotal:       %d kB\nMemFree:        %d kB\nHugetlb:               0 kB\n", MemTotal>>10, MemTotal>>11)
}

// qos picks a pod's QoS class from its UID, so a pod keeps its class.
func qos(uid string) string {
	h := fnv.New32a()
	h.Write([]byte(uid))
	switch h.Sum32() % 4 {
	case 0:
		return "guaranteed"
	case 1, 2:
		return "burstable"
	}
	return "besteffort"
}

// podPath is the pod's slice as the kubelet's systemd driver names it.
func podPath(uid string) string {
	id := strings.ReplaceAll(uid, "-", "_")
	switch q := qos(uid); q {
	case "guaranteed":
		return "kubepods.slice/kubepods-pod" + id + ".slice"
	default:
		return "kubepods.slice/kubepods-" + q + ".slice/kubepods-" + q + "-pod" + id + ".slice"
	}
}

// Sync makes the tree hold exactly the pods and containers given, then
// moves every cgroup's usage one tick on and writes the files: a new
// container starts small and grows, CPU time accumulates, the parents sum
// their children.
func (t *Tree) Sync(pods []Pod) error {
	want := map[string]bool{}
	for _, p := range pods {
		pp := podPath(p.UID)
		want[pp] = true
		if err := t.ensure(pp, false); err != nil {
			return err
		}
		for _, id := range p.Containers {
			cp := pp + "/cri-containerd-" + id + ".scope"
			want[cp] = true
			if err := t.ensure(cp, true); err != nil {
				return err
			}
		}
	}
	// Remove what went, deepest first.
	var gone []string
	for p := range t.cgs {
		if strings.Contains(p, "-pod") && !want[p] {
			gone = append(gone, p)
		}
	}
	for len(gone) > 0 {
		longest := 0
		for i, p := range gone {
			if len(p) > len(gone[longest]) {
				longest = i
			}
		}
		p := gone[longest]
		os.RemoveAll(filepath.Join(t.root, p))
		delete(t.cgs, p)
		if i := slices.Index(t.order, p); i >= 0 {
			t.order = slices.Delete(t.order, i, i+1)
		}
		gone = append(gone[:longest], gone[longest+1:]...)
	}
	t.tick++
	return t.flush()
}

// ensure adds a cgroup (its directory) when missing.
func (t *Tree) ensure(p string, leaf bool) error {
	if _, ok := t.cgs[p]; ok {
		return nil
	}
	if err := os.MkdirAll(filepath.Join(t.root, p), 0o700); err != nil {
		return fmt.Errorf("demo cgroups: %w", err)
	}
	c := &cgroup{leaf: leaf, fresh: true}
	t.order = append(t.order, p)
	if leaf {
		c.mem = 8<<20 + t.rng.Uint64N(64<<20)
		c.cpuRate = t.rng.Uint64N(400_000) // up to 0.4 CPU per second
		c.pids = 1 + t.rng.Uint64N(12)
		if t.rng.IntN(3) == 0 {
			c.limit = 256<<20 + t.rng.Uint64N(768<<20)
		}
	}
	t.cgs[p] = c
	return nil
}

// flush moves the leaves' usage on and writes every cgroup's files, the
// inner ones summing their subtree.
func (t *Tree) flush() error {
	type sum struct{ mem, cpu, pids uint64 }
	sums := map[string]*sum{}
	for p, c := range t.cgs {
		if !c.leaf {
			continue
		}
		// A random walk, held under the limit.
		step := int64(t.rng.Uint64N(8<<20)) - 4<<20
		c.mem = uint64(max(int64(c.mem)+step, 4<<20))
		if c.limit != 0 && c.mem > c.limit*9/10 {
			c.mem = c.limit * 8 / 10
		}
		c.cpuUsec += c.cpuRate/2 + t.rng.Uint64N(c.cpuRate+1)
		if t.rng.IntN(10) == 0 {
			c.pids = max(1, c.pids+t.rng.Uint64N(3)-1)
		}
		for q := p; strings.Contains(q, "/"); {
			q = q[:strings.LastIndexByte(q, '/')]
			s := sums[q]
			if s == nil {
				s = &sum{}
				sums[q] = s
			}
			s.mem += c.mem
			s.cpu += c.cpuUsec
			s.pids += c.pids
		}
	}
	due := map[string]bool{}
	for i := 0; i < min(writesPerFlush, len(t.order)); i++ {
		due[t.order[(t.next+i)%len(t.order)]] = true
	}
	if len(t.order) > 0 {
		t.next = (t.next + writesPerFlush) % len(t.order)
	}
	for p, c := range t.cgs {
		if !c.fresh && !due[p] {
			continue
		}
		c.fresh = false
		mem, cpu, pids := c.mem, c.cpuUsec, c.pids
		if !c.leaf {
			if s := sums[p]; s != nil {
				mem, cpu, pids = s.mem, s.cpu, s.pids
			} else {
				mem, cpu, pids = 0, 0, 0
			}
		}
		if err := t.write(p, c, mem, cpu, pids); err != nil {
			return err
		}
	}
	return nil
}

// write writes one cgroup's files.
func (t *Tree) write(p string, c *cgroup, mem, cpu, pids uint64) error {
	u := func(v uint64) string { return strconv.FormatUint(v, 10) }
	limit := "max"
	if c.limit != 0 {
		limit = u(c.limit)
	}
	avg := float64(t.rng.IntN(300)) / 100
	psi := fmt.Sprintf("some avg10=%.2f avg60=%.2f avg300=%.2f total=%d\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0\n", avg, avg/2, avg/4, cpu/10)
	dir := filepath.Join(t.root, p)
	for name, content := range map[string]string{
		"memory.current":  u(mem) + "\n",
		"memory.max":      limit + "\n",
		"cpu.stat":        "usage_usec " + u(cpu) + "\nuser_usec " + u(cpu*7/10) + "\nsystem_usec " + u(cpu*3/10) + "\n",
		"pids.current":    u(pids) + "\n",
		"memory.pressure": psi,
		"cpu.pressure":    psi,
	} {
		if err := writeInPlace(filepath.Join(dir, name), content); err != nil {
			return fmt.Errorf("demo cgroups: %w", err)
		}
	}
	return nil
}

// fileSize is the size every simulated cgroup file is padded to.
const fileSize = 192

// writeInPlace overwrites the file's bytes in place, padded with newlines
// to fileSize, without truncating it: the dashboard's reader keeps cgroup
// files open and re-reads them with pread, as the kernel's files allow, so
// the file must stay the same inode and never read empty.
func writeInPlace(path, content string) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	b := make([]byte, max(fileSize, len(content)))
	copy(b, content)
	for i := len(content); i < len(b); i++ {
		b[i] = '\n'
	}
	_, err = f.WriteAt(b, 0)
	return errors.Join(err, f.Close())
}
