// Package cgroups is the dashboard's Cgroups pane: the kubepods cgroup tree
// with memory and CPU-rate bars, collapsible, under a header with node
// capacity, reservations, allocatable and the kubepods limits.
package cgroups

import (
	"fmt"
	"strings"
	"time"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/nodegc/nodegc/cgroupfs"
	"github.com/nodegc/nodegc/internal/format"
	"github.com/nodegc/nodegc/tui/internal/feed"
	"github.com/nodegc/nodegc/tui/internal/grid"
	"github.com/nodegc/nodegc/tui/keys"
	"github.com/nodegc/nodegc/tui/style"
)

// Sort orders of siblings (grid.Pane.Sort); s cycles through them.
const (
	ByPath = iota
	ByMemory
	ByCPU
)

// orders are the sort orders, by the constants above.
var orders = []grid.Order{
	ByPath:   {Name: "path", Col: 0},
	ByMemory: {Name: "memory", Col: 1, Desc: true},
	ByCPU:    {Name: "cpu", Col: 4, Desc: true},
}

type sample struct {
	nanos uint64
	at    time.Time
}

// Model is the Cgroups pane.
type Model struct {
	grid.Pane

	tree *cgroupfs.Tree
	err  string
	at   time.Time
	// prev holds the previous read's cumulative CPU per path, for rates.
	prev map[string]sample
	// rate is CPU cores per path, from the last two reads.
	rate map[string]float64
	// collapsed holds the paths the user collapsed; expanded those the
	// user expanded among the ones collapsed by default (pods).
	collapsed map[string]bool
	expanded  map[string]bool
	allOpen   bool
	// noReader says the dashboard has no cgroup reader at all.
	noReader bool
}

var columns = []grid.Column{
	{Title: "CGROUP", Width: 5, Flex: true},
	{Title: "MEMORY", Width: 9, Right: true},
	{Title: "", Width: 10, MinTable: 84},
	{Title: "LIMIT", Width: 9, Right: true},
	{Title: "CPU", Width: 6, Right: true},
	{Title: "", Width: 10, MinTable: 84},
	{Title: "PIDS", Width: 5, Right: true},
}

// New returns an empty pane; hasReader false says there is no cgroup
// reader to wait for.
func New(k keys.KeyMap, st style.Styles, hasReader bool) Model {
	return Model{
		// The header takes three lines above the table.
		Pane: grid.NewPane(k, st, columns, 3, 3, orders...),
		prev: map[string]sample{}, rate: map[string]float64{},
		collapsed: map[string]bool{}, expanded: map[string]bool{},
		noReader: !hasReader,
	}
}

// Title names the pane.
func (m Model) Title() string { return "Cgroups" }

// ReadsCgroups reports that the pane draws the cgroup tree itself: the
// root reads it every refresh interval while the pane is on screen.
func (m Model) ReadsCgroups() bool { return true }

// SetError shows a failed read; the last good tree stays.
func (m *Model) SetError(err error) {
	m.err = ""
	if err != nil {
		m.err = err.Error()
	}
}

// SetTree shows a tree read at the time at. CPU rates come from this read
// and the previous one; where they cannot (a read at the same instant, a
// counter that went back), the last rate stays until one can, so a
// column does not flicker to "—" between reads.
func (m *Model) SetTree(t *cgroupfs.Tree, at time.Time) {
	m.err = ""
	m.tree = t
	next := map[string]sample{}
	rate := map[string]float64{}
	var walk func(n *cgroupfs.Node)
	walk = func(n *cgroupfs.Node) {
		next[n.Path] = sample{n.CPUUsageNanos, at}
		p, ok := m.prev[n.Path]
		switch {
		case ok && at.After(p.at) && n.CPUUsageNanos >= p.nanos:
			rate[n.Path] = float64(n.CPUUsageNanos-p.nanos) / float64(at.Sub(p.at).Nanoseconds())
		case ok && !at.After(p.at):
			next[n.Path] = p // measure the next rate from the older read
			fallthrough
		default:
			if r, had := m.rate[n.Path]; had {
				rate[n.Path] = r
			}
		}
		for _, c := range n.Children {
			walk(c)
		}
	}
	if t != nil && t.Root != nil {
		walk(t.Root)
	}
	m.prev, m.rate, m.at = next, rate, at
	grid.Refresh(m)
}

// matches reports whether the node or one below it matches the filter.
func (m *Model) matches(n *cgroupfs.Node, memo map[*cgroupfs.Node]bool) bool {
	if v, ok := memo[n]; ok {
		return v
	}
	v := m.Filter.Match(label(n)) || m.Filter.Match(n.Path)
	for _, c := range n.Children {
		if m.matches(c, memo) {
			v = true
		}
	}
	memo[n] = v
	return v
}

// Rebuild turns the tree into rows under the sort, the filter and what is
// collapsed.
func (m *Model) Rebuild() {
	if m.tree == nil || m.tree.Root == nil {
		m.Grid.SetRows(nil)
		return
	}
	m.Matched, m.Total = 0, 0
	memScale, cores := scales(m.tree)
	var memo map[*cgroupfs.Node]bool
	if m.Filter.Active() {
		memo = map[*cgroupfs.Node]bool{}
	}
	var rows []grid.Row
	var walk func(n *cgroupfs.Node, prefix, branch string)
	walk = func(n *cgroupfs.Node, prefix, branch string) {
		m.Total++
		if memo != nil && !m.matches(n, memo) {
			return
		}
		m.Matched++
		// Under a filter every node is open, so that every match shows.
		open := !m.isCollapsed(n) || memo != nil
		rows = append(rows, m.nodeRow(n, prefix+branch, open, memScale, cores))
		if !open {
			return
		}
		cs := m.children(n)
		next := childPrefix(prefix, branch)
		for i, c := range cs {
			b := "├─"
			if i == len(cs)-1 {
				b = "└─"
			}
			walk(c, next, b)
		}
	}
	walk(m.tree.Root, "", "")
	m.Grid.SetRows(rows)
}

