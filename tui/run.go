package tui

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"
	"golang.org/x/sys/unix"
)

// Run runs the dashboard in the terminal's alternate screen until the user
// quits, ctx is done, a signal arrives (SIGHUP, SIGTERM, SIGINT) or the
// terminal goes away (an SSH drop, a closed tmux session): then it ends as
// q does, so the caller cleans up.
//
// Run owns the signals (Bubble Tea's own handler is off): Bubble Tea
// v2.0.10's handler could block forever sending its QuitMsg to an event
// loop that had already gone, and Program.shutdown waits for it, so a
// dashboard whose terminal went away then ignored SIGTERM for good
// (charmbracelet/bubbletea pull request 1806). Every wait on the way out is
// bounded: Run asks the program to quit, kills it after quitGrace, and
// returns after killGrace more whether or not it has let go.
func Run(ctx context.Context, o Options) error {
	if o.Snapshot == nil {
		return errors.New("tui: Options.Snapshot is required")
	}
	m := New(o)
	m.ctx = ctx
	stop, cancel := signal.NotifyContext(ctx, syscall.SIGHUP, syscall.SIGTERM, syscall.SIGINT)
	defer cancel()
	stop, gone := context.WithCancel(stop)
	defer gone()
	// The color profile is the one lipgloss detected at init, from the
	// same stdout and environment: left to itself, Bubble Tea detects it
	// again, and inside tmux or screen that runs `tmux info`, 10 to 65 ms
	// before the first frame (issue 24: within 200 ms).
	opts := []tea.ProgramOption{tea.WithoutSignalHandler(), tea.WithFPS(m.o.FPS), tea.WithColorProfile(lipgloss.Writer.Profile)}
	if o.Opening != nil {
		opts = append(opts, tea.WithOutput(o.Opening.output()))
	}
	p := tea.NewProgram(m, opts...)
	defer watchTerminal(stop, os.Stdout, gone)()
	final, err := runUntil(stop, p, quitGrace, killGrace)
	if fm, ok := final.(Model); ok {
		fm.Close()
	}
	switch {
	case err == nil:
		return nil
	case errors.Is(err, tea.ErrProgramKilled) && stop.Err() != nil:
		return nil // a signal, the caller or the terminal ended it: a normal end
	}
	return fmt.Errorf("run dashboard: %w", err)
}

// quitGrace is how long a dashboard asked to stop has to quit as q does
// before it is killed; killGrace how long the kill has before Run returns
// without it. Together they stay well under the 5 s a supervisor (or an
// operator) waits after SIGTERM.
const (
	quitGrace = time.Second
	killGrace = time.Second
)

// errStuck is what runUntil returns when the program did not let go.
var errStuck = errors.New("the terminal did not let go of the dashboard; leaving it")

// program is what runUntil needs of a tea.Program.
type program interface {
	Run() (tea.Model, error)
	Quit()
	Kill()
}

// runUntil runs p until it ends by itself, or until stop is done: then it
// asks p to quit, kills it after quit, and gives up waiting after kill
// more (errStuck). Quit and Kill are called on their own goroutines: either
// may block on a program that is stuck.
func runUntil(stop context.Context, p program, quit, kill time.Duration) (tea.Model, error) {
	type result struct {
		m   tea.Model
		err error
	}
	done := make(chan result, 1)
	go func() {
		m, err := p.Run()
		done <- result{m, err}
	}()
	select {
	case r := <-done:
		return r.m, r.err
	case <-stop.Done():
	}
	go p.Quit()
	t := time.NewTimer(quit)
	defer t.Stop()
	select {
	case r := <-done:
		return r.m, r.err
	case <-t.C:
	}
	go p.Kill()
	t.Reset(kill)
	select {
	case r := <-done:
		return r.m, r.err
	case <-t.C:
		return nil, errStuck
	}
}

// watchTerminal calls gone once the terminal behind out hangs up. Bubble
// Tea ends its input loop quietly on EOF and keeps rendering into a dead
// terminal, so without this a dashboard whose SSH session dropped ran on
// for hours with its periodic passes. A terminal hangs up when its other
// side closes (sshd, tmux) or the kernel hangs it up: poll(2) then
// reports POLLHUP (or POLLERR, or POLLNVAL once the descriptor is gone)
// on it, whatever events were asked for. One goroutine waits in poll for
// that or for stop, so an idle dashboard is not woken to check (it was
// checked once a second before: a tenth of an idle dashboard's wake-ups).
// stop returns once the goroutine has ended. Nothing is watched when out
// is not a terminal to begin with.
//
// poll's word alone never quits a dashboard: gone is called only when the
// terminal also fails its window-size ioctl (EIO once hung up, or ENOTTY,
// EBADF), the check this watch used before it slept in poll. Should poll
// report a hang-up the ioctl does not confirm, the watch goes back to
// that check once a second (terminalCheckInterval) for the rest of the
// run, rather than spin on a poll that returns at once or end an
// operator's dashboard on a doubt.
func watchTerminal(ctx context.Context, out *os.File, gone func()) (stop func()) {
	fd := int(out.Fd())
	if _, err := unix.IoctlGetWinsize(fd, unix.TIOCGWINSZ); err != nil {
		return func() {}
	}
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
		return func() {}
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer unix.Close(p[0])
		fds := []unix.PollFd{{Fd: int32(fd)}, {Fd: int32(p[0]), Events: unix.POLLIN}}
		for {
			_, err := unix.Poll(fds, -1)
			switch {
			case err == unix.EINTR:
				continue
			case err != nil || fds[1].Revents != 0:
				return // stopped (or poll itself failed: nothing to watch with)
			case fds[0].Revents&(unix.POLLHUP|unix.POLLERR|unix.POLLNVAL) != 0:
				if hungUp(fd) {
					gone()
					return
				}
				checkEverySecond(fd, p[0], gone)
				return
			}
		}
	}()
	var once sync.Once
	wake := func() { once.Do(func() { unix.Close(p[1]) }) }
	unregister := context.AfterFunc(ctx, wake)
	return func() {
		unregister()
		wake()
		<-done
	}
}

// terminalCheckInterval is how often watchTerminal checks the terminal
// with its window-size ioctl once poll can no longer be trusted with it.
const terminalCheckInterval = time.Second

// hungUp reports whether the terminal fd fails its window-size ioctl: EIO
// once hung up, ENOTTY or EBADF once it is no terminal.
func hungUp(fd int) bool {
	_, err := unix.IoctlGetWinsize(fd, unix.TIOCGWINSZ)
	return err != nil
}

// checkEverySecond checks the terminal fd once a second until it hangs up
// (then it calls gone) or the stop pipe's read end becomes readable (its
// write end closed).
func checkEverySecond(fd, stopFd int, gone func()) {
	fds := []unix.PollFd{{Fd: int32(stopFd), Events: unix.POLLIN}}
	for {
		n, err := unix.Poll(fds, int(terminalCheckInterval/time.Millisecond))
		switch {
		case err == unix.EINTR:
			continue
		case err != nil || n > 0:
			return
		case hungUp(fd):
			gone()
			return
		}
	}
}
