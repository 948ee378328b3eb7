package tui

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"charm.land/bubbles/v2/key"
	"charm.land/bubbles/v2/textinput"
	tea "charm.land/bubbletea/v2"

	"github.com/nodegc/nodegc/engine"
	"github.com/nodegc/nodegc/tui/keys"
	"github.com/nodegc/nodegc/tui/style"
)

// command is the `:` command line (k9s): `:images` jumps to a pane by
// its title or an alias (`:pods`), a prefix of either will do (`:co`),
// and `:images redis` also puts the cursor on the first row that names
// redis. tab completes a pane's name. `:pause 30m` pauses the periodic
// passes until then (pauseCommand).
type command struct {
	input textinput.Model
	keys  keys.KeyMap
}

// newCommand returns the command line, closed, completing names.
func newCommand(k keys.KeyMap, st style.Styles, names [][]string) command {
	in := textinput.New()
	in.Prompt = ":"
	var titles []string
	for _, n := range names {
		titles = append(titles, n[0])
	}
	in.Placeholder = strings.Join(titles, "|") + " [name]"
	in.SetWidth(len(in.Placeholder)) // the placeholder shows no wider
	in.ShowSuggestions = true
	in.SetSuggestions(slices.Concat(names...))
	in.KeyMap.DeleteBeforeCursor = k.FilterErase
	c := command{input: in, keys: k}
	c.SetStyles(st)
	return c
}

// SetStyles switches the palette. The cursor does not blink: a blinking
// one redraws the screen twice a second for nothing.
func (c *command) SetStyles(st style.Styles) {
	s := textinput.DefaultStyles(st.Dark)
	s.Cursor.Blink = false
	c.input.SetStyles(s)
}

// Open reports whether the command line takes the keys.
func (c command) Open() bool { return c.input.Focused() }

// Start opens the command line, empty.
func (c *command) Start() tea.Cmd {
	c.input.Reset()
	return c.input.Focus()
}

// commandMsg is a command line entered (enter): a pane's name and what
// to find on it.
type commandMsg struct{ pane, name string }

// Update edits the command line: enter runs it (a commandMsg), esc closes
// it.
func (c command) Update(msg tea.KeyPressMsg) (command, tea.Cmd) {
	switch {
	case key.Matches(msg, c.keys.FilterDone):
		line := strings.Fields(c.input.Value())
		c.input.Blur()
		if len(line) == 0 {
			return c, nil
		}
		run := commandMsg{pane: line[0], name: strings.Join(line[1:], " ")}
		return c, func() tea.Msg { return run }
	case key.Matches(msg, c.keys.ClearFilter):
		c.input.Blur()
		return c, nil
	}
	var cmd tea.Cmd
	c.input, cmd = c.input.Update(msg)
	return c, cmd
}

// View is the command line.
func (c command) View() string { return c.input.View() }

// Help is the keys of the open command line.
func (c command) Help() []key.Binding {
	return []key.Binding{
		key.NewBinding(key.WithKeys("enter"), key.WithHelp("enter", "go")),
		key.NewBinding(key.WithKeys("tab"), key.WithHelp("tab", "complete")),
		key.NewBinding(key.WithKeys("esc"), key.WithHelp("esc", "cancel")),
	}
}

// paneNames are the names `:` knows, in tab order: each pane's title and
// aliases, lower-case.
func paneNames(panes []pane) [][]string {
	out := make([][]string, len(panes))
	for i, p := range panes {
		out[i] = append([]string{strings.ToLower(p.Title())}, p.Aliases()...)
	}
	return out
}

// runCommand jumps to the pane a command names (the first in tab order of
// which it is a prefix of a name), and to the row naming its name.
func (m Model) runCommand(c commandMsg) (tea.Model, tea.Cmd) {
	if c.pane == "pause" {
		return m.pauseCommand(c.name)
	}
	want := strings.ToLower(c.pane)
	if c.name == "" && (want == "q" || want == "quit" || want == "q!") {
		return m.quit() // vim's and k9s's :q, as q does here
	}
	i := slices.IndexFunc(paneNames(m.panes), func(names []string) bool {
		return slices.ContainsFunc(names, func(n string) bool { return strings.HasPrefix(n, want) })
	})
	if i < 0 {
		m.setFlash(fmt.Sprintf(":%s: no such pane (%s)", c.pane, strings.Join(slices.Concat(paneNames(m.panes)...), ", ")), true)
		return m, nil
	}
	m.activate(Pane(i))
	if c.name == "" {
		cmd := m.cgroupsDue() // before m is returned: it re-arms the pulse
		return m, cmd
	}
	p, ok := m.activePane().Find(c.name)
	if !ok {
		m.setFlash(fmt.Sprintf("%s: nothing named %q", m.activePane().Title(), c.name), true)
		cmd := m.cgroupsDue() // before m is returned: it re-arms the pulse
		return m, cmd
	}
	m.setPane(m.active, p)
	cmd := m.cgroupsDue() // before m is returned: it re-arms the pulse
	return m, cmd
}

// pauseCommand is `:pause DURATION`: a pause of the periodic passes that
// ends at its expiry, whether this dashboard stays or not (`p` pauses
// only while it stays). `:pause` alone is `p`'s pause.
func (m Model) pauseCommand(arg string) (tea.Model, tea.Cmd) {
	if arg == "" {
		return m.setPause(true, engine.Pause{Held: true})
	}
	d, err := time.ParseDuration(arg)
	if err != nil || d <= 0 {
		m.setFlash(fmt.Sprintf(":pause %s: want a duration such as 30m or 2h", arg), true)
		return m, nil
	}
	return m.setPause(true, engine.Pause{Until: m.o.Now().Add(d)})
}
