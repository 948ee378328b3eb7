// The screen: the tab bar with its badges, the active pane, the status
// line with its messages, the help, and the modal over them.

package tui

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/nodegc/nodegc/engine"
	"github.com/nodegc/nodegc/internal/format"
)

func (m *Model) setFlash(s string, bad bool) {
	m.flash, m.flashBad, m.flashSticky = s, bad, false
	m.flashAt = m.now
}

// setStickyFlash shows a status message that stays until the next one: the
// state it describes lasts (a pass being applied, a frozen display).
func (m *Model) setStickyFlash(s string) {
	m.setFlash(s, false)
	m.flashSticky = true
}

// flashTTL is how long a status message stays on the status line. The
// display refreshes on its own clock, so an expired message goes at the
// next refresh at the latest.
const flashTTL = 6 * time.Second

// expireFlash drops a status message older than flashTTL, unless it is
// sticky, and reports whether it did.
func (m *Model) expireFlash() bool {
	if m.flash != "" && !m.flashSticky && m.now.Sub(m.flashAt) >= flashTTL {
		m.flash = ""
		return true
	}
	return false
}

// inFlight is the kind of a pass running now, "" when none.
func (m Model) inFlight() engine.PassKind {
	if m.busy != "" {
		return m.busy
	}
	return m.status.Running
}

// quitStops is the pass that quitting would stop, "" for none: the one
// this dashboard started, or any pass of the engine it runs. An attached
// dashboard does not run the agent's engine: the agent's own passes go on
// whether it stays or not, so quitting asks nothing about them (it asked,
// and the question went away with the pass, leaving the q unanswered).
func (m Model) quitStops() engine.PassKind {
	if m.busy != "" || m.o.Agent == nil {
		return m.inFlight()
	}
	return ""
}

// pausedBadge says who paused the periodic passes, since when and until
// when: "Ⅱ paused (uid 0 pid 4242 11:02–12:00)".
func pausedBadge(st engine.Status) string {
	if st.PausedBy == "" {
		return "Ⅱ paused"
	}
	span := st.PausedSince.Format("15:04")
	if !st.PausedUntil.IsZero() {
		span += "–" + st.PausedUntil.Format("15:04")
	}
	return "Ⅱ paused (" + st.PausedBy + " " + span + ")"
}

// chrome is the lines around the body: the tab bar and its rule, the
// status line and the help line. The full help (?) takes the body's
// place, not more lines.
func (m Model) chrome() int { return 4 }

// ShortHelp merges the active pane's keys with the global ones.
func (m Model) ShortHelp() []key.Binding {
	k := m.keys
	b := []key.Binding{k.NextPane, k.ForceImages, k.ForceContainers, k.ReclaimAll, k.ReadOnly, k.DryRun, k.Pause}
	b = append(b, m.paneHelp()...)
	return append(b, k.Help, k.Quit)
}

// FullHelp groups every key: panes, GC actions, view, a preview's
// question, and the active pane's own (helpSections titles them).
func (m Model) FullHelp() [][]key.Binding {
	k := m.keys
	g := [][]key.Binding{
		{k.NextPane, k.PrevPane, k.Panes[0], k.Command, k.Help, k.Quit},
		{k.ForceImages, k.ForceContainers, k.ReclaimAll, k.ReadOnly, k.DryRun, k.RemoveOne, k.Pause, k.StopPass},
		{k.Refresh, k.Faster, k.Freeze, k.Journal, k.Raw},
		{k.Confirm, k.Cancel},
	}
	return append(g, m.activePane().FullHelp()...)
}

func (m Model) paneHelp() []key.Binding { return m.activePane().ShortHelp() }

