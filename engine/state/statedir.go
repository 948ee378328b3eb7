package state

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/nodegc/nodegc/internal/trust"
)

// LockFile is the name of the lock that a process able to delete holds in
// the state dir for as long as it runs.
const LockFile = "lock"

// StateDirError is a state dir that nodegc refuses to use: a symlink, not
// a directory, owned by another user, writable by group or others, or held
// by another nodegc. Nothing is removed; the operator must fix it.
type StateDirError struct {
	Dir string
	Err error
}

func (e *StateDirError) Error() string { return fmt.Sprintf("--state-dir: %s %v", e.Dir, e.Err) }
func (e *StateDirError) Unwrap() error { return e.Err }

// ErrStateDirBusy is wrapped by the StateDirError of a state dir whose lock
// another nodegc holds.
var ErrStateDirBusy = errors.New("state dir in use")

// busyError is the message of a state dir whose lock another process
// holds; it wraps ErrStateDirBusy.
type busyError struct{ pid, dir string }

func (e *busyError) Error() string {
	return fmt.Sprintf("another nodegc (pid %s) is using %s; stop it or use --read-only", e.pid, e.dir)
}
func (e *busyError) Unwrap() error { return ErrStateDirBusy }

// Dir is a state dir opened for writing: checked, and locked
// exclusively until Close.
type Dir struct {
	path string
	lock *os.File
	// runtime is the lock of the runtime the engine removes from; nil
	// when it names none.
	runtime *runtimeLock
}

// OpenDir checks dir for a process that can delete and locks it. The
// dir is created 0700 only when missing; an existing one is never chmodded
// (it may be someone else's): it must be a real directory (not a symlink)
// owned by this user and not writable by group or others, since whoever
// can write it can plant records that change what a pass removes, or a
// journal symlink that makes root append elsewhere; and every directory
// above it must be root's or this user's (CheckParents), or the
// dir itself could be swapped after its check. The lock is an
// exclusive flock on <dir>/lock holding the owner's pid; a second process
// gets ErrStateDirBusy naming that pid. With endpoint (the runtime the
// engine removes from) it then takes that runtime's lock (lockRuntime).
func OpenDir(dir, endpoint string) (*Dir, error) {
	bad := func(err error) error { return &StateDirError{Dir: dir, Err: err} }
	if err := ensurePrivateDir(dir); err != nil {
		return nil, bad(err)
	}
	f, err := openStateFile(dir, LockFile, os.O_RDWR|os.O_CREATE)
	if err != nil {
		return nil, bad(err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		pid := "unknown"
		if b, rerr := io.ReadAll(io.LimitReader(f, 32)); rerr == nil && len(bytes.TrimSpace(b)) > 0 {
			pid = string(bytes.TrimSpace(b))
		}
		f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, &StateDirError{Dir: dir, Err: fmt.Errorf("is in use: %w", &busyError{pid: pid, dir: dir})}
		}
		return nil, bad(fmt.Errorf("lock: %w", err))
	}
	if err := f.Truncate(0); err == nil {
		f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	d := &Dir{path: dir, lock: f}
	if endpoint != "" {
		if d.runtime, err = lockRuntime(endpoint, dir); err != nil {
			d.Close()
			return nil, err
		}
	}
	return d, nil
}

// CheckStateDir reports whether a process that can delete may use dir as
// its state dir, by opening it exactly as such an engine does (creating it
// 0700 when missing, never changing an existing one) and releasing it
// again. Commands call it before they connect, so bad input fails first.
// It leaves nothing behind: a lock file it created goes while it still
// holds the lock (no other process can hold that file), and a dir it
// created goes when empty, so a run that then cannot reach its runtime
// has written nothing.
func CheckStateDir(dir string) error {
	newDir := missing(dir)
	newLock := newDir || missing(filepath.Join(dir, LockFile))
	d, err := OpenDir(dir, "")
	if err != nil {
		return err
	}
	if newLock {
		os.Remove(filepath.Join(dir, LockFile))
	}
	err = d.Close()
	if newDir {
		os.Remove(dir) // fails, and so keeps it, once anything is in it
	}
	return err
}

// missing reports whether nothing is at path.
func missing(path string) bool {
	_, err := os.Lstat(path)
	return errors.Is(err, os.ErrNotExist)
}

// CheckParents refuses a state dir below a directory that a user
// other than root and this one can change. Whoever can rename or replace
// an entry of a directory above it can swap the state dir, once nodegc
// has checked it, for a symlink to a directory of root's, and have root
// write its records, journal and lock there. So every directory above it,
// each symlink on the way resolved as the kernel does, must be owned by
// root or this user and not writable by group or others; a root-owned
// sticky directory (/tmp) is passed through, as only root can rename
// root's names in it (trust.PathFor). A tail that does not exist yet is
// checked from its deepest existing directory, and again once created.
func CheckParents(dir string) error {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return fmt.Errorf("cannot be resolved (%w)", err)
	}
	parent := filepath.Dir(abs)
	for {
		_, err := os.Lstat(parent)
		if err == nil {
			break
		}
		if !errors.Is(err, os.ErrNotExist) || parent == "/" {
			return fmt.Errorf("cannot be used (%w)", ioCause(err))
		}
		parent = filepath.Dir(parent)
	}
	err = trust.PathFor(parent, os.Geteuid())
	var ue *trust.UntrustedError
	switch {
	case errors.As(err, &ue):
		return fmt.Errorf("is below a directory another user can change (%v), who could swap the state dir for a link elsewhere; use a state dir every directory above which is root's and not writable by group or others", err)
	case err != nil:
		return fmt.Errorf("cannot be used (%w)", ioCause(err))
	}
	return nil
}

