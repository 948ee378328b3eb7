package tui

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"charm.land/bubbles/v2/key"
	"charm.land/bubbles/v2/viewport"
	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/nodegc/nodegc/engine"
	"github.com/nodegc/nodegc/internal/format"
	"github.com/nodegc/nodegc/tui/internal/feed"
)

// JournalLines bounds the journal view: its last lines. The panes take
// the last feed.MaxPasses passes.
const JournalLines = 5000

// journalMsg is a read of the journal: its lines, oldest first; at
// start, also the pass history (Options.History).
type journalMsg struct {
	lines   []engine.JournalEntry
	reports []engine.PassReport
	err     error
}

// historyCmd reads what the Events pane starts with: the pass history
// (Options.History) and the journal, either of which may be nil.
func historyCmd(ctx context.Context, read func(context.Context) ([]engine.JournalEntry, error), history func(context.Context) ([]engine.PassReport, error)) tea.Cmd {
	return func() tea.Msg {
		var msg journalMsg
		if history != nil {
			msg.reports, msg.err = history(ctx)
		}
		if read != nil {
			var err error
			msg.lines, err = read(ctx)
			msg.err = errors.Join(msg.err, err)
		}
		return msg
	}
}

// journalCmd reads the journal with read (Options.Journal).
func journalCmd(ctx context.Context, read func(context.Context) ([]engine.JournalEntry, error)) tea.Cmd {
	return func() tea.Msg {
		lines, err := read(ctx)
		return journalMsg{lines: lines, err: err}
	}
}

