package cgroupfs

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"reflect"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// DefaultMaxOpenFiles is the most files a Reader keeps open when
// Config.MaxOpenFiles is 0 (it also stays under three quarters of the
// process's limit on open files, which Go raises to the hard limit at
// start). It covers 500 pods and 2,000 containers on cgroup v1 (three stat
// files per cgroup plus one handle per pod directory: 8,012) and on v2
// (five: 13,018). Each cgroup file held open after a read pins about
// 4.4 KiB of kernel memory (the open file and its seq_file page, measured on
// Linux 6.18): some 35 MiB for that node on v1, 57 MiB on v2, 70 MiB at the
// cap. Set Config.MaxOpenFiles lower to trade that memory for CPU.
const DefaultMaxOpenFiles = 16384

// Re-read periods of a Reader, in reads. With the dashboard's 2 s refresh a
// changed limit shows within 10 s and a full re-walk happens every minute.
const (
	// limitEvery is how often a cgroup's memory limit is re-read; limits
	// change rarely (a pod resize, the kubelet updating the QoS cgroups), so
	// each node re-reads its limit every limitEvery reads, the nodes
	// staggered so that each read does a share of them.
	limitEvery = 5
	// rewalkEvery is how often the layout is discovered again and every
	// directory re-listed, whatever the change checks say.
	rewalkEvery = 30
)

// Reader reads the kubepods tree again and again, as the dashboard does on
// every refresh, for a fraction of what a one-shot Read costs. Between
// reads it keeps the tree it walked and the stat files it opened:
//
//   - A read re-reads each kept file with one pread at offset 0 (cgroupfs
//     hands out fresh values to a pread at 0 of an open file) instead of an
//     open, a read and a close.
//   - A directory is re-listed only when it changed: its link count (2 plus
//     its sub-directories on cgroupfs) or its modification time differs from
//     the last listing, a file of a child vanished (ENODEV on the kept file),
//     or every rewalkEvery reads. A child whose inode changed is a new cgroup.
//   - Memory limits are re-read every limitEvery reads (see limitEvery).
//   - At most Config.MaxOpenFiles files are kept open; beyond that a file is
//     opened, read and closed each time. The files of vanished cgroups are
//     closed.
//
// A Reader is safe for concurrent use; reads are serialized. Each Read
// returns a new Tree that shares nothing with the Reader or with earlier
// trees, so the caller may keep the previous one to compute rates. Close
// releases the files.
type Reader struct {
	mu          sync.Mutex
	cfg         Config
	layout      Layout
	b           bases
	root        *entry
	flat        []*entry // root first, depth first; nil after a change
	nPods, nCtr int      // in flat
	reads       int
	seq         int
	held        atomic.Int64 // files kept open
	maxHeld     int64
	limitEvery  int
	rewalkEvery int
	closed      bool
	dirent      []byte // getdents buffer
	path        []byte
}

// bases are the kubepods directories of each hierarchy a node's files live
// in; a node's directory is a base plus its path below kubepods.
type bases struct {
	v2         bool
	kubepods   string // KubepodsPath
	driver     Driver
	walk       string // kubepods dir in the hierarchy that is walked
	mem, cpu   string // "" when the controller is not mounted
	pids, psi  string
	notMounted map[string]string // controller -> the error text
}

func newBases(l Layout) bases {
	b := bases{v2: l.Mode == ModeV2, kubepods: l.KubepodsPath, driver: l.Driver, notMounted: map[string]string{}}
	dir := func(ctrl string) string {
		d, ok := l.Mountpoint(ctrl, l.KubepodsPath)
		if !ok {
			b.notMounted[ctrl] = ctrl + ": controller not mounted"
		}
		return d
	}
	b.walk, _ = l.walkDir(l.KubepodsPath)
	b.mem = dir("memory")
	if b.v2 {
		b.cpu = dir("cpu")
	} else {
		b.cpu = dir("cpuacct")
	}
	b.pids = dir("pids")
	// PSI lives in the v2 tree; in hybrid mode it is there too when systemd
	// mirrors the kubepods slices into it.
	if d, ok := l.unifiedPath(l.KubepodsPath); ok {
		if st, err := os.Stat(d); err == nil && st.IsDir() {
			b.psi = d
		}
	}
	return b
}

// Slots of the files a node keeps open.
const (
	slotMem = iota
	slotCPU
	slotPids
	slotMemPSI
	slotCPUPSI
	numSlots
	slotNone = -1 // a file that is never kept open (the memory limit)
)

