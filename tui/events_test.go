package tui

import (
	"context"
	"fmt"
	"strings"
	"testing"

	tea "charm.land/bubbletea/v2"

	"github.com/nodegc/nodegc/engine"
)

// update sends one message and returns the model and its command.
func update(m Model, msg tea.Msg) (Model, tea.Cmd) {
	nm, cmd := m.Update(msg)
	return nm.(Model), cmd
}

// finishRefresh runs the refresh in flight to its message, as the program
// would.
func finishRefresh(t *testing.T, m Model) Model {
	t.Helper()
	if !m.refreshing {
		t.Fatal("no refresh in flight")
	}
	msg := refreshCmd(m.ctx, m.o, m.refreshSeq)()
	m, _ = update(m, msg)
	return m
}

// fakeEvents is an event source whose stream is ch.
type fakeEvents struct{ ch chan engine.ContainerEvent }

func (f fakeEvents) ContainerEvents(context.Context) (<-chan engine.ContainerEvent, error) {
	return f.ch, nil
}

func TestRefreshOnContainerEvents(t *testing.T) {
	live := func(t *testing.T) (Model, chan engine.ContainerEvent) {
		m, _ := fixtureModel(t, 100, 30)
		ch := make(chan engine.ContainerEvent, 8)
		m.o.Events = fakeEvents{ch}
		m, cmd := update(m, eventsOpenedMsg{ch: ch})
		if cmd == nil {
			t.Fatal("opening the stream armed nothing")
		}
		if m.refreshing {
			m = finishRefresh(t, m)
		}
		return m, ch
	}
	t.Run("an open stream replaces the short periodic re-list with the safety net", func(t *testing.T) {
		m, _ := live(t)
		if !m.EventsLive() || m.ListInterval() != SafetyInterval {
			t.Fatalf("live %v, re-list every %s; want live and every %s", m.EventsLive(), m.ListInterval(), SafetyInterval)
		}
		seq := m.refreshSeq
		m, cmd := update(m, tickMsg{gen: 0}) // armed at the polling interval before the stream opened
		if cmd != nil || m.refreshSeq != seq {
			t.Errorf("a tick armed at the polling interval still re-listed (cmd %v, seq %d -> %d)", cmd != nil, seq, m.refreshSeq)
		}
	})
	t.Run("a container event re-lists at once, without waiting for a tick", func(t *testing.T) {
		m, ch := live(t)
		seq := m.refreshSeq
		m, cmd := update(m, containerEventsMsg{n: 1, ch: ch})
		if cmd == nil || !m.refreshing || m.refreshSeq != seq+1 {
			t.Fatalf("after an event: refreshing %v, seq %d -> %d; want a new refresh", m.refreshing, seq, m.refreshSeq)
		}
	})
	t.Run("events during a refresh give exactly one more refresh after it", func(t *testing.T) {
		m, ch := live(t)
		m, _ = update(m, containerEventsMsg{n: 1, ch: ch})
		seq := m.refreshSeq
		m, _ = update(m, containerEventsMsg{n: 5, ch: ch})
		m, _ = update(m, containerEventsMsg{n: 2, ch: ch})
		if m.refreshSeq != seq {
			t.Fatalf("events during a refresh started %d more at once", m.refreshSeq-seq)
		}
		m = finishRefresh(t, m)
		if !m.refreshing || m.refreshSeq != seq+1 {
			t.Fatalf("after the refresh: refreshing %v, seq %d -> %d; want one more", m.refreshing, seq, m.refreshSeq)
		}
		m = finishRefresh(t, m)
		if m.refreshing {
			t.Error("a third refresh followed one burst")
		}
	})
	t.Run("a burst buffered on the channel is one message", func(t *testing.T) {
		ch := make(chan engine.ContainerEvent, 8)
		for range 5 {
			ch <- engine.ContainerEvent{Type: engine.ContainerStoppedEvent}
		}
		msg := waitEvents(ch)().(containerEventsMsg)
		if msg.n != 5 || msg.closed || msg.err != nil {
			t.Errorf("waitEvents = %+v; want the 5 events in one message", msg)
		}
	})
	t.Run("a runtime without a stream falls back to polling and says so", func(t *testing.T) {
		m, _ := fixtureModel(t, 100, 30)
		m, cmd := update(m, eventsOpenedMsg{err: fmt.Errorf("container events: %w: Unimplemented", engine.ErrNoEventStream)})
		if cmd == nil {
			t.Error("no reconnect was armed")
		}
		if m.EventsLive() || m.ListInterval() != m.o.RefreshInterval {
			t.Errorf("live %v, re-list every %s; want polling every %s", m.EventsLive(), m.ListInterval(), m.o.RefreshInterval)
		}
		if s := m.Screen(); !strings.Contains(s, "events: polling (runtime has no event stream)") {
			t.Errorf("status line does not say it polls:\n%s", s)
		}
	})
	t.Run("a broken stream falls back to polling, re-lists, and reconnects", func(t *testing.T) {
		m, ch := live(t)
		seq := m.refreshSeq
		m, cmd := update(m, containerEventsMsg{ch: ch, err: fmt.Errorf("container events: %w", engine.ErrUnavailable)})
		if cmd == nil || m.EventsLive() || m.ListInterval() != m.o.RefreshInterval || m.refreshSeq != seq+1 {
			t.Fatalf("live %v, every %s, seq %d -> %d; want polling and a re-list", m.EventsLive(), m.ListInterval(), seq, m.refreshSeq)
		}
		if s := m.Screen(); !strings.Contains(s, "reconnecting") {
			t.Errorf("status line does not say it reconnects:\n%s", s)
		}
		m, cmd = update(m, eventsRetryMsg{})
		if cmd == nil {
			t.Fatal("the retry did not open the stream again")
		}
		if _, ok := cmd().(eventsOpenedMsg); !ok {
			t.Error("the retry's command does not open the stream")
		}
	})
}
