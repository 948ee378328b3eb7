// Package overview is the dashboard's Overview pane: the image filesystem
// against the GC band and the eviction line, the root filesystem, the disk
// reserve, the engine's state and last pass, the runtime, and nodegc's own
// footprint.
package overview

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
	"github.com/nodegc/nodegc/forecast"
	"github.com/nodegc/nodegc/internal/firstseen"
	"github.com/nodegc/nodegc/internal/format"
	"github.com/nodegc/nodegc/tui/internal/feed"
	"github.com/nodegc/nodegc/tui/internal/grid"
	"github.com/nodegc/nodegc/tui/keys"
	"github.com/nodegc/nodegc/tui/style"
)

// Self is nodegc's own footprint.
type Self = feed.Self

// Agent names the nodegc agent the dashboard is attached to.
type Agent = feed.Agent

// Data is everything the pane shows: the dashboard's state (feed.State)
// and the session's history, which the pane keeps itself.
type Data struct {
	feed.State
	// History is the session's image fs usage and bytes freed per pass.
	History History
}

// Model is the Overview pane.
type Model struct {
	// keys and st are shared by the pane's copies: replaced, never
	// written in place.
	keys   *keys.KeyMap
	st     *style.Styles
	d      Data
	loaded bool
	// hist is the session's history: the usage at each refresh
	// (feed.State with a new Refreshes) and the bytes each pass of this session
	// freed (feed.Pass).
	hist   History
	width  int
	height int
	// memo is the last render of this data, size and palette: a tick of
	// the clock redraws only the lines with a countdown or an age. It is
	// replaced whenever anything else it shows changes.
	memo *memo
	// hold is firstseen.Hold of the data, worked out once per state, not
	// at every render (it indexes every image record).
	hold hold
	// fc is the image fs forecast, made at the refreshes.
	fc *forecaster
}

// hold is when every image counts as first seen, for want of earlier
// records, and when the first becomes eligible (firstseen.Hold).
type hold struct {
	since, eligible time.Time
	ok              bool
}

// shown reports whether the hold is still to be said at now.
func (h hold) shown(now time.Time) bool { return h.ok && h.eligible.After(now) }

// memo holds a render and where its clock lines are (-1: not shown).
type memo struct {
	lines []string
	at    [3]int
}

// New returns an empty pane.
func New(k keys.KeyMap, st style.Styles) Model {
	return Model{keys: &k, st: &st, fc: newForecaster(nil)}
}

// WithForecastHistory starts the pane's forecast from readings, oldest
// first: the state dir's history (the agent's), so that a dashboard
// forecasts at once rather than after forecast.MinHistory.
func (m Model) WithForecastHistory(readings []forecast.Reading) Model {
	m.fc = newForecaster(readings)
	return m
}

// SetStyles switches the palette.
func (m *Model) SetStyles(st style.Styles) { m.st, m.memo = &st, &memo{} }

// SetSize sets the pane's size.
func (m *Model) SetSize(w, h int) { m.width, m.height, m.memo = w, h, &memo{} }

// History returns the session's history the pane keeps.
func (m Model) History() History { return m.hist }

// setState shows the dashboard's state, and records the usage of a
// refresh it has not seen.
func (m *Model) setState(st feed.State) {
	if st.Refreshes != m.d.Refreshes {
		m.hist.AddUsage(st.At, st.Plan.ImageGC.UsagePercent)
		m.fc.add(st.Snapshot, st.Policy)
	}
	m.d = Data{State: st, History: m.hist}
	m.hold.since, m.hold.eligible, m.hold.ok = firstseen.Hold(st.Snapshot, st.Policy.Image.MinAge, st.Now)
	m.loaded = true
	m.memo = &memo{}
}

// Title names the pane.
func (m Model) Title() string { return "Overview" }

// Update takes the data the root hands it; the pane has no keys of its
// own.
func (m Model) Update(msg tea.Msg) (Model, tea.Cmd) {
	switch msg := msg.(type) {
	case feed.State:
		m.setState(msg)
	case feed.Pass:
		if !msg.Earlier {
			// Shown with the state that follows every pass.
			prev := m.hist.lastPass
			m.hist.AddPass(msg.Report)
			if m.hist.lastPass != prev { // a pass seen twice counts once
				m.fc.freed += forecast.FreedBy(msg.Report)
			}
		}
	case feed.Clock:
		if m.hold.shown(m.d.Now) && !m.hold.shown(msg.Now) {
			m.memo = &memo{} // the hold's line goes: lay the pane out again
		}
		m.d.Now = msg.Now
	}
	return m, nil
}

