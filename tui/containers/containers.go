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

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/nodegc/nodegc/cgroupfs"
	"github.com/nodegc/nodegc/engine"
	"github.com/nodegc/nodegc/tui/internal/feed"
	"github.com/nodegc/nodegc/tui/internal/grid"
	"github.com/nodegc/nodegc/tui/internal/human"
	"github.com/nodegc/nodegc/tui/internal/snapidx"
	"github.com/nodegc/nodegc/tui/keys"
	"github.com/nodegc/nodegc/tui/style"
)

// Sort is the order of the pods.
type Sort int

// Sort orders; s cycles through them.
const (
	ByPod Sort = iota
	ByDeadCount
	ByRemovals
	numSorts
)

func (s Sort) String() string { return [...]string{"pod", "dead count", "removals"}[s] }

// group is one pod and its dead containers.
type group struct {
	pod      string
	uid      string
	header   grid.Row
	rows     []grid.Row
	names    []string
	dead     int
	removals int
}

// Model is the Containers pane.
type Model struct {
	grid.Pane
	sort    Sort
	groups  []group
	summary string
	loaded  bool
	// snap and x are the last refresh, tree the last cgroup read: the
	// details of a pod.
	snap engine.Snapshot
	x    snapidx.Index
	now  time.Time
	tree *cgroupfs.Tree
}

var columns = []grid.Column{
	{Title: "POD / CONTAINER", Width: 5, Flex: true},
	{Title: "ATTEMPT", Width: 7, Right: true},
	{Title: "EXIT", Width: 5, Right: true},
	{Title: "FINISHED", Width: 10},
	{Title: "STATE", Width: 7, MinTable: 90},
	{Title: "PLAN", Width: 6, Flex: true},
}

// New returns an empty pane.
func New(k keys.KeyMap, st style.Styles) Model {
	return Model{Pane: grid.NewPane(k, st, columns, 1, 1)}
}

// Title names the pane.
func (m Model) Title() string { return "Containers" }

type unitKey struct{ uid, name string }

