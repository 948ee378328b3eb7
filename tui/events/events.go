// Package events is the dashboard's Events pane: the history of GC passes,
// newest first, each with what it removed, the bytes it estimated and
// measured, and its per-item errors; and the kubelet-style events
// (FreeDiskSpaceFailed and the others).
package events

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"charm.land/bubbles/v2/key"
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

// MaxPasses and MaxEvents bound the history kept in memory. A run of
// periodic passes that removed nothing takes one of the MaxPasses rows
// (entry), so on an idle node the passes that did something stay.
const (
	MaxPasses = feed.MaxPasses
	MaxEvents = 500
)

// Model is the Events pane.
type Model struct {
	grid.Pane
	// passes are newest first.
	passes []entry
	// events are newest first.
	events []engine.Event
	// journal is the journal's path, named in a pass's details; "" when
	// the dashboard cannot delete (it writes none).
	journal string
}

var columns = []grid.Column{
	{Title: "PASS", Width: 5, Right: true},
	{Title: "KIND", Width: 12}, // reclaim-all plus the forced pass's *
	{Title: "STARTED", Width: 8},
	{Title: "TOOK", Width: 7, Right: true},
	{Title: "REMOVED", Width: 7, Right: true},
	{Title: "ESTIMATED", Width: 9, Right: true},
	{Title: "MEASURED", Width: 9, Right: true},
	{Title: "ERRORS", Width: 6, Right: true, MinTable: 90},
	{Title: "RESULT", Width: 6, Flex: true},
}

// New returns an empty pane.
func New(k keys.KeyMap, st style.Styles) Model {
	// Newest first, the one order.
	m := Model{Pane: grid.NewPane(k, st, columns, 0, 0, grid.Order{Col: 0, Desc: true})}
	m.SortArrow(0, true)
	m.Legend = "* forced by an operator, not run by the schedule"
	return m
}

// WithJournal returns the pane naming path as the journal in a pass's
// details.
func (m Model) WithJournal(path string) Model {
	m.journal = path
	return m
}

// Title names the pane.
func (m Model) Title() string { return "Events" }

// SetSize sets the pane's size.
func (m *Model) SetSize(w, h int) {
	m.Width, m.Height = w, h
	m.resize()
}

func (m *Model) eventLines() int {
	if len(m.events) == 0 {
		return 0
	}
	return min(len(m.events), max(m.Height/4, 3)) + 1
}

// resize gives the events under the table the lines they take.
func (m *Model) resize() {
	m.Chrome = m.eventLines()
	m.Resize()
}

// Events returns the kubelet-style events, newest first.
func (m Model) Events() []engine.Event { return m.events }

// entry is one row of the pass history: a pass, and the earlier passes
// folded into it. Periodic passes of one kind that removed nothing (had
// nothing to do, or, apart from those, were skipped on an unchanged node), with no error,
// failure or event, fold into the newest of them, as the API server
// folds a repeated event into one with a count and a first time: on an
// idle node they come every minute, and kept one a row they pushed the
// passes that removed something out of the MaxPasses within hours. The
// row shows the newest; a filter sees its cells, not the folded passes'
// numbers.
type entry struct {
	engine.PassReport
	// folded counts the earlier passes folded into this one, the first of
	// which is pass firstID, started at since.
	folded  int
	firstID int64
	since   time.Time
}

// idle reports whether p is a periodic pass that removed nothing and had
// nothing to say: one that folds (entry).
func idle(p engine.PassReport) bool {
	return !p.Forced && p.Error == "" && p.Stopped == "" && len(p.Events) == 0 && len(p.Items) == 0 && len(p.Notes) == 0
}

// holds reports whether e is r or holds r folded.
func (e entry) holds(r engine.PassReport) bool {
	if samePass(e.PassReport, r) {
		return true
	}
	return e.folded > 0 && idle(r) && e.Kind == r.Kind && e.Run == r.Run && skipped(e.PassReport) == skipped(r) && r.ID >= e.firstID && r.ID < e.ID
}

// skipped reports whether p was skipped (the node unchanged), as opposed
// to a pass that ran and found nothing to do: the two never fold together.
func skipped(p engine.PassReport) bool { return p.Skipped != "" }

// key identifies e's rows, and stays while passes fold into it: the key
// of its first pass (passKey).
func (e entry) key() string {
	if e.folded == 0 {
		return passKey(e.ID, e.StartedAt)
	}
	return passKey(e.firstID, e.since)
}

