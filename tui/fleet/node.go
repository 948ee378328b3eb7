package fleet

import (
	"fmt"
	"strings"
	"time"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"
	"github.com/charmbracelet/x/ansi"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodegc/nodegc/api/v1alpha1"
	"github.com/nodegc/nodegc/fleet"
	"github.com/nodegc/nodegc/internal/format"
	"github.com/nodegc/nodegc/internal/texttable"
)

// The node view is one node's NodeGC object in full, as the watch keeps
// it: everything its row sums up, and the outcome of the latest command.
// It is built from the object alone: nothing is asked of the node, so no
// credential and no command goes to any port on it; the commands it
// sends go into the object's spec (command.go).

// backKeys leave the node view for the table.
var backKeys = key.NewBinding(key.WithKeys("q", "esc", "backspace"), key.WithHelp("q/esc", "back"))

// nodeUpdate handles a key in the node view: the open confirm's, a
// command's (command.go), back to the table, help, or ctrl+c.
func (m Model) nodeUpdate(msg tea.KeyPressMsg) (tea.Model, tea.Cmd) {
	if key.Matches(msg, m.Keys.Interrupt) {
		return m, tea.Quit
	}
	if m.confirm != nil {
		return m.confirmKey(msg)
	}
	if n, ok := m.openRow(); ok {
		if m, cmd, handled := m.commandKey(msg, n); handled {
			return m, cmd
		}
	}
	switch {
	case key.Matches(msg, backKeys):
		m.open, m.note = "", ""
	case key.Matches(msg, m.Keys.Help):
		m.help.ShowAll = !m.help.ShowAll
	}
	return m, nil
}

// openRow is the row of the open node; ok false when the node is gone.
func (m Model) openRow() (fleet.Node, bool) {
	for _, n := range m.nodes {
		if n.Name == m.open {
			return n, true
		}
	}
	return fleet.Node{}, false
}

// nodeScreen is the node view's text.
func (m Model) nodeScreen() string {
	title := m.Styles.Title.Render("nodegc fleet › " + texttable.PrintableLine(m.open))
	n, ok := m.openRow()
	var lines []string
	switch {
	case !m.loaded:
		lines = []string{m.Styles.Faint.Render("listing the nodes and their NodeGC objects…")}
	case !ok:
		lines = []string{m.Styles.Bad.Render("no such node (it may have been removed)")}
	default:
		lines = m.fields(n, m.o.Now())
		if s := m.sentLine(n, m.o.Now()); s != "" {
			lines = append(lines, m.Styles.Label.Render(fmt.Sprintf("%-20s", "Sent from here"))+" "+texttable.PrintableLine(s))
		}
	}
	if c := m.confirmLines(); c != nil {
		lines = append(append(lines, ""), c...)
	}
	if m.note != "" {
		st := m.Styles.Faint
		if m.noteBad {
			st = m.Styles.FlashError
		}
		lines = append(lines, "", st.Render(texttable.PrintableLine(m.note)))
	}
	w := max(m.Width, 1)
	out := []string{ansi.Truncate(title+"  "+m.Styles.Label.Render("from its NodeGC object · "+m.at.Format("15:04:05")), w, "…"), ""}
	for _, l := range lines {
		out = append(out, ansi.Truncate(l, w, "…"))
	}
	help := append(append([]key.Binding{backKeys}, m.commandHelp()...), m.Keys.Help, m.Keys.Interrupt)
	out = append(out, "", m.help.ShortHelpView(help))
	return lipgloss.JoinVertical(lipgloss.Left, out...)
}

// fields are the node view's lines: a label and its value, made
// printable (the object is the agent's writing).
func (m Model) fields(n fleet.Node, now time.Time) []string {
	var rows [][2]string
	add := func(label, value string) { rows = append(rows, [2]string{label, value}) }
	if n.Ready != "" {
		add("Node", strings.Replace(n.Ready, ",SchedulingDisabled", ", cordoned (scheduling disabled)", 1))
	}
	add("Agent", string(n.State))
	if n.Err != "" {
		add("Error", n.Err)
	}
	if s := n.Status; s != nil {
		statusFields(s, now, add)
	}
	// A value too long for the line goes on under itself, as it reads
	// left to right: what a pass removed and freed comes last, and a cut
	// line lost it at 80 columns.
	room := max(m.Width-21, 20)
	out := make([]string, 0, len(rows))
	for _, r := range rows {
		for i, v := range strings.Split(ansi.Wrap(texttable.PrintableLine(r[1]), room, ""), "\n") {
			label := ""
			if i == 0 {
				label = r[0]
			}
			out = append(out, m.Styles.Label.Render(fmt.Sprintf("%-20s", label))+" "+v)
		}
	}
	return out
}