// SetData shows a snapshot, indexed as x, and the plan made from it at
// now.
func (m *Model) SetData(s engine.Snapshot, x snapidx.Index, p engine.Plan, now time.Time) {
	m.loaded = true
	m.snap, m.x, m.now = s, x, now
	removal := make(map[string]engine.ContainerRemoval, len(p.ContainerGC.Remove))
	for _, r := range p.ContainerGC.Remove {
		removal[r.ID] = r
	}
	removable := make(map[string]bool, len(s.PodSource.RemovablePodUIDs))
	for _, uid := range s.PodSource.RemovablePodUIDs {
		removable[uid] = true
	}

	units := make(map[unitKey][]*engine.Container)
	for i := range s.Containers {
		c := &s.Containers[i]
		if c.State == engine.ContainerRunning {
			continue
		}
		k := unitKey{c.PodUID, c.Name}
		units[k] = append(units[k], c)
	}
	byPod := make(map[string]*group)
	dead := 0
	pol := p.Policy.Container
	marks := markTexts(pol)
	for k, cs := range units {
		// Newest first, as the kubelet ranks a unit's instances.
		slices.SortStableFunc(cs, func(a, b *engine.Container) int {
			return cmp.Or(b.CreatedAt.Compare(a.CreatedAt), strings.Compare(a.ID, b.ID))
		})
		g := byPod[k.uid]
		if g == nil {
			pod := x.PodOf(*cs[0])
			g = &group{pod: pod.String(), uid: k.uid}
			byPod[k.uid] = g
		}
		g.names = append(g.names, k.name)
		for i, c := range cs {
			dead++
			g.dead++
			plan, kind := mark(c, i, removal, marks, pol, now)
			if kind == grid.Remove {
				g.removals++
			}
			fin := "—"
			if c.FinishedAt != nil {
				fin = human.Duration(now.Sub(*c.FinishedAt)) + " ago"
			}
			state := c.State.Short()
			g.rows = append(g.rows, grid.Row{
				Cells: []string{"  " + c.Name, strconv.FormatUint(uint64(c.Attempt), 10), strconv.Itoa(int(c.ExitCode)), fin, strings.ToLower(state), plan},
				Kind:  kind,
				Key:   c.ID,
				ID:    c.ID,
			})
		}
	}
	m.groups = m.groups[:0]
	for _, g := range byPod {
		// Rows were appended unit by unit in map order: order them by
		// container name, then newest first (stable within a name).
		slices.SortStableFunc(g.rows, func(a, b grid.Row) int { return strings.Compare(a.Cells[0], b.Cells[0]) })
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
	slices.SortFunc(m.groups, func(a, b group) int { return cmp.Or(strings.Compare(a.pod, b.pod), strings.Compare(a.uid, b.uid)) })

	var b strings.Builder
	fmt.Fprintf(&b, "%d dead in %d pods · plan removes %d containers, %d sandboxes, %d logs",
		dead, len(m.groups), len(p.ContainerGC.Remove), len(p.SandboxGC.Remove), len(p.LogGC.Remove))
	keep := fmt.Sprint(pol.MaxPerPodContainer)
	if pol.MaxPerPodContainer < 0 {
		keep = "all"
	}
	maxAll := fmt.Sprint(pol.MaxContainers)
	if pol.MaxContainers < 0 {
		maxAll = "∞"
	}
	fmt.Fprintf(&b, " · keep %s per container, max %s, min age %s", keep, maxAll, human.Duration(pol.MinAge))
	b.WriteString(" · pods: " + s.PodSource.Summary())
	m.summary = b.String()
	m.rebuild()
}

// markTexts are the plan column's texts for a policy, made once per
// refresh rather than once per container.
func markTexts(pol engine.ContainerPolicy) map[string]string {
	return map[string]string{
		string(engine.RemovePodRemovable):      "remove: pod removable",
		string(engine.RemovePerContainerLimit): fmt.Sprintf("remove: keeps newest %d", pol.MaxPerPodContainer),
		string(engine.RemoveNodeLimit):         fmt.Sprintf("remove: node limit %d", pol.MaxContainers),
		"young":                                "keep: younger than " + human.Duration(pol.MinAge),
		"newest":                               "keep: newest",
		"newestN":                              fmt.Sprintf("keep: newest %d", pol.MaxPerPodContainer),
	}
}

// mark says what the plan does with the i-th newest instance of its unit.
func mark(c *engine.Container, i int, removal map[string]engine.ContainerRemoval, marks map[string]string, pol engine.ContainerPolicy, now time.Time) (string, grid.Kind) {
	if r, ok := removal[c.ID]; ok {
		if s, ok := marks[string(r.Reason)]; ok {
			return s, grid.Remove
		}
		return "remove: " + string(r.Reason), grid.Remove
	}
	switch {
	case c.CreatedAt.After(now.Add(-pol.MinAge)):
		return marks["young"], grid.Dim
	case pol.MaxPerPodContainer < 0 || i < pol.MaxPerPodContainer:
		if i == 0 {
			return marks["newest"], grid.Dim
		}
		return marks["newestN"], grid.Dim
	}
	return "keep", grid.Dim
}

func (m *Model) rebuild() {
	groups := m.groups
	if m.sort != ByPod {
		groups = slices.Clone(groups)
		slices.SortStableFunc(groups, func(a, b group) int {
			if m.sort == ByDeadCount {
				return cmp.Compare(b.dead, a.dead)
			}
			return cmp.Compare(b.removals, a.removals)
		})
	}
	if m.Reversed {
		groups = slices.Clone(groups)
		slices.Reverse(groups)
	}
	// The sort arrow: pods by name on their column; the counts are in
	// each pod's header, so their arrow marks the same column.
	m.SortArrow(0, m.sort != ByPod)
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
	switch msg := msg.(type) {
	case tea.KeyPressMsg:
		m.HandleKey(msg, m.rebuild, m.nextSort, nil)
	case feed.Snapshot:
		m.SetData(msg.Snap, msg.Index, msg.Plan, msg.At)
	case feed.Cgroups:
		if msg.Tree != nil {
			m.tree = msg.Tree
		}
	}
	return m, nil
}

// Selected returns the selected container's ID, or the pod's UID on a pod
// row.
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

// View renders the summary, the filter and the table.
func (m Model) View() string {
	if !m.loaded {
		return m.Styles.Faint.Render("waiting for the first snapshot…")
	}
	order := m.sort.String()
	if m.Reversed {
		order += ", reversed"
	}
	parts := m.WithFilter([]string{m.Styles.Label.Render(ansi.Truncate(m.summary+" · sort: "+order, m.Width, "…"))})
	if len(m.Grid.Rows()) == 0 {
		parts = append(parts, m.Styles.Faint.Render("no dead containers"))
		return lipgloss.JoinVertical(lipgloss.Left, parts...)
	}
	parts = append(parts, m.Grid.View())
	return lipgloss.JoinVertical(lipgloss.Left, parts...)
}

// ShortHelp returns the pane's keys for the footer.
func (m Model) ShortHelp() []key.Binding {
	return []key.Binding{m.Keys.Drill, m.Keys.Filter, m.Keys.Sort, m.Keys.Copy}
}

// FullHelp returns the pane's keys for the full help.
func (m Model) FullHelp() [][]key.Binding {
	return [][]key.Binding{m.Keys.Navigation(), append([]key.Binding{m.Keys.Drill}, m.Keys.Table()...)}
}
