package control

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// SocketName is the control socket's name in the state dir.
const SocketName = "control.sock"

// SocketPath is the control socket of the state dir.
func SocketPath(stateDir string) string { return filepath.Join(stateDir, SocketName) }

// SocketError is a control socket path the agent refuses: something it
// did not create (a symlink, a file, a socket of another user). Nothing
// is removed; the operator must look.
type SocketError struct {
	Path string
	Err  error
}

func (e *SocketError) Error() string { return fmt.Sprintf("control socket %s %v", e.Path, e.Err) }
func (e *SocketError) Unwrap() error { return e.Err }

// CheckSocketPath refuses a planted control socket path: it must be
// missing or a socket owned by root (one an agent left, stale or live).
// It only looks.
func CheckSocketPath(path string) error {
	fi, err := os.Lstat(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return nil
	case err != nil:
		return &SocketError{Path: path, Err: fmt.Errorf("cannot be checked (%w)", err)}
	case fi.Mode()&os.ModeSymlink != 0:
		return &SocketError{Path: path, Err: errors.New("is a symlink, which nodegc did not create; remove it after looking at it")}
	case fi.Mode()&os.ModeSocket == 0:
		return &SocketError{Path: path, Err: fmt.Errorf("is not a socket (%s), which nodegc did not create; remove it after looking at it", fi.Mode().Type())}
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && st.Uid != 0 {
		return &SocketError{Path: path, Err: fmt.Errorf("is owned by uid %d, not root, so nodegc did not create it; remove it after looking at it", st.Uid)}
	}
	return nil
}

// Listener is the control socket, listening.
type Listener struct {
	*net.UnixListener
	path string
	ino  uint64
}

// Listen serves the control socket at path. The caller holds the state
// dir's lock, so a root-owned socket already there is a dead agent's and
// is removed; anything else there is refused (CheckSocketPath). The
// socket is mode 0600, in a state dir that is 0700.
func Listen(path string) (*Listener, error) {
	if err := CheckSocketPath(path); err != nil {
		return nil, err
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, &SocketError{Path: path, Err: fmt.Errorf("stale socket cannot be removed (%w)", err)}
	}
	l, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		return nil, &SocketError{Path: path, Err: fmt.Errorf("cannot be listened on (%w)", err)}
	}
	l.SetUnlinkOnClose(false) // Close removes it only while it is still ours
	var st unix.Stat_t
	if err := unix.Lstat(path, &st); err != nil || os.Chmod(path, 0o600) != nil {
		l.Close()
		return nil, &SocketError{Path: path, Err: errors.New("cannot be made mode 0600")}
	}
	return &Listener{UnixListener: l, path: path, ino: st.Ino}, nil
}

// Close stops listening and removes the socket if it is still the one
// Listen created.
func (l *Listener) Close() error {
	err := l.UnixListener.Close()
	var st unix.Stat_t
	if unix.Lstat(l.path, &st) == nil && st.Ino == l.ino && st.Mode&unix.S_IFMT == unix.S_IFSOCK {
		os.Remove(l.path)
	}
	return err
}

// peerUID returns the uid of the process at the other end of c.
func peerUID(c net.Conn) (uint32, error) {
	cred, err := peerCred(c)
	if err != nil {
		return 0, err
	}
	return cred.Uid, nil
}

// peerCred returns the credentials of the process at the other end of c,
// as the kernel recorded them when it connected (SO_PEERCRED).
func peerCred(c net.Conn) (*unix.Ucred, error) {
	uc, ok := c.(*net.UnixConn)
	if !ok {
		return nil, errors.New("not a unix connection")
	}
	raw, err := uc.SyscallConn()
	if err != nil {
		return nil, err
	}
	var cred *unix.Ucred
	var cerr error
	if err := raw.Control(func(fd uintptr) {
		cred, cerr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	}); err != nil {
		return nil, err
	}
	if cerr != nil {
		return nil, cerr
	}
	return cred, nil
}

// sender names who sent r, as log attributes: the uid and pid of a
// socket peer, or the address of a request on any other listener (a
// test's).
func sender(r *http.Request) []any {
	if c, ok := r.Context().Value(connKey{}).(*connState); ok {
		return []any{"uid", c.uid, "pid", c.pid}
	}
	return []any{"remoteAddr", r.RemoteAddr}
}

// who names who sent r, for the scheduler's record of a pause
// (engine.WithActor): the uid and pid of a socket peer.
func who(r *http.Request) string {
	if c, ok := r.Context().Value(connKey{}).(*connState); ok {
		return fmt.Sprintf("uid %d pid %d", c.uid, c.pid)
	}
	return "client at " + r.RemoteAddr
}

// HTTPServer returns an http.Server for h on the control socket: each
// connection's peer credentials are read as it is accepted, a peer that
// is not root gets 403 on every request, and the uid and pid are what
// the agent's log names as the sender of the connection's commands.
func HTTPServer(h http.Handler) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 5 * time.Second,
		ConnContext: func(ctx context.Context, c net.Conn) context.Context {
			st := &connState{uid: -1, pid: -1}
			if cred, err := peerCred(c); err != nil {
				st.refused = "control socket: cannot read the peer's credentials: " + err.Error()
			} else {
				st.uid, st.pid = int(cred.Uid), int(cred.Pid)
				if cred.Uid != 0 {
					st.refused = fmt.Sprintf("control socket: uid %d is not root; only root may use the agent", cred.Uid)
				}
			}
			return context.WithValue(ctx, connKey{}, st)
		},
	}
}
