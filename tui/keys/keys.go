// Package keys declares the dashboard's one key map. It is built once by
// Default and passed down, so help and dispatch never disagree.
package keys

import "charm.land/bubbles/v2/key"

// KeyMap is every binding of the dashboard: global ones, table navigation,
// and those of the modals.
type KeyMap struct {
	NextPane key.Binding
	PrevPane key.Binding
	// Panes jumps to a pane by number (1-5).
	Panes [5]key.Binding
	Help  key.Binding
	Quit  key.Binding

	ForceImages     key.Binding
	ForceContainers key.Binding
	ReclaimAll      key.Binding
	// ReadOnly stands in the help where the destructive keys would be, when
	// they are disabled.
	ReadOnly key.Binding
	Pause    key.Binding
	DryRun   key.Binding
	Filter   key.Binding
	Sort     key.Binding
	Refresh  key.Binding
	Freeze   key.Binding

	Up       key.Binding
	Down     key.Binding
	PageUp   key.Binding
	PageDown key.Binding
	Top      key.Binding
	Bottom   key.Binding
	// Toggle collapses or expands a tree node.
	Toggle key.Binding
	// ExpandAll and CollapseAll act on the whole tree.
	ExpandAll   key.Binding
	CollapseAll key.Binding

	// Confirm applies a destructive modal's plan. It is y alone, never
	// enter: enter closes the view-only modals (nothing to remove, an
	// error, read-only), and a key that sometimes closes and sometimes
	// deletes teaches operators to delete.
	Confirm key.Binding
	// Cancel closes a modal without applying anything; enter is one of its
	// keys, so enter never removes anything.
	Cancel key.Binding
}

// Default returns the key map. In read-only mode the destructive keys (g, c,
// G) are disabled and the ReadOnly binding takes their place in the help.
func Default(readOnly bool) KeyMap {
	k := KeyMap{
		NextPane:        key.NewBinding(key.WithKeys("tab"), key.WithHelp("tab", "next pane")),
		PrevPane:        key.NewBinding(key.WithKeys("shift+tab"), key.WithHelp("shift+tab", "prev pane")),
		Help:            key.NewBinding(key.WithKeys("?"), key.WithHelp("?", "help")),
		Quit:            key.NewBinding(key.WithKeys("q", "ctrl+c"), key.WithHelp("q", "quit")),
		ForceImages:     key.NewBinding(key.WithKeys("g"), key.WithHelp("g", "image GC")),
		ForceContainers: key.NewBinding(key.WithKeys("c"), key.WithHelp("c", "container GC")),
		ReclaimAll:      key.NewBinding(key.WithKeys("G"), key.WithHelp("G", "reclaim all")),
		ReadOnly:        key.NewBinding(key.WithKeys("g", "c", "G"), key.WithHelp("g/c/G", "read-only")),
		Pause:           key.NewBinding(key.WithKeys("p"), key.WithHelp("p", "pause/resume")),
		DryRun:          key.NewBinding(key.WithKeys("d"), key.WithHelp("d", "dry-run")),
		Filter:          key.NewBinding(key.WithKeys("/"), key.WithHelp("/", "filter")),
		Sort:            key.NewBinding(key.WithKeys("s"), key.WithHelp("s", "sort")),
		Refresh:         key.NewBinding(key.WithKeys("r"), key.WithHelp("r", "refresh")),
		Freeze:          key.NewBinding(key.WithKeys("f"), key.WithHelp("f", "freeze")),
		Up:              key.NewBinding(key.WithKeys("up", "k"), key.WithHelp("↑/k", "up")),
		Down:            key.NewBinding(key.WithKeys("down", "j"), key.WithHelp("↓/j", "down")),
		PageUp:          key.NewBinding(key.WithKeys("pgup", "b"), key.WithHelp("pgup", "page up")),
		PageDown:        key.NewBinding(key.WithKeys("pgdown", "space"), key.WithHelp("pgdn", "page down")),
		Top:             key.NewBinding(key.WithKeys("home"), key.WithHelp("home", "top")),
		Bottom:          key.NewBinding(key.WithKeys("end"), key.WithHelp("end", "bottom")),
		Toggle:          key.NewBinding(key.WithKeys("enter", "right", "left", "l", "h"), key.WithHelp("enter/←/→", "collapse/expand")),
		ExpandAll:       key.NewBinding(key.WithKeys("e"), key.WithHelp("e", "expand all")),
		CollapseAll:     key.NewBinding(key.WithKeys("E"), key.WithHelp("E", "collapse all")),
		Confirm:         key.NewBinding(key.WithKeys("y"), key.WithHelp("y", "apply")),
		Cancel:          key.NewBinding(key.WithKeys("esc", "n", "enter"), key.WithHelp("esc/enter", "cancel")),
	}
	for i := range k.Panes {
		n := string(rune('1' + i))
		k.Panes[i] = key.NewBinding(key.WithKeys(n), key.WithHelp("1-5", "pane"))
	}
	if readOnly {
		k.ForceImages.SetEnabled(false)
		k.ForceContainers.SetEnabled(false)
		k.ReclaimAll.SetEnabled(false)
		k.Confirm.SetEnabled(false)
		k.Pause.SetEnabled(false) // a read-only dashboard runs no passes to pause
	} else {
		k.ReadOnly.SetEnabled(false)
	}
	return k
}

// Navigation returns the table navigation bindings, for a pane's help.
func (k KeyMap) Navigation() []key.Binding {
	return []key.Binding{k.Up, k.Down, k.PageUp, k.PageDown, k.Top, k.Bottom}
}
