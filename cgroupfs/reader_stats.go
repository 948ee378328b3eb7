package cgroupfs

import (
	"encoding/binary"
	"fmt"
	"os"
	"runtime"
	"slices"
	"sync"

	"golang.org/x/sys/unix"
)

// dirent is a sub-directory found by readDir.
type dirent struct {
	name string
	ino  uint64
}

// readDir lists the sub-directories of e with their inodes, and stamps e.
// It reuses e's kept directory handle, keeping one when the cap allows.
func (r *Reader) readDir(e *entry) ([]dirent, error) {
	fd := int(e.dirFD)
	if fd >= 0 {
		if _, err := unix.Seek(fd, 0, 0); err != nil {
			unix.Close(fd)
			e.dirFD, fd = -1, -1
			r.held.Add(-1)
		}
	}
	if fd < 0 {
		var err error
		fd, err = unix.Open(r.b.walk+e.rel, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			return nil, &os.PathError{Op: "open", Path: r.b.walk + e.rel, Err: err}
		}
		if r.maxHeld > 0 && r.take() {
			e.dirFD = int32(fd)
		} else {
			defer unix.Close(fd)
		}
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, &os.PathError{Op: "stat", Path: r.b.walk + e.rel, Err: err}
	}
	e.stamp = stampOf(&st)
	var dirs []dirent
	for {
		n, err := unix.Getdents(fd, r.dirent)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, &os.PathError{Op: "readdirent", Path: r.b.walk + e.rel, Err: err}
		}
		if n <= 0 {
			break
		}
		for b := r.dirent[:n]; len(b) > 19; {
			// struct linux_dirent64: ino u64, off s64, reclen u16, type u8, name.
			ino := binary.NativeEndian.Uint64(b)
			reclen := int(binary.NativeEndian.Uint16(b[16:]))
			typ := b[18]
			name := b[19:reclen]
			b = b[reclen:]
			if i := slices.Index(name, 0); i >= 0 {
				name = name[:i]
			}
			if string(name) == "." || string(name) == ".." {
				continue
			}
			if typ == unix.DT_UNKNOWN {
				var st unix.Stat_t
				if unix.Fstatat(fd, string(name), &st, unix.AT_SYMLINK_NOFOLLOW) == nil && st.Mode&unix.S_IFMT == unix.S_IFDIR {
					typ = unix.DT_DIR
				}
			}
			if typ == unix.DT_DIR {
				dirs = append(dirs, dirent{name: string(name), ino: ino})
			}
		}
	}
	return dirs, nil
}

// classify names e, a sub-directory name of parent, as the kubelet names
// its cgroups.
func (r *Reader) classify(e, parent *entry, name string) {
	switch parent.kind {
	case KindRoot, KindQOS:
		comp, ok := r.b.component(name)
		if parent.kind == KindRoot && ok && slices.Contains(qosClasses, comp) {
			e.kind, e.qos = KindQOS, comp
			return
		}
		e.kind, e.qos = KindPod, parent.qos
		if parent.kind == KindRoot {
			e.qos = QOSGuaranteed
		}
		uid, ok := podUIDFromComponent(comp)
		if !ok {
			e.bad = "cgroup name is no pod, QoS class or container the kubelet creates"
			return
		}
		e.uid = uid
	default:
		e.kind, e.qos = KindContainer, parent.qos
		leaf, ok := ParseContainerLeaf(name)
		if !ok {
			e.id, e.bad = name, "cgroup name is no container cgroup of a known runtime"
			return
		}
		e.id, e.conmon = leaf.ID, leaf.Conmon
	}
}

// job is a node whose stats are to be read.
type job struct {
	e *entry
	n *Node
}

// readNodes builds a fresh tree from the walked one, names resolved, and
// reads every node's stats.
func (r *Reader) readNodes(names Names) *Node {
	if r.flat == nil {
		r.flat, r.nPods, r.nCtr = r.flat[:0], 0, 0
		var walk func(e *entry)
		walk = func(e *entry) {
			e.idx = len(r.flat)
			r.flat = append(r.flat, e)
			switch e.kind {
			case KindPod:
				r.nPods++
			case KindContainer:
				r.nCtr++
			}
			for _, c := range e.children {
				walk(c)
			}
		}
		walk(r.root)
	}
	nodes := make([]Node, len(r.flat))
	kids := make([]*Node, len(r.flat)-1)
	pods := make([]PodRef, r.nPods)
	ctrs := make([]ContainerRef, r.nCtr)
	limits := make([]uint64, len(r.flat))
	jobs := make([]job, len(r.flat))
	off := 0
	for i, e := range r.flat {
		n := &nodes[i]
		n.Kind, n.Path, n.QOS = e.kind, e.path, e.qos
		if e.bad != "" {
			n.Errors = append(n.Errors, e.bad)
		}
		switch e.kind {
		case KindPod:
			p := &pods[0]
			pods = pods[1:]
			n.Pod = p
			p.UID, p.Name = e.uid, Unknown
			if e.uid != "" && names != nil {
				if ns, name, ok := names.Pod(e.uid); ok {
					p.Namespace, p.Name = ns, name
				}
			}
		case KindContainer:
			c := &ctrs[0]
			ctrs = ctrs[1:]
			n.Container = c
			n.Pod = nodes[e.parent.idx].Pod
			n.Conmon = e.conmon
			c.ID, c.Name = e.id, Unknown
			if e.bad == "" && names != nil {
				if name, podUID, ok := names.Container(e.id); ok {
					c.Name = name
					if n.Pod != nil && podUID != n.Pod.UID {
						n.Errors = append(n.Errors, fmt.Sprintf("runtime says the container belongs to pod %s", podUID))
					}
				}
			}
		}
		if e.listErr != "" {
			n.Errors = append(n.Errors, e.listErr)
		}
		k := len(e.children)
		n.Children = kids[off : off+k : off+k]
		for j, c := range e.children {
			n.Children[j] = &nodes[c.idx]
		}
		off += k
		jobs[i] = job{e, n}
	}
	for i := range nodes {
		slices.SortFunc(nodes[i].Children, compareNodes)
	}
	r.readStats(jobs, limits)
	return &nodes[0]
}

