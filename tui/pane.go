package tui

import (
	"time"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"github.com/nodegc/nodegc/tui/cgroups"
	"github.com/nodegc/nodegc/tui/containers"
	"github.com/nodegc/nodegc/tui/events"
	"github.com/nodegc/nodegc/tui/images"
	"github.com/nodegc/nodegc/tui/internal/feed"
	"github.com/nodegc/nodegc/tui/internal/grid"
	"github.com/nodegc/nodegc/tui/keys"
	"github.com/nodegc/nodegc/tui/overview"
	"github.com/nodegc/nodegc/tui/style"
)

// pane is what the root knows of a pane: it routes messages to it, sizes
// it, draws it and shows its keys. The root holds its panes in a slice, in
// tab order; adding one is writing its package and registering it in
// defaultPanes.
type pane interface {
	// Title names the pane on its tab.
	Title() string
	// Update takes a message: a key when the pane is on screen, and the
	// feed messages (refreshes, passes, cgroup reads) it shows.
	Update(tea.Msg) (pane, tea.Cmd)
	View() string
	SetSize(w, h int) pane
	SetStyles(style.Styles) pane
	ShortHelp() []key.Binding
	FullHelp() [][]key.Binding
	// Capturing reports whether the pane takes every key (a filter is
	// being typed).
	Capturing() bool
	// Selected returns the ID of the selected row, for the clipboard.
	Selected() (string, bool)
	// Detail returns what enter opens on the selected row; false when
	// the pane has nothing to open there (enter then goes to the pane).
	Detail() (feed.Detail, bool)
	// Click selects the row at (x, y) of the pane's body.
	Click(x, y int) pane
	// Item returns the object the selected row stands for, which ctrl+d
	// offers to remove alone; false when the row has none.
	Item() (feed.Item, bool)
	// Aliases are the names `:` knows the pane by besides its title.
	Aliases() []string
	// Find selects the first row naming s, and reports whether there is
	// one.
	Find(s string) (pane, bool)
	// NextChange is when an age or countdown the pane shows next reads
	// differently at the time it last got (feed.Clock); zero: never.
	NextChange() time.Time
	// ReadsCgroups reports whether the pane draws the cgroup tree
	// (feed.Cgroups) itself, so that the tree is read at the full rate
	// while it is on screen.
	ReadsCgroups() bool
}

// component is what a pane package provides: a value model whose Update
// returns its own type, so the parent never type-asserts a child.
// adapt turns one into a pane.
type component[M any] interface {
	Title() string
	Update(tea.Msg) (M, tea.Cmd)
	View() string
	ShortHelp() []key.Binding
	FullHelp() [][]key.Binding
	Capturing() bool
}

// sizable is a component's pointer, which sizes and styles it in place.
type sizable[M any] interface {
	*M
	SetSize(w, h int)
	SetStyles(style.Styles)
}

// Optional methods of a component; a pane without them has no selection,
// no details, and ignores clicks. A table pane (grid.Table) has the
// grid's clicks and row search.
type (
	selector       interface{ Selected() (string, bool) }
	detailer       interface{ Detail() (feed.Detail, bool) }
	clicker[M any] interface{ Click(x, y int) M }
	aliaser        interface{ Aliases() []string }
	itemer         interface{ Item() (feed.Item, bool) }
	finder[M any]  interface{ Find(s string) (M, bool) }
	// rowFinder is a table pane's pointer (grid.Pane.Find).
	rowFinder    interface{ Find(s string) bool }
	clocked      interface{ NextChange() time.Time }
	cgroupReader interface{ ReadsCgroups() bool }
)

// adapt wraps a component as a pane.
func adapt[M component[M], P sizable[M]](m M) pane { return adapted[M, P]{m} }

type adapted[M component[M], P sizable[M]] struct{ m M }

func (a adapted[M, P]) Title() string                  { return a.m.Title() }
func (a adapted[M, P]) View() string                   { return a.m.View() }
func (a adapted[M, P]) ShortHelp() []key.Binding       { return a.m.ShortHelp() }
func (a adapted[M, P]) FullHelp() [][]key.Binding      { return a.m.FullHelp() }
func (a adapted[M, P]) Capturing() bool                { return a.m.Capturing() }
func (a adapted[M, P]) SetSize(w, h int) pane          { P(&a.m).SetSize(w, h); return a }
func (a adapted[M, P]) SetStyles(st style.Styles) pane { P(&a.m).SetStyles(st); return a }

func (a adapted[M, P]) Update(msg tea.Msg) (pane, tea.Cmd) {
	m, cmd := a.m.Update(msg)
	return adapted[M, P]{m}, cmd
}

func (a adapted[M, P]) Selected() (string, bool) {
	if s, ok := any(a.m).(selector); ok {
		return s.Selected()
	}
	return "", false
}

func (a adapted[M, P]) Detail() (feed.Detail, bool) {
	if d, ok := any(a.m).(detailer); ok {
		return d.Detail()
	}
	return feed.Detail{}, false
}

func (a adapted[M, P]) Click(x, y int) pane {
	if t, ok := any(P(&a.m)).(grid.Table); ok {
		grid.Click(t, x, y)
		return a
	}
	if c, ok := any(a.m).(clicker[M]); ok {
		return adapted[M, P]{c.Click(x, y)}
	}
	return a
}

func (a adapted[M, P]) Item() (feed.Item, bool) {
	if i, ok := any(a.m).(itemer); ok {
		return i.Item()
	}
	return feed.Item{}, false
}

func (a adapted[M, P]) Aliases() []string {
	if n, ok := any(a.m).(aliaser); ok {
		return n.Aliases()
	}
	return nil
}

func (a adapted[M, P]) Find(s string) (pane, bool) {
	if f, ok := any(P(&a.m)).(rowFinder); ok {
		found := f.Find(s)
		return a, found
	}
	if f, ok := any(a.m).(finder[M]); ok {
		m, found := f.Find(s)
		return adapted[M, P]{m}, found
	}
	return a, false
}

func (a adapted[M, P]) NextChange() time.Time {
	if c, ok := any(a.m).(clocked); ok {
		return c.NextChange()
	}
	return time.Time{}
}

func (a adapted[M, P]) ReadsCgroups() bool {
	c, ok := any(a.m).(cgroupReader)
	return ok && c.ReadsCgroups()
}

// Pane indexes the registered panes, in tab order; keys 1-9 select them.
type Pane int

// The default panes, in the order defaultPanes registers them.
const (
	PaneOverview Pane = iota
	PaneImages
	PaneContainers
	PaneCgroups
	PaneEvents
)

// defaultPanes registers the dashboard's panes, in tab order.
func defaultPanes(o Options, k keys.KeyMap, st style.Styles) []pane {
	return []pane{
		adapt(overview.New(k, st).WithForecastHistory(o.ForecastHistory)),
		adapt(images.New(k, st)),
		adapt(containers.New(k, st)),
		adapt(cgroups.New(k, st, o.Cgroups != nil)),
		adapt(events.New(k, st).WithJournal(o.JournalPath)),
	}
}
