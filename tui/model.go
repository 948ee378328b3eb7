package tui

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"charm.land/bubbles/v2/help"
	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/nodegc/nodegc/cgroupfs"
	"github.com/nodegc/nodegc/engine"
	"github.com/nodegc/nodegc/internal/format"
	"github.com/nodegc/nodegc/tui/cgroups"
	"github.com/nodegc/nodegc/tui/events"
	"github.com/nodegc/nodegc/tui/internal/feed"
	"github.com/nodegc/nodegc/tui/keys"
	"github.com/nodegc/nodegc/tui/overview"
	"github.com/nodegc/nodegc/tui/style"
)

// Model is the dashboard's root: it owns the panes and the modal, routes
// window sizes to every pane and keys to the active one, and runs every
// call to the engine as a tea.Cmd.
type Model struct {
	o    Options
	ctx  context.Context
	keys keys.KeyMap
	st   style.Styles
	help help.Model

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
	// stale marks panes that have not seen the latest refresh (feed);
	// a pane gets it when it comes on screen.
	stale    []bool
	feed     feed.Snapshot
	history  overview.History
	status   engine.Status
	self     overview.Self
	lastSelf *SelfSample
	selfAt   time.Time

	refreshSeq uint64
	refreshing bool
	frozen     bool
	lastErr    string

	// listEvery is the interval of the periodic re-list armed now:
	// RefreshInterval while polling, SafetyInterval while the event
	// stream is live; listGen drops ticks armed at the old interval.
	listEvery time.Duration
	listGen   uint64
	// eventsLive reports whether the runtime's event stream is open;
	// eventsStatus says why not, for the status line.
	eventsLive   bool
	eventsStatus string
	eventsRetry  time.Duration
	// eventPending marks an event that came while a refresh was running:
	// one more refresh follows it.
	eventPending bool
	// fsReading marks a usage reading of the image filesystem in flight.
	fsReading bool
	// checking marks a light poll (Options.Changed) in flight; checkSeq
	// drops all but the latest. checkedAt is when the last one found the
	// node unchanged since the refresh at at: the data is as fresh as it.
	checking  bool
	checkSeq  uint64
	checkedAt time.Time

	// The cgroup tree is read on the pulse: every RefreshInterval while
	// its pane is on screen, every CgroupsHiddenInterval otherwise.
	// cgNames resolves the latest snapshot's IDs; cgAt is when the tree
	// was last read.
	cgSeq     uint64
	cgReading bool
	cgAt      time.Time
	cgNames   cgroupfs.Names

	notices     <-chan engine.Notice
	unsubscribe func()

	modal      *modal
	previewSeq uint64
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
	m := Model{
		o: o, ctx: context.Background(), keys: k, st: st, help: h,
		panes:      panes,
		stale:      make([]bool, len(panes)),
		self:       overview.Self{CPUPercent: -1},
		refreshSeq: 1,
		refreshing: true,
		listEvery:  o.RefreshInterval,
	}
	if o.Controller != nil {
		m.status = o.Controller.Status()
		if r := m.status.LastReport; r != nil {
			m.broadcast(feed.Pass{Report: *r})
			m.history.AddPass(*r)
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
		refreshCmd(m.ctx, m.o, m.refreshSeq),
		tick(m.listEvery, m.listGen),
	}
	if m.o.Events != nil {
		cmds = append(cmds, openEventsCmd(m.ctx, m.o.Events))
	}
	if m.o.Cgroups != nil || m.o.ImageFs != nil {
		cmds = append(cmds, pulse(m.o.RefreshInterval))
	}
	if m.o.Controller != nil {
		cmds = append(cmds, subscribeCmd(m.o.Controller))
	}
	return tea.Batch(cmds...)
}

// Active returns the active pane.
func (m Model) Active() Pane { return m.active }

// Frozen reports whether the display is frozen (f).
func (m Model) Frozen() bool { return m.frozen }

// Passes returns the pass history the Events pane shows, newest first.
func (m Model) Passes() []engine.PassReport {
	for _, p := range m.panes {
		if e, ok := unwrap[events.Model](p); ok {
			return e.Passes()
		}
	}
	return nil
}

// ModalOpen reports whether a modal (preview or quit question) is shown.
func (m Model) ModalOpen() bool { return m.modal != nil }

// Close unsubscribes from the scheduler's notices.
func (m Model) Close() {
	if m.unsubscribe != nil {
		m.unsubscribe()
	}
}

func (m *Model) setFlash(s string, bad bool) {
	m.flash, m.flashBad, m.flashSticky = s, bad, false
	m.flashAt = m.o.Now()
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
// sticky.
func (m *Model) expireFlash() {
	if m.flash != "" && !m.flashSticky && m.o.Now().Sub(m.flashAt) >= flashTTL {
		m.flash = ""
	}
}

// inFlight is the kind of a pass running now, "" when none.
func (m Model) inFlight() engine.PassKind {
	if m.busy != "" {
		return m.busy
	}
	return m.status.Running
}

// startRefresh begins a refresh unless one is running or force is false
// and the display is frozen. A forced refresh overtakes a running one.
func (m *Model) startRefresh(force bool) tea.Cmd {
	if !force && (m.frozen || m.refreshing) {
		return nil
	}
	m.refreshSeq++
	m.refreshing = true
	return refreshCmd(m.ctx, m.o, m.refreshSeq)
}

// setListEvery changes the interval of the periodic re-list and arms it;
// the tick armed at the old interval is dropped when it fires.
func (m *Model) setListEvery(d time.Duration) tea.Cmd {
	if d == m.listEvery {
		return nil
	}
	m.listEvery = d
	m.listGen++
	return tick(d, m.listGen)
}

// ListInterval is the interval of the periodic re-list armed now:
// RefreshInterval while polling, SafetyInterval while the runtime's event
// stream is live.
func (m Model) ListInterval() time.Duration { return m.listEvery }

// EventsLive reports whether the runtime's event stream is open.
func (m Model) EventsLive() bool { return m.eventsLive }

// cgroupInterval is how often the cgroup tree is read now: every
// RefreshInterval while its pane is on screen, else every
// CgroupsHiddenInterval (the Overview's summary can wait; the tree's
// re-read is the dashboard's most expensive idle work).
func (m Model) cgroupInterval() time.Duration {
	if _, ok := unwrap[cgroups.Model](m.activePane()); ok {
		return m.o.RefreshInterval
	}
	return CgroupsHiddenInterval
}

// readCgroups reads the cgroup tree now, unless a read is in flight, the
// display is frozen, or no snapshot has named the pods yet.
func (m *Model) readCgroups() tea.Cmd {
	if m.o.Cgroups == nil || m.cgNames == nil || m.cgReading || m.frozen {
		return nil
	}
	m.cgReading = true
	m.cgSeq++
	return cgroupsCmd(m.ctx, m.o.Cgroups, m.cgNames, m.o.Now, m.cgSeq)
}

// cgroupsDue reads the cgroup tree when it is older than the active
// pane wants (cgroupInterval), or was never read.
func (m *Model) cgroupsDue() tea.Cmd {
	if !m.cgAt.IsZero() && m.o.Now().Sub(m.cgAt) < m.cgroupInterval() {
		return nil
	}
	return m.readCgroups()
}

// onPulse reads what is due on the light clock: the cgroup tree, and,
// while the event stream is live or the poll is light (Options.Changed),
// the image fs usage (a full poll measures it with every list).
func (m *Model) onPulse() tea.Cmd {
	cmds := []tea.Cmd{pulse(m.o.RefreshInterval), m.cgroupsDue()}
	if m.o.ImageFs != nil && (m.eventsLive || m.o.Changed != nil) && m.haveSnap && !m.frozen && !m.fsReading {
		m.fsReading = true
		cmds = append(cmds, fsCmd(m.ctx, m.o.ImageFs))
	}
	return tea.Batch(cmds...)
}

// poll is the periodic re-list. While polling with a light check
// (Options.Changed) it runs the check, and a full refresh follows only
// when the check finds a change or fails (onChanged), or as a safety net
// once the last refresh is SafetyInterval old. Otherwise (no light check,
// or the tick is the event stream's safety net) it refreshes.
func (m *Model) poll() tea.Cmd {
	if m.frozen || m.refreshing || m.checking {
		return nil
	}
	if m.o.Changed == nil || m.eventsLive || !m.haveSnap || m.o.Now().Sub(m.at) >= SafetyInterval {
		return m.startRefresh(false)
	}
	m.checking = true
	m.checkSeq++
	return changedCmd(m.ctx, m.o.Changed, m.o.Now, m.checkSeq)
}

// onChanged takes a light poll's answer: a change, or a failed check,
// gives a full refresh; no change makes the data as fresh as the check.
func (m *Model) onChanged(msg changedMsg) tea.Cmd {
	if msg.seq != m.checkSeq {
		return nil
	}
	m.checking = false
	if msg.err != nil || msg.changed {
		return m.startRefresh(false)
	}
	m.checkedAt = msg.at
	return nil
}

// freshAt is when the data on screen was last known to be current: the
// last refresh, or a later light poll that found nothing changed.
func (m Model) freshAt() time.Time {
	if m.checkedAt.After(m.at) {
		return m.checkedAt
	}
	return m.at
}

// passChanged reports whether a pass may have changed the node: it
// removed something, or tried and failed. A pass that removed nothing
// needs no re-list while the event stream reports every change.
func passChanged(r engine.PassReport) bool {
	return r.Count(engine.OutcomeRemoved)+r.Count(engine.OutcomeGone)+r.Count(engine.OutcomeFailed) > 0
}

// onEvent lists the node again after a container event, or once the
// refresh in flight ends.
func (m *Model) onEvent() tea.Cmd {
	if m.frozen {
		return nil
	}
	if m.refreshing {
		m.eventPending = true
		return nil
	}
	return m.startRefresh(false)
}

// eventsDown falls back to polling, says so on the status line, and asks
// to reconnect after a backoff: long for a runtime with no stream at all,
// doubling from eventsRetryMin for a broken one.
func (m *Model) eventsDown(err error) tea.Cmd {
	m.eventsLive = false
	m.eventsStatus = eventsNote(err)
	d := noStreamRetry
	if !errors.Is(err, engine.ErrNoEventStream) {
		d = min(max(m.eventsRetry*2, eventsRetryMin), eventsRetryMax)
		m.eventsRetry = d
	}
	return tea.Batch(m.setListEvery(m.o.RefreshInterval), retryEvents(d))
}

// Update routes a message; a status message that has expired goes first.
func (m Model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	m.expireFlash()
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.width, m.height = msg.Width, msg.Height
		m.resize()
		if d := m.modal; d != nil && d.kind == modalPreview && !d.loading && d.err == "" {
			dd := *d
			dd.lines, dd.items = planLines(m.snap, dd.plan, previewNameWidth(m.width))
			m.modal = &dd
		}
		return m, nil
	case tea.BackgroundColorMsg:
		m.setStyles(style.Default(msg.IsDark()))
		return m, nil
	case tickMsg:
		if msg.gen != m.listGen {
			return m, nil // armed at an interval no longer in force
		}
		// A list since the tick was armed (an event, a pass, r) resets
		// the interval: wait out the rest of it.
		if rest := m.listEvery - m.o.Now().Sub(m.at); m.haveSnap && !m.refreshing && rest > 0 && rest < m.listEvery {
			return m, tick(rest, m.listGen)
		}
		return m, tea.Batch(tick(m.listEvery, m.listGen), m.poll())
	case changedMsg:
		return m, m.onChanged(msg)
	case RefreshMsg:
		m = m.applyRefresh(msg)
		cg := m.cgroupsDue()
		if m.eventPending && !m.refreshing {
			m.eventPending = false
			return m, tea.Batch(cg, m.startRefresh(false))
		}
		return m, cg
	case pulseMsg:
		return m, m.onPulse()
	case cgroupsMsg:
		if msg.seq != m.cgSeq {
			return m, nil
		}
		m.cgReading, m.cgAt = false, msg.at
		return m, m.broadcast(feed.Cgroups{Tree: msg.tree, At: msg.at, Err: msg.err})
	case fsMsg:
		m.fsReading = false
		if msg.err != nil || !m.haveSnap {
			return m, nil
		}
		// The usage moved: images came or went without a container
		// event. List the node again.
		if u, err := engine.UsagePercent(msg.fs); err == nil && u != m.plan.ImageGC.UsagePercent {
			return m, m.onEvent()
		}
		return m, nil
	case eventsOpenedMsg:
		if msg.err != nil {
			return m, m.eventsDown(msg.err)
		}
		m.eventsLive, m.eventsStatus, m.eventsRetry = true, "", 0
		// Events may have come between the last list and the stream's
		// opening: list once more, then only on events.
		return m, tea.Batch(waitEvents(msg.ch), m.setListEvery(SafetyInterval), m.onEvent())
	case containerEventsMsg:
		if msg.closed || msg.err != nil {
			err := msg.err
			if err == nil {
				err = errors.New("the stream closed")
			}
			var more tea.Cmd
			if !msg.closed {
				more = waitEvents(msg.ch) // drain to the close
			}
			return m, tea.Batch(more, m.eventsDown(err), m.onEvent())
		}
		return m, tea.Batch(waitEvents(msg.ch), m.onEvent())
	case eventsRetryMsg:
		if m.o.Events == nil {
			return m, nil
		}
		return m, openEventsCmd(m.ctx, m.o.Events)
	case subscribedMsg:
		m.notices, m.unsubscribe = msg.ch, msg.cancel
		return m, waitNotice(msg.ch)
	case noticeMsg:
		if !msg.ok {
			return m, nil
		}
		m.status = msg.n.Status
		var cmds []tea.Cmd
		if p := msg.n.Progress; p != nil {
			pp := *p
			m.progress = &pp
		}
		if m.status.Running == "" && m.busy == "" {
			m.progress = nil
		}
		if r := msg.n.Report; r != nil && !r.DryRun {
			m.progress = nil
			m.history.AddPass(*r)
			cmds = append(cmds, m.broadcast(feed.Pass{Report: *r}))
			if !m.eventsLive || passChanged(*r) {
				cmds = append(cmds, m.startRefresh(false))
			}
		}
		if e := msg.n.Event; e != nil {
			cmds = append(cmds, m.broadcast(feed.Event{Event: *e}))
		}
		m.pushOverview()
		return m, tea.Batch(append(cmds, waitNotice(msg.ch))...)
	case previewMsg:
		if m.modal == nil || m.modal.kind != modalPreview || msg.seq != m.previewSeq {
			return m, nil // cancelled or overtaken
		}
		m.modal.loading = false
		if msg.err != nil {
			m.modal.err = msg.err.Error()
			return m, nil
		}
		m.modal.plan = msg.report.Plan
		m.modal.lines, m.modal.items = planLines(m.snap, msg.report.Plan, previewNameWidth(m.width))
		return m, nil
	case appliedMsg:
		m.busy, m.progress = "", nil
		if m.stopApply != nil {
			m.stopApply()
			m.stopApply = nil
		}
		var cmd tea.Cmd
		if msg.err != nil {
			m.setFlash(fmt.Sprintf("%s pass failed: %v", msg.kind, msg.err), true)
		} else {
			r := msg.report
			m.history.AddPass(r)
			cmd = m.broadcast(feed.Pass{Report: r})
			m.setFlash(passSummary(r), !r.OK())
		}
		m.pushOverview()
		return m, tea.Batch(cmd, m.startRefresh(true))
	case statusMsg:
		m.status = msg.status
		m.pushOverview()
		return m, nil
	case tea.MouseClickMsg:
		return m.click(msg)
	case tea.MouseWheelMsg:
		return m.wheel(msg)
	case tea.KeyPressMsg:
		nm, cmd := m.key(msg)
		mm, ok := nm.(Model)
		if !ok {
			return nm, cmd
		}
		// The Cgroups pane brought on screen shows a fresh tree.
		return mm, tea.Batch(cmd, mm.cgroupsDue())
	}
	return m, nil
}

func (m *Model) applyRefresh(msg RefreshMsg) Model {
	if msg.Seq != m.refreshSeq {
		return *m // overtaken by a newer refresh
	}
	m.refreshing = false
	if msg.Status != nil {
		m.status = *msg.Status
	}
	if msg.Self != nil {
		if m.lastSelf != nil && msg.At.After(m.selfAt) {
			m.self.CPUPercent = float64(msg.Self.CPU-m.lastSelf.CPU) / float64(msg.At.Sub(m.selfAt)) * 100
		}
		m.self.RSSBytes = msg.Self.RSSBytes
		m.lastSelf, m.selfAt = msg.Self, msg.At
	}
	if msg.Err != nil {
		m.lastErr = "snapshot: " + msg.Err.Error()
		m.pushOverview()
		return *m
	}
	m.lastErr = ""
	m.snap, m.haveSnap = msg.Snapshot, true
	m.plan, m.at = msg.Plan, msg.At
	m.history.AddUsage(msg.At, msg.Plan.ImageGC.UsagePercent)
	// Only the visible pane takes the refresh now; the others wait until
	// they are shown, which halves the work of a refresh on a large node.
	m.feed = feed.Snapshot{Snap: m.snap, Plan: m.plan, At: m.at}
	for i := range m.stale {
		m.stale[i] = true
	}
	m.syncActive()
	m.cgNames = engine.CgroupNames(msg.Snapshot.Sandboxes, msg.Snapshot.Containers)
	if msg.Tree != nil || msg.TreeErr != nil {
		m.broadcast(feed.Cgroups{Tree: msg.Tree, At: msg.At, Err: msg.TreeErr})
	}
	m.pushOverview()
	return *m
}

// syncActive hands the active pane the latest refresh if it came while
// the pane was hidden.
func (m *Model) syncActive() {
	if !m.haveSnap || !m.stale[m.active] {
		return
	}
	stale := slices.Clone(m.stale)
	stale[m.active] = false
	m.stale = stale
	p, _ := m.activePane().Update(m.feed)
	m.setPane(m.active, p)
}

// pushOverview hands the Overview its data.
func (m *Model) pushOverview() {
	if !m.haveSnap {
		return
	}
	m.broadcast(overview.Data{
		Snapshot: m.snap, Plan: m.plan, Policy: m.o.Policy, Status: m.status,
		Controlled: m.o.Controller != nil, Self: m.self, HideSelf: m.o.HideSelf,
		Now: m.o.Now(), Version: m.o.Version, ReadOnly: m.o.ReadOnly,
		History: m.history,
	})
}

func (m *Model) setStyles(st style.Styles) {
	m.st = st
	m.help.Styles = help.DefaultStyles(st.Dark)
	panes := make([]pane, len(m.panes))
	for i, p := range m.panes {
		panes[i] = p.SetStyles(st)
	}
	m.panes = panes
}

// chrome is the lines around the body: the tab bar and its rule, the
// status line and the help.
func (m Model) chrome() int {
	n := 3
	if m.help.ShowAll {
		n += len(strings.Split(m.fullHelpView(), "\n"))
	} else {
		n++
	}
	return n
}

// resize gives every pane the body's size.
func (m *Model) resize() {
	m.help.SetWidth(m.width)
	w, h := m.width, max(m.height-m.chrome(), 1)
	panes := make([]pane, len(m.panes))
	for i, p := range m.panes {
		panes[i] = p.SetSize(w, h)
	}
	m.panes = panes
}

func (m Model) capturing() bool { return m.activePane().Capturing() }

// key handles a key press: the modal first, then a pane typing a filter,
// then the global keys, then the active pane.
func (m Model) key(msg tea.KeyPressMsg) (tea.Model, tea.Cmd) {
	if m.modal != nil {
		return m.modalKey(msg)
	}
	if m.capturing() {
		if key.Matches(msg, m.keys.Interrupt) {
			return m.quit()
		}
		return m.toPane(msg)
	}
	k := m.keys
	switch {
	case key.Matches(msg, k.Quit):
		return m.quit()
	case key.Matches(msg, k.Help):
		m.help.ShowAll = !m.help.ShowAll
		m.resize()
	case key.Matches(msg, k.NextPane):
		m.activate((m.active + 1) % Pane(len(m.panes)))
	case key.Matches(msg, k.PrevPane):
		m.activate((m.active + Pane(len(m.panes)) - 1) % Pane(len(m.panes)))
	case key.Matches(msg, k.Copy):
		id, ok := m.activePane().Selected()
		if !ok {
			m.setFlash("nothing to copy on this row", true)
			return m, nil
		}
		m.setFlash("copied "+id+" to the clipboard (OSC 52)", false)
		return m, tea.SetClipboard(id)
	case key.Matches(msg, k.Drill):
		d, ok := m.activePane().Detail()
		if !ok {
			return m.toPane(msg)
		}
		m.modal = &modal{kind: modalDetail, title: d.Title, lines: d.Lines}
		return m, nil
	case key.Matches(msg, k.StopPass):
		if m.stopApply == nil {
			if m.status.Running != "" {
				m.setFlash("only a pass applied from this dashboard can be stopped here", true)
			} else {
				m.setFlash("no pass in flight", false)
			}
			return m, nil
		}
		stop := m.stopApply
		m.stopApply = nil
		m.setStickyFlash("stopping the pass after the item in flight…")
		return m, func() tea.Msg { stop(); return nil }
	case key.Matches(msg, k.ForceImages):
		return m.openPreview(engine.PassImages, false)
	case key.Matches(msg, k.ForceContainers):
		return m.openPreview(engine.PassContainers, false)
	case key.Matches(msg, k.ReclaimAll):
		return m.openPreview(engine.PassReclaimAll, false)
	case key.Matches(msg, k.ReadOnly):
		m.setFlash("read-only: i, x and R are disabled (d still previews)", true)
	case key.Matches(msg, k.DryRun):
		return m.openPreview(engine.PassFull, true)
	case key.Matches(msg, k.Pause):
		if m.o.Controller == nil {
			m.setFlash("no scheduler to pause", true)
			return m, nil
		}
		pause := !m.status.Paused
		if pause {
			m.setFlash("pausing periodic passes (forced passes still run)", false)
		} else {
			m.setFlash("resuming periodic passes", false)
		}
		return m, pauseCmd(m.o.Controller, pause)
	case key.Matches(msg, k.Refresh):
		m.setFlash("refreshing…", false)
		return m, m.startRefresh(true)
	case key.Matches(msg, k.Freeze):
		m.frozen = !m.frozen
		if m.frozen {
			m.setStickyFlash("display frozen: no refresh until f (GC keeps running)")
		} else {
			m.setFlash("display live", false)
			return m, m.startRefresh(true)
		}
	default:
		for i, b := range k.Panes {
			if key.Matches(msg, b) {
				m.activate(Pane(i))
				return m, nil
			}
		}
		return m.toPane(msg)
	}
	return m, nil
}

func (m Model) toPane(msg tea.Msg) (tea.Model, tea.Cmd) {
	p, cmd := m.activePane().Update(msg)
	m.setPane(m.active, p)
	return m, cmd
}

func (m Model) quit() (tea.Model, tea.Cmd) {
	if kind := m.inFlight(); kind != "" {
		m.modal = &modal{kind: modalQuit, title: fmt.Sprintf("A %s pass is in flight", kind)}
		return m, nil
	}
	return m, tea.Quit
}

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

// modalKey handles a key while a modal is open. Only y (keys.Confirm)
// applies a previewed plan; enter, esc, n and q close the modal and remove
// nothing, whatever the modal shows.
func (m Model) modalKey(msg tea.KeyPressMsg) (tea.Model, tea.Cmd) {
	d := *m.modal
	k := m.keys
	if d.kind == modalQuit {
		switch {
		case key.Matches(msg, k.QuitAnyway):
			return m, tea.Quit
		case key.Matches(msg, k.Stay):
			m.modal = nil
		}
		return m, nil
	}
	switch {
	case key.Matches(msg, k.Interrupt):
		m.modal = nil
		return m.quit()
	case key.Matches(msg, k.Cancel):
		m.modal = nil
		m.previewSeq++ // drop a preview still on its way
		if d.kind == modalPreview && !d.loading && d.items > 0 {
			m.setFlash("cancelled: nothing was removed", false)
		}
		return m, nil
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

// ShortHelp merges the active pane's keys with the global ones.
func (m Model) ShortHelp() []key.Binding {
	k := m.keys
	b := []key.Binding{k.NextPane, k.ForceImages, k.ForceContainers, k.ReclaimAll, k.ReadOnly, k.DryRun, k.Pause}
	b = append(b, m.paneHelp()...)
	return append(b, k.Help, k.Quit)
}

// FullHelp groups every key: panes, GC actions, view, and the active
// pane's own.
func (m Model) FullHelp() [][]key.Binding {
	k := m.keys
	g := [][]key.Binding{
		{k.NextPane, k.PrevPane, k.Panes[0], k.Help, k.Quit},
		{k.ForceImages, k.ForceContainers, k.ReclaimAll, k.ReadOnly, k.DryRun, k.Pause, k.StopPass},
		{k.Refresh, k.Freeze, k.Confirm, k.Cancel},
	}
	return append(g, m.activePane().FullHelp()...)
}

// fullHelpView lays out every group of FullHelp: as many columns side by
// side as the width holds, then the next row. bubbles/help drops the groups
// that do not fit on one row, so at 80×24 the navigation, filter and sort
// keys went missing; here no key is dropped, and when the rows do not fit
// the height either, the last line says so.
func (m Model) fullHelpView() string {
	var rows, row []string
	used := 0
	sep := "   "
	for _, g := range m.FullHelp() {
		col := m.help.FullHelpView([][]key.Binding{g})
		if col == "" {
			continue
		}
		w := lipgloss.Width(col)
		if len(row) > 0 && used+len(sep)+w > m.width {
			rows = append(rows, lipgloss.JoinHorizontal(lipgloss.Top, row...))
			row, used = nil, 0
		}
		if len(row) > 0 {
			row = append(row, sep)
			used += len(sep)
		}
		row = append(row, col)
		used += w
	}
	if len(row) > 0 {
		rows = append(rows, lipgloss.JoinHorizontal(lipgloss.Top, row...))
	}
	lines := strings.Split(strings.Join(rows, "\n"), "\n")
	if room := max(m.height-6, 3); len(lines) > room {
		lines = append(lines[:room-1], m.st.Faint.Render(fmt.Sprintf("… %d more lines of keys: a taller terminal shows them all (README lists every key)", len(lines)-room+1)))
	}
	// The last line always says how to close the help and quit.
	lines = append(lines, m.help.ShortHelpView([]key.Binding{m.keys.Help, m.keys.Quit}))
	for i, l := range lines {
		lines[i] = ansi.Truncate(strings.TrimRight(l, " "), m.width, "…")
	}
	return strings.Join(lines, "\n")
}

func (m Model) paneHelp() []key.Binding { return m.activePane().ShortHelp() }

// Screen renders the dashboard as a string: the tab bar, the active pane,
// the status line, the help, and the modal over them.
func (m Model) Screen() string {
	if m.width <= 0 || m.height <= 0 {
		return ""
	}
	st := m.st
	// Tab bar with the engine's state on the right.
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
	case m.o.Controller == nil:
		badges = append(badges, st.Faint.Render("display only"))
	case m.o.ReadOnly:
		badges = append(badges, st.BadgeWarn.Render("read-only"))
	case m.inFlight() != "":
		badges = append(badges, st.Accent.Render("● "+string(m.inFlight())))
	case m.status.Paused:
		badges = append(badges, st.BadgeWarn.Render("Ⅱ paused"))
	default:
		badges = append(badges, st.Badge.Render("● running"))
	}
	if m.frozen {
		badges = append(badges, st.BadgeWarn.Render("FROZEN"))
	}
	// Freshness: while polling, say how old the data is once it is older
	// than the refresh interval (a slow or failing runtime).
	if age := m.o.Now().Sub(m.freshAt()); m.haveSnap && !m.eventsLive && age > m.o.RefreshInterval {
		badges = append(badges, st.BadgeWarn.Render("data "+age.Truncate(time.Second).String()+" old"))
	}
	if m.o.ReadOnly {
		badges = append(badges, st.BadgeWarn.Render("read-only"))
	}
	right := strings.Join(badges, " ")
	gap := m.width - ansi.StringWidth(left) - ansi.StringWidth(right)
	bar := left + strings.Repeat(" ", max(gap, 1)) + right
	if gap < 1 {
		bar = ansi.Truncate(left, m.width, "…")
	}
	lines := []string{bar, st.Faint.Render(strings.Repeat("─", m.width))}

	bodyH := max(m.height-m.chrome(), 1)
	body := m.activePane().View()
	bl := strings.Split(body, "\n")
	if len(bl) > bodyH {
		bl = bl[:bodyH]
	}
	for len(bl) < bodyH {
		bl = append(bl, "")
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
	}
	helpView := m.fullHelpView()
	if !m.help.ShowAll {
		// The help and quit keys always show; the rest fit before them.
		sb := m.ShortHelp()
		tail := m.help.ShortHelpView([]key.Binding{m.keys.Help, m.keys.Quit})
		sep := m.help.Styles.ShortSeparator.Render(m.help.ShortSeparator)
		room := m.width - ansi.StringWidth(tail) - ansi.StringWidth(sep)
		helpView = ansi.Truncate(m.help.ShortHelpView(sb[:len(sb)-2]), room, "…") + sep + tail
	}
	lines = append(lines, ansi.Truncate(status, m.width, "…"), helpView)
	screen := strings.Join(lines, "\n")
	if m.modal != nil {
		screen = overlay(screen, m.modal.render(st, m.width, m.height, m.o.ReadOnly), m.width, m.height)
	}
	return screen
}

// View renders the screen in the alternate screen.
func (m Model) View() tea.View {
	v := tea.NewView(m.Screen())
	v.AltScreen = true
	v.MouseMode = tea.MouseModeCellMotion
	v.WindowTitle = "nodegc"
	return v
}

// passSummary accounts for every planned item of a pass, so the counts add
// up to what the preview showed: removed + already gone + skipped (with the
// first reason) + failed + not run = planned.
func passSummary(r engine.PassReport) string {
	var b strings.Builder
	fmt.Fprintf(&b, "pass #%d (%s): %d planned: removed %d", r.ID, r.Kind, len(r.Items), r.Count(engine.OutcomeRemoved))
	if n := r.Count(engine.OutcomeGone); n > 0 {
		fmt.Fprintf(&b, ", already gone %d", n)
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
	fmt.Fprintf(&b, ", failed %d", r.Count(engine.OutcomeFailed))
	if r.Undone > 0 {
		fmt.Fprintf(&b, ", not run %d (%s)", r.Undone, r.Stopped)
	}
	fmt.Fprintf(&b, "; freed ≈ %s", format.Bytes(r.EstimatedBytesFreed))
	return b.String()
}
