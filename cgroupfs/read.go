package cgroupfs

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"strconv"
	"strings"
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
// in that node's Errors. A caller that reads the tree again and again (the
// dashboard) keeps a Reader instead, which makes every read after the first
// far cheaper.
func Read(cfg Config, names Names) (*Tree, error) {
	cfg.MaxOpenFiles = -1 // nothing to keep for a next read
	r, err := NewReader(cfg)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	return r.Read(names)
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
func (b *bases) component(name string) (string, bool) {
	if b.driver == DriverSystemd {
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

// fileReader reads cgroup files with reused buffers.
//
// A walk of thousands of cgroups is all system calls, so a file read once
// costs exactly three (open, one read, close) and a kept file one (pread at
// offset 0), with no allocation: the path is built NUL-terminated in a
// reused buffer. A read shorter than the buffer is the whole file: cgroup
// files (kernfs) hand out their content in one read, and a short read of a
// regular file is its end; the files read here are far smaller than the
// buffer. Opening relative to a directory handle (openat) was measured to
// save nothing on cgroupfs, where the open itself (a seq_file set up per
// open) costs far more than resolving the path.
type fileReader struct {
	buf  [1024]byte
	path []byte // the path being opened, NUL-terminated
}

// open opens file in the cgroup at rel below the kubepods directory base.
func (f *fileReader) open(base, rel, file string) (int, error) {
	f.path = append(f.path[:0], base...)
	f.path = append(f.path, rel...)
	f.path = append(f.path, '/')
	f.path = append(f.path, file...)
	f.path = append(f.path, 0)
	atFDCWD := unix.AT_FDCWD
	fd, _, errno := unix.Syscall6(unix.SYS_OPENAT, uintptr(atFDCWD), uintptr(unsafe.Pointer(&f.path[0])),
		uintptr(unix.O_RDONLY|unix.O_CLOEXEC), 0, 0, 0)
	if errno != 0 {
		return -1, errno
	}
	return int(fd), nil
}

// pread reads fd from offset 0 into f.buf and returns the content trimmed
// (valid until the next read). cgroupfs hands out fresh values to a read
// at offset 0 of a file that stays open.
func (f *fileReader) pread(fd int) ([]byte, error) {
	for {
		k, err := unix.Pread(fd, f.buf[:], 0)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, err
		}
		return bytes.TrimSpace(f.buf[:k]), nil
	}
}

// readAt returns the trimmed content of file in the cgroup at rel below the
// kubepods directory base, opening and closing it.
func (f *fileReader) readAt(base, rel, file string) ([]byte, error) {
	fd, err := f.open(base, rel, file)
	if err != nil {
		return nil, err
	}
	defer unix.Close(fd)
	return f.pread(fd)
}

func fileError(file string, err error) string {
	if errors.Is(err, fs.ErrNotExist) {
		return file + ": missing"
	}
	return fmt.Sprintf("%s: %v", file, err)
}

// parseUintFile parses a counter file read with err, recording a problem
// in n.Errors.
func parseUintFile(n *Node, b []byte, err error, file string) uint64 {
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

// parseLimit parses a memory limit file read with err: ok is false when
// there is no limit, msg is the problem when it cannot be read.
func parseLimit(b []byte, err error, file string, v2 bool) (v uint64, ok bool, msg string) {
	if err != nil {
		return 0, false, fileError(file, err)
	}
	if string(b) == "max" {
		return 0, false, ""
	}
	v, err = parseUint(b)
	if err != nil {
		return 0, false, fileError(file, err)
	}
	if !v2 && v >= v1Unlimited {
		return 0, false, ""
	}
	return v, true, ""
}

// cpuStat returns usage_usec of a v2 cpu.stat read with err, in
// nanoseconds.
func cpuStat(n *Node, b []byte, err error) uint64 {
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

// pressure parses a PSI file read with err. A missing file (kernel without
// PSI, PSI disabled for the cgroup) or EOPNOTSUPP (psi=0 on the kernel
// command line) is no error: there is just no pressure to show.
func pressure(n *Node, file string, b []byte, err error) *cgroups.PSIStats {
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
