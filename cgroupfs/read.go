package cgroupfs

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unsafe"

	"github.com/opencontainers/cgroups"
	"golang.org/x/sys/unix"
)

// Kind is what a node of the tree stands for; the constants are the JSON
// values.
type Kind string

// Node kinds.
const (
	KindRoot      Kind = "root"
	KindQOS       Kind = "qos"
	KindPod       Kind = "pod"
	KindContainer Kind = "container"
)

// Unknown is the name shown for a pod or container cgroup that no runtime
// object claims.
const Unknown = "unknown"

// PodRef identifies the pod a node belongs to.
type PodRef struct {
	UID       string `json:"uid"`
	Name      string `json:"name"`
	Namespace string `json:"namespace"`
}

// ContainerRef identifies the container a node holds.
type ContainerRef struct {
	ID   string `json:"id"`
	Name string `json:"name"`
}

// PSI is the pressure stall information of a cgroup (cgroup v2, kernel
// 4.20+ with PSI enabled): how much of the time tasks waited for memory and
// for CPU.
type PSI struct {
	Memory *cgroups.PSIStats `json:"memory,omitempty"`
	CPU    *cgroups.PSIStats `json:"cpu,omitempty"`
}

// Node is one cgroup of the kubepods tree with its usage.
type Node struct {
	// Kind is root (kubepods), qos, pod or container.
	Kind Kind `json:"kind"`
	// Path is the cgroup path from the hierarchy root, in the driver's
	// naming: /kubepods/burstable/pod<uid>/<id> or
	// /kubepods.slice/kubepods-burstable.slice/…/cri-containerd-<id>.scope.
	Path string `json:"path"`
	// QOS is guaranteed, burstable or besteffort, read from the path; ""
	// for the root.
	QOS string `json:"qos"`
	// Pod is the pod of a pod or container node, its Name "unknown" when no
	// sandbox claims the UID.
	Pod *PodRef `json:"pod,omitempty"`
	// Container is the container of a container node, its Name "unknown"
	// when the runtime does not know the ID.
	Container *ContainerRef `json:"container,omitempty"`
	// Conmon reports whether a container node holds CRI-O's conmon for the
	// container rather than the container itself.
	Conmon bool `json:"conmon,omitempty"`
	// MemoryBytes is the memory charged to the cgroup and its children,
	// page cache included (v1 memory.usage_in_bytes, v2 memory.current).
	MemoryBytes uint64 `json:"memoryBytes"`
	// MemoryLimitBytes is the memory limit, nil when unlimited (v1's
	// near-MaxInt64 value, v2 "max") or unreadable.
	MemoryLimitBytes *uint64 `json:"memoryLimitBytes"`
	// CPUUsageNanos is the cumulative CPU time of the cgroup and its
	// children in nanoseconds (v1 cpuacct.usage, v2 cpu.stat usage_usec ×
	// 1000); a rate needs two reads.
	CPUUsageNanos uint64 `json:"cpuUsageNanos"`
	// Pids is the number of tasks in the cgroup and its children.
	Pids uint64 `json:"pids"`
	// PSI is the cgroup's pressure, nil where the kernel offers none (v1,
	// no PSI, or PSI disabled).
	PSI *PSI `json:"psi,omitempty"`
	// Errors lists what could not be read for this node (a controller that
	// is not mounted, a missing or malformed file, a name that does not
	// parse); the other values are still good.
	Errors []string `json:"errors,omitempty"`
	// Children are the cgroups below: QoS classes, then pods by namespace
	// and name, then containers by name.
	Children []*Node `json:"children"`
}

// Tree is the kubepods cgroup tree of a node with what discovery found.
type Tree struct {
	Layout
	// Allocatable is node allocatable as the kubelet computes it, beside the
	// limits really set on the kubepods cgroup.
	Allocatable Allocatable `json:"allocatable"`
	// Root is the kubepods cgroup, nil when it does not exist.
	Root *Node `json:"root"`
	// Errors lists problems of the whole tree (no kubepods cgroup, no driver).
	Errors []string `json:"errors,omitempty"`
}

