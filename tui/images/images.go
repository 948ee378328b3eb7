// Package images is the dashboard's Images pane: the engine's image rows
// (engine.ExplainImages) in eviction order, each with what the plan does
// with it and why, and the engine's cut line.
package images

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

	"github.com/nodegc/nodegc/engine"
	"github.com/nodegc/nodegc/internal/format"
	"github.com/nodegc/nodegc/tui/internal/feed"
	"github.com/nodegc/nodegc/tui/internal/grid"
	"github.com/nodegc/nodegc/tui/keys"
	"github.com/nodegc/nodegc/tui/style"
)

// Sort orders (grid.Pane.Sort); s cycles through them.
const (
	// ByRank is the eviction order, with the cut line.
	ByRank = iota
	BySize
	ByLastUsed
	ByName
)

// orders are the table's sort orders, by the constants above.
var orders = []grid.Order{
	ByRank:     {Name: "rank", Col: 0},
	BySize:     {Name: "size", Col: 3, Desc: true},
	ByLastUsed: {Name: "last used", Col: 4, Desc: true},
	ByName:     {Name: "name", Col: 1},
}

// item is one image row, formatted once per refresh.
type item struct {
	row      engine.ImageRow
	name     string
	lastUsed time.Time
	status   string
	kind     grid.Kind
	cells    []string
	clocks   []grid.Clock
}

// Model is the Images pane. It renders the engine's explanation of the
// plan (engine.ExplainImages) and decides nothing: which containers use
// an image, which is the sandbox image, the order and the cut line are the
// engine's.
type Model struct {
	grid.Pane
	items   []item
	cut     engine.CutLine
	summary string
	loaded  bool
	// plan is the last refresh's, for the details of an image.
	plan engine.Plan
}

var columns = []grid.Column{
	{Title: "#", Width: 4, Right: true},
	{Title: "IMAGE", Width: 10, Flex: true, Ref: true}, // the name wins the room: 2 to DETAIL's 1
	{Title: "ID", Width: 12, MinTable: 140},
	{Title: "SIZE", Width: 9, Right: true},
	{Title: "LAST USED", Width: 9},
	{Title: "FIRST SEEN", Width: 10, MinTable: 84},
	{Title: "STATUS", Width: 18},
	{Title: "DETAIL", Width: 5, Flex: true},
}

// New returns an empty pane.
func New(k keys.KeyMap, st style.Styles) Model {
	return Model{Pane: grid.NewPane(k, st, columns, 1, 1, orders...)}
}

// Title names the pane.
func (m Model) Title() string { return "Images" }

// SetData shows the engine's explanation of the plan p, made from the
// snapshot s, at now.
func (m *Model) SetData(s engine.Snapshot, p engine.Plan, now time.Time) {
	m.loaded = true
	m.plan = p
	m.Grid.SetNow(now)
	rows, cut := engine.ExplainImages(s, p)
	m.cut = cut
	m.items = make([]item, len(rows))
	for i, r := range rows {
		it := item{row: r, name: displayName(r.Name)}
		if r.LastUsed != nil {
			it.lastUsed = *r.LastUsed
		}
		it.status, it.kind = status(r)
		it.cells = []string{strconv.Itoa(r.Rank), it.name, format.ShortID(r.Image.ID), format.Bytes(r.Image.SizeBytes), "never", "—", it.status, r.Detail}
		if !it.lastUsed.IsZero() {
			it.clocks = append(it.clocks, grid.Clock{Col: 4, At: it.lastUsed, Text: age})
		}
		if r.FirstDetected != nil {
			it.clocks = append(it.clocks, grid.Clock{Col: 5, At: *r.FirstDetected, Text: age})
		}
		if r.EligibleAt != nil && r.Reason == string(engine.KeepTooYoung) {
			it.clocks = append(it.clocks, grid.Clock{Col: 7, At: *r.EligibleAt, Text: eligible})
		}
		m.items[i] = it
	}

	g := p.ImageGC
	ageN := 0
	for _, r := range g.Remove {
		if r.Reason == engine.RemoveForAge {
			ageN++
		}
	}
	pol := p.Policy.Image
	var b strings.Builder
	fmt.Fprintf(&b, "%d images · imagefs %d%% used (high %d%%, low %d%%) · ", len(m.items), g.UsagePercent, pol.HighThresholdPercent, pol.LowThresholdPercent)
	switch {
	case cut.Row == 0:
		// A line above every row would take the first row, where the
		// cursor starts: the summary says it instead.
		b.WriteString(cut.Text)
	case g.Triggered:
		fmt.Fprintf(&b, "GC triggered: free %s", format.Bytes(g.BytesToFree))
	default:
		b.WriteString("below high threshold")
	}
	if n := len(g.Remove); n > 0 {
		fmt.Fprintf(&b, " · plan removes %d (%s)", n, format.Bytes(g.BytesFreed))
		if ageN > 0 {
			fmt.Fprintf(&b, ", %d for age", ageN)
		}
	}
	m.summary = b.String()
	grid.Refresh(m)
}