// NextChange is when a countdown or age the pane shows next reads
// differently: the next passes, the last pass's age and the agent's
// uptime. Each reads to the minute beside the instant itself
// (format.Rough), so an idle Overview is drawn again once a minute, not
// once a second (issue 22). (The history says when it starts, which does
// not move.)
func (m Model) NextChange() time.Time {
	if !m.loaded {
		return time.Time{}
	}
	d := m.d
	var next time.Time
	at := func(t time.Time) { next = grid.Earliest(next, format.RoughNextChange(t, d.Now)) }
	if a := d.Agent; a != nil {
		at(a.StartedAt)
	}
	if s := d.Status; d.Controlled && !d.ReadOnly && !s.ReadOnly && !s.Paused {
		// A countdown reads "now" once due, until the status moves it.
		if !s.ImageGCDisabled && s.NextImagePass.After(d.Now) {
			at(s.NextImagePass)
		}
		if s.NextContainerPass.After(d.Now) {
			at(s.NextContainerPass)
		}
	}
	if r := d.Status.LastReport; r != nil {
		at(r.FinishedAt)
	}
	if m.hold.shown(d.Now) {
		at(m.hold.eligible)
	}
	return next
}

// Capturing reports whether the pane takes every key; it never does.
func (m Model) Capturing() bool { return false }

// ShortHelp returns the pane's keys (none).
func (m Model) ShortHelp() []key.Binding { return nil }

// FullHelp returns the pane's keys (none).
func (m Model) FullHelp() [][]key.Binding { return nil }

// usage is the kubelet's usagePercent: 100 - floor(available*100/capacity).
func usage(fs engine.FsStats) int {
	if fs.CapacityBytes <= 0 {
		return 0
	}
	avail := min(max(fs.AvailableBytes, 0), fs.CapacityBytes)
	return 100 - int(avail*100/fs.CapacityBytes)
}

// evictionFraction is the used fraction of the image filesystem at which
// the eviction manager's imagefs.available signal fires.
func evictionFraction(d Data) (frac float64, label string) {
	fs := d.Snapshot.ImageFs
	for _, e := range d.Plan.DiskReserve.Eviction {
		if e.Signal == "imagefs.available" && fs.CapacityBytes > 0 {
			return 1 - float64(e.ThresholdAmount)/float64(fs.CapacityBytes), e.Threshold
		}
	}
	v := "15%"
	if t, ok := d.Policy.Disk.EvictionHard["imagefs.available"]; ok {
		v = t
	}
	b, err := engine.ParseThreshold(v, fs.CapacityBytes)
	if err != nil || fs.CapacityBytes <= 0 {
		return 0.85, "15%"
	}
	return 1 - float64(b)/float64(fs.CapacityBytes), v
}

// View renders the pane: in full once per data, size and palette, and
// then, as the clock moves, only its clock lines.
func (m Model) View() string {
	if !m.loaded {
		return m.st.Faint.Render("waiting for the first snapshot…")
	}
	c := m.memo
	if c == nil || c.lines == nil {
		lines, at := m.render()
		if c == nil {
			return strings.Join(lines, "\n")
		}
		c.lines, c.at = lines, at
	}
	lines := slices.Clone(c.lines)
	for i, l := range m.clockLines() {
		if c.at[i] >= 0 {
			lines[c.at[i]] = ansi.Truncate(l, m.width, "…")
		}
	}
	return strings.Join(lines, "\n")
}

// clockLines are the lines that move with the clock: the engine's
// countdowns, the last pass's age and the first-seen hold's countdown.
func (m Model) clockLines() [3]string {
	return [3]string{m.engineLine(), m.lastPassLine(), m.holdLine()}
}

// holdLine says, while no image can go for want of earlier records, when
// the first can; "" otherwise.
func (m Model) holdLine() string {
	h, now := m.hold, m.d.Now
	if !h.shown(now) {
		return ""
	}
	return m.st.Warn.Render(fmt.Sprintf("no earlier image records: every image counts as first seen at %s; none goes before %s (%s)",
		h.since.Format(time.TimeOnly), h.eligible.Format(time.TimeOnly), format.RoughIn(h.eligible, now)))
}

