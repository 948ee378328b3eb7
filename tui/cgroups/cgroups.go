// Package cgroups is the dashboard's Cgroups pane: the kubepods cgroup tree
// with memory and CPU-rate bars, collapsible, under a header with node
// capacity, reservations, allocatable and the kubepods limits.
package cgroups

import (
	"cmp"
	"fmt"
	"slices"
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

// Sort orders siblings.
type Sort int

// Sort orders; s cycles through them.
const (
	ByPath Sort = iota
	ByMemory
	ByCPU
	numSorts
)

func (s Sort) String() string { return [...]string{"path", "memory", "cpu"}[s] }

type sample struct {
	nanos uint64
	at    time.Time
}

// Model is the Cgroups pane.
type Model struct {
	grid.Pane
	sort Sort

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
		Pane: grid.NewPane(k, st, columns, 3, 3),
		prev: map[string]sample{}, rate: map[string]float64{},
		collapsed: map[string]bool{}, expanded: map[string]bool{},
		noReader: !hasReader,
	}
}

// Title names the pane.
func (m Model) Title() string { return "Cgroups" }

// SetError shows a failed read; the last good tree stays.
func (m *Model) SetError(err error) {
	m.err = ""
	if err != nil {
		m.err = err.Error()
	}
}

// SetTree shows a tree read at the time at. CPU rates come from this read
// and the previous one.
func (m *Model) SetTree(t *cgroupfs.Tree, at time.Time) {
	m.err = ""
	m.tree = t
	next := map[string]sample{}
	rate := map[string]float64{}
	var walk func(n *cgroupfs.Node)
	walk = func(n *cgroupfs.Node) {
		next[n.Path] = sample{n.CPUUsageNanos, at}
		if p, ok := m.prev[n.Path]; ok && at.After(p.at) && n.CPUUsageNanos >= p.nanos {
			rate[n.Path] = float64(n.CPUUsageNanos-p.nanos) / float64(at.Sub(p.at).Nanoseconds())
		}
		for _, c := range n.Children {
			walk(c)
		}
	}
	if t != nil && t.Root != nil {
		walk(t.Root)
	}
	m.prev, m.rate, m.at = next, rate, at
	m.rebuild()
}

// label names a node for a person.
func label(n *cgroupfs.Node) string {
	switch n.Kind {
	case cgroupfs.KindRoot:
		return "kubepods"
	case cgroupfs.KindQOS:
		return n.QOS
	case cgroupfs.KindPod:
		if n.Pod != nil && n.Pod.Name != cgroupfs.Unknown && n.Pod.Name != "" {
			return n.Pod.Namespace + "/" + n.Pod.Name
		}
		if n.Pod != nil {
			return "unknown pod " + shortUID(n.Pod.UID)
		}
	case cgroupfs.KindContainer:
		if n.Container != nil {
			name := n.Container.Name
			if name == "" {
				name = cgroupfs.Unknown
			}
			if n.Conmon {
				name += " (conmon)"
			}
			return name + " " + format.ShortID(n.Container.ID)
		}
	}
	return n.Path
}

func shortUID(u string) string {
	if len(u) > 8 {
		return u[:8]
	}
	return u
}

func (m *Model) isCollapsed(n *cgroupfs.Node) bool {
	if len(n.Children) == 0 {
		return false
	}
	if m.collapsed[n.Path] {
		return true
	}
	// Pods start collapsed, so the tree opens at one line per pod.
	return n.Kind == cgroupfs.KindPod && !m.allOpen && !m.expanded[n.Path]
}

func (m *Model) children(n *cgroupfs.Node) []*cgroupfs.Node {
	if m.sort == ByPath && !m.Reversed {
		return n.Children
	}
	cs := slices.Clone(n.Children)
	slices.SortStableFunc(cs, func(a, b *cgroupfs.Node) int {
		switch m.sort {
		case ByMemory:
			return cmp.Compare(b.MemoryBytes, a.MemoryBytes)
		case ByCPU:
			return cmp.Compare(m.rate[b.Path], m.rate[a.Path])
		}
		return 0
	})
	if m.Reversed {
		slices.Reverse(cs)
	}
	return cs
}

// sortColumn is the column each order sorts by.
var sortColumn = [numSorts]int{ByPath: 0, ByMemory: 1, ByCPU: 4}

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

