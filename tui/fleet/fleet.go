// Package fleet is `nodegc fleet`: the dashboard's table for a whole
// cluster, one row a node, from the nodes' NodeGC objects that package
// fleet at the top level keeps by one list and a watch. A change reaches
// the screen as soon as the watch brings it; the rows are drawn again
// every Refresh besides, so ages move and a silent agent turns stale. It
// uses the dashboard's table (tui/internal/grid), keys (tui/keys), styles
// (tui/style) and help, so sort, filter and `/` work as on a node; enter
// opens the node view, the node's object in full (node.go).
package fleet

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"charm.land/bubbles/v2/help"
	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/nodegc/nodegc/api/v1alpha1"
	"github.com/nodegc/nodegc/engine"
	"github.com/nodegc/nodegc/fleet"
	"github.com/nodegc/nodegc/forecast"
	"github.com/nodegc/nodegc/internal/format"
	"github.com/nodegc/nodegc/internal/texttable"
	"github.com/nodegc/nodegc/tui/internal/grid"
	"github.com/nodegc/nodegc/tui/keys"
	"github.com/nodegc/nodegc/tui/style"
)

// Source is the fleet as a watch keeps it (a *fleet.Watcher).
type Source interface {
	// Rows is one row a node at now.
	Rows(now time.Time) []fleet.Node
	// Health is the state of the watch's streams.
	Health() []fleet.Health
	// Changed receives after the rows or the health changed.
	Changed() <-chan struct{}
}

// Options configure the fleet view.
type Options struct {
	// Source is the fleet; it is read in a tea.Cmd, off the UI loop.
	Source Source
	// Refresh is the longest time between two frames when nothing
	// changes: ages move and stale rows turn stale.
	Refresh time.Duration
	// Context ends the wait for changes.
	Context context.Context
	// Cursor names the node to select at start ("" the first).
	Cursor string
	// Node names the node whose view to open at start ("" the table).
	Node string
	// Filter is the filter to start with.
	Filter string
	// Flash is a message to show until the first key (why a node's
	// dashboard could not open).
	Flash string
	// Commands sends the node view's commands (a *fleet.Commands); nil
	// makes the view read-only.
	Commands Commander
	// PauseFor is how long a pause from the node view lasts unless the
	// operator changes it; 0 is DefaultPauseFor.
	PauseFor time.Duration
	// Now is the clock; nil is time.Now.
	Now func() time.Time
}

// Sort is the order of the table.
type Sort int

// Orders; s cycles through them.
const (
	// ByState puts the nodes that need a look first: unreadable objects,
	// stale agents, failed passes, then the fullest image filesystems.
	ByState Sort = iota
	ByName
	ByUsage
	ByLastGC
	ByDead
	// ByPressure puts first the nodes forecast soonest to reach
	// DiskPressure that no GC prevents (crossed, then filling by time);
	// not filling, not enough history and no forecast last.
	ByPressure
	numSorts
)

func (s Sort) String() string {
	return [...]string{"attention", "name", "image fs", "last GC", "dead", "pressure"}[s]
}

// sortColumn is the column each order sorts by.
var sortColumn = [numSorts]int{ByState: colAgent, ByName: colNode, ByUsage: colUsage, ByLastGC: colLastGC, ByDead: colDead, ByPressure: colPressure}

var columns = []grid.Column{
	{Title: "NODE", Width: 60, Flex: true}, // the name wins the room: 3 to ERROR's 1
	{Title: "READY", Width: 8},
	{Title: "AGENT", Width: 11},
	{Title: "IMAGE FS", Width: 16},
	{Title: "PRESSURE", Width: 9, Right: true},
	{Title: "LAST GC", Width: 9, Right: true, MinTable: 100},
	{Title: "RESULT", Width: 26, MinTable: 140},            // below, NODE needs the room; the node view has it
	{Title: "FREED", Width: 9, Right: true, MinTable: 100}, // below, READY and PRESSURE say more; the node view has both
	{Title: "DEAD", Width: 5, Right: true, MinTable: 100},
	{Title: "KEPT", Width: 22, MinTable: 150},
	{Title: "PODS", Width: 7, MinTable: 140},
	{Title: "EVENTS", Width: 7, MinTable: 140},
	{Title: "HEARTBEAT", Width: 9, Right: true, MinTable: 110},
	{Title: "ERROR", Width: 20, Flex: true},
}

// Column indexes.
const (
	colNode = iota
	colReady
	colAgent
	colUsage
	colPressure
	colLastGC
	colResult
	colFreed
	colDead
	colKept
	colPods
	colEvents
	colBeat
	colErr
)

