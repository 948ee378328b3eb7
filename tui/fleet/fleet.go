// Package fleet is `nodegc fleet`: the dashboard's table for a whole
// cluster, one row a node, read from every node's agent through the API
// server (package fleet at the top level does the reading). It uses the
// dashboard's table (tui/internal/grid), keys (tui/keys), styles
// (tui/style) and help, so sort, filter and `/` work as on a node; enter
// ends the program naming the node, whose dashboard the caller opens.
package fleet

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"charm.land/bubbles/v2/help"
	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/nodegc/nodegc/engine"
	"github.com/nodegc/nodegc/fleet"
	"github.com/nodegc/nodegc/internal/format"
	"github.com/nodegc/nodegc/internal/texttable"
	"github.com/nodegc/nodegc/tui/internal/grid"
	"github.com/nodegc/nodegc/tui/keys"
	"github.com/nodegc/nodegc/tui/style"
)

// Options configure the fleet view.
type Options struct {
	// Read reads the fleet; it is called in a tea.Cmd, off the UI loop.
	Read func(ctx context.Context) ([]fleet.Node, error)
	// Refresh is the time between the end of one read and the next.
	Refresh time.Duration
	// Context is the reads' context.
	Context context.Context
	// Cursor names the node to select at start ("" the first).
	Cursor string
	// Filter is the filter to start with.
	Filter string
	// Initial, when not nil, is a read made before the program started
	// (the caller's check of the rights): it is the first frame, and the
	// next read follows Refresh later.
	Initial []fleet.Node
	// InitialAt and InitialTook are when that read ended and how long it
	// took.
	InitialAt   time.Time
	InitialTook time.Duration
	// Flash is a message to show until the first key (why a node's
	// dashboard could not open).
	Flash string
	// Now is the clock; nil is time.Now.
	Now func() time.Time
}

// Sort is the order of the table.
type Sort int

// Orders; s cycles through them.
const (
	// ByState puts the nodes that need a look first: no answer, errors,
	// then the fullest image filesystems.
	ByState Sort = iota
	ByName
	ByUsage
	ByLastGC
	ByDead
	numSorts
)

func (s Sort) String() string {
	return [...]string{"attention", "name", "image fs", "last GC", "dead"}[s]
}

// sortColumn is the column each order sorts by.
var sortColumn = [numSorts]int{ByState: 1, ByName: 0, ByUsage: 2, ByLastGC: 3, ByDead: 6}

var columns = []grid.Column{
	{Title: "NODE", Width: 24, Flex: true},
	{Title: "AGENT", Width: 11},
	{Title: "IMAGE FS", Width: 16},
	{Title: "LAST GC", Width: 8, Right: true},
	{Title: "RESULT", Width: 26},
	{Title: "FREED", Width: 9, Right: true},
	{Title: "DEAD", Width: 5, Right: true},
	{Title: "KEPT", Width: 22, MinTable: 120},
	{Title: "PODS", Width: 7, MinTable: 100},
	{Title: "EVENTS", Width: 7, MinTable: 100},
	{Title: "ERROR", Width: 20, Flex: true},
}

// ReadMsg is one read of the fleet.
type ReadMsg struct {
	Seq   int
	Nodes []fleet.Node
	Err   error
	At    time.Time
	Took  time.Duration
}

type tickMsg struct{ seq int }

// Model is the fleet view.
type Model struct {
	grid.Pane
	o      Options
	help   help.Model
	sort   Sort
	nodes  []fleet.Node
	seq    int
	err    error
	at     time.Time
	took   time.Duration
	loaded bool
	// Enter is the node whose dashboard to open, set when the program
	// ends on enter.
	Enter string
	// Frames counts the reads shown, for the benchmark.
	Frames int
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
	k := keys.Default(true)
	k.Drill.SetHelp("enter", "node dashboard")
	st := style.Default(true)
	m := Model{Pane: grid.NewPane(k, st, columns, 2, 1), o: o, help: help.New(), seq: 1}
	m.help.Styles = help.DefaultStyles(true)
	if o.Filter != "" {
		m.Filter.Start()
		for _, r := range o.Filter {
			m.Filter.Key(tea.KeyPressMsg{Text: string(r)}, m.Keys)
		}
		m.Filter.Editing = false
	}
	if o.Initial != nil {
		m.nodes, m.loaded, m.at, m.took = o.Initial, true, o.InitialAt, o.InitialTook
		m.Frames++
		m.rebuild()
		if o.Cursor != "" {
			m.Find(o.Cursor)
			m.o.Cursor = ""
		}
	}
	return m
}

