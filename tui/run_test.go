package tui

import (
	"context"
	"errors"
	"fmt"
	"github.com/nodegc/nodegc/internal/proctest"
	"os"
	"sync/atomic"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"golang.org/x/sys/unix"
)

// stuckProgram is a tea.Program as Bubble Tea v2.0.10 left it when its
// signal goroutine blocked: Run never returns, and Quit and Kill, if
// quitWorks and killWorks are false, do nothing (or block).
type stuckProgram struct {
	quitWorks, killWorks bool
	end                  chan struct{}
	quits, kills         chan struct{}
}

func newStuckProgram(quitWorks, killWorks bool) *stuckProgram {
	return &stuckProgram{quitWorks: quitWorks, killWorks: killWorks,
		end: make(chan struct{}), quits: make(chan struct{}, 1), kills: make(chan struct{}, 1)}
}

func (p *stuckProgram) Run() (tea.Model, error) {
	<-p.end
	return Model{}, tea.ErrProgramKilled
}

func (p *stuckProgram) Quit() {
	p.quits <- struct{}{}
	if p.quitWorks {
		close(p.end)
		return
	}
	select {} // blocks, as Send to a gone event loop did
}

func (p *stuckProgram) Kill() {
	p.kills <- struct{}{}
	if p.killWorks {
		close(p.end)
		return
	}
	select {}
}

// Issue 23 item 22: once asked to stop, the dashboard is quit, then
// killed, then left behind, each within its grace: no path out of Run
// waits forever, whatever the program does.
func TestRunUntilBoundsEveryWaitOnTheWayOut(t *testing.T) {
	const grace = 50 * time.Millisecond
	for _, tc := range []struct {
		name                 string
		quitWorks, killWorks bool
		wantErr              error
		wantKill             bool
	}{
		{"a program that quits is not killed", true, false, tea.ErrProgramKilled, false},
		{"a program deaf to quit is killed", false, true, tea.ErrProgramKilled, true},
		{"a program deaf to both is left behind", false, false, errStuck, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newStuckProgram(tc.quitWorks, tc.killWorks)
			stop, cancel := context.WithCancel(context.Background())
			cancel()
			// A wait on the way out without its grace would never end:
			// the stuck program never answers.
			err, _ := proctest.Returns(t, "runUntil", func() (error, error) {
				_, err := runUntil(stop, p, grace, grace)
				return err, nil
			})
			if !errors.Is(err, tc.wantErr) {
				t.Errorf("err %v, want %v", err, tc.wantErr)
			}
			if len(p.quits) != 1 {
				t.Error("the program was not asked to quit")
			}
			if got := len(p.kills) == 1; got != tc.wantKill {
				t.Errorf("killed %v, want %v", got, tc.wantKill)
			}
		})
	}
}

// openPty opens a pseudo-terminal pair: the side a terminal emulator (or
// sshd, or tmux) holds, and the terminal a program runs on.
func openPty(t *testing.T) (master, tty *os.File) {
	t.Helper()
	fd, err := unix.Open("/dev/ptmx", unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatalf("open /dev/ptmx: %v", err)
	}
	master = os.NewFile(uintptr(fd), "/dev/ptmx")
	t.Cleanup(func() { master.Close() })
	if err := unix.IoctlSetPointerInt(fd, unix.TIOCSPTLCK, 0); err != nil {
		t.Fatalf("unlock the pty: %v", err)
	}
	n, err := unix.IoctlGetInt(fd, unix.TIOCGPTN)
	if err != nil {
		t.Fatalf("the pty's number: %v", err)
	}
	tty, err = os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Fatalf("open the pty: %v", err)
	}
	t.Cleanup(func() { tty.Close() })
	return master, tty
}

// TestWatchTerminal pins how the dashboard learns that its terminal went
// away (an SSH session dropped, a tmux session killed): the other side of
// the terminal closing calls gone; a watch stopped first never does.
func TestWatchTerminal(t *testing.T) {
	t.Run("the other side closes", func(t *testing.T) {
		master, tty := openPty(t)
		called := make(chan struct{})
		stop := watchTerminal(context.Background(), tty, func() { close(called) })
		defer stop()
		master.Close()
		select {
		case <-called:
		case <-time.After(30 * time.Second): // a bound on a hang, not on speed
			t.Fatal("the terminal's other side closed and gone was not called")
		}
	})
	t.Run("stopped first", func(t *testing.T) {
		master, tty := openPty(t)
		var calls atomic.Int32
		stop := watchTerminal(context.Background(), tty, func() { calls.Add(1) })
		stop() // returns once the watch has ended
		master.Close()
		if n := calls.Load(); n != 0 {
			t.Errorf("gone called %d times after stop", n)
		}
	})
	t.Run("its context ends", func(t *testing.T) {
		master, tty := openPty(t)
		ctx, cancel := context.WithCancel(context.Background())
		var calls atomic.Int32
		stop := watchTerminal(ctx, tty, func() { calls.Add(1) })
		cancel()
		stop()
		master.Close()
		if n := calls.Load(); n != 0 {
			t.Errorf("gone called %d times after the context ended", n)
		}
	})
	t.Run("after a hang-up poll reported and the ioctl did not confirm, a live terminal is left alone and a dead one found", func(t *testing.T) {
		master, tty := openPty(t)
		fd := int(tty.Fd())
		if hungUp(fd) {
			t.Fatal("a live terminal reads as hung up")
		}
		var stopPipe [2]int
		if err := unix.Pipe2(stopPipe[:], unix.O_CLOEXEC); err != nil {
			t.Fatal(err)
		}
		defer unix.Close(stopPipe[0])
		defer unix.Close(stopPipe[1])
		called := make(chan struct{})
		ended := make(chan struct{})
		go func() { defer close(ended); checkEverySecond(fd, stopPipe[0], func() { close(called) }) }()
		master.Close()
		select {
		case <-called:
		case <-time.After(30 * time.Second): // a bound on a hang, not on speed
			t.Fatal("the terminal's other side closed and gone was not called")
		}
		<-ended
		if !hungUp(fd) {
			t.Error("a terminal whose other side closed does not read as hung up")
		}
	})
	t.Run("the once-a-second check ends when stopped", func(t *testing.T) {
		_, tty := openPty(t)
		var stopPipe [2]int
		if err := unix.Pipe2(stopPipe[:], unix.O_CLOEXEC); err != nil {
			t.Fatal(err)
		}
		defer unix.Close(stopPipe[0])
		unix.Close(stopPipe[1])
		var calls atomic.Int32
		checkEverySecond(int(tty.Fd()), stopPipe[0], func() { calls.Add(1) }) // returns: the stop pipe is closed
		if n := calls.Load(); n != 0 {
			t.Errorf("gone called %d times for a live terminal", n)
		}
	})
	t.Run("not a terminal", func(t *testing.T) {
		f, err := os.Open(os.DevNull)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		stop := watchTerminal(context.Background(), f, func() { t.Error("gone called for a file that is no terminal") })
		stop()
	})
}