// ReadMsg is the fleet as the watch held it at At.
type ReadMsg struct {
	Nodes  []fleet.Node
	Health []fleet.Health
	At     time.Time
	// Wait says the read came from the waiting command, which the model
	// arms again (one waits at a time); r's read does not.
	Wait bool
}

// Model is the fleet view.
type Model struct {
	grid.Pane
	o      Options
	help   help.Model
	sort   Sort
	nodes  []fleet.Node
	health []fleet.Health
	at     time.Time
	loaded bool
	// open is the node whose view is open; "" for the table.
	open string
	// confirm is the command asked about in the node view; nil when none.
	confirm *confirmation
	// last is the latest command sent from the node view.
	last *sentCommand
	// note is the node view's message line (a refusal when noteBad).
	note    string
	noteBad bool
	// pauseFor is a pause's length as p first proposes it.
	pauseFor time.Duration
}

// New returns the fleet view.
func New(o Options) Model {
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Context == nil {
		o.Context = context.Background()
	}
	o.Refresh = cmp.Or(o.Refresh, 2*time.Second)
	k := keys.Default(o.Commands == nil)
	k.Drill.SetHelp("enter", "node view")
	st := style.Default(true)
	m := Model{Pane: grid.NewPane(k, st, columns, 2, 1), o: o, help: help.New(), open: o.Node, pauseFor: cmp.Or(o.PauseFor, DefaultPauseFor)}
	if o.Cursor == "" {
		m.o.Cursor = o.Node
	}
	m.help.Styles = help.DefaultStyles(true)
	if o.Filter != "" {
		m.Filter.Start()
		for _, r := range o.Filter {
			m.Filter.Key(tea.KeyPressMsg{Text: string(r)}, m.Keys)
		}
		m.Filter.Editing = false
	}
	return m
}

// Init reads the fleet at once, then waits for its changes, and asks the
// terminal's background.
func (m Model) Init() tea.Cmd {
	return tea.Batch(m.readCmd(false), m.waitCmd(), tea.RequestBackgroundColor)
}

// readCmd reads the fleet now.
func (m Model) readCmd(wait bool) tea.Cmd {
	src, now := m.o.Source, m.o.Now
	return func() tea.Msg {
		at := now()
		return ReadMsg{Nodes: src.Rows(at), Health: src.Health(), At: at, Wait: wait}
	}
}

// waitCmd reads the fleet when it changes, or Refresh later.
func (m Model) waitCmd() tea.Cmd {
	src, ctx, every := m.o.Source, m.o.Context, m.o.Refresh
	read := m.readCmd(true)
	return func() tea.Msg {
		t := time.NewTimer(every)
		defer t.Stop()
		select {
		case <-src.Changed():
		case <-t.C:
		case <-ctx.Done():
			return nil
		}
		return read()
	}
}

// Update handles reads, ticks, keys and sizes.
func (m Model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.help.SetWidth(msg.Width)
		m.SetSize(msg.Width, msg.Height)
	case tea.BackgroundColorMsg:
		st := style.Default(msg.IsDark())
		m.SetStyles(st)
		m.help.Styles = help.DefaultStyles(st.Dark)
	case ReadMsg:
		m.nodes, m.health, m.at, m.loaded = msg.Nodes, msg.Health, msg.At, true
		m = m.follow()
		m.rebuild()
		if m.o.Cursor != "" {
			m.Find(m.o.Cursor)
			m.o.Cursor = ""
		}
		if msg.Wait {
			return m, m.waitCmd()
		}
	case sentMsg:
		return m.sent(msg), nil
	case tea.KeyPressMsg:
		m.o.Flash = ""
		if m.open != "" {
			return m.nodeUpdate(msg)
		}
		if !m.Capturing() {
			switch {
			case key.Matches(msg, m.Keys.Quit):
				return m, tea.Quit
			case key.Matches(msg, m.Keys.Help):
				m.help.ShowAll = !m.help.ShowAll
				return m, nil
			case key.Matches(msg, m.Keys.Refresh):
				return m, m.readCmd(false)
			case key.Matches(msg, m.Keys.Drill):
				if r, ok := m.Grid.Selected(); ok && r.Key != "" {
					m.open = r.Key
				}
				return m, nil
			}
		}
		m.HandleKey(msg, m.rebuild, m.nextSort, nil)
	}
	return m, nil
}

func (m *Model) nextSort() {
	m.sort = (m.sort + 1) % numSorts
	m.rebuild()
}

