package tui

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/nodegc/nodegc/engine"
	"github.com/nodegc/nodegc/internal/format"
	"github.com/nodegc/nodegc/tui/internal/feed"
	"github.com/nodegc/nodegc/tui/internal/grid"
	"github.com/nodegc/nodegc/tui/style"
)

// modalKind says what a modal asks.
type modalKind int

const (
	// modalPreview shows a previewed plan and applies it on confirmation.
	modalPreview modalKind = iota + 1
	// modalQuit asks before quitting while a pass is in flight.
	modalQuit
	// modalDetail shows the details of a row (enter); esc goes back.
	modalDetail
	// modalJournal shows the journal's last lines, following new ones.
	modalJournal
	// modalForce asks before a forced pass, showing what it would remove
	// as of the shown refresh.
	modalForce
	// modalLeave says what quitting leaves on the agent (a pause) and
	// asks before quitting.
	modalLeave
	// modalStart asks, on a state dir just created, whether to start the
	// periodic passes; they stay paused unless the answer is y.
	modalStart
)

// startModal is the question a dashboard asks on a state dir its engine
// has just created (Options.NewStateDir).
func startModal(dir string) *modal {
	return &modal{kind: modalStart, title: "Start periodic passes on a new state dir?", lines: []string{
		"nodegc has just created " + dir + ": no image records and no journal yet, so every image counts as first seen now, and the dir may be a mistyped --state-dir.",
		"",
		"The periodic passes are paused until you start them; forced passes and previews work either way.",
	}}
}

// modal is the overlay: a previewed plan to confirm, or the quit question.
type modal struct {
	kind  modalKind
	title string
	pass  engine.PassKind
	// loading is true until the preview arrives.
	loading bool
	err     string
	plan    engine.Plan
	lines   []string
	items   int
	offset  int
	// one is the item a ctrl+d preview removes alone.
	one *feed.Item
	// search is a details modal's search and raw view.
	search detailSearch
	// journal is the journal view of a modalJournal.
	journal journalView
}

// passTitle names what a key asks for.
func passTitle(kind engine.PassKind, dryRun bool) string {
	if dryRun {
		return "Dry-run: what a full pass would remove"
	}
	switch kind {
	case engine.PassImages:
		return "Force image GC"
	case engine.PassContainers:
		return "Force container GC"
	case engine.PassReclaimAll:
		return "Reclaim all unused (eviction manager's reclaim)"
	}
	return "Run " + string(kind) + " pass"
}

// nameColumn is the width of a column of names on rows inner cells wide,
// where the rest of the row takes rest cells and a reason: the names get
// what the longest needs, less what the longest reason needs, and at
// least 12. Reasons are never cut for padding beside a short name.
func nameColumn(names, reasons []string, inner, rest int) int {
	longest, reason := 0, 0
	for _, n := range names {
		longest = max(longest, ansi.StringWidth(n))
	}
	for _, r := range reasons {
		reason = max(reason, ansi.StringWidth(r))
	}
	return max(min(longest, inner-rest-reason), 12)
}

// column maps a list of rows to one of their fields.
func column[R any](rows []R, f func(R) string) []string {
	out := make([]string, len(rows))
	for i, r := range rows {
		out[i] = f(r)
	}
	return out
}