// Screen renders the dashboard as a string: the tab bar, the active pane,
// the status line, the help, and the modal over them.
func (m Model) Screen() string {
	if m.width <= 0 || m.height <= 0 {
		return ""
	}
	st := m.st
	c := m.drawnChrome()
	lines := []string{c.bar, c.rule}

	bodyH := max(m.height-m.chrome(), 1)
	body := m.activePane().View()
	if m.help.ShowAll {
		body = m.helpGrid(m.width, bodyH)
	}
	bl := strings.Split(body, "\n")
	if len(bl) > bodyH {
		bl = bl[:bodyH]
	}
	for len(bl) < bodyH {
		bl = append(bl, "")
	}
	if !m.haveSnap {
		// Until the first snapshot, the first blank line of the body (under
		// a pane's "waiting for the first snapshot…") turns a spinner.
		if i := slices.IndexFunc(bl, func(l string) bool { return strings.TrimSpace(ansi.Strip(l)) == "" }); i >= 0 {
			l := m.load.View(st, m.o.Now())
			if m.opening != "" {
				l = st.Faint.Render(m.opening + "…")
			}
			bl[i] = ansi.Truncate(l, m.width, "…")
		}
	}
	lines = append(lines, bl...)

	status := ""
	switch {
	case m.progress != nil && !(m.flash != "" && m.flashBad):
		status = m.progressLine()
	case m.flash != "" && m.flashBad:
		status = st.FlashError.Render(m.flash)
	case m.flash != "":
		status = st.Flash.Render(m.flash)
	case m.lastErr != "":
		status = st.FlashError.Render(m.lastErr)
	case m.eventsStatus != "":
		status = st.Faint.Render(m.eventsStatus)
	case m.firstRun() != "":
		status = st.Warn.Render(m.firstRun())
	}
	lines = append(lines, ansi.Truncate(status, m.width, "…"), c.help)
	screen := strings.Join(lines, "\n")
	if m.modal != nil {
		screen = overlay(screen, m.modal.render(st, m.width, m.height, m.o.ReadOnly), m.width, m.height)
	}
	return screen
}

// drawnChrome is the tab bar, its rule and the help line: those of the last screen
// drawn when nothing but the clock moved since, else drawn now.
func (m Model) drawnChrome() chrome {
	if f := m.frame; f != nil && f.chrome.gen == m.chromeGen && !m.asOfShown() {
		return f.chrome
	}
	c := chrome{gen: m.chromeGen, bar: m.tabBar(), rule: m.st.Faint.Render(strings.Repeat("─", m.width)), help: m.helpLine()}
	if m.frame != nil {
		m.frame.chrome = c
	}
	return c
}

// tabBar is the first line: the tabs, and the engine's state on the
// right.
func (m Model) tabBar() string {
	st := m.st
	var tabs []string
	for i, t := range m.tabLabels() {
		if Pane(i) == m.active {
			tabs = append(tabs, st.TabActive.Render(t))
		} else {
			tabs = append(tabs, st.TabInactive.Render(t))
		}
	}
	left := st.Title.Render(appName) + tabGap + strings.Join(tabs, tabGap)
	var badges []string
	switch {
	case m.opening != "":
		badges = append(badges, st.Faint.Render("○ starting"))
	case m.o.Controller == nil:
		badges = append(badges, st.Faint.Render("display only"))
	case m.o.ReadOnly:
		badges = append(badges, st.BadgeWarn.Render("read-only"))
	case m.inFlight() != "":
		badges = append(badges, st.Accent.Render("● "+string(m.inFlight())))
	case m.status.Paused:
		badges = append(badges, st.BadgeWarn.Render(pausedBadge(m.status)))
	default:
		badges = append(badges, st.Badge.Render("● running"))
	}
	if m.frozen {
		badges = append(badges, st.BadgeWarn.Render("FROZEN"))
	}
	// Freshness: while polling, say when the data was read once it is
	// older than the refresh interval (a slow or failing runtime).
	if m.asOfShown() {
		at := m.freshAt()
		badges = append(badges, st.BadgeWarn.Render("as of "+at.Format(time.TimeOnly)+" ("+format.Ago(at, m.now)+")"))
	}
	right := strings.Join(badges, " ")
	// The refresh interval (+/- change it, btop) goes first, in words when
	// they fit, else as ⟳, else not at all: the state badges never give
	// way to it.
	for _, r := range []string{"refresh " + format.Duration(m.o.RefreshInterval), "⟳ " + format.Duration(m.o.RefreshInterval)} {
		if ansi.StringWidth(left)+ansi.StringWidth(r)+1+ansi.StringWidth(right)+1 <= m.width {
			right = st.Faint.Render(r) + " " + right
			break
		}
	}
	gap := m.width - ansi.StringWidth(left) - ansi.StringWidth(right)
	bar := left + strings.Repeat(" ", max(gap, 1)) + right
	if gap < 1 {
		bar = ansi.Truncate(left, m.width, "…")
	}
	return bar
}

