package tui

import (
	"time"

	"charm.land/bubbles/v2/spinner"
	tea "charm.land/bubbletea/v2"

	"github.com/nodegc/nodegc/internal/format"
	"github.com/nodegc/nodegc/tui/style"
)

// loader is the line the body shows until the first snapshot arrives: a spinner,
// what is being listed and for how long. A node with 10,000 images and
// 110,000 containers takes tens of seconds to list, and a still screen
// reads as a hang.
type loader struct {
	spin  spinner.Model
	since time.Time
}

func newLoader(since time.Time) loader {
	return loader{spin: spinner.New(spinner.WithSpinner(spinner.MiniDot)), since: since}
}

// Tick starts the spinner.
func (l loader) Tick() tea.Msg { return l.spin.Tick() }

// Update turns the spinner; done stops it (its tick is not re-armed).
func (l loader) Update(msg spinner.TickMsg, done bool) (loader, tea.Cmd) {
	if done {
		return l, nil
	}
	var cmd tea.Cmd
	l.spin, cmd = l.spin.Update(msg)
	return l, cmd
}

// View is the loading line at now.
func (l loader) View(st *style.Styles, now time.Time) string {
	return st.Accent.Render(l.spin.View()) + st.Faint.Render(" listing images, containers and sandboxes through CRI · "+format.Duration(now.Sub(l.since)))
}