// planLines lists every item of a plan with its size and reason, and the
// totals (the last line), as the engine explains the plan over the
// snapshot s (names, pods), for rows inner cells wide. Names get the room
// the reasons leave, and are cut in the middle when they must be.
func planLines(s engine.Snapshot, p engine.Plan, inner int) (lines []string, items int) {
	g := p.ImageGC
	if len(s.Images) == 0 {
		// Before the first refresh: engine.ExplainImages panics on a
		// snapshot without images when the plan removes some (an engine
		// bug), so the removals stand in for the images.
		for _, r := range g.Remove {
			s.Images = append(s.Images, engine.Image{ID: r.ID, RepoTags: r.RepoTags, RepoDigests: r.RepoDigests, SizeBytes: r.SizeBytes})
		}
	}
	x := engine.Explain(s, p)
	if p.Pass == engine.PassImages || p.Pass == engine.PassFull {
		if g.Triggered {
			lines = append(lines, fmt.Sprintf("image fs %d%% used ≥ high %d%%: free %s", g.UsagePercent, p.Policy.Image.HighThresholdPercent, format.Bytes(g.BytesToFree)))
		} else {
			lines = append(lines, fmt.Sprintf("image fs %d%% used < high %d%%: no space pass", g.UsagePercent, p.Policy.Image.HighThresholdPercent))
		}
	}
	if n := len(g.Remove); n > 0 {
		lines = append(lines, fmt.Sprintf("IMAGES (%d, %s)", n, format.Bytes(g.BytesFreed)))
		rows := removals(x.Images, func(r engine.ImageRow) (engine.Action, int) { return r.Action, r.Step })
		nw := nameColumn(column(rows, func(r engine.ImageRow) string { return r.Name }), column(rows, func(r engine.ImageRow) string { return r.Reason }), inner, 20)
		for _, r := range rows {
			// The reason alone: its detail (the usage, the idle time) is
			// on the Images pane, and would push the size off the row.
			lines = append(lines, fmt.Sprintf("  %3d. %-*s %10s  %s", r.Step, nw, grid.Middle(r.Name, nw), format.Bytes(r.Image.SizeBytes), r.Reason))
		}
	}
	if n := len(p.ContainerGC.Remove); n > 0 {
		lines = append(lines, fmt.Sprintf("CONTAINERS (%d)", n))
		rows := removals(x.Containers, func(r engine.ContainerRow) (engine.Action, int) { return r.Action, r.Step })
		names := column(rows, func(r engine.ContainerRow) string { return r.Pod + "/" + r.Name })
		nw := nameColumn(names, column(rows, func(r engine.ContainerRow) string { return r.Reason }), inner, 22)
		for i, r := range rows {
			lines = append(lines, fmt.Sprintf("  %-*s #%-3d %-12s  %s", nw, grid.Middle(names[i], nw), r.Attempt, format.ShortID(r.ID), r.Reason))
		}
	}
	if n := len(x.Sandboxes); n > 0 {
		lines = append(lines, fmt.Sprintf("SANDBOXES (%d)", n))
		nw := nameColumn(column(x.Sandboxes, func(r engine.SandboxRow) string { return r.Pod }), column(x.Sandboxes, func(r engine.SandboxRow) string { return r.Reason }), inner, 17)
		for _, r := range x.Sandboxes {
			lines = append(lines, fmt.Sprintf("  %-*s %-12s  %s", nw, grid.Middle(r.Pod, nw), format.ShortID(r.ID), r.Reason))
		}
	}
	if n := len(x.Logs); n > 0 {
		lines = append(lines, fmt.Sprintf("LOGS (%d)", n))
		for _, r := range x.Logs {
			lines = append(lines, fmt.Sprintf("  %s  %s", r.Path, r.Reason))
		}
	}
	items = len(g.Remove) + len(p.ContainerGC.Remove) + len(p.SandboxGC.Remove) + len(p.LogGC.Remove)
	for _, e := range g.Events {
		lines = append(lines, "event "+e.Reason+": "+e.Message)
	}
	if items == 0 {
		lines = append(lines, "nothing to remove")
	} else {
		lines = append(lines, fmt.Sprintf("TOTAL %s, frees ≈ %s (runtime-reported image sizes)", format.Plural(items, "item"), format.Bytes(g.BytesFreed)))
	}
	return lines, items
}