// render lays out the pane, and says where its clock lines went.
func (m Model) render() ([]string, [3]int) {
	var lines []string
	lines = append(lines, m.imageFsLines()...)
	lines = append(lines, m.rootFsLines()...)
	lines = append(lines, m.reserveLines()...)
	lines = append(lines, m.engineLine(), m.lastPassLine())
	lines = append(lines, m.othersLines()...)
	lines = append(lines, "")
	lines = m.withHistory(lines, m.tailLines())
	return m.fit(lines)
}

// label renders s as a label.
func (m Model) label(s string) string { return m.st.Label.Render(s) }

// imageFsLines is the image filesystem's section: its usage gauge against
// the GC thresholds and the eviction threshold, its numbers, whether image
// GC is due, and the hold on images without earlier records.
func (m Model) imageFsLines() []string {
	d, st := m.d, m.st
	fs := d.Snapshot.ImageFs
	pol := d.Policy.Image
	u := usage(fs)
	evict, evictLabel := evictionFraction(d)
	lines := []string{st.Header.Render("IMAGE FILESYSTEM") + "  " + m.label(fs.Mountpoint),
		m.gauge(u, pol.LowThresholdPercent, pol.HighThresholdPercent, evict),
		fmt.Sprintf("%s low %d%%  %s high %d%%  %s eviction at %.0f%% (imagefs.available < %s)",
			st.Marker.Render("┃"), pol.LowThresholdPercent, st.Marker.Render("┃"), pol.HighThresholdPercent,
			st.EvictionMarker.Render("┃"), evict*100, evictLabel),
		fsLine(m.label, fs)}
	g := d.Plan.ImageGC
	switch {
	case fs.CapacityBytes <= 0:
		lines = append(lines, st.Bad.Render("image filesystem capacity unknown (InvalidDiskCapacity)"))
	case g.Triggered:
		lines = append(lines, st.Warn.Render(fmt.Sprintf("usage %d%% ≥ high %d%%: image GC frees %s to reach %d%%", u, pol.HighThresholdPercent, format.Bytes(g.BytesToFree), pol.LowThresholdPercent)))
	default:
		lines = append(lines, st.OK.Render(fmt.Sprintf("usage %d%% < high %d%%: no image GC needed", u, pol.HighThresholdPercent)))
	}
	if l := m.holdLine(); l != "" {
		lines = append(lines, l)
	}
	return append(lines, "")
}

// rootFsLines is the root filesystem's section, when the runtime keeps
// its writable layers apart from the image filesystem; none otherwise.
func (m Model) rootFsLines() []string {
	r := m.d.Snapshot.RootFs
	if r == nil {
		return nil
	}
	return []string{m.st.Header.Render("ROOT FILESYSTEM") + "  " + m.label(r.Mountpoint),
		m.gauge(usage(*r), -1, -1, -1), fsLine(m.label, *r), ""}
}

// reserveLines is the disk reserve's section: whether each filesystem
// keeps the reserve, and the eviction line.
func (m Model) reserveLines() []string {
	d, st := m.d, m.st
	dr := d.Plan.DiskReserve
	thr := dr.ThresholdMiB
	if thr == 0 {
		thr = d.Policy.Disk.ThresholdMiB
	}
	// nodegc's own check of the old kubelet diskSpaceManager threshold:
	// no current kubelet checks it, so it is not said as the kubelet's.
	reserve := fmt.Sprintf("%s %s  %s imagefs %s", st.Header.Render("DISK RESERVE"),
		m.label(fmt.Sprintf("(nodegc's check of the old kubelet threshold, %d MiB)", thr)),
		m.label("·"), reserveWord(st, dr.ImageFs.OK, thr))
	if dr.RootFs != nil {
		reserve += fmt.Sprintf("  rootfs %s", reserveWord(st, dr.RootFs.OK, thr))
	}
	return []string{reserve, m.evictionLine(dr), ""}
}