// helpLine is the last line: the keys that work now.
func (m Model) helpLine() string {
	st := m.st
	var helpView string
	switch {
	case m.cmd.Open():
		helpView = ansi.Truncate(m.cmd.View()+"  "+m.help.ShortHelpView(m.cmd.Help()), m.width, "…")
	case m.capturing():
		// Every key goes to the filter, q and ? too: the footer shows
		// only the keys that work.
		k := m.keys
		helpView = ansi.Truncate(st.Faint.Render("typing a filter: ")+m.help.ShortHelpView([]key.Binding{k.FilterDone, k.ClearFilter, k.FilterBackspace, k.FilterErase}), m.width, "…")
	case m.help.ShowAll:
		closeHelp := m.keys.Help
		closeHelp.SetHelp("?/esc", "close help")
		helpView = m.help.ShortHelpView([]key.Binding{closeHelp, m.keys.Quit})
	default:
		// The help and quit keys always show; the rest fit before them.
		sb := m.ShortHelp()
		tail := m.help.ShortHelpView([]key.Binding{m.keys.Help, m.keys.Quit})
		sep := m.help.Styles.ShortSeparator.Render(m.help.ShortSeparator)
		room := m.width - ansi.StringWidth(tail) - ansi.StringWidth(sep)
		helpView = ansi.Truncate(m.help.ShortHelpView(sb[:len(sb)-2]), room, "…") + sep + tail
	}
	return helpView
}

// firstRun warns, until the first pass, that periodic passes will delete
// and when, with the key that pauses them: a dashboard opened to look
// starts deleting on its own. "" once a pass ran, or when none will.
func (m Model) firstRun() string {
	s := m.status
	if m.o.Controller == nil || m.o.ReadOnly || s.ReadOnly || s.Paused || s.Running != "" || s.Passes > 0 || s.LastReport != nil {
		return ""
	}
	now := m.o.Now()
	when := fmt.Sprintf("container GC %s", format.In(s.NextContainerPass, now))
	if !s.ImageGCDisabled {
		when += fmt.Sprintf(", image GC %s", format.In(s.NextImagePass, now))
	}
	return fmt.Sprintf("periodic passes are on and will delete: %s · %s pauses them · %s previews", when, m.keys.Pause.Help().Key, m.keys.DryRun.Help().Key)
}

// View renders the screen in the alternate screen. An update that
// changed nothing on screen (quiet) draws the last frame again without
// rendering it.
func (m Model) View() tea.View {
	screen := ""
	if f := m.frame; f != nil && f.gen == m.gen {
		screen = f.screen
	} else {
		screen = m.Screen()
		if f != nil {
			f.gen, f.screen = m.gen, screen
		}
	}
	v := tea.NewView(screen)
	v.AltScreen = true
	v.MouseMode = tea.MouseModeCellMotion
	v.WindowTitle = "nodegc"
	return v
}

// passSummary accounts for every planned item of a pass, so the counts add
// up to what the preview showed: removed + already gone + skipped (with the
// first reason) + failed + not run = planned. What it removed and freed
// comes first and the reasons last, where a narrow status line cuts.
func passSummary(r engine.PassReport) string {
	var b strings.Builder
	fmt.Fprintf(&b, "pass #%d (%s): removed %d, freed ≈ %s; %d planned", r.ID, r.Kind,
		r.Count(engine.OutcomeRemoved), format.Bytes(r.EstimatedBytesFreed), len(r.Items))
	fmt.Fprintf(&b, ", failed %d", r.Count(engine.OutcomeFailed))
	if n := r.Count(engine.OutcomeGone); n > 0 {
		fmt.Fprintf(&b, ", already gone %d", n)
	}
	if r.Undone > 0 {
		fmt.Fprintf(&b, ", not run %d (%s)", r.Undone, r.Stopped)
	}
	if n := r.Count(engine.OutcomeSkipped); n > 0 {
		why := ""
		for _, it := range r.Items {
			if it.Outcome == engine.OutcomeSkipped {
				why = it.Detail
				break
			}
		}
		fmt.Fprintf(&b, ", skipped %d (%s)", n, why)
	}
	return b.String()
}