// fold folds r into the newest entry of its kind, when r and every entry
// from the newest to that one are idle and r is newer; it reports whether
// it did.
func (m *Model) fold(r engine.PassReport) bool {
	if !idle(r) {
		return false
	}
	for i, e := range m.passes {
		if !idle(e.PassReport) || !r.StartedAt.After(e.StartedAt) {
			return false
		}
		if e.Kind != r.Kind || e.Run != r.Run {
			continue
		}
		if skipped(e.PassReport) != skipped(r) {
			return false // "skipped" and "nothing to do" are told apart
		}
		if e.folded == 0 {
			e.firstID, e.since = e.ID, e.StartedAt
		}
		e.folded++
		e.PassReport = kept(r)
		// The newest of all now: it moves to the top.
		copy(m.passes[1:i+1], m.passes[:i])
		m.passes[0] = e
		return true
	}
	return false
}

// AddPass records a finished pass, of this run or, read from the journal,
// of an earlier one. Dry-runs are not passes and are ignored; a pass seen
// twice (from its notice and from Apply) is kept once.
func (m *Model) AddPass(r engine.PassReport) {
	if r.DryRun {
		return
	}
	if r.ID != 0 && slices.ContainsFunc(m.passes, func(e entry) bool { return e.holds(r) }) {
		return
	}
	if m.fold(r) {
		grid.Refresh(m)
		return
	}
	m.passes = append(m.passes, entry{PassReport: kept(r)})
	slices.SortStableFunc(m.passes, func(a, b entry) int {
		if c := b.StartedAt.Compare(a.StartedAt); c != 0 {
			return c
		}
		return int(b.ID - a.ID)
	})
	if len(m.passes) > MaxPasses {
		m.passes = m.passes[:MaxPasses]
	}
	for _, e := range r.Events {
		if e.Time.IsZero() {
			e.Time = r.FinishedAt
		}
		m.addEvent(e)
	}
	grid.Refresh(m)
}

// kept is what the pane keeps of a pass: all of it but the plan's
// account of the images it kept (ImageGC.Keep and Order, an entry for
// every image on the node), which neither the pane's rows nor a pass's
// details show (only its raw JSON did). On a 2,000-image node they are
// about 300 KB an image pass, and the pane's MaxPasses passes hold some
// 80 image passes (8 hours at the kubelet's periods).
func kept(r engine.PassReport) engine.PassReport {
	r.Plan.ImageGC.Keep, r.Plan.ImageGC.Order = nil, nil
	return r
}

// samePass reports whether a and b are one pass: the same pass ID (run
// and number) when both have one, else the same number. Passes of
// earlier runs, read from the journal, share numbers with this run's.
func samePass(a, b engine.PassReport) bool {
	if a.Run != "" && b.Run != "" {
		return a.PassID() == b.PassID()
	}
	return a.ID == b.ID
}

// AddEvent records a kubelet-style event.
func (m *Model) AddEvent(e engine.Event) {
	m.addEvent(e)
	grid.Refresh(m)
}

func (m *Model) addEvent(e engine.Event) {
	for _, o := range m.events {
		if o.Time.Equal(e.Time) && o.Reason == e.Reason && o.Message == e.Message {
			return
		}
	}
	m.events = append(m.events, e)
	slices.SortStableFunc(m.events, func(a, b engine.Event) int { return b.Time.Compare(a.Time) })
	if len(m.events) > MaxEvents {
		m.events = m.events[:MaxEvents]
	}
	m.resize()
}

// Rebuild lists the passes that match the filter, each with its failed
// and skipped items.
func (m *Model) Rebuild() {
	var rows []grid.Row
	m.Matched, m.Total = 0, len(m.passes)
	for _, e := range m.passes {
		p := e.PassReport
		group := []grid.Row{passRow(e)}
		for _, it := range p.Items {
			if it.Outcome != engine.OutcomeFailed && it.Outcome != engine.OutcomeSkipped {
				continue
			}
			msg := it.Error
			kind := grid.Warn
			if it.Outcome == engine.OutcomeSkipped {
				msg, kind = "skipped: "+it.Detail, grid.Dim
			}
			group = append(group, grid.Row{
				Cells: []string{fmt.Sprintf("      %s %s %s: %s", mark(it.Outcome), it.Kind, format.ShortID(it.ID), msg)},
				Span:  true, Kind: kind, Key: e.key() + "/" + string(it.Kind) + "/" + it.ID, ID: it.ID,
			})
		}
		if m.Filter.Active() && !slices.ContainsFunc(group, func(r grid.Row) bool { return m.Filter.Match(strings.Join(r.Cells, " ")) }) {
			continue
		}
		m.Matched++
		rows = append(rows, group...)
	}
	m.Grid.SetRows(rows)
}

func mark(o engine.Outcome) string {
	if o == engine.OutcomeFailed {
		return "✗"
	}
	return "·"
}