// removals are the rows an explanation removes, in execution order (by
// step).
func removals[R any](rows []R, of func(R) (engine.Action, int)) []R {
	var out []R
	for _, r := range rows {
		if a, _ := of(r); a == engine.ActionRemove {
			out = append(out, r)
		}
	}
	slices.SortFunc(out, func(a, b R) int {
		_, sa := of(a)
		_, sb := of(b)
		return cmp.Compare(sa, sb)
	})
	return out
}

// previewWidth is the width of the preview's rows in a box for a screen w
// wide (the box less its border and padding).
func previewWidth(w int) int { return boxWidth(w) - 4 }

// boxWidth is the modal's width on a screen w wide: all of it but a margin,
// so a wide terminal shows whole names.
func boxWidth(w int) int { return max(w-6, 20) }

// body is the scrolling part of the lines: all but the pinned TOTAL line.
func (d *modal) body() []string {
	if d.search.rawOn {
		return d.search.raw
	}
	if d.items > 0 && len(d.lines) > 0 {
		return d.lines[:len(d.lines)-1]
	}
	return d.lines
}

// shown is the scrolling part as drawn in a box inner cells wide: a
// detail line too long for it wraps under itself, so no value of the
// details is lost beside blank cells, except a lone token after its
// label (an ID or a digest), which is cut in its middle to the full width: wrapped, the
// hashes alone would push what the window is for (the order, the users)
// off a 24-line screen, and `c` copies the whole ID. A preview row is a
// table row sized to fit (planLines).
func (d *modal) shown(inner int) []string {
	body := d.body()
	if d.kind != modalDetail {
		return body
	}
	var out []string
	for _, l := range body {
		if ansi.StringWidth(l) <= inner {
			out = append(out, l)
			continue
		}
		if i := strings.LastIndex(l, " ") + 1; !strings.Contains(l, "\x1b") && ansi.StringWidth(l[:i]) <= inner/2 {
			// A label (or an indent) and one token: the token is cut.
			out = append(out, l[:i]+grid.Middle(l[i:], inner-ansi.StringWidth(l[:i])))
			continue
		}
		indent := len(l) - len(strings.TrimLeft(l, " ")) + 2
		pad := strings.Repeat(" ", indent)
		for i, w := range strings.Split(ansi.Hardwrap(ansi.Wordwrap(strings.TrimLeft(l, " "), inner-indent, " "), inner-indent, true), "\n") {
			if i == 0 {
				w = l[:indent-2] + w
			} else {
				w = pad + w
			}
			out = append(out, w)
		}
	}
	return out
}

// height is how many scrolling lines the modal shows at the screen height
// h, leaving room for the pinned TOTAL line.
func (d *modal) height(h, inner int) int { return max(min(len(d.shown(inner)), h-9), 1) }

// scroll moves the visible lines.
func (d *modal) scroll(msg tea.KeyPressMsg, m Model) {
	if d.kind == modalJournal {
		d.journal.scroll(msg, m)
		return
	}
	inner := previewWidth(m.width)
	page := d.height(m.height, inner) - 1
	switch {
	case key.Matches(msg, m.keys.Up):
		d.offset--
	case key.Matches(msg, m.keys.Down):
		d.offset++
	case key.Matches(msg, m.keys.PageUp):
		d.offset -= page
	case key.Matches(msg, m.keys.PageDown):
		d.offset += page
	case key.Matches(msg, m.keys.Top):
		d.offset = 0
	case key.Matches(msg, m.keys.Bottom):
		d.offset = len(d.lines)
	}
	d.offset = min(max(d.offset, 0), max(len(d.shown(inner))-d.height(m.height, inner), 0))
}