// age is how long ago at was, as the LAST USED and FIRST SEEN columns
// read it.
func age(at, now time.Time) string { return format.Duration(now.Sub(at)) }

// eligible is a too-young image's countdown to its MinAge.
func eligible(at, now time.Time) string {
	if !at.After(now) {
		return "eligible now"
	}
	return "eligible in " + format.Duration(at.Sub(now))
}

// displayName drops the implied registry of Docker Hub's official images,
// as docker does: docker.io/library/nginx:1.25 shows as nginx:1.25.
func displayName(s string) string {
	if r, ok := strings.CutPrefix(s, "docker.io/library/"); ok {
		return r
	}
	return s
}

// status is the row's action and reason, as the CLI's plan table words
// them: "remove #2 space", "keep in-use".
func status(r engine.ImageRow) (string, grid.Kind) {
	if r.Action == engine.ActionRemove {
		return "remove #" + strconv.Itoa(r.Step) + " " + r.Reason, grid.Remove
	}
	if r.Reason == string(engine.KeepNotNeeded) {
		return "keep " + r.Reason, grid.Normal
	}
	return "keep " + r.Reason, grid.Dim
}

// Rebuild turns the items into rows under the sort and the filter.
func (m *Model) Rebuild() {
	items := grid.Ordered(&m.Pane, m.items, func(a, b item) int {
		switch m.Sort {
		case BySize:
			return cmp.Or(cmp.Compare(b.row.Image.SizeBytes, a.row.Image.SizeBytes), cmp.Compare(a.row.Rank, b.row.Rank))
		case ByLastUsed:
			return cmp.Or(b.lastUsed.Compare(a.lastUsed), cmp.Compare(a.row.Rank, b.row.Rank))
		default:
			return cmp.Or(strings.Compare(a.name, b.name), cmp.Compare(a.row.Rank, b.row.Rank))
		}
	})
	matched := 0
	rows := make([]grid.Row, 0, len(items)+1)
	// The cut line sits where the engine puts it, under the rows ranked
	// above it; only the eviction order shows it.
	cutDone := m.Sort != ByRank || m.cut.Row <= 0 || m.Reversed
	cutRow := grid.Row{Cells: []string{m.cut.Text}, Kind: grid.Cut, Key: "cut"}
	for _, it := range items {
		id := it.row.Image.ID
		if !m.matches(it) {
			continue
		}
		if !cutDone && it.row.Rank > m.cut.Row {
			rows = append(rows, cutRow)
			cutDone = true
		}
		rows = append(rows, grid.Row{Cells: it.cells, Clocks: it.clocks, Kind: it.kind, Key: id, ID: id})
		matched++
	}
	if !cutDone {
		rows = append(rows, cutRow)
	}
	m.Matched, m.Total = matched, len(m.items)
	m.Grid.SetRows(rows)
}

// matches reports whether the filter matches the image: its name as shown,
// and every full reference (docker.io/library/redis:7.2 where the column
// shows redis:7.2), ID, status or detail.
func (m *Model) matches(it item) bool {
	if m.Filter.Match(it.name) || m.Filter.Match(it.row.Name) || m.Filter.Match(it.row.Image.ID) ||
		m.Filter.Match(it.status) || m.Filter.Match(it.row.Detail) {
		return true
	}
	return slices.ContainsFunc(it.row.Image.RepoTags, m.Filter.Match) || slices.ContainsFunc(it.row.Image.RepoDigests, m.Filter.Match)
}

// Update handles the pane's keys (navigation, filter and sort) and the
// refreshes it shows.
func (m Model) Update(msg tea.Msg) (Model, tea.Cmd) {
	grid.Update(&m, msg)
	if msg, ok := msg.(feed.Snapshot); ok {
		m.SetData(msg.Snap, msg.Plan, msg.At)
	}
	return m, nil
}

// View renders the summary, the filter and the table.
func (m Model) View() string {
	if !m.loaded {
		return m.Styles.Faint.Render("waiting for the first snapshot…")
	}
	head := m.Styles.Label.Render(ansi.Truncate(m.summary, m.Width, "…"))
	parts := m.WithFilter([]string{head})
	parts = append(parts, m.Grid.View())
	return lipgloss.JoinVertical(lipgloss.Left, parts...)
}

// Item returns the selected image, which ctrl+d offers to remove alone.
func (m Model) Item() (feed.Item, bool) {
	r, ok := m.Grid.Selected()
	if !ok || r.ID == "" {
		return feed.Item{}, false
	}
	return feed.Item{Kind: engine.ItemImage, ID: r.ID, Name: r.Cells[1]}, true
}
