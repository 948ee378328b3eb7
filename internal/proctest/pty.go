package proctest

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// Pty is a pseudo-terminal for a program under test: the program runs on
// Slave, and what it draws is read from Master and kept. Closing Master
// is the terminal going away, as an SSH drop or a killed tmux session
// does.
type Pty struct {
	Master, Slave *os.File

	mu   sync.Mutex
	out  bytes.Buffer
	read chan struct{}
}

// OpenPty opens a w×h pseudo-terminal and keeps whatever is drawn on it
// until Master is closed.
func OpenPty(w, h int) (*Pty, error) {
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		return nil, fmt.Errorf("open pty: %w", err)
	}
	var n int
	// SyscallConn, not Fd: Fd would make Master blocking, and then Close
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
		if err == nil {
			err = cerr
		}
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
	p := &Pty{Master: m, Slave: s, read: make(chan struct{})}
	go func() {
		defer close(p.read)
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

// Output returns what was drawn so far.
func (p *Pty) Output() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.out.String()
}

// Close closes both sides (either may be closed already) and waits for
// the reader to end.
func (p *Pty) Close() {
	p.Slave.Close()
	p.Master.Close()
	<-p.read
}
