package attacks

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// statePty is a pseudo-terminal for a dashboard: closing master is the
// terminal going away, as an SSH drop or a killed tmux session does.
type statePty struct {
	master, slave *os.File
	mu            sync.Mutex
	out           bytes.Buffer
}

// stateOpenPty opens a w×h pseudo-terminal and reads (and keeps) whatever
// is drawn on it until master is closed.
func stateOpenPty(t *testing.T, w, h int) (*statePty, error) {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		return nil, fmt.Errorf("open pty: %w", err)
	}
	var n int
	// SyscallConn, not Fd: Fd would make master blocking, and then Close
	// would wait for the reader instead of hanging up the terminal.
	rc, err := m.SyscallConn()
	if err == nil {
		cerr := rc.Control(func(fd uintptr) {
			if err = unix.IoctlSetPointerInt(int(fd), unix.TIOCSPTLCK, 0); err != nil {
				return
			}
			if n, err = unix.IoctlGetInt(int(fd), unix.TIOCGPTN); err != nil {
				return
			}
			err = unix.IoctlSetWinsize(int(fd), unix.TIOCSWINSZ, &unix.Winsize{Col: uint16(w), Row: uint16(h)})
		})
		err = stateFirstErr(err, cerr)
	}
	if err != nil {
		m.Close()
		return nil, fmt.Errorf("set up pty: %w", err)
	}
	s, err := os.OpenFile(filepath.Join("/dev/pts", fmt.Sprint(n)), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		m.Close()
		return nil, fmt.Errorf("open pty slave: %w", err)
	}
	p := &statePty{master: m, slave: s}
	go func() {
		buf := make([]byte, 32<<10)
		for {
			k, err := m.Read(buf)
			p.mu.Lock()
			p.out.Write(buf[:k])
			p.mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	return p, nil
}

// stateFirstErr returns the first non-nil error.
func stateFirstErr(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// drawn reports whether the dashboard has taken the screen (entered the
// alternate screen).
func (p *statePty) drawn() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return bytes.Contains(p.out.Bytes(), []byte("\x1b[?1049h"))
}

// output returns what was drawn so far.
func (p *statePty) output() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.out.String()
}

// stateDemoDirs counts the demo's temp dirs under tmp.
func stateDemoDirs(tmp string) int {
	m, _ := filepath.Glob(filepath.Join(tmp, "nodegc-demo-*"))
	return len(m)
}
