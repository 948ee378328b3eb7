package tui

import (
	"context"
	"fmt"
	"slices"
	"time"

	"charm.land/bubbles/v2/help"
	"charm.land/bubbles/v2/spinner"
	tea "charm.land/bubbletea/v2"

	"github.com/nodegc/nodegc/engine"
	"github.com/nodegc/nodegc/tui/internal/feed"
	"github.com/nodegc/nodegc/tui/keys"
	"github.com/nodegc/nodegc/tui/style"
)

// Model is the dashboard's root: it owns the panes and the modal, routes
// window sizes to every pane and keys to the active one, and runs every
// call to the engine as a tea.Cmd.
type Model struct {
	o   Options
	ctx context.Context
	// keys, st, help and cmd are large and shared by every copy of the
	// model (Update copies it for each message): they are replaced, never
	// written in place.
	keys *keys.KeyMap
	st   *style.Styles
	help *help.Model

	width, height int
	active        Pane

	// panes are the registered panes, in tab order. The slice is
	// replaced, never written in place, so copies of the model stay
	// apart.
	panes []pane

	snap     engine.Snapshot
	plan     engine.Plan
	at       time.Time
	haveSnap bool
	// snapFP is the shown snapshot's containers' fingerprint, which the
	// light poll (Options.Changed) compares the node with.
	snapFP uint64
	// digest is the shown snapshot's Digest, which the engine's own
	// listings (Options.Listings) are compared with.
	digest uint64
	// stale marks panes that have not seen the latest refresh (feed);
	// a pane gets it when it comes on screen.
	stale []bool
	feed  feed.Snapshot
	// refreshes counts the refreshes applied (feed.State).
	refreshes uint64
	status    engine.Status
	self      feed.Self
	lastSelf  *SelfSample
	selfAt    time.Time

	// load turns a spinner in the body until the first snapshot.
	load loader
	// opening is what the opening frame (Open) says the dashboard waits
	// for, in place of the spinner; "" in a running dashboard.
	opening string

	frozen  bool
	lastErr string

	// cadence is when the node is listed again; lightReads what is read
	// between listings, and when a pass's garbage is handed back.
	cadence
	lightReads

	notices     <-chan engine.Notice
	unsubscribe func()

	// cmd is the `:` command line.
	cmd   *command
	modal *modal
	// historyRead marks the journal's passes as sent to the panes;
	// journalReading a read of the journal in flight.
	historyRead    bool
	journalReading bool
	previewSeq     uint64
	// pausedHere says this dashboard holds the scheduler's pause: it
	// ends as the dashboard leaves (engine.Pause.Held).
	pausedHere bool
	// busy is the kind of the pass this dashboard applied and awaits;
	// stopApply cancels its context (X), stopping it after the item in
	// flight.
	busy      engine.PassKind
	stopApply context.CancelFunc
	// progress is the running pass's progress, nil when none runs.
	progress *engine.Progress

	flash    string
	flashBad bool
	// flashAt is when the status message was set; it expires after
	// flashTTL unless it is sticky.
	flashAt     time.Time
	flashSticky bool

	// now is the time the screen is drawn at: every age and countdown on
	// it is computed from the data's own timestamps and now, whatever
	// brought the data. clockAt is when the next of them changes, with
	// one tick armed for it; clockGen drops ticks armed before.
	now      time.Time
	clockAt  time.Time
	clockGen uint64
	// quiet marks an update that changed nothing on screen (a timer that
	// only started a read, a read that found nothing new); the screen
	// drawn for gen is then drawn again from frame. gen is unique across
	// copies of the model, so a copy never takes another's frame.
	quiet bool
	gen   uint64
	frame *frame
	// ticked marks an update that only moved the clock; chromeGen is the
	// generation of everything but the clock, which such an update keeps
	// (frame.chrome).
	ticked    bool
	chromeGen uint64
}

// New returns the dashboard's model with its default panes. Run runs it;
// tests drive it with teatest or by calling Update.
func New(o Options) Model {
	o = o.withDefaults()
	k := keys.Default(o.ReadOnly)
	return newModel(o, k, defaultPanes(o, k, style.Default(true))...)
}

// newModel returns the dashboard's model over the panes, in tab order (at
// most keys.MaxPanes). o has its defaults.
func newModel(o Options, k keys.KeyMap, panes ...pane) Model {
	st := style.Default(true)
	h := help.New()
	h.Styles = help.DefaultStyles(true)
	panes = panes[:min(len(panes), keys.MaxPanes)]
	k.Panes = k.Panes[:len(panes)]
	if len(panes) > 0 {
		k.Panes[0].SetHelp(fmt.Sprintf("1-%d", len(panes)), "pane")
	}
	cmd := newCommand(k, st, paneNames(panes))
	m := Model{
		o: o, ctx: context.Background(), keys: &k, st: &st, help: &h,
		now: o.Now(), gen: nextGen(), chromeGen: nextGen(), frame: &frame{},
		panes:   panes,
		cmd:     &cmd,
		stale:   make([]bool, len(panes)),
		self:    feed.Self{CPUPercent: -1},
		load:    newLoader(o.Now()),
		cadence: cadence{refreshSeq: 1, refreshing: true, listEvery: o.RefreshInterval},
	}
	if o.Controller != nil {
		m.status = o.Controller.Status()
		if r := m.status.LastReport; r != nil {
			m.broadcast(feed.Pass{Report: *r})
		}
		if o.NewStateDir != "" && !o.ReadOnly {
			m.modal = startModal(o.NewStateDir)
		}
	}
	return m
}

// broadcast sends a feed message to every pane and returns their
// commands.
func (m *Model) broadcast(msg tea.Msg) tea.Cmd {
	panes := make([]pane, len(m.panes))
	cmds := make([]tea.Cmd, len(m.panes))
	for i, p := range m.panes {
		panes[i], cmds[i] = p.Update(msg)
	}
	m.panes = panes
	return tea.Batch(cmds...)
}