// Read discovers the layout, computes node allocatable and walks the
// kubepods tree once, reading every node's usage. names may be nil (every
// pod and container is then "unknown"). It fails only when no cgroup
// filesystem can be found; a missing kubepods cgroup is a Tree with a nil
// Root and an entry in Errors, and a missing controller or file is an entry
// in that node's Errors.
func Read(cfg Config, names Names) (*Tree, error) {
	l, err := Discover(cfg)
	if err != nil {
		return nil, fmt.Errorf("discover cgroups: %w", err)
	}
	t := &Tree{Layout: l}
	if l.Driver == "" {
		t.Errors = append(t.Errors, fmt.Sprintf("no kubepods cgroup found (neither %s nor %s) and no cgroup driver configured",
			l.Kubepods.ToCgroupfs(), l.Kubepods.ToSystemd()))
	} else {
		t.Root = readTree(l, names, &t.Errors)
	}
	t.Allocatable = allocatable(cfg, l, t.Root)
	return t, nil
}

// Files read per node.
const (
	v1MemoryUsage = "memory.usage_in_bytes"
	v1MemoryLimit = "memory.limit_in_bytes"
	v1CPUUsage    = "cpuacct.usage"
	v2MemoryUsage = "memory.current"
	v2MemoryLimit = "memory.max"
	v2CPUStat     = "cpu.stat"
	pidsCurrent   = "pids.current"
	memPressure   = "memory.pressure"
	cpuPressure   = "cpu.pressure"
)

// v1Unlimited is where "no limit" starts in a v1 memory.limit_in_bytes: the
// kernel reports PAGE_COUNTER_MAX pages, MaxInt64 rounded down to the page
// size, so it depends on the page size; 64 KiB is the largest Linux uses.
const v1Unlimited = math.MaxInt64 &^ (1<<16 - 1)

// reader reads the stats of the cgroups below kubepods. Each controller's
// kubepods directory is resolved once; a node's directory in it is that plus
// the node's path below kubepods.
type reader struct {
	v2         bool
	names      Names
	kubepods   string // KubepodsPath
	driver     Driver
	walk       string // kubepods dir in the hierarchy that is walked
	mem, cpu   string // kubepods dirs, "" when the controller is not mounted
	pids, psi  string
	buf        [1024]byte
	notMounted map[string]string // controller -> the error text, built once
	todo       []pending         // nodes found by the walk, in walk order
	rel        string            // path below kubepods of the node being read
	path       []byte            // the path being opened, NUL-terminated
}

func newReader(l Layout, names Names) *reader {
	r := &reader{v2: l.Mode == ModeV2, names: names, kubepods: l.KubepodsPath, driver: l.Driver, notMounted: map[string]string{}}
	dir := func(ctrl string) string {
		d, ok := l.Mountpoint(ctrl, l.KubepodsPath)
		if !ok {
			r.notMounted[ctrl] = ctrl + ": controller not mounted"
		}
		return d
	}
	r.walk, _ = l.walkDir(l.KubepodsPath)
	r.mem = dir("memory")
	if r.v2 {
		r.cpu = dir("cpu")
	} else {
		r.cpu = dir("cpuacct")
	}
	r.pids = dir("pids")
	// PSI lives in the v2 tree; in hybrid mode it is there too when systemd
	// mirrors the kubepods slices into it.
	if d, ok := l.unifiedPath(l.KubepodsPath); ok {
		if st, err := os.Stat(d); err == nil && st.IsDir() {
			r.psi = d
		}
	}
	return r
}

// readTree walks the kubepods tree; problems of the whole tree go to errs.
func readTree(l Layout, names Names, errs *[]string) *Node {
	r := newReader(l, names)
	if r.walk == "" {
		*errs = append(*errs, "no mounted hierarchy to walk the kubepods cgroup in")
		return nil
	}
	if _, err := os.Stat(r.walk); err != nil {
		*errs = append(*errs, fmt.Sprintf("kubepods cgroup %s: %v", l.KubepodsPath, err))
		return nil
	}
	root := &Node{Kind: KindRoot, Path: l.KubepodsPath}
	r.todo = append(r.todo, pending{root, ""})
	r.children(root, "")
	if root.Children == nil {
		root.Children = []*Node{}
	}
	r.readStats()
	return root
}

// pending is a node whose stats are still to be read, with its path below
// kubepods.
type pending struct {
	n   *Node
	rel string
}

