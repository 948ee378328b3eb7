package control

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// UnreachableError is a state dir whose lock is held while its control
// socket does not answer: an agent that hangs, or one that died and left
// its lock to a child. Nothing else may use the node meanwhile.
type UnreachableError struct {
	PID  string
	Path string
	Err  error
}

func (e *UnreachableError) Error() string {
	return fmt.Sprintf("an agent (pid %s) holds the state dir but its control socket %s does not answer (%v); stop it (kill %s) or wait", e.PID, e.Path, e.Err, e.PID)
}
func (e *UnreachableError) Unwrap() error { return e.Err }

// probeTimeout bounds the status call that tells whether an agent
// answers.
const probeTimeout = 3 * time.Second

// Probe finds the agent that holds stateDir. It returns a client and the
// agent's status, without its last report (StatusBrief), when the dir's
// control socket answers; nil and no error
// when there is no agent (no socket, or a dead agent's socket and a free
// lock), so the caller starts its own engine as before; an
// *UnreachableError when the lock is held and the socket is there but
// does not answer. A socket that cannot even be looked at (not root: the
// state dir is 0700) or that no agent made is no agent either: the
// caller's own checks say why it cannot go on.
func Probe(ctx context.Context, stateDir string, readOnly bool) (*Client, Status, error) {
	if !Present(stateDir) {
		// Missing, not ours to see, or nothing an agent made (an agent
		// refuses to start on it): no agent. The caller's own checks of
		// the state dir say what is wrong, if anything.
		return nil, Status{}, nil
	}
	path := SocketPath(stateDir)
	c := NewClient(path, readOnly)
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	st, err := c.StatusBrief(ctx)
	if err == nil {
		return c, st, nil
	}
	c.Close()
	var re *RemoteError
	if errors.As(err, &re) {
		return nil, Status{}, err // it answered, and said no
	}
	pid, held := lockHolder(stateDir)
	if !held {
		return nil, Status{}, nil // a dead agent's socket; the next agent removes it
	}
	return nil, Status{}, &UnreachableError{PID: pid, Path: path, Err: err}
}

// Present reports whether stateDir holds a control socket an agent made
// (a root-owned socket, live or left by a dead agent): only then does
// Probe ask it. It only looks, so a dashboard can say it is connecting to
// the agent before the first call.
func Present(stateDir string) bool {
	path := SocketPath(stateDir)
	_, err := os.Lstat(path)
	return err == nil && CheckSocketPath(path) == nil
}

// lockHolder reports whether another process holds the state dir's lock,
// and the pid it wrote there. It tests with a shared lock, released at
// once, and never creates the file.
func lockHolder(stateDir string) (string, bool) {
	f, err := os.OpenFile(filepath.Join(stateDir, "lock"), os.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return "", false
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return "", false
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_SH|unix.LOCK_NB); err == nil {
		unix.Flock(int(f.Fd()), unix.LOCK_UN)
		return "", false
	}
	b, _ := io.ReadAll(io.LimitReader(f, 32))
	pid := strings.TrimSpace(string(b))
	if pid == "" {
		pid = "unknown"
	}
	return pid, true
}
