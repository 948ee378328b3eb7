// Package images is the dashboard's Images pane: every image in LRU
// (eviction) order with the reason it stays or its place in the removal
// order, and the cut line where the planned removals reach the bytes to
// free.
package images

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

	"github.com/nodegc/nodegc/engine"
	"github.com/nodegc/nodegc/tui/internal/feed"
	"github.com/nodegc/nodegc/tui/internal/grid"
	"github.com/nodegc/nodegc/tui/internal/human"
	"github.com/nodegc/nodegc/tui/internal/snapidx"
	"github.com/nodegc/nodegc/tui/keys"
	"github.com/nodegc/nodegc/tui/style"
)

// Sort is the order of the table.
type Sort int

// Sort orders; s cycles through them.
const (
	// ByRank is the eviction order, with the cut line.
	ByRank Sort = iota
	BySize
	ByLastUsed
	ByName
	numSorts
)

func (s Sort) String() string {
	return [...]string{"rank", "size", "last used", "name"}[s]
}

// item is one image row, formatted once per refresh.
type item struct {
	rank      int
	id        string
	name      string
	size      int64
	lastUsed  time.Time
	firstSeen time.Time
	status    string
	kind      grid.Kind
	cells     []string
}

// Model is the Images pane.
type Model struct {
	grid.Pane
	sort    Sort
	items   []item
	cutLine int
	cutText string
	summary string
	loaded  bool
	// snap, x and plan are the last refresh, for the details of an image.
	snap engine.Snapshot
	x    snapidx.Index
	plan engine.Plan
	now  time.Time
}

var columns = []grid.Column{
	{Title: "#", Width: 4, Right: true},
	{Title: "IMAGE", Width: 4, Flex: true},
	{Title: "ID", Width: 12, MinTable: 90},
	{Title: "SIZE", Width: 9, Right: true},
	{Title: "LAST USED", Width: 9},
	{Title: "FIRST SEEN", Width: 10, MinTable: 84},
	{Title: "STATUS", Width: 6, Flex: true},
}

// New returns an empty pane.
func New(k keys.KeyMap, st style.Styles) Model {
	return Model{Pane: grid.NewPane(k, st, columns, 1, 1)}
}

// Title names the pane.
func (m Model) Title() string { return "Images" }

// SetData shows a snapshot, indexed as x, and the plan made from it at
// now.
func (m *Model) SetData(s engine.Snapshot, x snapidx.Index, p engine.Plan, now time.Time) {
	m.loaded = true
	m.snap, m.x, m.plan, m.now = s, x, p, now
	recs := make(map[string]engine.ImageRecord, len(s.ImageRecords))
	for _, r := range s.ImageRecords {
		recs[r.ID] = r
	}
	removal := make(map[string]int, len(p.ImageGC.Remove))
	for i, r := range p.ImageGC.Remove {
		removal[r.ID] = i
	}
	keep := make(map[string]engine.ImageKeep, len(p.ImageGC.Keep))
	for _, k := range p.ImageGC.Keep {
		keep[k.ID] = k
	}

	order := lruOrder(s, p, recs)
	m.items = make([]item, 0, len(order))
	for i, id := range order {
		im, ok := x.Images[id]
		if !ok {
			continue
		}
		it := item{rank: i + 1, id: id, name: displayName(snapidx.ImageName(im)), size: im.SizeBytes}
		if r, ok := recs[id]; ok {
			it.firstSeen = r.FirstDetected
			if r.LastUsed != nil {
				it.lastUsed = *r.LastUsed
			}
		}
		it.status, it.kind = status(im, x, p, removal, keep, now)
		first := "—"
		if !it.firstSeen.IsZero() {
			first = human.Duration(now.Sub(it.firstSeen))
		}
		last := "never"
		if !it.lastUsed.IsZero() {
			last = human.Duration(now.Sub(it.lastUsed))
		}
		it.cells = []string{strconv.Itoa(it.rank), it.name, human.ShortID(id), human.Bytes(it.size), last, first, it.status}
		m.items = append(m.items, it)
	}

	g := p.ImageGC
	m.cutLine = g.CutLine
	m.cutText = ""
	var spaceBytes int64
	var spaceN, ageN int
	for _, r := range g.Remove {
		switch r.Reason {
		case engine.RemoveForAge:
			ageN++
		default:
			spaceN++
			spaceBytes = engine.AddBytes(spaceBytes, r.SizeBytes)
		}
	}
	if g.Triggered {
		switch {
		case spaceN == 0:
			m.cutText = fmt.Sprintf("cut line: nothing can be removed, %s needed", human.Bytes(g.BytesToFree))
		case spaceBytes < g.BytesToFree:
			m.cutText = fmt.Sprintf("cut line: all %d candidates free %s < %s needed", spaceN, human.Bytes(spaceBytes), human.Bytes(g.BytesToFree))
		default:
			m.cutText = fmt.Sprintf("cut line: the %d removals above free %s ≥ %s needed", spaceN, human.Bytes(spaceBytes), human.Bytes(g.BytesToFree))
		}
	}

	pol := p.Policy.Image
	var b strings.Builder
	fmt.Fprintf(&b, "%d images · imagefs %d%% used (high %d%%, low %d%%) · ", len(m.items), g.UsagePercent, pol.HighThresholdPercent, pol.LowThresholdPercent)
	switch {
	case g.Triggered:
		fmt.Fprintf(&b, "GC triggered: free %s", human.Bytes(g.BytesToFree))
	default:
		b.WriteString("below high threshold")
	}
	if n := len(g.Remove); n > 0 {
		fmt.Fprintf(&b, " · plan removes %d (%s)", n, human.Bytes(g.BytesFreed))
		if ageN > 0 {
			fmt.Fprintf(&b, ", %d for age", ageN)
		}
	}
	m.summary = b.String()
	m.rebuild()
}