// rank orders the agent states for ByState: the ones to look at first.
func rank(n fleet.Node) int {
	switch n.State {
	case fleet.Failed:
		return 0
	case fleet.Stale:
		return 1
	}
	if n.NotReady() {
		return 1
	}
	switch n.State {
	case fleet.OK:
		if p := n.Status.LastImagePass; p != nil && p.Result == "error" {
			return 2
		}
		return 3
	}
	return 4
}

func usage(n fleet.Node) int {
	if n.Status == nil || n.Status.ImageFs == nil {
		return -1
	}
	return int(n.Status.ImageFs.UsagePercent)
}

func lastGC(n fleet.Node) time.Time {
	if n.Status == nil || n.Status.LastImagePass == nil {
		return time.Time{}
	}
	return n.Status.LastImagePass.At.Time
}

func dead(n fleet.Node) int {
	if n.Status == nil || n.Status.DeadContainers == nil {
		return -1
	}
	return int(*n.Status.DeadContainers)
}

// aboveHigh reports whether the node's image fs is at or above its high
// threshold (image GC is due).
func aboveHigh(n fleet.Node) bool {
	s := n.Status
	return s != nil && s.ImageFs != nil && s.Band.High > 0 && s.ImageFs.UsagePercent >= s.Band.High
}

// rebuild turns the nodes into rows under the sort and the filter.
func (m *Model) rebuild() {
	nodes := slices.Clone(m.nodes)
	slices.SortStableFunc(nodes, func(a, b fleet.Node) int {
		byName := strings.Compare(a.Name, b.Name)
		switch m.sort {
		case ByState:
			return cmp.Or(cmp.Compare(rank(a), rank(b)), cmp.Compare(usage(b), usage(a)), byName)
		case ByUsage:
			return cmp.Or(cmp.Compare(usage(b), usage(a)), byName)
		case ByLastGC:
			return cmp.Or(lastGC(b).Compare(lastGC(a)), byName)
		case ByDead:
			return cmp.Or(cmp.Compare(dead(b), dead(a)), byName)
		case ByPressure:
			return cmp.Or(comparePressure(a, b), byName)
		}
		return byName
	})
	if m.Reversed {
		slices.Reverse(nodes)
	}
	m.SortArrow(sortColumn[m.sort], m.sort == ByUsage || m.sort == ByLastGC || m.sort == ByDead)
	m.Order = m.sort.String()
	now := m.o.Now()
	rows := make([]grid.Row, 0, len(nodes))
	for _, n := range nodes {
		cells, kind := m.cells(n, now)
		if m.Filter.Active() && !slices.ContainsFunc(cells, m.Filter.Match) {
			continue
		}
		rows = append(rows, grid.Row{Cells: cells, Kind: kind, Key: n.Name, ID: n.Name})
	}
	m.Matched, m.Total = len(rows), len(m.nodes)
	m.Grid.SetRows(rows)
}

// cells is a node's row. Every cell is made printable
// (texttable.PrintableLine): the node's name, its agent's pod and error
// and the agent's summary come from the API server and the agent, and a
// control character in them would otherwise reach the terminal (move the
// cursor, recolour or rewrite a row).
func (m *Model) cells(n fleet.Node, now time.Time) ([]string, grid.Kind) {
	c, kind := m.rawCells(n, now)
	for i := range c {
		c[i] = texttable.PrintableLine(c[i])
	}
	return c, kind
}

// rawCells is a node's row as its sources wrote it.
func (m *Model) rawCells(n fleet.Node, now time.Time) ([]string, grid.Kind) {
	c := make([]string, len(columns))
	c[colNode], c[colAgent], c[colErr] = n.Name, string(n.State), n.Err
	c[colReady], _, _ = strings.Cut(n.Ready, ",") // cordoned: the node view says
	kind := grid.Normal
	switch {
	case n.State == fleet.Failed, n.State == fleet.Stale, n.NotReady():
		kind = grid.Warn
	case n.State == fleet.NoAgent:
		kind = grid.Dim
	}
	s := n.Status
	if s == nil {
		return c, kind
	}
	c[colBeat] = format.Ago(n.Heartbeat(), now)
	c[colUsage] = "?"
	if fs := s.ImageFs; fs != nil {
		c[colUsage] = fmt.Sprintf("%3d%% %s %d/%d", fs.UsagePercent, bar(int(fs.UsagePercent)), s.Band.High, s.Band.Low)
	}
	c[colPressure] = pressure(s.Forecast, now)
	if pressureSoon(s.Forecast, now) {
		kind = max(kind, grid.Warn)
	}
	c[colLastGC], c[colResult] = "never", "–"
	if p := s.LastImagePass; p != nil {
		c[colLastGC] = format.Ago(p.At.Time, now)
		c[colResult] = p.Result + " " + p.Reason
		freed := p.FreedBytes
		if p.MeasuredBytes != nil {
			freed = *p.MeasuredBytes
		}
		c[colFreed] = format.Bytes(freed)
		if p.Result == "error" || p.Result == "partial" {
			kind = max(kind, grid.Warn)
		}
	}
	if s.Paused != nil {
		c[colResult] = "paused · " + c[colResult]
	}
	if s.DeadContainers != nil {
		c[colDead] = strconv.Itoa(int(*s.DeadContainers))
	}
	c[colKept], c[colPods], c[colEvents] = kept(s.Kept), s.PodSource, s.EventStream
	if s.PodSource == "error" || s.EventStream == "down" {
		kind = grid.Warn
	}
	if aboveHigh(n) && kind == grid.Normal {
		kind = grid.Remove
	}
	return c, kind
}

