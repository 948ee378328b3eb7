package tui

import (
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/nodegc/nodegc/engine"
	"github.com/nodegc/nodegc/internal/format"
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
		// wait is how long the read waits: the Overview's countdowns
		// read to the minute (format.Rough), the panes' rows to the
		// second.
		wait time.Duration
	}{
		{"Overview's next image pass", "1", regexp.MustCompile(`next passes: images in (\S+)`), 70 * time.Second},
		{"an Images FIRST SEEN and eligible in", "2", regexp.MustCompile(`(\d+s)\s+keep too-young\s+eligible in (\S+)`), 3 * time.Second},
		{"a Containers FINISHED age", "3", regexp.MustCompile(`api +2 +1 (\S+) ago`), 3 * time.Second},
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
				m = c.advance(t, m, r.wait)
				if after := read(m); after == before {
					t.Errorf("%s still reads %q %s later", r.pane, after, r.wait)
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
	for _, msg := range []tea.Msg{pulseMsg{gen: m.pulseGen}, tickMsg{gen: m.listGen + 1}, fsMsg{fs: fixtureSnapshot().ImageFs}} {
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
// second. The Images pane shows two images first seen 50 s ago, at
// instants half a second apart, one with its "eligible in" countdown.
func TestClockTicksOnTheSecond(t *testing.T) {
	c := &fakeClock{now: fixedNow}
	snap := fixtureSnapshot()
	for i, off := range map[int]time.Duration{3: 300 * time.Millisecond, 9: 800 * time.Millisecond} {
		snap.ImageRecords[i].FirstDetected = fixedNow.Add(-50*time.Second - off)
	}
	ctl := newFakeController(snap, engine.DefaultPolicy())
	ctl.status.Paused = true // no countdown on the Overview
	m, ticks := tickedModel(t, c, ctl)
	m = send(m, keyMsg("2"))
	// busybox (in use) and golang (too young, with its countdown).
	rows := regexp.MustCompile(`\d+s +keep (?:too-young +eligible in \S+|in-use)`)
	read := func(m Model) []string {
		t.Helper()
		got := rows.FindAllString(ansi.Strip(m.Screen()), -1)
		if len(got) != 2 {
			t.Fatalf("%d rows match %s, want 2:\n%s", len(got), rows, ansi.Strip(m.Screen()))
		}
		return got
	}
	*ticks = 0
	for i := range 10 {
		before := read(m)
		m = c.advance(t, m, time.Second)
		after := read(m)
		for j := range after {
			if after[j] == before[j] {
				t.Errorf("second %d: %q did not move", i+1, after[j])
			}
		}
	}
	if *ticks > 10 {
		t.Errorf("%d clock ticks in 10 s for three items at a second's resolution; want at most 10", *ticks)
	}
}

// Issue 22 item 2: the idle Overview's countdowns and the last pass's
// age read to the minute, beside the instant itself, so they move once a
// minute each: over three minutes the clock ticks only when one of them
// reads differently, and each reads as format.Rough says at every
// second.
func TestOverviewTicksOnceAMinute(t *testing.T) {
	c := &fakeClock{now: fixedNow}
	ctl := newFakeController(fixtureSnapshot(), engine.DefaultPolicy())
	nextC := fixedNow.Add(40*time.Second + 300*time.Millisecond)
	nextI := fixedNow.Add(3*time.Minute + 50*time.Second + 700*time.Millisecond)
	last := fixedNow.Add(-5*time.Second - 550*time.Millisecond)
	ctl.status.NextContainerPass, ctl.status.NextImagePass = nextC, nextI
	ctl.status.LastReport = &engine.PassReport{ID: 3, Kind: engine.PassContainers, StartedAt: last.Add(-time.Second), FinishedAt: last}
	m, ticks := tickedModel(t, c, ctl)
	reads := []struct {
		re   *regexp.Regexp
		want func(now time.Time) string
	}{
		{regexp.MustCompile(`containers (in <1m \(12:00:40\)|now)`), func(now time.Time) string {
			return "containers " + when(nextC, now)
		}},
		{regexp.MustCompile(`next passes: images (in \S+ \(12:03:50\)|now)`), func(now time.Time) string {
			return "next passes: images " + when(nextI, now)
		}},
		{regexp.MustCompile(`#3 containers \S+ ago \(11:59:54\)`), func(now time.Time) string {
			return "#3 containers " + format.RoughAgo(last, now) + " (11:59:54)"
		}},
	}
	*ticks = 0
	changes := 0
	prev := ""
	for range 180 {
		m = c.advance(t, m, time.Second)
		s := ansi.Strip(m.Screen())
		var shown string
		for _, r := range reads {
			got := r.re.FindString(s)
			if want := r.want(c.now); got != want {
				t.Fatalf("at %s: read %q, want %q:\n%s", c.now.Sub(fixedNow), got, want, s)
			}
			shown += got + "|"
		}
		if shown != prev {
			changes++
			prev = shown
		}
	}
	// In 3 minutes: the container countdown reaches "now" once, the image
	// countdown moves 3 times, the age 3 times; at most one tick each.
	if *ticks > 7 {
		t.Errorf("%d clock ticks in 3 minutes for three items read to the minute; want at most 7", *ticks)
	}
	if changes < 5 {
		t.Errorf("the Overview's clock lines read differently %d times in 3 minutes; want them to move", changes)
	}
}

// when is the Overview's countdown as its engine line spells it.
func when(t, now time.Time) string {
	if !t.After(now) {
		return "now"
	}
	return format.RoughIn(t, now) + " (" + t.Format(time.TimeOnly) + ")"
}

// tickedModel is a dashboard on ctl's node, on c's clock, with the event
// stream live, and the count of the clock ticks it arms.
func tickedModel(t *testing.T, c *fakeClock, ctl *fakeController) (Model, *int) {
	t.Helper()
	o := fixtureOptions(ctl, &c.now)
	ticks := new(int)
	o.timer = func(d time.Duration, fn func(time.Time) tea.Msg) tea.Cmd {
		*ticks++
		return c.timer(d, fn)
	}
	m := refreshNow(t, send(New(o), windowSize(160, 40)))
	m.o.Events = true
	m, _ = update(m, streamNotice(m, liveStream))
	return finishRefresh(t, m), ticks
}

// Issue 23 items 8 and 15: with no earlier image records, the Overview
// says when the first image becomes eligible, its countdown moves with the
// clock (to the minute), and the line goes once that time has come, with
// no new data.
func TestFirstSeenHoldCountsDownAndGoes(t *testing.T) {
	c := &fakeClock{now: fixedNow}
	snap := fixtureSnapshot()
	snap.ImageRecords = nil
	ctl := newFakeController(snap, engine.DefaultPolicy())
	ctl.status.Paused = true
	o := fixtureOptions(ctl, &c.now)
	o.Snapshot = func(context.Context) (engine.Snapshot, error) { return snap, nil }
	o.timer = c.timer
	m := refreshNow(t, send(New(o), windowSize(160, 40)))
	m.o.Events = true
	m, _ = update(m, streamNotice(m, liveStream))
	m = finishRefresh(t, m)
	hold := regexp.MustCompile(`none goes before 12:02:00 \((in \S+)\)`)
	read := func() string {
		t.Helper()
		if g := hold.FindStringSubmatch(ansi.Strip(m.Screen())); g != nil {
			return g[1]
		}
		return ""
	}
	for _, step := range []struct {
		after time.Duration
		want  string
	}{{0, "in 2m"}, {30 * time.Second, "in 1m"}, {time.Minute, "in <1m"}, {31 * time.Second, ""}} {
		m = c.advance(t, m, step.after)
		if got := read(); got != step.want {
			t.Fatalf("at %s: the hold reads %q, want %q:\n%s", c.now.Sub(fixedNow), got, step.want, ansi.Strip(m.Screen()))
		}
	}
	// Gone, not blanked: the pane down to its usage history (whose chart
	// follows the clock's samples) is laid out as a new render lays it out.
	top := func(m Model) string {
		s := ansi.Strip(m.Screen())
		return s[:strings.Index(s, "USAGE HISTORY")]
	}
	if got, want := top(m), top(send(m, windowSize(160, 40))); got != want {
		t.Errorf("after the hold, the Overview reads\n%s\nwhere a new render reads\n%s", got, want)
	}
}
