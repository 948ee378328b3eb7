// The refresh scheduling: when the dashboard lists the node in full
// (a tick, a light poll that found a change, an event, a pass, r, the
// safety net), when it reads the cheap gauges (the pulse), and how a
// refresh's result reaches the panes.

package tui

import (
	"fmt"
	"slices"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/nodegc/nodegc/cgroupfs"
	"github.com/nodegc/nodegc/engine"
	"github.com/nodegc/nodegc/internal/format"
	"github.com/nodegc/nodegc/tui/internal/feed"
)

// cadence is the refresh cadence: when the dashboard lists the node
// again (every RefreshInterval while polling, the safety net's interval
// while the runtime's event stream is live), and the light poll that
// spares a listing when nothing changed.
type cadence struct {
	refreshSeq uint64
	refreshing bool
	// listEvery is the interval of the periodic re-list armed now:
	// RefreshInterval while polling, the safety net's (safetyInterval)
	// while the event stream is live; listGen drops ticks armed at the
	// old interval.
	listEvery time.Duration
	listGen   uint64
	// eventsLive reports whether the engine's follower of the runtime's
	// event stream is live (Status.Events) and the dashboard refreshes on
	// its notices; eventsStatus says why not, for the status line.
	eventsLive   bool
	eventsStatus string
	// eventPending marks an event that came while a refresh was running:
	// one more refresh follows it.
	eventPending bool
	// checking marks a light poll (Options.Changed) in flight; checkSeq
	// drops all but the latest. checkedAt is when the last one found the
	// node unchanged since the refresh at at: the data is as fresh as it.
	checking  bool
	checkSeq  uint64
	checkedAt time.Time
}

// lightReads is the state of the pulse, the dashboard's light clock, and
// its idle tuning: the image filesystem's usage, read less often while it
// reads as shown, the cgroup tree, read less often while its pane is off
// screen, and the hand-back of a pass's garbage, all without listing the
// node.
type lightReads struct {
	// fsReading marks a usage reading of the image filesystem in flight;
	// fsAt is when the last one began, and fsEvery how long the next one
	// waits (usageEvery): it grows while the usage reads as shown.
	fsReading bool
	fsAt      time.Time
	fsEvery   time.Duration
	// pulseGen drops a pulse armed before the latest (armPulse);
	// pulseAt is when the latest fires.
	pulseGen uint64
	pulseAt  time.Time
	// releaseAt is when the pulse hands a pass's garbage back
	// (releaseSoon); zero when none waits.
	releaseAt time.Time
	// The cgroup tree is read on the pulse: every RefreshInterval while
	// its pane is on screen, every CgroupsHiddenInterval otherwise.
	// cgNames resolves the latest snapshot's IDs; cgAt is when the tree
	// was last read.
	cgSeq     uint64
	cgReading bool
	cgAt      time.Time
	cgNames   cgroupfs.Names
}

// startRefresh begins a refresh unless one is running or force is false
// and the display is frozen. A forced refresh overtakes a running one.
func (m *Model) startRefresh(force bool) tea.Cmd { return m.refresh(force, nil) }

// refresh is startRefresh, comparing the listing with keep when set.
func (m *Model) refresh(force bool, keep *shown) tea.Cmd {
	if !force && (m.frozen || m.refreshing) {
		return nil
	}
	m.refreshSeq++
	m.refreshing = true
	return refreshCmd(m.ctx, m.o, m.refreshSeq, keep)
}