// stamp is what tells a directory changed since it was listed.
type stamp struct {
	ino, nlink uint64
	mtime      unix.Timespec
}

func stampOf(st *unix.Stat_t) stamp {
	return stamp{ino: st.Ino, nlink: uint64(st.Nlink), mtime: st.Mtim}
}

// entry is one cgroup of the walked tree, kept between reads.
type entry struct {
	parent   *entry
	rel      string // path below kubepods, "" for the root
	path     string // kubepods + rel
	ino      uint64
	kind     Kind
	qos      string
	uid      string // pod: its UID, "" when the name does not parse
	id       string // container: its ID, or the directory name when it does not parse
	conmon   bool
	bad      string // why the name does not parse
	seq      int
	idx      int // index in Reader.flat
	children []*entry

	// Listing (root, QoS and pod directories only).
	dirFD    int32 // kept directory handle, -1 when none
	stamp    stamp
	listedAt int // the read that listed it
	listErr  string
	stale    bool // re-list at the next read

	// Reading.
	fds       [numSlots]int32 // kept files, -1 when none
	gone      bool            // a kept file vanished during the last read
	limitRead bool
	limit     *uint64 // nil when unlimited or unreadable
	limitErr  string
}

// NewReader discovers the layout and returns a Reader that has read
// nothing yet; the first Read walks the tree. It fails as Read does.
func NewReader(cfg Config) (*Reader, error) {
	l, err := Discover(cfg)
	if err != nil {
		return nil, fmt.Errorf("discover cgroups: %w", err)
	}
	r := &Reader{cfg: cfg, layout: l, b: newBases(l), limitEvery: limitEvery, rewalkEvery: rewalkEvery,
		dirent: make([]byte, 32<<10)}
	switch {
	case cfg.MaxOpenFiles < 0:
		r.maxHeld = 0
	case cfg.MaxOpenFiles > 0:
		r.maxHeld = int64(cfg.MaxOpenFiles)
	default:
		r.maxHeld = DefaultMaxOpenFiles
		var lim unix.Rlimit
		if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &lim); err == nil && lim.Cur/4*3 < uint64(r.maxHeld) {
			r.maxHeld = int64(lim.Cur / 4 * 3)
		}
	}
	return r, nil
}

// OpenFiles returns how many files the Reader keeps open.
func (r *Reader) OpenFiles() int { return int(r.held.Load()) }

// Close closes the files the Reader keeps open. A Read after Close fails.
func (r *Reader) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.drop()
	r.closed = true
	return nil
}

// Read reads the kubepods tree: discovery as it was found (again every
// rewalkEvery reads), node allocatable, and every node's usage, with names
// resolved through names (which may be nil). Its result is what the
// one-shot Read would return at that moment, except that a memory limit may
// be up to limitEvery reads old.
func (r *Reader) Read(names Names) (*Tree, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil, errors.New("read cgroups: reader closed")
	}
	r.reads++
	full := r.reads > 1 && (r.root == nil || r.reads%r.rewalkEvery == 0)
	if full {
		l, err := Discover(r.cfg)
		if err != nil {
			return nil, fmt.Errorf("discover cgroups: %w", err)
		}
		if !reflect.DeepEqual(l, r.layout) {
			r.drop()
			r.layout, r.b = l, newBases(l)
		}
	}
	t := &Tree{Layout: r.layout}
	if r.layout.Driver == "" {
		t.Errors = append(t.Errors, fmt.Sprintf("no kubepods cgroup found (neither %s nor %s) and no cgroup driver configured",
			r.layout.Kubepods.ToCgroupfs(), r.layout.Kubepods.ToSystemd()))
	} else if r.walkRoot(full, &t.Errors) {
		t.Root = r.readNodes(names)
		if r.sweep() { // a cgroup vanished since the last read: once more
			r.walkRoot(false, &t.Errors)
			t.Root = r.readNodes(names)
			r.sweep()
		}
	}
	t.Allocatable = allocatable(r.cfg, r.layout, t.Root)
	return t, nil
}