// statusFields adds the status's fields, in the order of the row.
func statusFields(s *v1alpha1.NodeGCStatus, now time.Time, add func(label, value string)) {
	add("Heartbeat", ago(s.HeartbeatTime, now))
	add("Version", s.Version+" · started "+ago(s.StartedAt, now))
	fs := "unknown"
	if f := s.ImageFs; f != nil {
		fs = fmt.Sprintf("%d%% used of %s (%s available)", f.UsagePercent, format.Bytes(f.CapacityBytes), format.Bytes(f.AvailableBytes))
		if s.Band.High > 0 && f.UsagePercent >= s.Band.High {
			fs += " · at or above high: image GC is due"
		}
	}
	add("Image filesystem", fs)
	add("GC band", fmt.Sprintf("high %d%% · low %d%%", s.Band.High, s.Band.Low))
	add("Pressure forecast", pressureLine(s.Forecast, now))
	add("Last image pass", pass(s.LastImagePass, now))
	add("Last container pass", pass(s.LastContainerPass, now))
	add("Images kept", kept(s.Kept))
	dead := "unknown"
	if s.DeadContainers != nil {
		dead = fmt.Sprint(*s.DeadContainers)
	}
	add("Dead containers", dead)
	add("Pod source", s.PodSource)
	add("Event stream", s.EventStream)
	paused := "no"
	if p := s.Paused; p != nil {
		paused = "since " + p.Since.Format("15:04:05") + " by " + p.By
		if p.Until != nil {
			paused += " · ends " + p.Until.Format("15:04:05")
		}
	}
	add("Paused", paused)
	if c := s.Command; c != nil {
		cmd := fmt.Sprintf("%s: %s %s", c.ID, c.Result, ago(&c.At, now))
		if c.Message != "" {
			cmd += " · " + c.Message
		}
		add("Last command", cmd)
	}
}

// pass is a pass's line: when, what, its result and what it removed and
// freed.
func pass(p *v1alpha1.Pass, now time.Time) string {
	if p == nil {
		return "never"
	}
	parts := []string{format.Ago(p.At.Time, now), p.Kind + " (" + p.Trigger + ")", strings.TrimSpace(p.Result + " " + p.Reason),
		fmt.Sprintf("removed %d, failed %d", p.Removed, p.Failed)}
	if p.FreedBytes > 0 || p.TargetBytes > 0 {
		freed := "freed " + format.Bytes(p.FreedBytes)
		if p.MeasuredBytes != nil {
			freed += " (measured " + format.Bytes(*p.MeasuredBytes) + ")"
		}
		parts = append(parts, freed+" of "+format.Bytes(p.TargetBytes)+" to free")
	}
	return strings.Join(parts, " · ")
}

func ago(t *metav1.Time, now time.Time) string {
	if t == nil {
		return "unknown"
	}
	return format.Ago(t.Time, now)
}

// pressureLine is the node view's eviction forecast: when what GC cannot
// remove is forecast to reach the eviction line, with its 90% interval.
func pressureLine(f *v1alpha1.Forecast, now time.Time) string {
	const what = " (what image GC cannot remove reaches the eviction line)"
	switch pressureClass(f) {
	case pressureNow:
		return "crossed: GC cannot keep the node out of DiskPressure"
	case pressureAt:
		const day = "Jan 2 15:04"
		s := format.RoughIn(f.At.Time, now) + " (" + f.At.UTC().Format(day+" MST")
		if f.Earliest != nil {
			s += "; 90%: " + f.Earliest.UTC().Format(day) + " to "
			if f.Latest != nil {
				s += f.Latest.UTC().Format(day)
			} else {
				s += "never"
			}
		}
		return s + ")" + what
	case pressureFar:
		return "filling, more than a year away"
	case pressureNoFill:
		return "not filling"
	case pressureLearning:
		return "not enough history yet (20 minutes)"
	}
	return "none"
}
