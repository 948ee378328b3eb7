package state

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/nodegc/nodegc/engine/model"
)

// RuntimeLockDirEnv names the environment variable that overrides the
// directory of the runtime locks (tests run engines of their own).
const RuntimeLockDirEnv = "NODEGC_RUNTIME_LOCK_DIR"

// DefaultRuntimeLockDir is where root's engines lock the runtimes they
// remove from. It is below the default state dir, at a fixed place
// whatever --state-dir says, so that two engines with different state
// dirs meet there; the DaemonSet mounts /var/lib/nodegc from the host,
// so its agent meets a gc run on the host too.
const DefaultRuntimeLockDir = "/var/lib/nodegc/runtimes"

// ErrRuntimeBusy is wrapped by the StateDirError of an engine whose
// runtime another nodegc is removing from.
var ErrRuntimeBusy = errors.New("runtime in use")

// runtimeBusyError names the process that holds a runtime's lock.
type runtimeBusyError struct{ endpoint, holder string }

func (e *runtimeBusyError) Error() string {
	return fmt.Sprintf("another nodegc (%s) is removing from the runtime %s; one engine per runtime: stop it, attach to it, or use --read-only", e.holder, e.endpoint)
}
func (e *runtimeBusyError) Unwrap() error { return ErrRuntimeBusy }

// endpointer is a [model.Remover] that names its runtime's endpoint (the CRI
// client); the runtime lock is keyed by it.
type endpointer interface{ Endpoint() string }

// RuntimeEndpoint returns the endpoint r removes from, or "" when it names
// none (an in-memory runtime of the tests).
func RuntimeEndpoint(r model.Remover) string {
	if ep, ok := r.(endpointer); ok {
		return ep.Endpoint()
	}
	return ""
}

// runtimeLockDir is the directory of the runtime locks: RuntimeLockDirEnv,
// else DefaultRuntimeLockDir for root, else a directory of this user's
// in the temp dir (a user's nodegc removes only from a runtime of theirs).
func runtimeLockDir() string {
	if dir := os.Getenv(RuntimeLockDirEnv); dir != "" {
		return dir
	}
	if os.Geteuid() == 0 {
		return DefaultRuntimeLockDir
	}
	return filepath.Join(os.TempDir(), "nodegc-"+strconv.Itoa(os.Geteuid())+"-runtimes")
}

// runtimeKey names a runtime's lock: a hash of its socket's path with
// every symlink resolved (unix:///var/run/x.sock and /run/x.sock are one
// runtime), or of the endpoint as given when it is no socket path.
func runtimeKey(endpoint string) string {
	p := strings.TrimPrefix(endpoint, "unix://")
	if filepath.IsAbs(p) {
		if real, err := filepath.EvalSymlinks(p); err == nil {
			p = real
		} else {
			p = filepath.Clean(p)
		}
	}
	sum := sha256.Sum256([]byte(p))
	return "runtime-" + hex.EncodeToString(sum[:12]) + ".lock"
}

// lockRuntime takes the exclusive lock of the runtime at endpoint for an
// engine with state dir stateDir, so that no second engine on this machine
// removes from the same runtime with a state dir (and a journal) of its
// own. The lock directory is checked as a state dir is (created 0700 when
// missing; a symlink, another user's or a group- or other-writable one,
// or one below a directory another user can change, is refused). The lock
// is an flock on a file named by the endpoint's hash, holding the
// holder's pid, state dir and endpoint; a second engine gets a
// StateDirError wrapping ErrRuntimeBusy that names them. Close removes
// the file while it still holds the lock.
func lockRuntime(endpoint, stateDir string) (*runtimeLock, error) {
	dir := runtimeLockDir()
	bad := func(err error) error {
		return &StateDirError{Dir: stateDir, Err: fmt.Errorf("cannot lock the runtime %s: %s %w", endpoint, dir, err)}
	}
	if dir == DefaultRuntimeLockDir {
		// nodegc's own /var/lib/nodegc, on a node where no engine ran yet.
		if err := ensurePrivateDir(filepath.Dir(dir)); err != nil {
			return nil, bad(err)
		}
	}
	if err := ensurePrivateDir(dir); err != nil {
		return nil, bad(err)
	}
	name := runtimeKey(endpoint)
	path := filepath.Join(dir, name)
	for range 8 {
		f, err := openStateFile(dir, name, os.O_RDWR|os.O_CREATE)
		if err != nil {
			return nil, bad(err)
		}
		if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
			holder := "pid unknown"
			if b, rerr := io.ReadAll(io.LimitReader(f, 4096)); rerr == nil && len(bytes.TrimSpace(b)) > 0 {
				holder = strings.Join(strings.Fields(string(b)), " ")
			}
			f.Close()
			if errors.Is(err, unix.EWOULDBLOCK) {
				return nil, &StateDirError{Dir: stateDir, Err: fmt.Errorf("is refused: %w", &runtimeBusyError{endpoint: endpoint, holder: holder})}
			}
			return nil, bad(fmt.Errorf("lock: %w", err))
		}
		// The file may have been removed by its last holder between the
		// open and the lock: then lock the new one.
		held, herr := f.Stat()
		now, nerr := os.Lstat(path)
		if herr != nil || nerr != nil || !os.SameFile(held, now) {
			f.Close()
			continue
		}
		if err := f.Truncate(0); err == nil {
			fmt.Fprintf(f, "pid %d, state dir %s\n", os.Getpid(), stateDir)
		}
		return &runtimeLock{path: path, f: f}, nil
	}
	return nil, bad(errors.New("lock: its file kept being replaced"))
}

// runtimeLock is a held runtime lock.
type runtimeLock struct {
	path string
	f    *os.File
}

// Close removes the lock's file and releases the lock. The file goes
// first, while the lock is held, so a process waiting on the old file
// finds it replaced (lockRuntime's check) rather than sharing a name.
func (l *runtimeLock) Close() error {
	if l == nil || l.f == nil {
		return nil
	}
	os.Remove(l.path)
	err := l.f.Close()
	l.f = nil
	return err
}
