package tui

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	tea "charm.land/bubbletea/v2"
	"golang.org/x/sys/unix"
)

// Run runs the dashboard in the terminal's alternate screen until the user
// quits, ctx is done, or the terminal goes away (an SSH drop, a closed tmux
// session): then it ends as q does, so the caller cleans up.
func Run(ctx context.Context, o Options) error {
	if o.Snapshot == nil {
		return errors.New("tui: Options.Snapshot is required")
	}
	m := New(o)
	m.ctx = ctx
	p := tea.NewProgram(m, tea.WithContext(ctx), tea.WithFPS(m.o.FPS))
	stop := watchTerminal(ctx, os.Stdout, p.Quit)
	defer stop()
	final, err := p.Run()
	if fm, ok := final.(Model); ok {
		fm.Close()
	}
	if err != nil {
		if errors.Is(err, tea.ErrProgramKilled) && ctx.Err() != nil {
			return nil // the caller cancelled: a normal end
		}
		return fmt.Errorf("run dashboard: %w", err)
	}
	return nil
}

// terminalCheckInterval is how often Run checks that its terminal is still
// there.
const terminalCheckInterval = time.Second

// watchTerminal calls gone once the terminal behind out hangs up. Bubble
// Tea ends its input loop quietly on EOF and keeps rendering into a dead
// terminal, so without this a dashboard whose SSH session dropped ran on
// for hours with its periodic passes. A hung-up terminal answers its
// window-size ioctl with EIO (or no longer is a terminal: ENOTTY, EBADF).
// Nothing is watched when out is not a terminal to begin with.
func watchTerminal(ctx context.Context, out *os.File, gone func()) (stop func()) {
	fd := int(out.Fd())
	if _, err := unix.IoctlGetWinsize(fd, unix.TIOCGWINSZ); err != nil {
		return func() {}
	}
	ctx, cancel := context.WithCancel(ctx)
	go func() {
		t := time.NewTicker(terminalCheckInterval)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				if _, err := unix.IoctlGetWinsize(fd, unix.TIOCGWINSZ); err != nil {
					gone()
					return
				}
			}
		}
	}()
	return cancel
}
