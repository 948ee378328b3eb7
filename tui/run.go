package tui

import (
	"context"
	"errors"
	"fmt"

	tea "charm.land/bubbletea/v2"
)

// Run runs the dashboard in the terminal's alternate screen until the user
// quits or ctx is done.
func Run(ctx context.Context, o Options) error {
	if o.Snapshot == nil {
		return errors.New("tui: Options.Snapshot is required")
	}
	m := New(o)
	m.ctx = ctx
	p := tea.NewProgram(m, tea.WithContext(ctx), tea.WithFPS(m.o.FPS))
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