// The eviction forecasts' classes, in ByPressure's order: crossed,
// filling by time, then the answers that say no time.
const (
	pressureNow = iota
	pressureAt
	pressureFar // filling, more than a year away
	pressureNoFill
	pressureLearning
	pressureNone
)

// pressureClass is an eviction forecast's class.
func pressureClass(f *v1alpha1.Forecast) int {
	if f == nil {
		return pressureNone
	}
	switch forecast.Status(f.Status) {
	case forecast.StatusCrossed:
		return pressureNow
	case forecast.StatusFilling:
		if f.At != nil {
			return pressureAt
		}
		return pressureFar
	case forecast.StatusNotFilling:
		return pressureNoFill
	case forecast.StatusNotEnoughHistory:
		return pressureLearning
	}
	return pressureNone
}

// comparePressure orders two nodes soonest DiskPressure first.
func comparePressure(a, b fleet.Node) int {
	fa, fb := forecastOf(a), forecastOf(b)
	ca, cb := pressureClass(fa), pressureClass(fb)
	if ca != cb || ca != pressureAt {
		return cmp.Compare(ca, cb)
	}
	return fa.At.Compare(fb.At.Time)
}

func forecastOf(n fleet.Node) *v1alpha1.Forecast {
	if n.Status == nil {
		return nil
	}
	return n.Status.Forecast
}

// pressure is the PRESSURE cell: how soon the eviction line is forecast
// to be crossed by what GC cannot remove.
func pressure(f *v1alpha1.Forecast, now time.Time) string {
	switch pressureClass(f) {
	case pressureNow:
		return "now"
	case pressureAt:
		return format.RoughIn(f.At.Time, now)
	case pressureFar:
		return "> 1y"
	case pressureNoFill:
		return "no fill"
	case pressureLearning:
		return "learning" // less than forecast.MinHistory
	}
	return ""
}

// pressureSoon reports whether DiskPressure that no GC prevents is
// crossed, or forecast within the agent's warning horizon (the Node's
// event, the critical alert's 4 hours).
func pressureSoon(f *v1alpha1.Forecast, now time.Time) bool {
	switch pressureClass(f) {
	case pressureNow:
		return true
	case pressureAt:
		return f.At.Sub(now) <= forecast.DefaultWarnWithin
	}
	return false
}

// bar is a 5-cell gauge of the usage.
func bar(used int) string {
	const w = 5
	fill := min(max(used*w/100, 0), w)
	return strings.Repeat("█", fill) + strings.Repeat("░", w-fill)
}

// kept is the kept-by-reason counts, shortest reasons first.
func kept(k map[string]int32) string {
	if len(k) == 0 {
		return ""
	}
	names := slices.Sorted(maps.Keys(k))
	parts := make([]string, 0, len(names))
	for _, r := range names {
		parts = append(parts, fmt.Sprintf("%s %d", short(r), k[r]))
	}
	return strings.Join(parts, " ")
}

func short(r string) string {
	switch r {
	case string(engine.KeepInUse):
		return "use"
	case string(engine.KeepNotNeeded):
		return "spare"
	case string(engine.KeepTooYoung):
		return "young"
	case string(engine.KeepSandboxImage):
		return "pause"
	}
	return r
}