// journalPasses rebuilds the last n passes the journal records, oldest
// first, from their outcome lines: what each removed, and what it left
// (skipped, failed, not run). A pass of an earlier run of nodegc reads as
// it did then; the journal keeps no plan, so the plan holds only the
// removals' names.
func journalPasses(lines []engine.JournalEntry, n int) []engine.PassReport {
	byID := map[engine.JournalPass]*engine.PassReport{}
	var order []engine.JournalPass
	for _, e := range lines {
		r := byID[e.Pass]
		if r == nil {
			r = &engine.PassReport{Kind: e.PassKind, StartedAt: e.Time, FinishedAt: e.Time}
			r.Run, r.ID = splitPassID(string(e.Pass))
			byID[e.Pass] = r
			order = append(order, e.Pass)
		}
		r.FinishedAt = maxTime(r.FinishedAt, e.Time)
		if e.Op == engine.JournalIntent {
			switch e.Kind {
			case engine.ItemImage:
				r.Plan.ImageGC.Remove = append(r.Plan.ImageGC.Remove, engine.ImageRemoval{ID: e.ID, SizeBytes: e.SizeBytes, RepoTags: e.RepoTags, RepoDigests: e.RepoDigests})
			case engine.ItemContainer:
				r.Plan.ContainerGC.Remove = append(r.Plan.ContainerGC.Remove, engine.ContainerRemoval{ID: e.ID, PodUID: e.PodUID, Name: e.Name})
			}
			continue
		}
		it := engine.ItemResult{Time: e.Time, Kind: e.Kind, ID: e.ID, Reason: e.Reason, SizeBytes: e.SizeBytes, Error: e.Error}
		switch e.Op {
		case "", engine.JournalRemoved:
			it.Outcome = engine.OutcomeRemoved
			if e.Kind == engine.ItemImage {
				r.EstimatedBytesFreed += e.SizeBytes
			}
		case engine.JournalGone:
			it.Outcome = engine.OutcomeGone
		case engine.JournalSkipped:
			it.Outcome, it.Detail = engine.OutcomeSkipped, e.Error
		case engine.JournalNotRun:
			it.Outcome = engine.OutcomeNotRun
			r.Undone++
			r.Stopped = "stopped"
		default: // failed, unknown, not-removed
			it.Outcome = engine.OutcomeFailed
			it.Error = cmpOr(e.Error, string(e.Op))
		}
		r.Items = append(r.Items, it)
	}
	if len(order) > n {
		order = order[len(order)-n:]
	}
	out := make([]engine.PassReport, len(order))
	for i, id := range order {
		out[i] = *byID[id]
		out[i].Notes = append(out[i].Notes, "read from the journal")
	}
	return out
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// splitPassID splits a journal's pass ID ("<run>/<n>", or a bare number
// in an old journal) into the run and the number.
func splitPassID(s string) (string, int64) {
	run, num := "", s
	if i := strings.LastIndexByte(s, '/'); i >= 0 {
		run, num = s[:i], s[i+1:]
	}
	n, _ := strconv.ParseInt(num, 10, 64)
	return run, n
}

// journalLine is how the journal view shows one line.
func journalLine(e engine.JournalEntry) string {
	op := string(e.Op)
	if op == "" {
		op = string(engine.JournalRemoved)
	}
	name := format.ShortID(e.ID)
	switch {
	case len(e.RepoTags) > 0:
		name = e.RepoTags[0] + " " + name
	case e.Name != "":
		name = e.Name + " " + name
	case e.Kind == engine.ItemLog:
		name = e.ID
	}
	// A run is named by its start and a random suffix: the suffix tells
	// runs apart, and leaves the names the room.
	pass := string(e.Pass)
	if i := strings.LastIndexByte(pass, '-'); i >= 0 {
		pass = pass[i+1:]
	}
	s := fmt.Sprintf("%s %-10s %-12s %-9s %s", e.Time.Local().Format("01-02 15:04:05"), pass, op, e.Kind, name)
	if e.SizeBytes > 0 {
		s += "  " + format.Bytes(e.SizeBytes)
	}
	if e.Reason != "" {
		s += "  " + e.Reason
	}
	if e.Error != "" {
		s += "  (" + e.Error + ")"
	}
	return s
}

// journalView is the journal's last lines in a viewport (k9s l,
// lazydocker's logs panel). It follows new lines while it is scrolled to
// the bottom, as tail -f does.
type journalView struct {
	vp    viewport.Model
	lines int
	err   string
	// follow keeps the view at the bottom as lines come.
	follow bool
	// text is the lines as read; fitW is the width the viewport's lines
	// were cut to (with an ellipsis, as the tables cut), 0 before.
	text []string
	fitW int
}

func newJournalView() journalView {
	vp := viewport.New()
	vp.KeyMap = viewport.KeyMap{} // the dashboard's keys move it (scroll)
	return journalView{vp: vp}
}

// set shows a read of the journal, following it when at the bottom.
func (j *journalView) set(msg journalMsg) {
	j.follow = j.lines == 0 || j.follow
	lines := msg.lines
	if len(lines) > JournalLines {
		lines = lines[len(lines)-JournalLines:]
	}
	out := make([]string, len(lines))
	for i, e := range lines {
		out[i] = journalLine(e)
	}
	if len(out) == 0 {
		out = []string{"the journal is empty: no pass has removed anything yet"}
	}
	j.lines = len(lines)
	j.err = ""
	if msg.err != nil {
		j.err = msg.err.Error()
	}
	j.text, j.fitW = out, 0
}

// fit cuts the lines to w cells, marking a cut line with an ellipsis
// (the viewport would cut it bare), when w or the lines changed.
func (j *journalView) fit(w int) {
	if j.fitW == w {
		return
	}
	cut := make([]string, len(j.text))
	for i, l := range j.text {
		cut[i] = ansi.Truncate(l, w, "…")
	}
	j.vp.SetContentLines(cut)
	j.fitW = w
}

// scroll moves the view on the dashboard's navigation keys.
func (j *journalView) scroll(msg tea.KeyPressMsg, m Model) {
	k := m.keys
	switch {
	case key.Matches(msg, k.Up):
		j.vp.ScrollUp(1)
	case key.Matches(msg, k.Down):
		j.vp.ScrollDown(1)
	case key.Matches(msg, k.PageUp):
		j.vp.PageUp()
	case key.Matches(msg, k.PageDown):
		j.vp.PageDown()
	case key.Matches(msg, k.Top):
		j.vp.GotoTop()
	case key.Matches(msg, k.Bottom):
		j.vp.GotoBottom()
	}
	j.follow = j.vp.AtBottom()
}

// view draws the lines in a box inner cells wide on a screen h high.
func (j *journalView) view(inner, h int) []string {
	j.vp.SetWidth(inner)
	j.fit(inner)
	j.vp.SetHeight(max(min(j.vp.TotalLineCount(), h-9), 1))
	if j.follow {
		j.vp.GotoBottom()
	}
	follow := "following new lines"
	if !j.follow {
		follow = "G follows new lines"
	}
	foot := fmt.Sprintf("last %d lines · %.0f%% · %s · ↑/↓ pgup/pgdn · esc back", j.lines, j.vp.ScrollPercent()*100, follow)
	out := []string{j.vp.View(), ""}
	if j.err != "" {
		out = append(out, "journal: "+j.err)
	}
	return append(out, foot)
}

// loadHistory sends the passes the history and the journal record to
// the panes, once, at start: the Events pane then lists the passes of
// earlier runs, and an attached dashboard every pass the agent kept,
// whoever started it. A pass the history has is taken from it, whole,
// rather than rebuilt from its journal lines.
func (m *Model) loadHistory(msg journalMsg) tea.Cmd {
	var cmds []tea.Cmd
	kept := map[string]bool{}
	for _, r := range msg.reports {
		kept[r.PassID()] = true
	}
	for _, r := range journalPasses(msg.lines, feed.MaxPasses) {
		if !kept[r.PassID()] {
			cmds = append(cmds, m.broadcast(feed.Pass{Report: r, Earlier: true}))
		}
	}
	for _, r := range msg.reports {
		cmds = append(cmds, m.broadcast(feed.Pass{Report: r, Earlier: true}))
	}
	return tea.Batch(cmds...)
}

// onJournal takes a read of the journal: the history at start, and the
// journal view's lines while it is open.
func (m Model) onJournal(msg journalMsg) (Model, tea.Cmd) {
	m.journalReading = false
	var cmd tea.Cmd
	if !m.historyRead {
		m.historyRead = true
		cmd = m.loadHistory(msg)
	}
	if d := m.modal; d != nil && d.kind == modalJournal {
		dd := *d
		dd.journal.set(msg)
		m.modal = &dd
	}
	return m, cmd
}

// openJournal opens the journal view and reads the journal.
func (m Model) openJournal() (Model, tea.Cmd) {
	if m.o.Journal == nil {
		m.setFlash("no journal to show (this dashboard cannot read the state dir)", true)
		return m, nil
	}
	title := "Journal"
	if m.o.JournalPath != "" {
		title += " " + m.o.JournalPath
	}
	m.modal = &modal{kind: modalJournal, title: title, journal: newJournalView()}
	return m, m.readJournal()
}

// readJournal reads the journal again unless a read is in flight.
func (m *Model) readJournal() tea.Cmd {
	if m.journalReading || m.o.Journal == nil {
		return nil
	}
	m.journalReading = true
	return journalCmd(m.ctx, m.o.Journal)
}

// followJournal reads the journal again after a message that may have
// added lines to it (a pass's notice or its end), while the view is open.
func (m Model) followJournal(msg tea.Msg) (Model, tea.Cmd) {
	switch msg.(type) {
	case noticeMsg, appliedMsg:
		if m.modal != nil && m.modal.kind == modalJournal {
			return m, m.readJournal()
		}
	}
	return m, nil
}