// readStats reads the stats of every node found by the walk. The reads are
// independent system calls, so they are spread over up to GOMAXPROCS
// goroutines (at most 8), each with its own buffer and each writing only the
// nodes it was given.
func (r *reader) readStats() {
	workers := min(runtime.GOMAXPROCS(0), 8, (len(r.todo)+63)/64)
	if workers <= 1 {
		for _, p := range r.todo {
			r.stats(p.n, p.rel)
		}
		return
	}
	var wg sync.WaitGroup
	for w := range workers {
		wr := &reader{v2: r.v2, mem: r.mem, cpu: r.cpu, pids: r.pids, psi: r.psi, notMounted: r.notMounted}
		wg.Go(func() {
			for i := w; i < len(r.todo); i += workers {
				wr.stats(r.todo[i].n, r.todo[i].rel)
			}
		})
	}
	wg.Wait()
}

// children lists the sub-cgroups of n (rel is n's path below kubepods),
// names them and queues them for reading, recursing to the container level;
// cgroups inside a container are not walked (its usage includes them).
func (r *reader) children(n *Node, rel string) {
	entries, err := os.ReadDir(r.walk + rel)
	if err != nil {
		n.Errors = append(n.Errors, fmt.Sprintf("list children: %v", err))
		return
	}
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		crel := rel + "/" + e.Name()
		c := r.classify(n, e.Name())
		c.Path = r.kubepods + crel
		r.todo = append(r.todo, pending{c, crel})
		if c.Kind != KindContainer {
			r.children(c, crel)
		}
		if c.Children == nil {
			c.Children = []*Node{}
		}
		n.Children = append(n.Children, c)
	}
	slices.SortFunc(n.Children, compareNodes)
}

// compareNodes orders siblings for reading: QoS classes first, then pods by
// namespace and name, then containers by name with each CRI-O conmon right
// after its container; the path breaks ties.
func compareNodes(a, b *Node) int {
	if c := cmp.Compare(kindRank(a.Kind), kindRank(b.Kind)); c != 0 {
		return c
	}
	var c int
	switch a.Kind {
	case KindPod:
		c = cmp.Or(strings.Compare(a.Pod.Namespace, b.Pod.Namespace), strings.Compare(a.Pod.Name, b.Pod.Name),
			strings.Compare(a.Pod.UID, b.Pod.UID))
	case KindContainer:
		c = cmp.Or(strings.Compare(a.Container.Name, b.Container.Name), strings.Compare(a.Container.ID, b.Container.ID),
			cmpBool(a.Conmon, b.Conmon))
	}
	return cmp.Or(c, strings.Compare(a.Path, b.Path))
}

func cmpBool(a, b bool) int {
	switch {
	case a == b:
		return 0
	case b:
		return -1
	}
	return 1
}

func kindRank(k Kind) int {
	switch k {
	case KindQOS:
		return 0
	case KindPod:
		return 1
	}
	return 2
}

// component returns the last name component of a slice or cgroupfs
// directory name: "burstable", "pod<uid>".
func (r *reader) component(name string) (string, bool) {
	if r.driver == DriverSystemd {
		if !strings.HasSuffix(name, systemdSliceSuffix) {
			return "", false
		}
		parts := ParseSystemd(name)
		if len(parts) == 0 {
			return "", false
		}
		return parts[len(parts)-1], true
	}
	return name, true
}