// walkRoot brings the walked tree up to date, reporting false when there is
// no kubepods cgroup to read.
func (r *Reader) walkRoot(full bool, errs *[]string) bool {
	if r.b.walk == "" {
		r.drop()
		*errs = append(*errs, "no mounted hierarchy to walk the kubepods cgroup in")
		return false
	}
	st, err := os.Stat(r.b.walk)
	if err != nil {
		r.drop()
		*errs = append(*errs, fmt.Sprintf("kubepods cgroup %s: %v", r.b.kubepods, err))
		return false
	}
	ino := inoOf(st)
	if r.root == nil || r.root.ino != ino {
		r.drop()
		r.root = r.newEntry(nil, "", ino)
		r.root.kind = KindRoot
		r.list(r.root)
		return true
	}
	r.sync(r.root, full)
	return true
}

func inoOf(st os.FileInfo) uint64 {
	if s, ok := st.Sys().(*unix.Stat_t); ok {
		return s.Ino
	}
	return 0
}

// sweep marks the parents of entries whose kept files vanished as stale,
// reporting whether there were any.
func (r *Reader) sweep() bool {
	any := false
	for _, e := range r.flat {
		if e.gone {
			e.gone = false
			any = true
			if e.parent != nil {
				e.parent.stale = true
			} else {
				e.stale = true
			}
		}
	}
	return any
}

// drop forgets the walked tree and closes its files.
func (r *Reader) drop() {
	if r.root != nil {
		r.closeTree(r.root)
	}
	r.root, r.flat = nil, nil
}

func (r *Reader) closeTree(e *entry) {
	if e.dirFD >= 0 {
		unix.Close(int(e.dirFD))
		e.dirFD = -1
		r.held.Add(-1)
	}
	for i, fd := range e.fds {
		if fd >= 0 {
			unix.Close(int(fd))
			e.fds[i] = -1
			r.held.Add(-1)
		}
	}
	for _, c := range e.children {
		r.closeTree(c)
	}
}

// take reserves one kept file, reporting false when the cap is reached.
func (r *Reader) take() bool {
	if r.held.Add(1) <= r.maxHeld {
		return true
	}
	r.held.Add(-1)
	return false
}

func (r *Reader) newEntry(parent *entry, name string, ino uint64) *entry {
	e := &entry{parent: parent, ino: ino, seq: r.seq, dirFD: -1}
	r.seq++
	for i := range e.fds {
		e.fds[i] = -1
	}
	if parent != nil {
		e.rel = parent.rel + "/" + name
		r.classify(e, parent, name)
	}
	e.path = r.b.kubepods + e.rel
	return e
}

// sync re-lists e when it changed, then its sub-directories down to the
// pod level; force re-lists all of them.
func (r *Reader) sync(e *entry, force bool) {
	if e.kind == KindContainer || e.listedAt == r.reads {
		return
	}
	changed := force || e.stale
	if !changed {
		var st unix.Stat_t
		var err error
		if e.dirFD >= 0 {
			err = unix.Fstat(int(e.dirFD), &st)
		} else {
			err = unix.Stat(r.b.walk+e.rel, &st)
		}
		changed = err != nil || stampOf(&st) != e.stamp
	}
	if changed {
		r.list(e)
	}
	for _, c := range e.children {
		r.sync(c, force)
	}
}

// list reads the sub-directories of e and merges them into e.children:
// those still there (same name, same inode) are kept with their open files,
// vanished ones are closed, and new ones are created and, down to the pod
// level, listed in turn. Containers are not walked into: their usage
// includes the cgroups inside them.
func (r *Reader) list(e *entry) {
	e.listedAt, e.stale, e.listErr = r.reads, false, ""
	dirs, err := r.readDir(e)
	if err != nil {
		e.listErr = fmt.Sprintf("list children: %v", err)
		for _, c := range e.children {
			r.closeTree(c)
		}
		e.children, r.flat = nil, nil
		return
	}
	old := e.children
	var byName map[string]*entry
	if len(old) > 0 {
		byName = make(map[string]*entry, len(old))
		for _, c := range old {
			byName[c.rel[len(e.rel)+1:]] = c
		}
	}
	kids := make([]*entry, 0, len(dirs))
	changed := len(dirs) != len(old)
	for _, d := range dirs {
		if c, ok := byName[d.name]; ok {
			delete(byName, d.name)
			if c.ino == d.ino {
				kids = append(kids, c)
				continue
			}
			r.closeTree(c)
		}
		changed = true
		c := r.newEntry(e, d.name, d.ino)
		kids = append(kids, c)
		if c.kind != KindContainer {
			r.list(c)
		}
	}
	for _, c := range byName {
		r.closeTree(c)
	}
	e.children = kids
	if changed {
		r.flat = nil
	}
}

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