// tailLines are the pane's last lines: the runtime, and nodegc's own
// version, mode and (unless hidden) CPU and memory.
func (m Model) tailLines() []string {
	d, st := m.d, m.st
	rt := d.Snapshot.Runtime
	tail := []string{fmt.Sprintf("%s  %s %s  %s", st.Header.Render("RUNTIME"), rt.Name, rt.Version, m.label(rt.Endpoint))}
	self := fmt.Sprintf("%s   %s", st.Header.Render("NODEGC"), d.Version)
	if d.ReadOnly {
		self += "  " + st.Warn.Render("read-only")
	}
	if !d.HideSelf {
		cpu := "—"
		if d.Self.CPUPercent >= 0 {
			cpu = fmt.Sprintf("%.1f%%", d.Self.CPUPercent)
		}
		self += fmt.Sprintf("  %s %s  %s %s", m.label("cpu"), cpu, m.label("rss"), format.Bytes(d.Self.RSSBytes))
	}
	return append(tail, self)
}

// withHistory puts the history between lines and tail. The history takes
// the room left: at least a sparkline per series, and at big sizes a chart
// each. When even the sparklines do not fit, the blank separators go first.
func (m Model) withHistory(lines, tail []string) []string {
	room := m.height - len(lines) - len(tail) - 1
	sep := true
	if room < 8 && m.height > 0 {
		lines = slices.DeleteFunc(lines, func(l string) bool { return l == "" })
		room, sep = m.height-len(lines)-len(tail), false
	}
	lines = append(lines, m.history(max(room, 2))...)
	if sep {
		lines = append(lines, "")
	}
	return append(lines, tail...)
}

// fit truncates the lines to the pane's width and height, and says where
// the clock lines (which the clock redraws alone) are among them: -1 for
// one not shown.
func (m Model) fit(lines []string) ([]string, [3]int) {
	at := [3]int{-1, -1, -1}
	clock := m.clockLines()
	for i, l := range lines {
		if j := slices.Index(clock[:], l); j >= 0 && at[j] < 0 {
			at[j] = i
		}
		lines[i] = ansi.Truncate(l, m.width, "…")
	}
	if len(lines) > m.height && m.height > 0 {
		lines = lines[:m.height]
	}
	for j, i := range at {
		if i >= len(lines) {
			at[j] = -1
		}
	}
	return lines, at
}

// history draws the session's image fs usage, with the GC band marked,
// and the bytes each pass freed, in at most rows lines: two one-line
// sparklines when short, two charts (btop style) when there is room.
func (m Model) history(rows int) []string {
	d, st := m.d, m.st
	h := d.History
	pol := d.Policy.Image
	w := max(m.width-14, 10)
	usageNow := m.usageNow()
	freedMax := maxValue(h.Freed)
	uHead := m.usageHead()
	fHead := st.Header.Render("FREED PER PASS") + "  " + st.Label.Render(fmt.Sprintf("%s this session · most %s", passes(len(h.Freed)), format.Bytes(freedMax)))
	if len(h.Freed) == 0 {
		fHead = st.Header.Render("FREED PER PASS") + "  " + st.Label.Render("no pass this session yet")
	}
	fc := m.forecastLine()
	if rows < 6 {
		u := chart(h.Usage, w, 1, 0, 100)[0]
		f := chart(h.Freed, w, 1, 0, max(freedMax, 1))[0]
		out := []string{st.Label.Render(fmt.Sprintf("%-12s", "usage")) + m.usageStyle(h).Render(u) + " " + usageNow}
		if fc != "" && rows >= 3 {
			out = append(out, fc)
		}
		return append(out, st.Label.Render(fmt.Sprintf("%-12s", "freed/pass"))+st.Accent.Render(f)+" "+format.Bytes(freedMax))
	}
	out := []string{uHead}
	heads, gap := 3, true // the two headings and the blank line between the charts
	if fc != "" {
		out, heads = append(out, fc), 4
		if rows-heads < 3 { // the forecast takes the blank line, so the usage chart keeps both band lines
			heads, gap = 3, false
		}
	}
	uh := max((rows-heads)*2/3, 1)
	fh := max(rows-heads-uh, 1)
	bottom, top := usageScale(h.Usage, pol.LowThresholdPercent, pol.HighThresholdPercent)
	high, low := int64(pol.HighThresholdPercent), int64(pol.LowThresholdPercent)
	labels := map[int]string{0: fmt.Sprintf("%d%%", top), uh - 1: fmt.Sprintf("%d%%", bottom)}
	labels[markRow(low, uh, bottom, top)] = fmt.Sprintf("low %d%%", low)
	labels[markRow(high, uh, bottom, top)] = fmt.Sprintf("high %d%%", high)
	for i, r := range chart(h.Usage, w, uh, bottom, top, mark{low, '┈'}, mark{high, '┄'}) {
		out = append(out, st.Label.Render(fmt.Sprintf("%11s ", labels[i]))+m.usageStyle(h).Render(r))
	}
	if gap {
		out = append(out, "")
	}
	out = append(out, fHead)
	for i, r := range chart(bars(h.Freed, w), w, fh, 0, max(freedMax, 1)) {
		label := ""
		switch {
		case i == 0 && len(h.Freed) > 0:
			label = format.Bytes(freedMax)
		case i == fh-1 && fh > 1:
			label = "0 B"
		}
		out = append(out, st.Label.Render(fmt.Sprintf("%11s ", label))+st.Accent.Render(r))
	}
	return out[:min(len(out), rows)]
}