// displayName drops the implied registry of Docker Hub's official images,
// as docker does: docker.io/library/nginx:1.25 shows as nginx:1.25.
func displayName(s string) string {
	if r, ok := strings.CutPrefix(s, "docker.io/library/"); ok {
		return r
	}
	return s
}

// lruOrder is the plan's eviction order, with any image the plan did not
// rank appended in the kubelet's order (never used first, then least
// recently used, then first detected, then ID).
func lruOrder(s engine.Snapshot, p engine.Plan, recs map[string]engine.ImageRecord) []string {
	order := make([]string, 0, len(s.Images))
	seen := make(map[string]bool, len(p.ImageGC.Order))
	for _, id := range p.ImageGC.Order {
		if !seen[id] {
			seen[id] = true
			order = append(order, id)
		}
	}
	var rest []string
	for _, im := range s.Images {
		if !seen[im.ID] {
			seen[im.ID] = true
			rest = append(rest, im.ID)
		}
	}
	slices.SortStableFunc(rest, func(a, b string) int {
		ra, rb := recs[a], recs[b]
		return cmp.Or(
			engine.CompareLastUsed(ra.LastUsed, rb.LastUsed),
			ra.FirstDetected.Compare(rb.FirstDetected),
			strings.Compare(a, b),
		)
	})
	return append(order, rest...)
}

// status is the reason an image stays, or its place in the removal order.
func status(im engine.Image, x snapidx.Index, p engine.Plan, removal map[string]int, keep map[string]engine.ImageKeep, now time.Time) (string, grid.Kind) {
	if i, ok := removal[im.ID]; ok {
		return fmt.Sprintf("#%d %s", i+1, p.ImageGC.Remove[i].Reason), grid.Remove
	}
	if users := x.Users[im.ID]; len(users) > 0 {
		s := "in use by " + users[0]
		if len(users) > 1 {
			s += fmt.Sprintf(" +%d", len(users)-1)
		}
		return s, grid.Dim
	}
	if x.IsSandboxImage(im) {
		if im.Pinned {
			return engine.DetailSandboxImagePinned, grid.Dim
		}
		return engine.DetailSandboxImageUnpinned, grid.Dim
	}
	if im.Pinned {
		return engine.DetailPinned, grid.Dim
	}
	k, ok := keep[im.ID]
	switch {
	case !ok:
		return "candidate", grid.Normal
	case k.Reason == engine.KeepTooYoung && k.EligibleAt != nil:
		return "too young (eligible in " + human.Duration(k.EligibleAt.Sub(now)) + ")", grid.Dim
	case k.Reason == engine.KeepInUse:
		return "in use " + k.Detail, grid.Dim
	case k.Reason == engine.KeepPinned || k.Reason == engine.KeepSandboxImage:
		if k.Detail != "" {
			return k.Detail, grid.Dim
		}
		return string(k.Reason), grid.Dim
	case k.Reason == engine.KeepNotNeeded:
		if p.ImageGC.Triggered {
			return "not needed (below cut)", grid.Normal
		}
		return "candidate", grid.Normal
	}
	return string(k.Reason), grid.Dim
}

// rebuild turns the items into rows under the sort and the filter.
func (m *Model) rebuild() {
	items := m.items
	if m.sort != ByRank {
		items = slices.Clone(items)
		slices.SortStableFunc(items, func(a, b item) int {
			switch m.sort {
			case BySize:
				return cmp.Or(cmp.Compare(b.size, a.size), cmp.Compare(a.rank, b.rank))
			case ByLastUsed:
				return cmp.Or(b.lastUsed.Compare(a.lastUsed), cmp.Compare(a.rank, b.rank))
			default:
				return cmp.Or(strings.Compare(a.name, b.name), cmp.Compare(a.rank, b.rank))
			}
		})
	}
	m.SortArrow(sortColumn[m.sort], m.sort == BySize || m.sort == ByLastUsed)
	if m.Reversed {
		items = slices.Clone(items)
		slices.Reverse(items)
	}
	matched := 0
	rows := make([]grid.Row, 0, len(items)+1)
	cutDone := m.sort != ByRank || m.cutText == "" || m.Reversed
	for _, it := range items {
		if !m.Filter.Match(it.name) && !m.Filter.Match(it.id) && !m.Filter.Match(it.status) {
			continue
		}
		if !cutDone && it.rank > m.cutLine {
			rows = append(rows, grid.Row{Cells: []string{m.cutText}, Kind: grid.Cut, Key: "cut"})
			cutDone = true
		}
		rows = append(rows, grid.Row{Cells: it.cells, Kind: it.kind, Key: it.id, ID: it.id})
		matched++
	}
	if !cutDone {
		rows = append(rows, grid.Row{Cells: []string{m.cutText}, Kind: grid.Cut, Key: "cut"})
	}
	m.Matched, m.Total = matched, len(m.items)
	m.Grid.SetRows(rows)
}

// sortColumn is the column each order sorts by.
var sortColumn = [numSorts]int{ByRank: 0, BySize: 3, ByLastUsed: 4, ByName: 1}

// Update handles the pane's keys (navigation, filter and sort) and the
// refreshes it shows.
func (m Model) Update(msg tea.Msg) (Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.KeyPressMsg:
		m.HandleKey(msg, m.rebuild, m.nextSort, nil)
	case feed.Snapshot:
		m.SetData(msg.Snap, msg.Index, msg.Plan, msg.At)
	}
	return m, nil
}

// Selected returns the selected image's ID.
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
	head := m.Styles.Label.Render(ansi.Truncate(m.summary+" · sort: "+order, m.Width, "…"))
	parts := m.WithFilter([]string{head})
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