// render draws the modal box for a screen of w×h.
func (d *modal) render(st *style.Styles, w, h int, readOnly bool) string {
	bw := boxWidth(w)
	inner := bw - 4
	var b []string
	b = append(b, st.ModalTitle.Render(d.title))
	switch {
	case d.kind == modalLeave:
		b = append(b, d.lines...)
		b = append(b, "", st.Label.Render("y/q quit · n/esc stay"))
	case d.kind == modalStart:
		b = append(b, d.lines...)
		b = append(b, "", st.Label.Render("y start them · n/esc keep them paused (p starts them later)"))
	case d.kind == modalQuit:
		b = append(b, "Quit anyway? The pass stops after the item in flight (which is journalled), nothing more is removed, and nodegc says how many items were left undone as it exits.", "",
			st.Label.Render("y quit · n/esc stay"))
	case d.kind == modalJournal:
		b = append(b, d.journal.view(inner, h)...)
	case d.loading:
		b = append(b, st.Faint.Render("planning…"), "", st.Label.Render("esc cancel"))
	case d.kind == modalDetail:
		body, n := d.shown(inner), d.height(h, inner)
		start := min(d.offset, max(len(body)-n, 0))
		end := min(start+n, len(body))
		q := strings.ToLower(d.search.query)
		for _, l := range body[start:end] {
			l = ansi.Truncate(l, inner, "…")
			if q != "" && strings.Contains(strings.ToLower(l), q) {
				l = st.Selected.Render(l)
			}
			b = append(b, l)
		}
		foot := "esc back"
		if len(body) > n {
			foot = fmt.Sprintf("lines %d-%d of %d · ↑/↓ scroll · esc back", start+1, end, len(body))
		}
		b = append(b, "", st.Label.Render(ansi.Truncate(d.searchFoot(inner)+" · "+foot, inner, "…")))
	case d.err != "":
		b = append(b, st.Bad.Render("preview failed: "+d.err), "", st.Label.Render("esc/enter close"))
	default:
		body, n := d.shown(inner), d.height(h, inner)
		start := min(d.offset, max(len(body)-n, 0))
		end := min(start+n, len(body))
		for _, l := range body[start:end] {
			b = append(b, ansi.Truncate(l, inner, "…"))
		}
		if len(body) > n {
			b = append(b, st.Faint.Render(fmt.Sprintf("lines %d-%d of %d · ↑/↓ pgup/pgdn scroll", start+1, end, len(body))))
		}
		if d.items > 0 {
			// The TOTAL stays in sight however the list scrolls: nobody
			// presses y without seeing it.
			b = append(b, st.Bold.Render(ansi.Truncate(d.lines[len(d.lines)-1], inner, "…")))
		}
		b = append(b, "")
		switch {
		case d.kind == modalForce && !readOnly:
			b = append(b, st.Bold.Render("y")+st.Label.Render(" run the pass now (it plans again as it starts) · ")+st.Bold.Render("esc")+st.Label.Render(" cancel"))
		case d.items == 0:
			b = append(b, st.Label.Render("esc/enter close"))
		case readOnly:
			b = append(b, st.Warn.Render("read-only: this plan cannot be applied")+st.Label.Render(" · esc/enter close"))
		default:
			b = append(b, st.Bold.Render("y")+st.Label.Render(" apply exactly this plan · ")+st.Bold.Render("esc")+st.Label.Render(" cancel, nothing is removed"))
		}
	}
	return st.Modal.Width(bw).Render(strings.Join(b, "\n"))
}

// overlay draws box over screen, centred, on rows it blanks across the
// whole width below the tab bar and its rule (chromeRows): no cut-off
// table text shows beside its borders, as if it were part of the window.
// A box tall enough to reach the chrome leaves the chrome's ends in
// sight there.
func overlay(screen, box string, w, h int) string {
	y := max((h-lipgloss.Height(box))/2, 0)
	x := max((w-lipgloss.Width(box))/2, 0)
	lines := strings.Split(box, "\n")
	top := min(max(chromeRows-y, 0), len(lines))
	layers := []*lipgloss.Layer{lipgloss.NewLayer(screen)}
	if top > 0 {
		layers = append(layers, lipgloss.NewLayer(strings.Join(lines[:top], "\n")).X(x).Y(y).Z(1))
	}
	if top < len(lines) {
		band := lipgloss.PlaceHorizontal(max(w, lipgloss.Width(box)), lipgloss.Center, strings.Join(lines[top:], "\n"))
		layers = append(layers, lipgloss.NewLayer(band).X(0).Y(y+top).Z(1))
	}
	return lipgloss.NewCompositor(layers...).Render()
}