// usageNow is the latest image fs usage of the history.
func (m Model) usageNow() string {
	if n := len(m.d.History.Usage); n > 0 {
		return fmt.Sprintf("%d%%", m.d.History.Usage[n-1].Value)
	}
	return "—"
}

// usageHead is the usage chart's heading, with the span of the history.
func (m Model) usageHead() string {
	d, st, pol := m.d, m.st, m.d.Policy.Image
	return st.Header.Render("USAGE HISTORY") + "  " + st.Label.Render(fmt.Sprintf("image fs, now %s · band %d–%d%% (┄ high, ┈ low) · %s", m.usageNow(), pol.LowThresholdPercent, pol.HighThresholdPercent, span(d.History.Usage)))
}

// usageStyle colours the usage chart: hot while the latest sample is at or
// above the high threshold.
func (m Model) usageStyle(h History) lipgloss.Style {
	if n := len(h.Usage); n > 0 && h.Usage[n-1].Value >= int64(m.d.Policy.Image.HighThresholdPercent) {
		return m.st.GaugeHot
	}
	return m.st.GaugeFill
}

// reserveWord is one filesystem's verdict against the reserve: ok, or
// below it (never "out of disk", which would sound like the kubelet's).
func reserveWord(st *style.Styles, ok bool, thresholdMiB int64) string {
	if ok {
		return st.OK.Render("ok")
	}
	return st.Bad.Render(fmt.Sprintf("BELOW %d MiB", thresholdMiB))
}

// fsLine is a filesystem's sizes. When df's used/capacity differs from
// the gauge's percent (capacity − available, the kubelet's usage: blocks
// reserved for root, or used outside the runtime, count as used), a
// second line says which is which.
func fsLine(lbl func(string) string, fs engine.FsStats) string {
	s := fsSizes(lbl, fs)
	if fs.CapacityBytes <= 0 {
		return s
	}
	df := int(fs.UsedBytes * 100 / fs.CapacityBytes)
	if u := usage(fs); u-df > 1 || df-u > 1 {
		s += "\n" + lbl(fmt.Sprintf("gauge %d%% = capacity − available (kubelet) · df used/capacity %d%% · %s reserved or not counted",
			u, df, format.Bytes(fs.CapacityBytes-fs.AvailableBytes-fs.UsedBytes)))
	}
	return s
}

func fsSizes(lbl func(string) string, fs engine.FsStats) string {
	s := fmt.Sprintf("%s %s  %s %s  %s %s", lbl("capacity"), format.Bytes(fs.CapacityBytes), lbl("used"), format.Bytes(fs.UsedBytes),
		lbl("available"), format.Bytes(fs.AvailableBytes))
	if fs.Inodes > 0 {
		used := fs.Inodes - fs.InodesFree
		s += fmt.Sprintf("  %s %d/%d (%d%%)", lbl("inodes"), used, fs.Inodes, used*100/fs.Inodes)
	}
	return s
}

// evictionLine lists the evictionHard signals resolved against the
// filesystems; a nodefs signal read on the image fs (the root fs
// unknown) says so.
func (m Model) evictionLine(dr engine.DiskReserve) string {
	st, ev := m.st, dr.Eviction
	if len(ev) == 0 {
		return st.Label.Render("eviction: no filesystem signal resolved")
	}
	parts := []string{st.Header.Render("EVICTION")}
	for _, e := range ev {
		amount := format.Bytes(e.ThresholdAmount)
		if e.Inodes {
			amount = fmt.Sprintf("%d inodes", e.ThresholdAmount)
		}
		if dr.RootFs == nil && strings.HasPrefix(e.Signal, "nodefs.") {
			amount += ", of the image fs"
		}
		s := fmt.Sprintf("%s<%s (%s)", e.Signal, e.Threshold, amount)
		if e.Crossed {
			parts = append(parts, st.Bad.Render(s+" CROSSED"))
		} else {
			parts = append(parts, st.Faint.Render(s))
		}
	}
	return strings.Join(parts, "  ")
}