// classify makes the node for directory name below parent.
func (r *reader) classify(parent *Node, name string) *Node {
	switch parent.Kind {
	case KindRoot, KindQOS:
		comp, ok := r.component(name)
		if parent.Kind == KindRoot && ok && slices.Contains(qosClasses, comp) {
			return &Node{Kind: KindQOS, QOS: comp}
		}
		qos := parent.QOS
		if parent.Kind == KindRoot {
			qos = QOSGuaranteed
		}
		n := &Node{Kind: KindPod, QOS: qos}
		uid, ok := podUIDFromComponent(comp)
		if !ok {
			n.Pod = &PodRef{Name: Unknown}
			n.Errors = append(n.Errors, "cgroup name is no pod, QoS class or container the kubelet creates")
			return n
		}
		n.Pod = &PodRef{UID: uid, Name: Unknown}
		if r.names != nil {
			if ns, pname, ok := r.names.Pod(uid); ok {
				n.Pod.Namespace, n.Pod.Name = ns, pname
			}
		}
		return n
	default:
		n := &Node{Kind: KindContainer, QOS: parent.QOS, Pod: parent.Pod}
		leaf, ok := ParseContainerLeaf(name)
		if !ok {
			n.Container = &ContainerRef{ID: name, Name: Unknown}
			n.Errors = append(n.Errors, "cgroup name is no container cgroup of a known runtime")
			return n
		}
		n.Conmon = leaf.Conmon
		n.Container = &ContainerRef{ID: leaf.ID, Name: Unknown}
		if r.names != nil {
			if cname, podUID, ok := r.names.Container(leaf.ID); ok {
				n.Container.Name = cname
				if parent.Pod != nil && podUID != parent.Pod.UID {
					n.Errors = append(n.Errors, fmt.Sprintf("runtime says the container belongs to pod %s", podUID))
				}
			}
		}
		return n
	}
}

// stats reads the usage of node n, whose path below kubepods is rel.
func (r *reader) stats(n *Node, rel string) {
	r.rel = rel
	if r.mem == "" {
		n.Errors = append(n.Errors, r.notMounted["memory"])
	} else if r.v2 {
		n.MemoryBytes = r.uint(n, r.mem, v2MemoryUsage)
		n.MemoryLimitBytes = r.limit(n, r.mem, v2MemoryLimit)
	} else {
		n.MemoryBytes = r.uint(n, r.mem, v1MemoryUsage)
		n.MemoryLimitBytes = r.limit(n, r.mem, v1MemoryLimit)
	}
	switch {
	case r.cpu == "" && r.v2:
		n.Errors = append(n.Errors, r.notMounted["cpu"])
	case r.cpu == "":
		n.Errors = append(n.Errors, r.notMounted["cpuacct"])
	case r.v2:
		n.CPUUsageNanos = r.cpuStat(n, r.cpu)
	default:
		n.CPUUsageNanos = r.uint(n, r.cpu, v1CPUUsage)
	}
	if r.pids == "" {
		n.Errors = append(n.Errors, r.notMounted["pids"])
	} else {
		n.Pids = r.uint(n, r.pids, pidsCurrent)
	}
	if r.psi != "" {
		mem, cpu := r.pressure(n, r.psi, memPressure), r.pressure(n, r.psi, cpuPressure)
		if mem != nil || cpu != nil {
			n.PSI = &PSI{Memory: mem, CPU: cpu}
		}
	}
}

// read returns the content of file in the cgroup at r.rel below the
// kubepods directory base, trimmed, in r.buf (valid until the next read).
//
// A walk of thousands of cgroups is all system calls, so each file costs
// exactly three (open, one read, close) and no allocation: the path is built
// NUL-terminated in a reused buffer. A read shorter than the buffer is the
// whole file: cgroup files (kernfs) hand out their content in one read, and
// a short read of a regular file is its end; the files read here are far
// smaller than the buffer. Opening relative to a directory handle (openat)
// was measured to save nothing on cgroupfs, where the open itself (a
// seq_file set up per open) costs far more than resolving the path.
func (r *reader) read(base, file string) ([]byte, error) {
	r.path = append(r.path[:0], base...)
	r.path = append(r.path, r.rel...)
	r.path = append(r.path, '/')
	r.path = append(r.path, file...)
	r.path = append(r.path, 0)
	atFDCWD := unix.AT_FDCWD
	fd, _, errno := unix.Syscall6(unix.SYS_OPENAT, uintptr(atFDCWD), uintptr(unsafe.Pointer(&r.path[0])),
		uintptr(unix.O_RDONLY|unix.O_CLOEXEC), 0, 0, 0)
	if errno != 0 {
		return nil, errno
	}
	defer unix.Close(int(fd))
	for {
		k, err := unix.Read(int(fd), r.buf[:])
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, err
		}
		return bytes.TrimSpace(r.buf[:k]), nil
	}
}

func fileError(file string, err error) string {
	if errors.Is(err, fs.ErrNotExist) {
		return file + ": missing"
	}
	return fmt.Sprintf("%s: %v", file, err)
}