// CheckInfo refuses a state dir that is a symlink, not a
// directory, owned by another user, or writable by group or others.
func CheckInfo(fi os.FileInfo) error {
	switch {
	case fi.Mode()&os.ModeSymlink != 0:
		return errors.New("is a symlink; give the real directory")
	case !fi.IsDir():
		return errors.New("is not a directory")
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) != os.Geteuid() {
		return fmt.Errorf("is owned by uid %d, not by this user (uid %d); nodegc does not use or change another user's directory", st.Uid, os.Geteuid())
	}
	if perm := fi.Mode().Perm(); perm&0o022 != 0 {
		return fmt.Errorf("is writable by group or others (mode %04o); make it 0700 (chmod 0700 %s)", perm, fi.Name())
	}
	return nil
}

// Close releases the runtime's lock and the state dir's.
func (d *Dir) Close() error {
	if d == nil || d.lock == nil {
		return nil
	}
	err := errors.Join(d.runtime.Close(), d.lock.Close())
	d.lock, d.runtime = nil, nil
	return err
}

// openStateFile opens a file in the state dir without following a symlink
// and without blocking on a FIFO, and refuses anything but a regular file:
// a planted FIFO once made `nodegc plan` hang, deaf to SIGTERM.
func openStateFile(dir, name string, flag int) (*os.File, error) {
	path := filepath.Join(dir, name)
	f, err := os.OpenFile(path, flag|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0o600)
	if errors.Is(err, unix.ELOOP) {
		return nil, fmt.Errorf("%s is a symlink; nodegc does not follow links in its state dir", path)
	}
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, fmt.Errorf("%s is not a regular file (%s)", path, strings.TrimSpace(fi.Mode().Type().String()))
	}
	return f, nil
}

// ReadFile reads a file of the state dir with openStateFile's rules.
// A missing file gives an error that wraps os.ErrNotExist.
func ReadFile(dir, name string) ([]byte, error) {
	return ReadFileAtMost(dir, name, -1)
}

// ReadFileAtMost is ReadFile reading at most max bytes (max < 0: all of
// it), for a file whose size another process decides.
func ReadFileAtMost(dir, name string, max int64) ([]byte, error) {
	f, err := openStateFile(dir, name, os.O_RDONLY)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if max < 0 {
		return io.ReadAll(f)
	}
	return io.ReadAll(io.LimitReader(f, max))
}

// ioCause strips the *PathError wrapper, whose path the caller already
// names.
func ioCause(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// ensurePrivateDir checks a directory nodegc keeps its state in (the
// state dir, the runtime locks' dir), creating it 0700 when missing (not
// its parents):
// every directory above it root's or this user's (CheckParents,
// before and after the creation, so nothing is made under a refused
// parent), and the dir itself no symlink, this user's and not writable
// by group or others (CheckInfo).
func ensurePrivateDir(dir string) error {
	if err := CheckParents(dir); err != nil {
		return err
	}
	fi, err := os.Lstat(dir)
	if errors.Is(err, os.ErrNotExist) {
		// One level only: a mistyped --state-dir /x/a/b is an error that
		// names it, not a tree made with its parents.
		if err := os.Mkdir(dir, 0o700); err != nil {
			if errors.Is(err, os.ErrNotExist) {
				return fmt.Errorf("cannot be created: its parent %s does not exist", filepath.Dir(dir))
			}
			return fmt.Errorf("cannot be created (%w)", ioCause(err))
		}
		if err := CheckParents(dir); err != nil {
			return err
		}
		fi, err = os.Lstat(dir)
	}
	if err != nil {
		return fmt.Errorf("cannot be used (%w)", ioCause(err))
	}
	return CheckInfo(fi)
}