func (m Model) engineLine() string {
	d, st := m.d, m.st
	head := st.Header.Render("ENGINE") + "  "
	if a := d.Agent; a != nil {
		head += st.Accent.Render(fmt.Sprintf("attached to agent (pid %d, up %s)", a.PID, format.Rough(d.Now.Sub(a.StartedAt)))) + "  "
	}
	if !d.Controlled {
		return head + st.Faint.Render("no scheduler: display only")
	}
	s := d.Status
	if s.Shadow {
		state := st.Accent.Render("shadow: plans every pass, removes nothing")
		if s.Paused {
			state = st.Warn.Render("paused") + "  " + state
		}
		return head + state + fmt.Sprintf("  %s passes %d", st.Label.Render("·"), s.Passes)
	}
	if d.ReadOnly || s.ReadOnly {
		return head + st.Warn.Render("read-only: no passes") + fmt.Sprintf("  %s previews (d) only", st.Label.Render("·"))
	}
	state := st.OK.Render("running")
	if s.Paused {
		state = st.Warn.Render("paused")
	}
	if s.Running != "" {
		state += "  " + st.Accent.Render("pass in flight: "+string(s.Running))
	}
	if s.Paused {
		return head + state + fmt.Sprintf("  %s periodic passes paused  %s passes %d", st.Label.Render("·"), st.Label.Render("·"), s.Passes)
	}
	next := "images " + when(s.NextImagePass, d.Now) + ", containers " + when(s.NextContainerPass, d.Now)
	if s.ImageGCDisabled {
		next = "containers " + when(s.NextContainerPass, d.Now) + " (periodic image GC disabled)"
	}
	// The count goes first: the countdowns, with their instants, are
	// the longest part and the first to be cut on a narrow terminal.
	return head + state + fmt.Sprintf("  %s passes %d  %s next passes: %s", st.Label.Render("·"), s.Passes, st.Label.Render("·"), next)
}

// when is a pass's countdown to the minute and its instant: "in 4m
// (12:04:10)", "in <1m (12:00:40)", or "now" once due.
func when(t, now time.Time) string {
	in := format.RoughIn(t, now)
	if !t.After(now) {
		return in
	}
	return in + " (" + t.Format(time.TimeOnly) + ")"
}

func (m Model) lastPassLine() string {
	d, st := m.d, m.st
	head := st.Header.Render("LAST PASS") + "  "
	r := d.Status.LastReport
	if r == nil {
		return head + st.Faint.Render("none yet")
	}
	if r.Shadow {
		return head + shadowPass(r, d.Now)
	}
	pass := fmt.Sprintf("#%d %s %s (%s)", r.ID, r.Kind, format.RoughAgo(r.FinishedAt, d.Now), r.FinishedAt.Format(time.TimeOnly))
	if r.Skipped != "" {
		// A periodic container pass on a node unchanged since the last
		// full one: it listed nothing (engine.RunPeriodic).
		return head + pass + ": " + st.Faint.Render("skipped, "+r.Skipped)
	}
	s := fmt.Sprintf("%s: removed %d, freed %s", pass,
		r.Count(engine.OutcomeRemoved), format.Bytes(r.EstimatedBytesFreed))
	if r.MeasuredBytesFreed != nil {
		s += fmt.Sprintf(" (measured %s)", format.Bytes(*r.MeasuredBytesFreed))
	}
	switch {
	case r.Error != "":
		return head + s + "  " + st.Bad.Render("failed: "+r.Error)
	case r.Stopped != "":
		// Stopped before its end (X, a signal): the items never tried
		// are no failures, and no "ok" either.
		msg := fmt.Sprintf("stopped, %d not run", r.Undone)
		if f := r.Count(engine.OutcomeFailed); f > 0 {
			msg = fmt.Sprintf("%d failed, %s", f, msg)
		}
		return head + s + "  " + st.Warn.Render(msg)
	case !r.OK():
		return head + s + "  " + st.Bad.Render(fmt.Sprintf("%d failed", r.Count(engine.OutcomeFailed)))
	}
	for _, e := range r.Events {
		if e.Warning {
			return head + s + "  " + st.Warn.Render(e.Reason)
		}
	}
	return head + s + "  " + st.OK.Render("ok")
}