// chromeRows are the tab bar and the rule under it, at the top of every
// screen.
const chromeRows = 2

// openPreview asks the scheduler for a dry-run of the kind and opens the
// modal that shows it.
func (m Model) openPreview(kind engine.PassKind, dryRun bool) (tea.Model, tea.Cmd) {
	if m.o.Controller == nil {
		m.setFlash("no scheduler: nothing to preview", true)
		return m, nil
	}
	if m.busy != "" {
		m.setFlash(fmt.Sprintf("a %s pass is in flight", m.busy), true)
		return m, nil
	}
	m.previewSeq++
	m.modal = &modal{kind: modalPreview, title: passTitle(kind, dryRun), pass: kind, loading: true}
	return m, previewCmd(m.ctx, m.o.Controller, kind, m.previewSeq)
}

// startKey answers the question asked on a new state dir: y starts the
// periodic passes; n, esc, enter and q keep them paused; ctrl+c quits.
func (m Model) startKey(msg tea.KeyPressMsg) (tea.Model, tea.Cmd) {
	k := m.keys
	switch {
	case key.Matches(msg, k.Interrupt):
		m.modal = nil
		return m.quit()
	case key.Matches(msg, k.Confirm):
		m.modal = nil
		return m.setPause(false, engine.Pause{})
	case key.Matches(msg, k.Cancel):
		m.modal = nil
		m.setFlash("periodic passes stay paused: p starts them", false)
	}
	return m, nil
}

// modalKey handles a key while a modal is open. Only y (keys.Confirm)
// applies a previewed plan; enter, esc, n and q close the modal and remove
// nothing, whatever the modal shows.
func (m Model) modalKey(msg tea.KeyPressMsg) (tea.Model, tea.Cmd) {
	d := *m.modal
	k := m.keys
	if d.kind == modalStart {
		return m.startKey(msg)
	}
	if d.kind == modalQuit || d.kind == modalLeave {
		switch {
		case key.Matches(msg, k.QuitAnyway):
			return m, tea.Quit
		case key.Matches(msg, k.Stay):
			m.modal = nil
		}
		return m, nil
	}
	if d.kind == modalDetail && !key.Matches(msg, k.Interrupt) {
		if cmd, ok := d.detailKey(msg, m); ok {
			m.modal = &d
			return m, cmd
		}
	}
	switch {
	case key.Matches(msg, k.Interrupt):
		m.modal = nil
		return m.quit()
	case key.Matches(msg, k.Cancel):
		m.modal = nil
		m.previewSeq++ // drop a preview still on its way
		if (d.kind == modalPreview || d.kind == modalForce) && !d.loading && d.items > 0 {
			m.setFlash("cancelled: nothing was removed", false)
		}
		return m, nil
	case d.kind == modalForce && key.Matches(msg, k.Confirm) && !d.loading && d.err == "":
		return m.runForced(d)
	case d.kind == modalPreview && key.Matches(msg, k.Confirm) && !d.loading && d.err == "":
		m.modal = nil
		if d.items == 0 {
			return m, nil
		}
		m.busy = d.pass
		m.progress = &engine.Progress{Kind: d.pass, Items: d.items}
		m.setStickyFlash(fmt.Sprintf("applying the previewed %s plan (%d items)…", d.pass, d.items))
		ctx, cancel := context.WithCancel(m.ctx)
		m.stopApply = cancel
		return m, applyCmd(ctx, m.o.Controller, d.pass, d.plan)
	}
	d.scroll(msg, m)
	m.modal = &d
	return m, nil
}