func passRow(e entry) grid.Row {
	p := e.PassReport
	removed := p.Count(engine.OutcomeRemoved)
	failed := p.Count(engine.OutcomeFailed)
	measured := "—"
	if p.MeasuredBytesFreed != nil {
		measured = format.Bytes(*p.MeasuredBytesFreed)
	}
	kind := string(p.Kind)
	if p.Forced {
		kind += "*"
	}
	result := "ok"
	k := grid.Normal
	switch {
	case p.Error != "":
		result, k = "failed: "+p.Error, grid.Warn
	case failed > 0:
		result, k = fmt.Sprintf("%d failed", failed), grid.Warn
	case p.Stopped != "":
		result, k = fmt.Sprintf("stopped, %d not run", p.Undone), grid.Warn
	case p.Skipped != "":
		// A periodic container pass on a node unchanged since the last
		// full one (engine.RunPeriodic); enter shows why.
		result, k = "skipped: node unchanged", grid.Dim
	case len(p.Items) == 0:
		result, k = "nothing to do", grid.Dim
	}
	for _, e := range p.Events {
		if e.Warning {
			result += " · " + e.Reason
			k = grid.Warn
		}
	}
	if e.folded > 0 {
		// The passes the row stands for, as kubectl counts a repeated
		// event: "(x3 over 5m)".
		result += fmt.Sprintf(" (×%d since %s)", e.folded+1, since(e))
	}
	id := p.PassID()
	if id == "" {
		id = fmt.Sprint(p.ID)
	}
	return grid.Row{
		ID: id,
		Cells: []string{
			fmt.Sprint(p.ID), kind, p.StartedAt.Format(time.TimeOnly),
			took(p),
			fmt.Sprint(removed), format.Bytes(p.EstimatedBytesFreed), measured, fmt.Sprint(failed), result,
		},
		Kind: k,
		Key:  e.key(),
	}
}

// since is when the first pass folded into e started: the time, and the
// date too when it is not that of e's newest pass.
func since(e entry) string {
	if y, m, d := e.since.Date(); e.StartedAt.Year() != y || e.StartedAt.Month() != m || e.StartedAt.Day() != d {
		return e.since.Format(time.DateTime)
	}
	return e.since.Format(time.TimeOnly)
}

// passKey identifies a pass's rows by its number and start, since passes
// of earlier runs (from the journal) share numbers with this run's.
func passKey(id int64, start time.Time) string { return fmt.Sprintf("pass/%d/%s", id, start) }

// Update handles the pane's keys (navigation and filter) and the passes
// and events it lists.
func (m Model) Update(msg tea.Msg) (Model, tea.Cmd) {
	grid.Update(&m, msg)
	switch msg := msg.(type) {
	case feed.Pass:
		m.AddPass(msg.Report)
	case feed.Event:
		m.AddEvent(msg.Event)
	}
	return m, nil
}

// View renders the pass table and, under it, the latest events.
func (m Model) View() string {
	parts := m.WithFilter(nil)
	if len(m.passes) == 0 {
		parts = append(parts, m.Styles.Faint.Render("no pass has run yet · * marks a forced pass"))
	} else {
		parts = append(parts, m.Grid.View())
	}
	if n := m.eventLines(); n > 0 {
		if len(m.passes) > 0 {
			if pad := m.Grid.Height() - lipgloss.Height(m.Grid.View()); pad > 0 {
				parts = append(parts, strings.Repeat("\n", pad-1))
			}
		}
		parts = append(parts, m.Styles.Header.Render("EVENTS"))
		for _, e := range m.events[:n-1] {
			st := m.Styles.Faint
			if e.Warning {
				st = m.Styles.Warn
			}
			line := fmt.Sprintf("%s  %-20s %s", e.Time.Format(time.TimeOnly), e.Reason, e.Message)
			parts = append(parts, st.Render(ansi.Truncate(line, m.Width, "…")))
		}
	}
	return lipgloss.JoinVertical(lipgloss.Left, parts...)
}

// ShortHelp returns the pane's keys for the footer.
func (m Model) ShortHelp() []key.Binding {
	return []key.Binding{m.Keys.Drill, m.Keys.Filter, m.Keys.Copy}
}

// FullHelp returns the pane's keys for the full help.
func (m Model) FullHelp() [][]key.Binding {
	return [][]key.Binding{m.Keys.Navigation(), {m.Keys.Drill, m.Keys.Filter, m.Keys.ClearFilter, m.Keys.Copy}}
}

// Aliases are the pane's other names for `:`.
func (m Model) Aliases() []string { return []string{"passes"} }