// setPane replaces pane i.
func (m *Model) setPane(i Pane, p pane) {
	panes := slices.Clone(m.panes)
	panes[i] = p
	m.panes = panes
}

// activePane returns the pane on screen.
func (m Model) activePane() pane { return m.panes[m.active] }

// activate brings pane i on screen.
func (m *Model) activate(i Pane) {
	m.active = i
	m.syncActive()
}

// Init starts the first refresh, the refresh timer, the subscription to
// the scheduler's notices, and asks the terminal for its background.
func (m Model) Init() tea.Cmd {
	cmds := []tea.Cmd{
		tea.RequestBackgroundColor,
		m.load.Tick,
		refreshCmd(m.ctx, m.o, m.refreshSeq, nil),
		tick(m.listEvery, m.listGen),
	}
	if m.o.Cgroups != nil || m.o.ImageFs != nil {
		cmds = append(cmds, pulse(m.o.RefreshInterval, m.pulseGen))
	}
	if m.o.Controller != nil {
		cmds = append(cmds, subscribeCmd(m.o.Controller))
	}
	if m.o.Journal != nil || m.o.History != nil {
		cmds = append(cmds, historyCmd(m.ctx, m.o.Journal, m.o.History))
	}
	if m.o.Listings != nil {
		cmds = append(cmds, waitListing(m.o.Listings))
	}
	return tea.Batch(cmds...)
}

// Active returns the active pane.
func (m Model) Active() Pane { return m.active }

// Frozen reports whether the display is frozen (f).
func (m Model) Frozen() bool { return m.frozen }

// ModalOpen reports whether a modal (preview or quit question) is shown.
func (m Model) ModalOpen() bool { return m.modal != nil }

// Close unsubscribes from the scheduler's notices.
func (m Model) Close() {
	if m.unsubscribe != nil {
		m.unsubscribe()
	}
}

// Update routes a message; a status message that has expired goes first.
// A quit question whose pass has ended by then goes too: it would say a
// pass is in flight when none is.
func (m Model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	m.now, m.quiet, m.ticked = m.o.Now(), false, false
	nm, cmd := m.update(msg)
	mm, ok := nm.(Model)
	if !ok {
		return nm, cmd
	}
	var more tea.Cmd
	mm, more = mm.followJournal(msg)
	cmd = tea.Batch(cmd, more)
	if mm.modal != nil && mm.modal.kind == modalQuit && mm.quitStops() == "" {
		mm.modal = nil
		mm.setFlash("the pass has ended: q quits now", false)
		mm.quiet = false
	}
	if !mm.quiet {
		mm.gen = nextGen()
		if !mm.ticked {
			mm.chromeGen = mm.gen
		}
		mm.tellClock()
	}
	return mm, tea.Batch(cmd, mm.armClock())
}

// update routes one message to its handler (tui/update.go); a status
// message that has expired goes first. Feeds reach the panes through
// broadcast, keys the active pane through key: the root names no pane.
func (m Model) update(msg tea.Msg) (tea.Model, tea.Cmd) {
	if m.expireFlash() {
		m.quiet = false
	}
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		return m.onWindowSize(msg)
	case tea.BackgroundColorMsg:
		m.setStyles(style.Default(msg.IsDark()))
		return m, nil
	case clockMsg:
		return m.onClock(msg)
	case tickMsg:
		return m.onTick(msg)
	case changedMsg:
		return m, m.onChanged(msg)
	case listingMsg:
		return m, m.onListing(msg)
	case RefreshMsg:
		return m.onRefresh(msg)
	case pulseMsg:
		m.quiet = true
		if msg.gen != m.pulseGen {
			return m, nil
		}
		return m, m.onPulse()
	case spinner.TickMsg:
		var cmd tea.Cmd
		m.load, cmd = m.load.Update(msg, m.haveSnap)
		return m, cmd
	case cgroupsMsg:
		return m.onCgroups(msg)
	case fsMsg:
		return m.onFs(msg)
	case subscribedMsg:
		m.notices, m.unsubscribe = msg.ch, msg.cancel
		return m, waitNotice(msg.ch)
	case noticeMsg:
		return m.onNotice(msg)
	case previewMsg:
		return m.onPreview(msg)
	case appliedMsg:
		return m.onApplied(msg)
	case statusMsg:
		m.setStatus(msg.status)
		m.pausedHere = msg.held
		if msg.err != nil {
			m.setFlash(msg.err.Error(), true)
		}
		m.pushOverview()
		return m, nil
	case journalMsg:
		return m.onJournal(msg)
	case commandMsg:
		return m.runCommand(msg)
	case tea.MouseClickMsg:
		return m.click(msg)
	case tea.MouseWheelMsg:
		return m.wheel(msg)
	case tea.KeyPressMsg:
		return m.onKey(msg)
	}
	return m, nil
}

func (m *Model) setStyles(st style.Styles) {
	m.st = &st
	h, c := *m.help, *m.cmd
	h.Styles = help.DefaultStyles(st.Dark)
	c.SetStyles(st)
	m.help, m.cmd = &h, &c
	panes := make([]pane, len(m.panes))
	for i, p := range m.panes {
		panes[i] = p.SetStyles(st)
	}
	m.panes = panes
}

// resize gives every pane the body's size.
func (m *Model) resize() {
	hm := *m.help
	hm.SetWidth(m.width)
	m.help = &hm
	w, h := m.width, max(m.height-m.chrome(), 1)
	panes := make([]pane, len(m.panes))
	for i, p := range m.panes {
		panes[i] = p.SetSize(w, h)
	}
	m.panes = panes
}
