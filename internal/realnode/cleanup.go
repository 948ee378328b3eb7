package realnode

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// ownerFile, in the harness dir, names the process that owns the node as
// "<pid> <start time in clock ticks>", so a reused PID is not mistaken for it.
const ownerFile = "owner"

// cgroupsFile, in the harness dir, lists the cgroup parents of the pods the
// node ran, one a line, so a cleanup after a crash can remove them.
const cgroupsFile = "cgroups"

// Cleanup tears down whatever a node left in dir, whether its owner closed it,
// crashed, or (make sandbox) exited on purpose: it SIGKILLs every process
// whose command line references dir (containerd, shims, ctr) with all their
// descendants (the containers), unmounts everything under dir deepest first
// (lazily when busy), removes the pods' cgroups and deletes dir. It never
// touches the calling process or its ancestors.
func Cleanup(dir string) error {
	if !filepath.IsAbs(dir) || len(filepath.Clean(dir)) < len("/tmp/x") {
		return fmt.Errorf("cleanup %q: refusing a relative or too short path", dir)
	}
	dir = filepath.Clean(dir)
	var errs []error
	if err := killReferencing(dir); err != nil {
		errs = append(errs, err)
	}
	if err := unmountUnder(dir); err != nil {
		errs = append(errs, err)
		// Never delete through a mount we could not remove.
		return fmt.Errorf("cleanup %s: %w", dir, errors.Join(errs...))
	}
	if err := removeCgroups(dir); err != nil {
		errs = append(errs, err)
	}
	if err := os.RemoveAll(dir); err != nil {
		errs = append(errs, fmt.Errorf("remove %s: %w", dir, err))
	}
	if len(errs) > 0 {
		return fmt.Errorf("cleanup %s: %w", dir, errors.Join(errs...))
	}
	return nil
}

// cleanStale cleans the harness dirs of owners that are gone. A dir without a
// readable owner is only taken once it is a minute old, so a Launch that has
// just created it in another process is left alone.
func cleanStale(logf func(string, ...any)) {
	dirs, _ := filepath.Glob(StaleGlob)
	for _, d := range dirs {
		fi, err := os.Lstat(d)
		if err != nil || !fi.IsDir() {
			continue
		}
		pid, start, err := readOwner(d)
		switch {
		case err != nil && time.Since(fi.ModTime()) < time.Minute:
			continue
		case err == nil && processStarted(pid) == start:
			continue
		}
		logf("realnode: removing leftovers of a node whose owner is gone: %s", d)
		if err := Cleanup(d); err != nil {
			logf("realnode: %v", err)
		}
	}
}

func writeOwner(dir string) error {
	pid := os.Getpid()
	s := fmt.Sprintf("%d %d\n", pid, processStarted(pid))
	if err := os.WriteFile(filepath.Join(dir, ownerFile), []byte(s), 0o600); err != nil {
		return fmt.Errorf("write owner file: %w", err)
	}
	return nil
}

func readOwner(dir string) (pid int, start uint64, err error) {
	b, err := os.ReadFile(filepath.Join(dir, ownerFile))
	if err != nil {
		return 0, 0, err
	}
	if _, err := fmt.Sscanf(string(b), "%d %d", &pid, &start); err != nil {
		return 0, 0, fmt.Errorf("parse owner file: %w", err)
	}
	return pid, start, nil
}

// proc is what cleanup needs from /proc/<pid>.
type proc struct {
	pid, ppid int
	state     byte
	start     uint64
	cmdline   string // arguments, each followed by a NUL
}

// readProc reads /proc/<pid>/stat and cmdline.
func readProc(pid int) (proc, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return proc{}, err
	}
	// The command name may hold spaces and parentheses: fields start after
	// the last ')'.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return proc{}, fmt.Errorf("parse /proc/%d/stat", pid)
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 20 {
		return proc{}, fmt.Errorf("parse /proc/%d/stat: %d fields", pid, len(f))
	}
	p := proc{pid: pid, state: f[0][0]}
	p.ppid, _ = strconv.Atoi(f[1])
	p.start, _ = strconv.ParseUint(f[19], 10, 64)
	c, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	p.cmdline = string(c)
	return p, nil
}