// startRelist begins the periodic re-list (the event stream's safety
// net, or a poll without a light check): a refresh that keeps the shown
// snapshot and plan when its listing reads the same and the plan would
// be the same (keepable), instead of planning it again.
func (m *Model) startRelist() tea.Cmd {
	var keep *shown
	if m.haveSnap {
		keep = &shown{snap: m.snap, plan: m.plan}
	}
	return m.refresh(false, keep)
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

// RefreshSteps are the refresh intervals + and - step through (btop).
var RefreshSteps = []time.Duration{
	time.Second, 2 * time.Second, 5 * time.Second, 10 * time.Second, 30 * time.Second, 60 * time.Second,
}

// stepRefresh moves the refresh interval dir steps along RefreshSteps
// (-1 faster, +1 slower) from the one in force, which need not be a step
// (--refresh 3s). It re-arms the periodic re-list while polling (the event
// stream's safety net stays as it is) and says the new interval.
func (m *Model) stepRefresh(dir int) tea.Cmd {
	cur := m.o.RefreshInterval
	next := cur
	if dir < 0 {
		for i := len(RefreshSteps) - 1; i >= 0; i-- {
			if RefreshSteps[i] < cur {
				next = RefreshSteps[i]
				break
			}
		}
	} else {
		for _, d := range RefreshSteps {
			if d > cur {
				next = d
				break
			}
		}
	}
	if next == cur {
		edge := "shortest"
		if dir > 0 {
			edge = "longest"
		}
		m.setFlash(fmt.Sprintf("refresh every %s: the %s interval", format.Duration(cur), edge), false)
		return nil
	}
	m.o.RefreshInterval = next
	m.setFlash(fmt.Sprintf("refresh every %s (+ faster, - slower)", format.Duration(next)), false)
	if m.eventsLive {
		return nil
	}
	return m.setListEvery(next)
}

// ListInterval is the interval of the periodic re-list armed now:
// RefreshInterval while polling, the safety net's (safetyInterval) while
// the runtime's event stream is live.
func (m Model) ListInterval() time.Duration { return m.listEvery }

// EventsLive reports whether the runtime's event stream, which the
// engine follows, is open and the dashboard refreshes on its notices.
func (m Model) EventsLive() bool { return m.eventsLive }

// cgroupInterval is how often the cgroup tree is read now: every
// RefreshInterval while its pane is on screen, else every
// CgroupsHiddenInterval (the Overview's summary can wait; the tree's
// re-read is the dashboard's most expensive idle work).
func (m Model) cgroupInterval() time.Duration {
	if m.activePane().ReadsCgroups() {
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
// pane wants (cgroupInterval), or was never read, and brings the pulse
// forward when the active pane wants it sooner than it is armed (the
// Cgroups pane brought on screen while the pulse waits on the usage).
func (m *Model) cgroupsDue() tea.Cmd {
	sooner := m.pulseSooner()
	if !m.cgAt.IsZero() && m.o.Now().Sub(m.cgAt) < m.cgroupInterval() {
		return sooner
	}
	return tea.Batch(sooner, m.readCgroups())
}

// onPulse reads what is due on the light clock: the cgroup tree, and,
// while the event stream is live or the poll is light (Options.Changed),
// the image fs usage once usageEvery has passed since the last reading (a
// full poll measures it with every list); it hands a pass's garbage back
// once due (releaseSoon). It arms the next pulse.
func (m *Model) onPulse() tea.Cmd {
	cmds := []tea.Cmd{m.cgroupsDue()}
	now := m.o.Now()
	if m.usageOn() && !m.fsReading && now.Sub(m.fsAt) >= m.usageEvery() {
		m.fsReading, m.fsAt = true, now
		cmds = append(cmds, fsCmd(m.ctx, m.o.ImageFs))
	}
	if !m.releaseAt.IsZero() && !now.Before(m.releaseAt) {
		m.releaseAt = time.Time{}
		cmds = append(cmds, m.release())
	}
	return tea.Batch(append(cmds, m.armPulse())...)
}

// usageOn reports whether the pulse reads the image fs usage now.
func (m Model) usageOn() bool {
	return m.o.ImageFs != nil && (m.eventsLive || m.o.Changed != nil) && m.haveSnap && !m.frozen
}

// usageEvery is the wait between two usage readings: RefreshInterval, or
// longer while the usage reads as shown (fsMsg), up to UsageQuietInterval
// or RefreshInterval, whichever is longer.
func (m Model) usageEvery() time.Duration {
	return max(min(m.fsEvery, m.usageQuiet()), m.o.RefreshInterval)
}

// usageQuiet is the longest wait between two usage readings.
func (m Model) usageQuiet() time.Duration { return max(UsageQuietInterval, m.o.RefreshInterval) }

// pulseDelay is how long the next pulse waits: RefreshInterval, or, while
// the usage readings are spaced out and the active pane does not draw the
// cgroup tree, until the first of the next usage reading, cgroup read or
// release (releaseSoon) is due, so that an idle dashboard wakes only for
// work. A reading or read in flight counts as answered now, as if
// unchanged: one that finds a change brings the pulse forward then.
func (m Model) pulseDelay() time.Duration {
	d := m.o.RefreshInterval
	if !m.usageOn() || m.activePane().ReadsCgroups() {
		return d
	}
	now := m.o.Now()
	next := m.fsAt.Add(m.usageEvery())
	if m.fsReading {
		next = now.Add(min(2*m.usageEvery(), m.usageQuiet()))
	}
	if m.o.Cgroups != nil && m.cgNames != nil {
		cg := m.cgAt.Add(m.cgroupInterval())
		if m.cgReading {
			cg = now.Add(m.cgroupInterval())
		}
		next = earliest(next, cg)
	}
	if !m.releaseAt.IsZero() {
		next = earliest(next, m.releaseAt)
	}
	return max(next.Sub(now), d)
}

// earliest is the earlier of a and b.
func earliest(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

// armPulse arms the next pulse (pulseDelay); one armed before is dropped
// when it fires.
func (m *Model) armPulse() tea.Cmd {
	d := m.pulseDelay()
	m.pulseGen++
	m.pulseAt = m.o.Now().Add(d)
	return pulse(d, m.pulseGen)
}

// pulseSooner re-arms the pulse when something is due before the pulse
// armed now would come (pulseDelay); nil when none is armed yet.
func (m *Model) pulseSooner() tea.Cmd {
	if m.pulseAt.IsZero() || !m.o.Now().Add(m.pulseDelay()).Before(m.pulseAt) {
		return nil
	}
	return m.armPulse()
}

// poll is the periodic re-list. While polling with a light check
// (Options.Changed) it runs the check, and a full refresh follows only
// when the check finds a change or fails (onChanged), or as a safety net
// once the last refresh is SafetyInterval old. Otherwise (no light check,
// or the tick is the event stream's safety net) it refreshes.
func (m *Model) poll() tea.Cmd {
	if m.frozen || m.refreshing {
		return nil
	}
	if m.o.Changed == nil || m.eventsLive || !m.haveSnap || m.o.Now().Sub(m.at) >= SafetyInterval {
		// A light check still in flight (a hung call) does not hold the
		// safety net back; its answer is dropped by its sequence number.
		m.checking = false
		m.checkSeq++
		return m.startRelist()
	}
	if m.checking {
		return nil
	}
	m.checking = true
	m.checkSeq++
	return changedCmd(m.ctx, m.o.Changed, m.snapFP, m.o.Now, m.checkSeq)
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

// syncEvents follows the engine's event stream (Status.Events) when the
// dashboard refreshes on its notices (Options.Events). The stream
// opening arms the SafetyInterval re-list and, when relist is set, lists
// once more (events may have come since the last list); its breaking or
// missing falls back to polling and says so on the status line, and a
// break lists again. It reports whether the state moved.
func (m *Model) syncEvents(relist bool) (tea.Cmd, bool) {
	st := m.status.Events
	if !m.o.Events || st.Live == m.eventsLive {
		if m.o.Events && !st.Live {
			m.eventsStatus = eventsNote(st)
		}
		return nil, false
	}
	m.eventsLive, m.eventsStatus = st.Live, eventsNote(st)
	if st.Live {
		cmd := m.setListEvery(m.safetyInterval())
		if relist {
			cmd = tea.Batch(cmd, m.onEvent())
		}
		return cmd, true
	}
	return tea.Batch(m.setListEvery(m.o.RefreshInterval), m.onEvent()), true
}

// safetyInterval is the safety net's interval while the event stream
// is live: StreamSafetyInterval, or SafetyInterval while the shown
// snapshot has a ready pod source (or before the first one).
func (m Model) safetyInterval() time.Duration {
	if !m.haveSnap || m.snap.PodSource.Ready {
		return SafetyInterval
	}
	return StreamSafetyInterval
}

// syncSafety re-arms the safety net when a refresh changed its interval
// (a pod source became ready, or went away).
func (m *Model) syncSafety() tea.Cmd {
	if !m.eventsLive {
		return nil
	}
	return m.setListEvery(m.safetyInterval())
}

func (m *Model) applyRefresh(msg RefreshMsg) Model {
	if msg.Seq != m.refreshSeq {
		return *m // overtaken by a newer refresh
	}
	m.refreshing = false
	if msg.Status != nil {
		m.setStatus(*msg.Status)
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
	if msg.Kept {
		// The node reads as shown: the data is as fresh as this listing,
		// and the Overview records the usage it read (the history).
		m.at = msg.At
		m.refreshes++
		m.pushOverview()
		return *m
	}
	m.snap, m.haveSnap = msg.Snapshot, true
	m.plan, m.at = msg.Plan, msg.At
	if m.o.Changed != nil {
		m.snapFP = engine.ContainersFingerprint(m.snap.Containers)
	}
	if m.o.Listings != nil {
		m.digest = Digest(m.snap)
	}
	m.refreshes++
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

// afterRefresh runs Options.AfterRefresh, off the screen's goroutine,
// once a refresh is applied, a kept re-list's too: its listing is as much
// garbage as a refresh's, and left to the collector it stayed resident
// (the idle dashboard's RSS rose from 42 to 55 MB after one).
func (m Model) afterRefresh(msg RefreshMsg) tea.Cmd {
	if msg.Seq != m.refreshSeq {
		return nil
	}
	return m.release()
}

// release runs Options.AfterRefresh off the screen's goroutine: after a
// refresh is applied, or after a real pass that no refresh follows (the
// pass listed and planned the node for itself, and left that garbage).
func (m Model) release() tea.Cmd {
	f := m.o.AfterRefresh
	if f == nil {
		return nil
	}
	return func() tea.Msg {
		f()
		return nil
	}
}

// releaseSoon hands a pass's garbage back at the first pulse a refresh
// interval after the pass's notice, when the scheduler has let go of it;
// at once when there is no pulse.
func (m *Model) releaseSoon() tea.Cmd {
	if m.o.Cgroups == nil && m.o.ImageFs == nil {
		return m.release()
	}
	if m.releaseAt.IsZero() {
		m.releaseAt = m.o.Now().Add(m.o.RefreshInterval)
	}
	return m.pulseSooner()
}

// setStatus takes the scheduler's status st unless the model holds a
// newer one: a refresh reads the status when it starts and may end after
// a notice brought a newer one (the pass it shows in flight has ended).
func (m *Model) setStatus(st engine.Status) {
	if st.Newer(m.status) {
		m.status = st
	}
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

// pushOverview hands every pane the dashboard's state (the Overview
// shows it).
func (m *Model) pushOverview() {
	if !m.haveSnap {
		return
	}
	m.broadcast(feed.State{
		Snapshot: m.snap, Plan: m.plan, At: m.at, Refreshes: m.refreshes,
		Policy: m.o.Policy, Status: m.status,
		Controlled: m.o.Controller != nil, Self: m.self, HideSelf: m.o.HideSelf,
		Now: m.now, Version: m.o.Version, ReadOnly: m.o.ReadOnly,
		Agent: (*feed.Agent)(m.o.Agent),
	})
}