// scales are what the bars are drawn against: memory against the node's
// allocatable memory (else the root cgroup's usage) where a cgroup has no
// limit, CPU against the node's cores (at least one).
func scales(t *cgroupfs.Tree) (memScale uint64, cores float64) {
	memScale = uint64(max(t.Allocatable.MemoryBytes, 0))
	if memScale == 0 {
		memScale = max(t.Root.MemoryBytes, 1)
	}
	cores = float64(t.Allocatable.CapacityMilliCPU) / 1000
	if cores <= 0 {
		cores = 1
	}
	return memScale, cores
}

// childPrefix is the tree drawing that leads a node's children: the
// parent's prefix continued by a bar under a middle branch, by blank space
// under the last one.
func childPrefix(prefix, branch string) string {
	switch branch {
	case "├─":
		return prefix + "│ "
	case "└─":
		return prefix + "  "
	}
	return prefix
}

// nodeRow is one cgroup's row: its name drawn in the tree after lead, its
// memory (against its limit, else memScale), its CPU rate (against
// cores) and its pids.
func (m *Model) nodeRow(n *cgroupfs.Node, lead string, open bool, memScale uint64, cores float64) grid.Row {
	name, kind := nodeName(n, lead, open)
	limit, scale := "—", memScale
	if n.MemoryLimitBytes != nil {
		limit = format.Bytes(int64(*n.MemoryLimitBytes))
		scale = *n.MemoryLimitBytes
	}
	cpu, cpuBar := "—", ""
	if r, ok := m.rate[n.Path]; ok {
		cpu = fmt.Sprintf("%.2f", r)
		cpuBar = bar(r/cores, 10)
	}
	return grid.Row{
		Cells: []string{name, format.Bytes(int64(n.MemoryBytes)), bar(float64(n.MemoryBytes)/float64(max(scale, 1)), 10),
			limit, cpu, cpuBar, fmt.Sprint(n.Pids)},
		Kind: kind,
		Key:  n.Path,
		ID:   nodeID(n),
	}
}

// nodeName is a cgroup's name column (its fold icon, its label, how many
// children a folded one hides, a mark when reading it failed) and the
// row's kind: a warning for an error, a group for the root and QoS
// classes, dim for a container.
func nodeName(n *cgroupfs.Node, lead string, open bool) (string, grid.Kind) {
	icon := "  "
	if len(n.Children) > 0 {
		icon = "▾ "
		if !open {
			icon = "▸ "
		}
	}
	name := lead + icon + label(n)
	if !open {
		name += fmt.Sprintf(" (%d)", len(n.Children))
	}
	kind := grid.Normal
	switch {
	case len(n.Errors) > 0:
		name += " !"
		kind = grid.Warn
	case n.Kind == cgroupfs.KindRoot || n.Kind == cgroupfs.KindQOS:
		kind = grid.Group
	case n.Kind == cgroupfs.KindContainer:
		kind = grid.Dim
	}
	return name, kind
}

// bar draws a fraction in [0,1] with eighth blocks.
func bar(f float64, w int) string {
	f = min(max(f, 0), 1)
	eighths := int(f*float64(w*8) + 0.5)
	full, part := eighths/8, eighths%8
	var b strings.Builder
	b.WriteString(strings.Repeat("█", full))
	if part > 0 && full < w {
		b.WriteRune([]rune(" ▏▎▍▌▋▊▉")[part])
		full++
	}
	b.WriteString(strings.Repeat("·", w-full))
	return b.String()
}

// Update handles the pane's keys (navigation, collapse and expand, filter
// and sort) and the cgroup reads it shows.
func (m Model) Update(msg tea.Msg) (Model, tea.Cmd) {
	grid.Update(&m, msg)
	if msg, ok := msg.(feed.Cgroups); ok {
		if msg.Tree != nil {
			m.SetTree(msg.Tree, msg.At)
		}
		if msg.Err != nil {
			m.SetError(msg.Err)
		}
	}
	return m, nil
}

// View renders the header, the filter and the tree.
func (m Model) View() string {
	if m.noReader {
		return m.Styles.Faint.Render("No cgroup reader: the simulated node (--demo) has no kubepods cgroups.\nRun nodegc on a node, or `nodegc cgroups` there, to see the tree.")
	}
	parts := m.header()
	for i, p := range parts {
		parts[i] = ansi.Truncate(p, m.Width, "…")
	}
	parts = m.WithFilter(parts)
	if m.tree != nil && m.tree.Root == nil {
		parts = append(parts, m.Styles.Faint.Render("no kubepods cgroup on this node"))
	} else {
		parts = append(parts, m.Grid.View())
	}
	return lipgloss.JoinVertical(lipgloss.Left, parts...)
}

// ShortHelp returns the pane's keys for the footer.
func (m Model) ShortHelp() []key.Binding {
	return []key.Binding{m.Keys.Toggle, m.Keys.Filter, m.Keys.Sort, m.Keys.Copy}
}

// FullHelp returns the pane's keys for the full help.
func (m Model) FullHelp() [][]key.Binding {
	return [][]key.Binding{m.Keys.Navigation(), {m.Keys.Toggle, m.Keys.ExpandAll, m.Keys.CollapseAll}, m.Keys.Table()}
}