// Init reads the fleet at once (or shows the initial read and reads
// again Refresh later) and asks the terminal's background.
func (m Model) Init() tea.Cmd {
	if m.loaded {
		seq := m.seq
		return tea.Batch(tea.Tick(m.o.Refresh, func(time.Time) tea.Msg { return tickMsg{seq} }), tea.RequestBackgroundColor)
	}
	return tea.Batch(m.readCmd(), tea.RequestBackgroundColor)
}

// read starts the next read; a read still in flight is dropped when it
// ends.
func (m *Model) read() tea.Cmd {
	m.seq++
	return m.readCmd()
}

// readCmd is the command of read number m.seq.
func (m Model) readCmd() tea.Cmd {
	seq, read, ctx, now := m.seq, m.o.Read, m.o.Context, m.o.Now
	return func() tea.Msg {
		start := now()
		nodes, err := read(ctx)
		end := now()
		return ReadMsg{Seq: seq, Nodes: nodes, Err: err, At: end, Took: end.Sub(start)}
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
		if msg.Seq != m.seq {
			return m, nil
		}
		m.err, m.at, m.took = msg.Err, msg.At, msg.Took
		if msg.Err == nil {
			m.nodes, m.loaded = msg.Nodes, true
			m.Frames++
			m.rebuild()
			if m.o.Cursor != "" {
				m.Find(m.o.Cursor)
				m.o.Cursor = ""
			}
		}
		seq := m.seq
		return m, tea.Tick(m.o.Refresh, func(time.Time) tea.Msg { return tickMsg{seq} })
	case tickMsg:
		if msg.seq != m.seq {
			return m, nil
		}
		return m, m.read()
	case tea.KeyPressMsg:
		m.o.Flash = ""
		if !m.Capturing() {
			switch {
			case key.Matches(msg, m.Keys.Quit):
				return m, tea.Quit
			case key.Matches(msg, m.Keys.Help):
				m.help.ShowAll = !m.help.ShowAll
				return m, nil
			case key.Matches(msg, m.Keys.Refresh):
				return m, m.read()
			case key.Matches(msg, m.Keys.Drill):
				if r, ok := m.Grid.Selected(); ok && r.Key != "" {
					m.Enter = r.Key
					return m, tea.Quit
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
	case fleet.NoAnswer:
		return 0
	case fleet.Failed:
		return 1
	case fleet.NotReady, fleet.Unready:
		return 2
	case fleet.OK:
		if s := n.Summary; s != nil && s.LastAttempt != nil && s.LastAttempt.Result == "error" {
			return 3
		}
		return 4
	}
	return 5
}

func usage(n fleet.Node) int {
	if n.Summary == nil {
		return -1
	}
	return n.Summary.UsagePercent
}

func lastGC(n fleet.Node) time.Time {
	if n.Summary == nil || n.Summary.LastAttempt == nil {
		return time.Time{}
	}
	return n.Summary.LastAttempt.At
}

func dead(n fleet.Node) int {
	if n.Summary == nil {
		return -1
	}
	return n.Summary.DeadContainers
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
	c[0] = n.Name
	if !n.Ready {
		c[0] += " (NotReady)"
	}
	c[1] = string(n.State)
	kind := grid.Normal
	switch n.State {
	case fleet.NoAnswer, fleet.Failed:
		kind = grid.Warn
	case fleet.NoAgent, fleet.NotReady, fleet.Unready:
		kind = grid.Dim
	}
	c[10] = n.Err
	s := n.Summary
	if s == nil {
		return c, kind
	}
	if s.UsagePercent >= 0 {
		c[2] = fmt.Sprintf("%3d%% %s %d/%d", s.UsagePercent, bar(s.UsagePercent, s.High, s.Low), s.High, s.Low)
	} else {
		c[2] = "?"
	}
	if a := s.LastAttempt; a != nil {
		c[3] = format.Ago(a.At, now)
		c[4] = a.Result + " " + a.Reason
		freed := a.Freed
		if a.Measured != nil {
			freed = *a.Measured
		}
		c[5] = format.Bytes(freed)
		if a.Result == "error" || a.Result == "partial" {
			kind = grid.Warn
		}
	} else {
		c[3], c[4] = "never", "–"
	}
	if s.InFlight {
		c[4] = "running…"
	}
	if s.Paused {
		c[4] = "paused · " + c[4]
	}
	if s.DeadContainers >= 0 {
		c[6] = strconv.Itoa(s.DeadContainers)
	}
	c[7] = kept(s.Kept)
	c[8] = s.PodSource
	c[9] = s.EventStream
	if s.PodSource == "error" || s.EventStream == "down" {
		kind = grid.Warn
	}
	if s.UsagePercent >= s.High && s.High > 0 && kind == grid.Normal {
		kind = grid.Remove
	}
	return c, kind
}

// bar is a 5-cell gauge of the usage with the band: '|' where the high
// threshold falls.
func bar(used, high, low int) string {
	const w = 5
	fill := min(max(used*w/100, 0), w)
	b := []rune(strings.Repeat("█", fill) + strings.Repeat("░", w-fill))
	_ = low
	return string(b)
}

// kept is the kept-by-reason counts, shortest reasons first.
func kept(k map[engine.ImageKeepReason]int) string {
	if len(k) == 0 {
		return ""
	}
	names := make([]string, 0, len(k))
	for r := range k {
		names = append(names, string(r))
	}
	slices.Sort(names)
	parts := make([]string, 0, len(names))
	for _, r := range names {
		parts = append(parts, fmt.Sprintf("%s %d", short(r), k[engine.ImageKeepReason(r)]))
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
	var ok, noAnswer, failed, none, notRunning, unready, above int
	for _, n := range m.nodes {
		switch n.State {
		case fleet.OK:
			ok++
			if s := n.Summary; s != nil && s.High > 0 && s.UsagePercent >= s.High {
				above++
			}
		case fleet.NoAnswer:
			noAnswer++
		case fleet.Failed:
			failed++
		case fleet.NoAgent:
			none++
		case fleet.NotReady:
			notRunning++
		case fleet.Unready:
			unready++
		}
	}
	parts := []string{format.Plural(len(m.nodes), "node"), fmt.Sprintf("%d agents answer", ok)}
	for _, p := range []struct {
		n    int
		what string
	}{{above, "above high"}, {noAnswer, "no answer"}, {failed, "error"}, {notRunning, "agent not running"}, {unready, "agent not ready"}, {none, "no agent"}} {
		if p.n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", p.n, p.what))
		}
	}
	return strings.Join(parts, " · ")
}

// View renders the title, the counts, the info line, the table and the
// help.
func (m Model) View() tea.View {
	v := tea.NewView(m.Screen())
	v.AltScreen = true
	v.WindowTitle = "nodegc fleet"
	return v
}

// Screen is the view's text.
func (m Model) Screen() string {
	title := m.Styles.Title.Render("nodegc fleet")
	var status string
	switch {
	case m.o.Flash != "":
		status = m.Styles.FlashError.Render(texttable.PrintableLine(m.o.Flash))
	case m.err != nil:
		status = m.Styles.Bad.Render(ansi.Truncate(texttable.PrintableLine(m.err.Error()), max(m.Width-20, 10), "…"))
	case !m.loaded:
		status = m.Styles.Faint.Render("reading the agents through the API server…")
	default:
		status = m.Styles.Label.Render(fmt.Sprintf("%s · read %s in %s", m.counts(), m.at.Format("15:04:05"), m.took.Round(time.Millisecond)))
	}
	head := ansi.Truncate(title+"  "+status, max(m.Width, 1), "…")
	parts := []string{head}
	parts = m.WithFilter(parts)
	parts = append(parts, m.Grid.View(), m.help.View(m))
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

// Run runs the fleet view until the user quits or presses enter on a
// node; it returns the model at the end (Enter names the node).
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