// readStats reads the stats of every node. The reads are independent
// system calls, so they are spread over up to GOMAXPROCS goroutines (at
// most 8), each with its own buffer and each writing only the nodes and
// entries it was given.
func (r *Reader) readStats(jobs []job, limits []uint64) {
	workers := min(runtime.GOMAXPROCS(0), 8, (len(jobs)+63)/64)
	if workers <= 1 {
		w := worker{r: r}
		for i, j := range jobs {
			w.stats(j.e, j.n, &limits[i])
		}
		return
	}
	var wg sync.WaitGroup
	for k := range workers {
		wg.Go(func() {
			w := worker{r: r}
			for i := k; i < len(jobs); i += workers {
				w.stats(jobs[i].e, jobs[i].n, &limits[i])
			}
		})
	}
	wg.Wait()
}

// worker reads stat files with its own buffers.
type worker struct {
	r *Reader
	fileReader
}

// stats reads the usage of node n of entry e; limit is where its memory
// limit goes when it has one.
func (w *worker) stats(e *entry, n *Node, limit *uint64) {
	b := &w.r.b
	if b.mem == "" {
		n.Errors = append(n.Errors, b.notMounted["memory"])
	} else {
		usage, lim := v1MemoryUsage, v1MemoryLimit
		if b.v2 {
			usage, lim = v2MemoryUsage, v2MemoryLimit
		}
		n.MemoryBytes = w.uint(e, n, slotMem, b.mem, usage)
		if !e.limitRead || (w.r.reads+e.seq)%w.r.limitEvery == 0 {
			e.limitRead = true
			e.limit, e.limitErr = nil, ""
			data, err := w.file(e, slotNone, b.mem, lim)
			if v, ok, msg := parseLimit(data, err, lim, b.v2); msg != "" {
				e.limitErr = msg
			} else if ok {
				e.limit = &v
			}
		}
		if e.limitErr != "" {
			n.Errors = append(n.Errors, e.limitErr)
		}
		if e.limit != nil {
			*limit = *e.limit
			n.MemoryLimitBytes = limit
		}
	}
	switch {
	case b.cpu == "" && b.v2:
		n.Errors = append(n.Errors, b.notMounted["cpu"])
	case b.cpu == "":
		n.Errors = append(n.Errors, b.notMounted["cpuacct"])
	case b.v2:
		data, err := w.file(e, slotCPU, b.cpu, v2CPUStat)
		n.CPUUsageNanos = cpuStat(n, data, err)
	default:
		n.CPUUsageNanos = w.uint(e, n, slotCPU, b.cpu, v1CPUUsage)
	}
	if b.pids == "" {
		n.Errors = append(n.Errors, b.notMounted["pids"])
	} else {
		n.Pids = w.uint(e, n, slotPids, b.pids, pidsCurrent)
	}
	if b.psi != "" {
		data, err := w.file(e, slotMemPSI, b.psi, memPressure)
		mem := pressure(n, memPressure, data, err)
		data, err = w.file(e, slotCPUPSI, b.psi, cpuPressure)
		cpu := pressure(n, cpuPressure, data, err)
		if mem != nil || cpu != nil {
			n.PSI = &PSI{Memory: mem, CPU: cpu}
		}
	}
}

func (w *worker) uint(e *entry, n *Node, slot int, dir, file string) uint64 {
	data, err := w.file(e, slot, dir, file)
	return parseUintFile(n, data, err, file)
}

// file returns the content of a file of e's cgroup below the kubepods
// directory base, trimmed, in the worker's buffer (valid until its next
// read). A kept file costs one pread at offset 0; otherwise the file is
// opened and read, and kept when slot names one and the cap allows. A kept
// file that fails (ENODEV: the cgroup is gone) is closed and opened again;
// when that fails too, e is marked gone.
func (w *worker) file(e *entry, slot int, base, file string) ([]byte, error) {
	wasKept := false
	if slot != slotNone {
		if fd := e.fds[slot]; fd >= 0 {
			data, err := w.pread(int(fd))
			if err == nil {
				return data, nil
			}
			unix.Close(int(fd))
			e.fds[slot] = -1
			w.r.held.Add(-1)
			wasKept = true
		}
	}
	fd, err := w.open(base, e.rel, file)
	if err != nil {
		if wasKept {
			e.gone = true
		}
		return nil, err
	}
	data, err := w.pread(fd)
	if err == nil && slot != slotNone && w.r.maxHeld > 0 && w.r.take() {
		e.fds[slot] = int32(fd)
	} else {
		unix.Close(fd)
	}
	return data, err
}
