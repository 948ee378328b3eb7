// Package containers is the dashboard's Containers pane: the dead
// containers grouped by pod and then by container name, each marked with
// what the policy would do to it and why.
package containers

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/nodegc/nodegc/cgroupfs"
	"github.com/nodegc/nodegc/engine"
	"github.com/nodegc/nodegc/internal/format"
	"github.com/nodegc/nodegc/tui/internal/feed"
	"github.com/nodegc/nodegc/tui/internal/grid"
	"github.com/nodegc/nodegc/tui/keys"
	"github.com/nodegc/nodegc/tui/style"
)

// Sort orders of the pods (grid.Pane.Sort); s cycles through them.
const (
	ByPod = iota
	ByDeadCount
	ByRemovals
)

// orders are the sort orders, by the constants above. Every order sorts
// the pods, whose column's title names the count (the counts are in each
// pod's header), so every arrow marks that column.
var orders = []grid.Order{
	ByPod:       {Name: "pod"},
	ByDeadCount: {Name: "dead count", Desc: true},
	ByRemovals:  {Name: "removals", Desc: true},
}

// group is one pod and its dead containers.
type group struct {
	pod      string
	uid      string
	header   grid.Row
	rows     []grid.Row
	dead     int
	removals int
}

// Model is the Containers pane. It renders the engine's container rows
// (engine.ExplainContainers): their grouping by pod, their order, and
// what the plan does with each are the engine's.
type Model struct {
	grid.Pane
	groups  []group
	summary string
	loaded  bool
	// snap and pods (display names by pod UID) are the last refresh, tree
	// the last cgroup read: the details of a pod.
	snap engine.Snapshot
	pods map[string]string
	tree *cgroupfs.Tree
	// explained are the engine's rows of the last refresh, for the raw
	// view of a pod.
	explained []engine.ContainerRow
	// treeAt is when tree was read.
	treeAt time.Time
}

var columns = []grid.Column{
	{Title: "POD / CONTAINER", Width: 5, Flex: true},
	{Title: "ATTEMPT", Width: 7, Right: true},
	{Title: "EXIT", Width: 5, Right: true},
	{Title: "FINISHED", Width: 10},
	{Title: "STATE", Width: 7, MinTable: 90},
	{Title: "PLAN", Width: 6, Flex: true},
	{Title: "DETAIL", Width: 6, Flex: true, MinTable: 120},
}

// New returns an empty pane.
func New(k keys.KeyMap, st style.Styles) Model {
	return Model{Pane: grid.NewPane(k, st, columns, 1, 1, orders...)}
}

// ago is how long ago at was, as the FINISHED column reads it.
func ago(at, now time.Time) string { return format.Ago(at, now) }

// NextChange is when an age on screen next reads differently.
func (m Model) NextChange() time.Time { return m.Grid.NextChange() }

// Title names the pane.
func (m Model) Title() string { return "Containers" }

// SetData shows the engine's explanation of the plan p's containers, made
// from the snapshot s, at now.
func (m *Model) SetData(s engine.Snapshot, p engine.Plan, now time.Time) {
	m.loaded = true
	m.snap = s
	m.Grid.SetNow(now)
	rows := engine.ExplainContainers(s, p)
	m.explained = rows
	order := m.groupRows(rows, deadByID(s), p)
	m.setGroups(order, s.PodSource.RemovablePodUIDs)
	m.summary = summaryLine(s, p, len(rows), len(m.groups))
	grid.Refresh(m)
}

// deadByID is the snapshot's containers that are not running, by ID: the
// rows' pods and exit codes are read from them.
func deadByID(s engine.Snapshot) map[string]*engine.Container {
	byID := make(map[string]*engine.Container, len(s.Containers))
	for i := range s.Containers {
		if c := &s.Containers[i]; c.State != engine.ContainerRunning {
			byID[c.ID] = c
		}
	}
	return byID
}

// groupRows groups the engine's rows by pod UID, in the order the pods
// first appear, and records each pod's display name in m.pods. A row whose
// container is gone from the snapshot takes its pod from the plan's step.
func (m *Model) groupRows(rows []engine.ContainerRow, byID map[string]*engine.Container, p engine.Plan) []*group {
	byPod := make(map[string]*group)
	var order []*group
	m.pods = make(map[string]string)
	for _, r := range rows {
		uid, exit := "", "—"
		if c, ok := byID[r.ID]; ok {
			uid, exit = c.PodUID, strconv.Itoa(int(c.ExitCode))
		} else if r.Step > 0 {
			uid = p.ContainerGC.Remove[r.Step-1].PodUID
		}
		g := byPod[uid]
		if g == nil {
			g = &group{pod: r.Pod, uid: uid}
			byPod[uid] = g
			order = append(order, g)
			m.pods[uid] = r.Pod
		}
		g.dead++
		plan, kind := mark(r)
		if kind == grid.Remove {
			g.removals++
		}
		var clocks []grid.Clock
		if r.FinishedAt != nil {
			clocks = []grid.Clock{{Col: 3, At: *r.FinishedAt, Text: ago}}
		}
		g.rows = append(g.rows, grid.Row{
			Cells:  []string{"  " + r.Name, strconv.FormatUint(uint64(r.Attempt), 10), exit, "—", strings.ToLower(r.State.Short()), plan, r.Detail},
			Clocks: clocks,
			Kind:   kind,
			Key:    r.ID,
			ID:     r.ID,
		})
	}
	return order
}

