package tui

import (
	"regexp"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/nodegc/nodegc/engine"
)

// fakeClock is the fixture's clock with the ticks the dashboard arms on
// it: advance moves the time and delivers each tick that came due, as
// the program would.
type fakeClock struct {
	now   time.Time
	ticks []fakeTick
}

type fakeTick struct {
	at time.Time
	fn func(time.Time) tea.Msg
}

func (c *fakeClock) timer(d time.Duration, fn func(time.Time) tea.Msg) tea.Cmd {
	c.ticks = append(c.ticks, fakeTick{c.now.Add(d), fn})
	return nil
}

func (c *fakeClock) advance(t *testing.T, m Model, d time.Duration) Model {
	t.Helper()
	end := c.now.Add(d)
	for {
		i := -1
		for j, tk := range c.ticks {
			if !tk.at.After(end) && (i < 0 || tk.at.Before(c.ticks[i].at)) {
				i = j
			}
		}
		if i < 0 {
			break
		}
		tk := c.ticks[i]
		c.ticks = append(c.ticks[:i], c.ticks[i+1:]...)
		c.now = tk.at
		m = runCmd(m, func() tea.Msg { return tk.fn(tk.at) })
	}
	c.now = end
	return m
}

// Issue 23 item 8: every age and countdown on screen moves with the
// clock, with no new data, on the polling path and on the event path.
func TestAgesAndCountdownsMoveWithTheClock(t *testing.T) {
	reads := []struct {
		pane string
		key  string
		num  *regexp.Regexp
	}{
		{"Overview's next container pass", "1", regexp.MustCompile(`next container pass in (\S+)`)},
		{"an Images FIRST SEEN and eligible in", "2", regexp.MustCompile(`(\d+s)\s+keep too-young\s+eligible in (\S+)`)},
		{"a Containers FINISHED age", "3", regexp.MustCompile(`api +2 +1 (\S+) ago`)},
	}
	for _, path := range []struct {
		name string
		live bool
	}{{"polling", false}, {"event stream", true}} {
		for _, r := range reads {
			t.Run(path.name+": "+r.pane, func(t *testing.T) {
				c := &fakeClock{now: fixedNow}
				o := fixtureOptions(newFakeController(fixtureSnapshot(), engine.DefaultPolicy()), &c.now)
				o.timer = c.timer
				// The light poll finds nothing new: no refresh brings
				// fresh ages.
				o.Changed = (&fakeChanged{}).Changed
				m := refreshNow(t, send(New(o), windowSize(160, 40)))
				if path.live {
					m.o.Events = true
					m, _ = update(m, streamNotice(m, liveStream))
					m = finishRefresh(t, m)
				}
				m = send(m, keyMsg(r.key))
				read := func(m Model) string {
					t.Helper()
					got := r.num.FindStringSubmatch(ansi.Strip(m.Screen()))
					if got == nil {
						t.Fatalf("%s: no match for %s on screen:\n%s", r.pane, r.num, ansi.Strip(m.Screen()))
					}
					return got[0]
				}
				before := read(m)
				m = c.advance(t, m, 3*time.Second)
				if after := read(m); after == before {
					t.Errorf("%s still reads %q 3 s later", r.pane, after)
				}
			})
		}
	}
}

// Issue 22 item 2: an idle dashboard draws nothing new. A timer that only
// starts a read, or a read that finds nothing new, keeps the last frame;
// the clock is armed for the next change shown, not every second.
func TestIdleDrawsOnlyWhatChanges(t *testing.T) {
	c := &fakeClock{now: fixedNow}
	ctl := newFakeController(fixtureSnapshot(), engine.DefaultPolicy())
	ctl.status.Paused = true // no countdown on the Overview
	o := fixtureOptions(ctl, &c.now)
	o.timer = c.timer
	m := refreshNow(t, send(New(o), windowSize(160, 40)))
	m.o.Events = true
	m, _ = update(m, streamNotice(m, liveStream))
	m = finishRefresh(t, m)
	gen := m.gen
	for _, msg := range []tea.Msg{pulseMsg{}, tickMsg{gen: m.listGen + 1}, fsMsg{fs: fixtureSnapshot().ImageFs}} {
		m, _ = update(m, msg)
		if m.gen != gen {
			t.Errorf("%T drew a new frame on an idle dashboard", msg)
		}
	}
	// The Events pane shows clock times, no age: nothing to tick for.
	m = send(m, keyMsg("5"))
	if next := m.nextChange(); !next.IsZero() {
		t.Errorf("Events with live events: the clock is armed for %s; want never", next.Sub(c.now))
	}
}