// processStarted returns the start time of pid, or 0 when it does not exist
// or is a zombie.
func processStarted(pid int) uint64 {
	p, err := readProc(pid)
	if err != nil || p.state == 'Z' {
		return 0
	}
	return p.start
}

func listProcs() []proc {
	ents, _ := os.ReadDir("/proc")
	var ps []proc
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if p, err := readProc(pid); err == nil {
			ps = append(ps, p)
		}
	}
	return ps
}

// references reports whether a command line names dir or a path inside it.
func references(cmdline, dir string) bool {
	c := cmdline
	if !strings.HasSuffix(c, "\x00") {
		c += "\x00"
	}
	return strings.Contains(c, dir+"/") || strings.Contains(c, dir+"\x00")
}

// killReferencing SIGKILLs every live process that references dir, with its
// descendants, until none is left. The whole tree is collected before any
// signal, so a container is not orphaned out of reach by its shim dying
// first.
func killReferencing(dir string) error {
	self := map[int]bool{}
	for pid := os.Getpid(); pid > 1 && !self[pid]; {
		self[pid] = true
		p, err := readProc(pid)
		if err != nil {
			break
		}
		pid = p.ppid
	}
	sockets := map[string]bool{}
	deadline := time.Now().Add(10 * time.Second)
	for {
		ps := listProcs()
		children := map[int][]int{}
		for _, p := range ps {
			children[p.ppid] = append(children[p.ppid], p.pid)
		}
		live := map[int]bool{}
		for _, p := range ps {
			live[p.pid] = p.state != 'Z'
		}
		targets := map[int]bool{}
		var walk func(int)
		walk = func(pid int) {
			if targets[pid] || self[pid] {
				return
			}
			targets[pid] = true
			for _, c := range children[pid] {
				walk(c)
			}
		}
		for _, p := range ps {
			if references(p.cmdline, dir) {
				walk(p.pid)
			}
		}
		for _, p := range ps {
			if targets[p.pid] {
				if sock := shimSocket(p.cmdline); sock != "" {
					sockets[sock] = true
				}
			}
		}
		var left []int
		for pid := range targets {
			if live[pid] {
				left = append(left, pid)
			}
		}
		if len(left) == 0 {
			for sock := range sockets {
				_ = os.Remove(sock)
			}
			return nil
		}
		if time.Now().After(deadline) {
			slices.Sort(left)
			return fmt.Errorf("processes of %s still alive after SIGKILL: %v", dir, left)
		}
		for _, pid := range left {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// shimSocketDir is where containerd 1.6 puts every shim's socket, whatever
// its state dir: /run/containerd/s/<sha256 of address/namespace/id>.
const shimSocketDir = "/run/containerd/s"

// shimSocket returns the socket a containerd-shim-runc-v2 with this command
// line listens on, which a killed shim leaves behind, or "" for another
// program.
func shimSocket(cmdline string) string {
	args := strings.Split(strings.TrimSuffix(cmdline, "\x00"), "\x00")
	if len(args) == 0 || filepath.Base(args[0]) != "containerd-shim-runc-v2" {
		return ""
	}
	flags := map[string]string{}
	for i := 1; i+1 < len(args); i++ {
		if strings.HasPrefix(args[i], "-") {
			flags[strings.TrimLeft(args[i], "-")] = args[i+1]
		}
	}
	ns, id, addr := flags["namespace"], flags["id"], flags["address"]
	if ns == "" || id == "" || addr == "" {
		return ""
	}
	sum := sha256.Sum256([]byte(filepath.Join(addr, ns, id)))
	return filepath.Join(shimSocketDir, hex.EncodeToString(sum[:]))
}

// mount is one line of /proc/self/mountinfo.
type mount struct {
	point, fstype string
}

func mountInfo() ([]mount, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, fmt.Errorf("read mountinfo: %w", err)
	}
	defer f.Close()
	var ms []mount
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		// id parent major:minor root mountpoint options [optional...] - fstype source superopts
		f := strings.Fields(sc.Text())
		if len(f) < 7 {
			continue
		}
		m := mount{point: unescapeMount(f[4])}
		if i := slices.Index(f, "-"); i >= 0 && i+1 < len(f) {
			m.fstype = f[i+1]
		}
		ms = append(ms, m)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read mountinfo: %w", err)
	}
	return ms, nil
}

// unescapeMount undoes mountinfo's octal escapes (\040 for a space).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if v, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// MountsUnder lists the mountpoints at or below dir, in mount order. Tests
// use it to prove a teardown left nothing mounted.
func MountsUnder(dir string) ([]string, error) {
	ms, err := mountInfo()
	if err != nil {
		return nil, err
	}
	dir = filepath.Clean(dir)
	var out []string
	for _, m := range ms {
		if m.point == dir || strings.HasPrefix(m.point, dir+"/") {
			out = append(out, m.point)
		}
	}
	return out, nil
}

// unmountUnder unmounts everything at or below dir, deepest (then latest)
// first, falling back to a lazy unmount for a busy mount.
func unmountUnder(dir string) error {
	for range 10 {
		mps, err := MountsUnder(dir)
		if err != nil {
			return err
		}
		if len(mps) == 0 {
			return nil
		}
		slices.Reverse(mps)
		slices.SortStableFunc(mps, func(a, b string) int {
			return strings.Count(b, "/") - strings.Count(a, "/")
		})
		for _, mp := range mps {
			if err := syscall.Unmount(mp, 0); err != nil && !errors.Is(err, syscall.EINVAL) {
				_ = syscall.Unmount(mp, syscall.MNT_DETACH)
			}
		}
	}
	mps, _ := MountsUnder(dir)
	return fmt.Errorf("still mounted under %s: %v", dir, mps)
}

// recordCgroup appends a pod's cgroup parent to the harness dir's list.
func recordCgroup(dir, parent string) error {
	f, err := os.OpenFile(filepath.Join(dir, cgroupsFile), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("record cgroup: %w", err)
	}
	defer f.Close()
	if _, err := fmt.Fprintln(f, parent); err != nil {
		return fmt.Errorf("record cgroup: %w", err)
	}
	return nil
}

// removeCgroups removes, in every cgroup hierarchy, the pod cgroups listed in
// dir (children first). The shared /kubepods and QoS levels are left: another
// node may be using them.
func removeCgroups(dir string) error {
	b, err := os.ReadFile(filepath.Join(dir, cgroupsFile))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read cgroup list: %w", err)
	}
	ms, err := mountInfo()
	if err != nil {
		return err
	}
	var errs []error
	for _, parent := range strings.Fields(string(b)) {
		if !strings.HasPrefix(parent, "/kubepods/") || strings.Contains(parent, "..") {
			continue
		}
		for _, m := range ms {
			if m.fstype != "cgroup" && m.fstype != "cgroup2" {
				continue
			}
			if err := removeTree(filepath.Join(m.point, parent)); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

// removeTree rmdirs a cgroup directory and its children, deepest first,
// retrying briefly while killed tasks leave it.
func removeTree(root string) error {
	var dirs []string
	_ = filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			dirs = append(dirs, p)
		}
		return nil
	})
	slices.Reverse(dirs)
	for _, d := range dirs {
		var err error
		for range 50 {
			if err = syscall.Rmdir(d); err == nil || errors.Is(err, syscall.ENOENT) {
				err = nil
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		if err != nil {
			return fmt.Errorf("remove cgroup %s: %w", d, err)
		}
	}
	return nil
}