// setGroups gives each group its header (its counts, and whether the pod
// itself is removable) and keeps them in m.groups, sorted by pod name.
func (m *Model) setGroups(order []*group, removableUIDs []string) {
	removable := make(map[string]bool, len(removableUIDs))
	for _, uid := range removableUIDs {
		removable[uid] = true
	}
	m.groups = m.groups[:0]
	for _, g := range order {
		label := fmt.Sprintf("%s  (%d dead", g.pod, g.dead)
		if g.removals > 0 {
			label += fmt.Sprintf(", %d to remove", g.removals)
		}
		label += ")"
		if removable[g.uid] {
			label += "  pod removable"
		}
		g.header = grid.Row{Cells: []string{label}, Kind: grid.Group, Span: true, Key: "pod/" + g.uid, ID: g.uid}
		m.groups = append(m.groups, *g)
	}
	// The engine orders the rows by pod name; pods that share a name
	// stay apart, by UID.
	slices.SortStableFunc(m.groups, func(a, b group) int { return cmp.Or(strings.Compare(a.pod, b.pod), strings.Compare(a.uid, b.uid)) })
}

// summaryLine is the line above the table: how many dead containers and pods,
// the pod source's state, what the plan removes, and the container policy
// it follows.
func summaryLine(s engine.Snapshot, p engine.Plan, rows, groups int) string {
	pol := p.Policy.Container
	var b strings.Builder
	// Most telling first: a narrow screen cuts the end, the policy.
	fmt.Fprintf(&b, "%d dead in %s · pods: %s · plan removes %s, %s, %s",
		rows, format.Plural(groups, "pod"), s.PodSource.Summary(), format.Plural(len(p.ContainerGC.Remove), "container"),
		format.Plural(len(p.SandboxGC.Remove), "sandbox"), format.Plural(len(p.LogGC.Remove), "log"))
	keep := fmt.Sprint(pol.MaxPerPodContainer)
	if pol.MaxPerPodContainer < 0 {
		keep = "all"
	}
	maxAll := fmt.Sprint(pol.MaxContainers)
	if pol.MaxContainers < 0 {
		maxAll = "∞"
	}
	fmt.Fprintf(&b, " · keep %s per container, max %s, min age %s", keep, maxAll, format.Duration(pol.MinAge))
	return b.String()
}

// mark is the plan column: the engine's action, step and reason (its
// detail has its own column).
func mark(r engine.ContainerRow) (string, grid.Kind) {
	if r.Action == engine.ActionRemove {
		return "remove #" + strconv.Itoa(r.Step) + " " + r.Reason, grid.Remove
	}
	return "keep " + r.Reason, grid.Dim
}

// Rebuild turns the groups into rows under the sort and the filter.
func (m *Model) Rebuild() {
	groups := grid.Ordered(&m.Pane, m.groups, func(a, b group) int {
		if m.Sort == ByDeadCount {
			return cmp.Compare(b.dead, a.dead)
		}
		return cmp.Compare(b.removals, a.removals)
	})
	// The column the arrow marks says which count the pods are sorted by.
	title := "POD / CONTAINER"
	if m.Sort != ByPod {
		title = "POD BY " + strings.ToUpper(orders[m.Sort].Name)
	}
	m.Grid.SetTitle(0, title)
	var rows []grid.Row
	matched, total := 0, 0
	for _, g := range groups {
		total += len(g.rows)
		podMatch := m.Filter.Match(g.pod) || m.Filter.Match(g.uid)
		first := true
		for _, r := range g.rows {
			if !podMatch && !m.Filter.Match(r.Cells[0]) && !m.Filter.Match(r.Cells[5]) {
				continue
			}
			if first {
				rows = append(rows, g.header)
				first = false
			}
			rows = append(rows, r)
			matched++
		}
	}
	m.Matched, m.Total = matched, total
	m.Grid.SetRows(rows)
}

// Update handles the pane's keys (navigation, filter and sort) and the
// refreshes and cgroup reads it shows.
func (m Model) Update(msg tea.Msg) (Model, tea.Cmd) {
	grid.Update(&m, msg)
	switch msg := msg.(type) {
	case feed.Snapshot:
		m.SetData(msg.Snap, msg.Plan, msg.At)
	case feed.Cgroups:
		if msg.Tree != nil {
			m.tree, m.treeAt = msg.Tree, msg.At
		}
	}
	return m, nil
}

// View renders the summary, the filter and the table.
func (m Model) View() string {
	if !m.loaded {
		return m.Styles.Faint.Render("waiting for the first snapshot…")
	}
	parts := m.WithFilter([]string{m.Styles.Label.Render(ansi.Truncate(m.summary, m.Width, "…"))})
	if len(m.Grid.Rows()) == 0 {
		empty := "no dead containers"
		if m.Filter.Active() {
			empty = "no match for the filter · esc clears it"
		}
		parts = append(parts, m.Styles.Faint.Render(empty))
		return lipgloss.JoinVertical(lipgloss.Left, parts...)
	}
	parts = append(parts, m.Grid.View())
	return lipgloss.JoinVertical(lipgloss.Left, parts...)
}

// Aliases are the pane's other names for `:`: k9s calls it pods.
func (m Model) Aliases() []string { return []string{"pods"} }

// Item returns the selected dead container (not a pod's row), which
// ctrl+d offers to remove alone.
func (m Model) Item() (feed.Item, bool) {
	r, ok := m.Grid.Selected()
	if !ok || r.ID == "" || r.Kind == grid.Group {
		return feed.Item{}, false
	}
	return feed.Item{Kind: engine.ItemContainer, ID: r.ID, Name: strings.TrimSpace(r.Cells[0])}, true
}