func (m *Model) rebuild() {
	m.SortArrow(sortColumn[m.sort], m.sort != ByPath)
	if m.tree == nil || m.tree.Root == nil {
		m.Grid.SetRows(nil)
		return
	}
	m.Matched, m.Total = 0, 0
	memScale := uint64(max(m.tree.Allocatable.MemoryBytes, 0))
	if memScale == 0 {
		memScale = max(m.tree.Root.MemoryBytes, 1)
	}
	cores := float64(m.tree.Allocatable.CapacityMilliCPU) / 1000
	if cores <= 0 {
		cores = 1
	}
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
		open := !m.isCollapsed(n) || memo != nil
		icon := "  "
		if len(n.Children) > 0 {
			icon = "▾ "
			if !open {
				icon = "▸ "
			}
		}
		name := prefix + branch + icon + label(n)
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
		rows = append(rows, grid.Row{
			Cells: []string{name, format.Bytes(int64(n.MemoryBytes)), bar(float64(n.MemoryBytes)/float64(max(scale, 1)), 10),
				limit, cpu, cpuBar, fmt.Sprint(n.Pids)},
			Kind: kind,
			Key:  n.Path,
			ID:   nodeID(n),
		})
		if !open {
			return
		}
		cs := m.children(n)
		next := prefix
		switch branch {
		case "├─":
			next += "│ "
		case "└─":
			next += "  "
		}
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

// nodeID is what c copies from a node: a container's ID, a pod's UID,
// else the cgroup path.
func nodeID(n *cgroupfs.Node) string {
	switch {
	case n.Container != nil && n.Container.ID != "":
		return n.Container.ID
	case n.Kind == cgroupfs.KindPod && n.Pod != nil:
		return n.Pod.UID
	}
	return n.Path
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
	switch msg := msg.(type) {
	case tea.KeyPressMsg:
		m.HandleKey(msg, m.rebuild, m.nextSort, m.treeKey)
	case feed.Cgroups:
		if msg.Tree != nil {
			m.SetTree(msg.Tree, msg.At)
		}
		if msg.Err != nil {
			m.SetError(msg.Err)
		}
	}
	return m, nil
}

// Selected returns the selected node's container ID, pod UID or path.
func (m Model) Selected() (string, bool) { return m.SelectedID() }

// Click selects the row at line y.
func (m Model) Click(_, y int) Model {
	m.ClickRow(y)
	return m
}

func (m *Model) nextSort() {
	m.sort = (m.sort + 1) % numSorts
	m.rebuild()
}

// treeKey handles the keys that collapse and expand the tree and reports
// whether k was one of them.
func (m *Model) treeKey(k tea.KeyPressMsg) bool {
	switch {
	case key.Matches(k, m.Keys.Toggle):
		m.toggle(k)
	case key.Matches(k, m.Keys.ExpandAll):
		m.allOpen = true
		clear(m.collapsed)
		m.rebuild()
	case key.Matches(k, m.Keys.CollapseAll):
		m.allOpen = false
		clear(m.expanded)
		m.rebuild()
	default:
		return false
	}
	return true
}

func (m *Model) toggle(k tea.KeyPressMsg) {
	row, ok := m.Grid.Selected()
	if !ok || m.tree == nil {
		return
	}
	n := find(m.tree.Root, row.Key)
	if n == nil || len(n.Children) == 0 {
		return
	}
	closed := m.isCollapsed(n)
	open := closed
	switch {
	case key.Matches(k, m.Keys.Expand):
		open = true
	case key.Matches(k, m.Keys.Collapse):
		open = false
	}
	if open {
		delete(m.collapsed, n.Path)
		m.expanded[n.Path] = true
	} else {
		delete(m.expanded, n.Path)
		m.collapsed[n.Path] = true
	}
	m.rebuild()
}

func find(n *cgroupfs.Node, path string) *cgroupfs.Node {
	if n == nil {
		return nil
	}
	if n.Path == path {
		return n
	}
	for _, c := range n.Children {
		if f := find(c, path); f != nil {
			return f
		}
	}
	return nil
}

// header is node capacity, reservations, allocatable and the kubepods
// limits, with drift.
func (m Model) header() []string {
	st := m.Styles
	lbl := func(s string) string { return st.Label.Render(s) }
	t := m.tree
	if t == nil {
		return []string{st.Faint.Render("reading cgroups…"), "", ""}
	}
	a := t.Allocatable
	cpu := func(milli int64) string { return fmt.Sprintf("%.2g CPU", float64(milli)/1000) }
	l1 := fmt.Sprintf("%s %s/%s  %s %s, %s  %s %s, %s  %s %s, %s",
		st.Header.Render("CGROUPS"), t.Mode, orUnknown(string(t.Driver)),
		lbl("capacity"), cpu(a.CapacityMilliCPU), format.Bytes(a.CapacityMemoryBytes),
		lbl("reserved sys"), cpu(a.SystemReservedMilliCPU), format.Bytes(a.SystemReservedMemoryBytes),
		lbl("kube"), cpu(a.KubeReservedMilliCPU), format.Bytes(a.KubeReservedMemoryBytes))
	l2 := fmt.Sprintf("%s %s, %s", lbl("allocatable"), cpu(a.MilliCPU), format.Bytes(a.MemoryBytes))
	if k := a.Kubepods; k != nil {
		l2 += "  " + lbl("kubepods limits") + " " + limits(*k)
	}
	l2 += "  " + lbl("(cpu in cores)")
	l3 := ""
	switch {
	case m.err != "":
		l3 = st.Bad.Render("read failed: " + m.err)
	case len(a.Drift) > 0:
		l3 = st.Warn.Render("drift: " + strings.Join(a.Drift, "; "))
	case len(t.Errors) > 0:
		l3 = st.Warn.Render(strings.Join(t.Errors, "; "))
	case a.Kubepods != nil:
		l3 = st.OK.Render("kubepods limits match allocatable")
	}
	return []string{l1, l2, l3}
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}

func limits(k cgroupfs.KubepodsLimits) string {
	var parts []string
	mem := "mem unlimited"
	if k.MemoryLimitBytes != nil {
		mem = "mem " + format.Bytes(int64(*k.MemoryLimitBytes))
	}
	parts = append(parts, mem)
	if k.CPUShares != nil {
		parts = append(parts, fmt.Sprintf("cpu.shares %d", *k.CPUShares))
	}
	if k.CPUWeight != nil {
		parts = append(parts, fmt.Sprintf("cpu.weight %d", *k.CPUWeight))
	}
	if k.PidsMax != nil {
		parts = append(parts, fmt.Sprintf("pids.max %d", *k.PidsMax))
	}
	return strings.Join(parts, ", ")
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