func (r *reader) uint(n *Node, dir, file string) uint64 {
	b, err := r.read(dir, file)
	if err != nil {
		n.Errors = append(n.Errors, fileError(file, err))
		return 0
	}
	v, err := parseUint(b)
	if err != nil {
		n.Errors = append(n.Errors, fileError(file, err))
	}
	return v
}

// parseUint parses a cgroup counter; a negative value (a kernel accounting
// bug some memory counters show) reads as 0, as in runc's fscommon.
func parseUint(b []byte) (uint64, error) {
	if len(b) > 0 && len(b) < 20 { // up to 19 digits cannot overflow
		var v uint64
		for _, c := range b {
			if c < '0' || c > '9' {
				goto slow
			}
			v = v*10 + uint64(c-'0')
		}
		return v, nil
	}
slow:
	if len(b) > 0 && b[0] == '-' {
		if _, err := strconv.ParseInt(string(b), 10, 64); err == nil || errors.Is(err, strconv.ErrRange) {
			return 0, nil
		}
	}
	v, err := strconv.ParseUint(string(b), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("parse %q: %w", b, errors.Unwrap(err))
	}
	return v, nil
}

func (r *reader) limit(n *Node, dir, file string) *uint64 {
	b, err := r.read(dir, file)
	if err != nil {
		n.Errors = append(n.Errors, fileError(file, err))
		return nil
	}
	if string(b) == "max" {
		return nil
	}
	v, err := parseUint(b)
	if err != nil {
		n.Errors = append(n.Errors, fileError(file, err))
		return nil
	}
	if !r.v2 && v >= v1Unlimited {
		return nil
	}
	return &v
}

// cpuStat returns usage_usec of a v2 cpu.stat in nanoseconds.
func (r *reader) cpuStat(n *Node, dir string) uint64 {
	b, err := r.read(dir, v2CPUStat)
	if err != nil {
		n.Errors = append(n.Errors, fileError(v2CPUStat, err))
		return 0
	}
	for line := range bytes.SplitSeq(b, []byte{'\n'}) {
		if v, ok := bytes.CutPrefix(line, []byte("usage_usec ")); ok {
			usec, err := parseUint(v)
			if err != nil {
				n.Errors = append(n.Errors, fileError(v2CPUStat, err))
			}
			return usec * 1000
		}
	}
	n.Errors = append(n.Errors, v2CPUStat+": no usage_usec")
	return 0
}

// pressure reads a PSI file. A missing file (kernel without PSI, PSI
// disabled for the cgroup) or EOPNOTSUPP (psi=0 on the kernel command line)
// is no error: there is just no pressure to show.
func (r *reader) pressure(n *Node, dir, file string) *cgroups.PSIStats {
	b, err := r.read(dir, file)
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, unix.EOPNOTSUPP) {
		return nil
	}
	if err != nil {
		n.Errors = append(n.Errors, fileError(file, err))
		return nil
	}
	p, err := parsePSI(b)
	if err != nil {
		n.Errors = append(n.Errors, fileError(file, err))
		return nil
	}
	return p
}

// parsePSI parses "some avg10=0.00 avg60=0.00 avg300=0.00 total=0" and the
// matching "full" line.
func parsePSI(b []byte) (*cgroups.PSIStats, error) {
	var p cgroups.PSIStats
	for line := range strings.SplitSeq(string(b), "\n") {
		kind, rest, _ := strings.Cut(line, " ")
		var d *cgroups.PSIData
		switch kind {
		case "some":
			d = &p.Some
		case "full":
			d = &p.Full
		default:
			continue
		}
		for field := range strings.FieldsSeq(rest) {
			k, v, ok := strings.Cut(field, "=")
			if !ok {
				return nil, fmt.Errorf("psi field %q", field)
			}
			var err error
			switch k {
			case "avg10":
				d.Avg10, err = strconv.ParseFloat(v, 64)
			case "avg60":
				d.Avg60, err = strconv.ParseFloat(v, 64)
			case "avg300":
				d.Avg300, err = strconv.ParseFloat(v, 64)
			case "total":
				d.Total, err = strconv.ParseUint(v, 10, 64)
			}
			if err != nil {
				return nil, fmt.Errorf("psi field %q: %w", field, err)
			}
		}
	}
	return &p, nil
}