// Issue 23 item 8: polling, data older than the refresh interval says
// when it was read, and the mark moves with the clock.
func TestStaleDataSaysAsOf(t *testing.T) {
	c := &fakeClock{now: fixedNow}
	o := fixtureOptions(newFakeController(fixtureSnapshot(), engine.DefaultPolicy()), &c.now)
	o.timer = c.timer
	m := refreshNow(t, send(New(o), windowSize(160, 40)))
	if s := ansi.Strip(m.Screen()); dataAge.MatchString(s) {
		t.Fatalf("fresh data carries an as-of mark:\n%s", s)
	}
	// No tick re-lists (a hung runtime): the mark comes after the interval.
	m = c.advance(t, m, m.o.RefreshInterval+3*time.Second)
	if s := ansi.Strip(m.Screen()); !regexp.MustCompile(`as of 12:00:00 \(5s ago\)`).MatchString(s) {
		t.Errorf("data 5 s old: no \"as of 12:00:00 (5s ago)\" mark:\n%s", s)
	}
}

// Issue 22 item 2: ages and countdowns at a second's resolution, each
// changing at an instant of its own, move together on the whole second:
// one frame a second, not one for each, and each still moves every
// second.
func TestClockTicksOnTheSecond(t *testing.T) {
	c := &fakeClock{now: fixedNow}
	ctl := newFakeController(fixtureSnapshot(), engine.DefaultPolicy())
	ctl.status.NextContainerPass = fixedNow.Add(40*time.Second + 300*time.Millisecond)
	ctl.status.NextImagePass = fixedNow.Add(50*time.Second + 700*time.Millisecond)
	ctl.status.LastReport = &engine.PassReport{ID: 3, Kind: engine.PassContainers,
		StartedAt: fixedNow.Add(-6 * time.Second), FinishedAt: fixedNow.Add(-5*time.Second - 550*time.Millisecond)}
	o := fixtureOptions(ctl, &c.now)
	ticks := 0
	o.timer = func(d time.Duration, fn func(time.Time) tea.Msg) tea.Cmd {
		ticks++
		return c.timer(d, fn)
	}
	m := refreshNow(t, send(New(o), windowSize(160, 40)))
	m.o.Events = true
	m, _ = update(m, streamNotice(m, liveStream))
	m = finishRefresh(t, m)
	reads := []*regexp.Regexp{
		regexp.MustCompile(`next container pass in \S+`),
		regexp.MustCompile(`next image pass in \S+`),
		regexp.MustCompile(`#3 containers \S+ ago`),
	}
	read := func(m Model) []string {
		t.Helper()
		s := ansi.Strip(m.Screen())
		var got []string
		for _, r := range reads {
			g := r.FindString(s)
			if g == "" {
				t.Fatalf("no match for %s on screen:\n%s", r, s)
			}
			got = append(got, g)
		}
		return got
	}
	ticks = 0
	for i := range 10 {
		before := read(m)
		m = c.advance(t, m, time.Second)
		after := read(m)
		for j := range reads {
			if after[j] == before[j] {
				t.Errorf("second %d: %q did not move", i+1, after[j])
			}
		}
	}
	if ticks > 10 {
		t.Errorf("%d clock ticks in 10 s for three items at a second's resolution; want at most 10", ticks)
	}
}