// counts sums the nodes by state.
func (m Model) counts() string {
	var ok, stale, failed, none, above, soon, notReady int
	for _, n := range m.nodes {
		if n.NotReady() {
			notReady++
		}
		switch n.State {
		case fleet.OK:
			ok++
			if aboveHigh(n) {
				above++
			}
			if pressureSoon(n.Status.Forecast, m.at) {
				soon++
			}
		case fleet.Stale:
			stale++
		case fleet.Failed:
			failed++
		case fleet.NoAgent:
			none++
		}
	}
	parts := []string{format.Plural(len(m.nodes), "node"), fmt.Sprintf("%d agents ok", ok)}
	for _, p := range []struct {
		n    int
		what string
	}{{notReady, "not ready"}, {above, "above high"}, {soon, "DiskPressure within " + format.Rough(forecast.DefaultWarnWithin)}, {stale, "stale"}, {failed, "error"}, {none, "no agent"}} {
		if p.n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", p.n, p.what))
		}
	}
	return strings.Join(parts, " · ")
}

// resumedFor is how long "resumed" stays on the status line after a
// broken watch came back.
const resumedFor = time.Minute

// watchLine says how the watch stands: "" when it never broke, the
// error while it is broken (the reflector resumes it), when it resumed
// for a minute after.
func (m Model) watchLine() (string, bool) {
	for _, h := range m.health {
		if h.Err != nil {
			return fmt.Sprintf("watch of %s broken since %s, resuming: %s", h.Resource, h.BrokeAt.Format("15:04:05"), oneLine(h.Err)), true
		}
	}
	for _, h := range m.health {
		if !h.ResumedAt.IsZero() && m.at.Sub(h.ResumedAt) < resumedFor {
			return fmt.Sprintf("watch resumed %s (broken %s)", h.ResumedAt.Format("15:04:05"), h.BrokeAt.Format("15:04:05")), false
		}
	}
	return "", false
}

func oneLine(err error) string { return strings.Join(strings.Fields(err.Error()), " ") }

// View renders the title, the counts, the info line, the table and the
// help.
func (m Model) View() tea.View {
	v := tea.NewView(m.Screen())
	v.AltScreen = true
	v.WindowTitle = "nodegc fleet"
	return v
}

// Screen is the view's text: the table, or the open node's view.
func (m Model) Screen() string {
	if m.open != "" {
		return m.nodeScreen()
	}
	title := m.Styles.Title.Render("nodegc fleet")
	var status string
	switch {
	case m.o.Flash != "":
		status = m.Styles.FlashError.Render(texttable.PrintableLine(m.o.Flash))
	case !m.loaded:
		status = m.Styles.Faint.Render("listing the nodes and their NodeGC objects…")
	default:
		status = m.Styles.Label.Render(fmt.Sprintf("%s · watching, %s", m.counts(), m.at.Format("15:04:05")))
		// A broken watch comes first: the counts may be out of date.
		if line, bad := m.watchLine(); bad {
			status = m.Styles.Bad.Render(texttable.PrintableLine(line)) + "  " + status
		} else if line != "" {
			status += "  " + m.Styles.Faint.Render(texttable.PrintableLine(line))
		}
	}
	head := ansi.Truncate(title+"  "+status, max(m.Width, 1), "…")
	parts := []string{head}
	parts = m.WithFilter(parts)
	// bubbles/help lets a line that exactly fills the width take one more
	// key past it.
	foot := m.help.View(m)
	if !m.help.ShowAll {
		foot = ansi.Truncate(foot, max(m.Width, 1), "…")
	}
	parts = append(parts, m.Grid.View(), foot)
	return lipgloss.JoinVertical(lipgloss.Left, parts...)
}

// ShortHelp is the footer's keys.
func (m Model) ShortHelp() []key.Binding {
	return []key.Binding{m.Keys.Drill, m.Keys.Filter, m.Keys.Sort, m.Keys.Reverse, m.Keys.Refresh, m.Keys.Help, m.Keys.Quit}
}

// FullHelp is every key.
func (m Model) FullHelp() [][]key.Binding {
	return [][]key.Binding{m.Keys.Navigation(), {m.Keys.Drill, m.Keys.Filter, m.Keys.ClearFilter, m.Keys.Sort, m.Keys.Reverse}, {m.Keys.Refresh, m.Keys.Help, m.Keys.Quit}}
}

// Run runs the fleet view until the user quits; it returns the model at
// the end.
func Run(ctx context.Context, o Options) (Model, error) {
	o.Context = ctx
	// The colour profile is the one lipgloss detected at init: left to
	// itself, Bubble Tea detects it again (inside tmux, another `tmux info`
	// before the first frame), as the node dashboard's Run says.
	p := tea.NewProgram(New(o), tea.WithContext(ctx), tea.WithColorProfile(lipgloss.Writer.Profile))
	final, err := p.Run()
	fm, _ := final.(Model)
	if err != nil && ctx.Err() != nil {
		return fm, nil
	}
	return fm, err
}
