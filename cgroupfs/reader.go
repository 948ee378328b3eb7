package cgroupfs

import (
	"errors"
	"fmt"
	"os"
	"reflect"
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