// shadowPass is a shadow pass's line: what it would have removed.
func shadowPass(r *engine.PassReport, now time.Time) string {
	s := fmt.Sprintf("shadow %s %s (%s): ", r.Kind, format.RoughAgo(r.FinishedAt, now), r.FinishedAt.Format(time.TimeOnly))
	if r.Error != "" {
		return s + "failed: " + r.Error
	}
	images, containers := r.CountKind(engine.ItemImage), r.CountKind(engine.ItemContainer)
	return s + fmt.Sprintf("would remove %d images (%s), %d containers; removed nothing", images, format.Bytes(r.EstimatedBytesFreed), containers)
}

// othersLines say what others (the kubelet's GC, crictl, a person)
// removed, from the scheduler's record: since it started and since the
// last pass; in shadow mode, how the shadow passes compare with it.
func (m Model) othersLines() []string {
	d, st := m.d, m.st
	if !d.Controlled {
		return nil
	}
	o := d.Status.RemovedByOthers
	var lines []string
	if o.Images+o.Containers > 0 || d.Status.Shadow {
		// Nothing removed by others, outside shadow mode, is no news.
		lines = append(lines, st.Header.Render("BY OTHERS")+"  "+fmt.Sprintf("removed %d images (%s), %d dead containers since start  %s %d images, %d containers since the last pass",
			o.Images, format.Bytes(o.ImageBytes), o.Containers, st.Label.Render("·"), o.LastPassImages, o.LastPassContainers))
	}
	if !d.Status.Shadow {
		return lines
	}
	t := d.Status.ShadowTally
	all := t.Total()
	shadow := fmt.Sprintf("would have removed %d, others removed %d, agreed %d", all.WouldRemove(), all.OthersRemoved(), all.Agreed)
	detail := fmt.Sprintf("  %s images %d/%d/%d, containers %d/%d/%d (agreed/nodegc only/others only) over %d passes", st.Label.Render("·"),
		t.Images.Agreed, t.Images.NodegcOnly, t.Images.OtherOnly, t.Containers.Agreed, t.Containers.NodegcOnly, t.Containers.OtherOnly, t.Passes)
	style := st.OK
	if all.NodegcOnly+all.OtherOnly > 0 {
		style = st.Warn
	}
	return append(lines, st.Header.Render("SHADOW")+"  "+style.Render(shadow)+detail)
}

// gauge draws a bar of the used percentage with markers at the low and
// high thresholds and at the eviction line (negative: none). It is drawn
// cell by cell, in runs of one style.
func (m Model) gauge(used, low, high int, evict float64) string {
	st := m.st
	w := min(max(m.width-8, 10), 90)
	marks := map[int]lipgloss.Style{}
	pos := func(f float64) int { return min(int(f*float64(w)), w-1) }
	if low >= 0 {
		marks[pos(float64(low)/100)] = st.Marker
	}
	if high >= 0 {
		marks[pos(float64(high)/100)] = st.Marker
	}
	if evict >= 0 {
		marks[pos(evict)] = st.EvictionMarker
	}
	filled := int(float64(used) / 100 * float64(w))
	fill := st.GaugeFill
	if high >= 0 && used >= high {
		fill = st.GaugeHot
	}
	var b strings.Builder
	var run strings.Builder
	var cur *lipgloss.Style
	flush := func() {
		if run.Len() > 0 && cur != nil {
			b.WriteString(cur.Render(run.String()))
		}
		run.Reset()
	}
	for i := range w {
		s, ch := st.GaugeEmpty, "░"
		if i < filled {
			s, ch = fill, "█"
		}
		if ms, ok := marks[i]; ok {
			s, ch = ms, "┃"
		}
		if cur == nil || !sameStyle(*cur, s) {
			flush()
			c := s
			cur = &c
		}
		run.WriteString(ch)
	}
	flush()
	return b.String() + fmt.Sprintf(" %3d%%", used)
}

func sameStyle(a, b lipgloss.Style) bool {
	return a.GetForeground() == b.GetForeground() && a.GetBold() == b.GetBold()
}

// passes counts passes in words: "1 pass", "7 passes".
func passes(n int) string {
	if n == 1 {
		return "1 pass"
	}
	return fmt.Sprintf("%d passes", n)
}
