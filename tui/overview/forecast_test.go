package overview

import (
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/x/ansi"

	"github.com/nodegc/nodegc/engine"
	"github.com/nodegc/nodegc/forecast"
	"github.com/nodegc/nodegc/internal/format"
	"github.com/nodegc/nodegc/tui/internal/feed"
	"github.com/nodegc/nodegc/tui/keys"
	"github.com/nodegc/nodegc/tui/style"
)

// fill is a node filling its 100 GiB image fs at a steady 1 MiB/s from
// half full, with no image GC could remove: the state at each refresh.
type fill struct{ start time.Time }

const (
	fillCap  = int64(100 << 30)
	fillRate = int64(1 << 20) // bytes per second
)

func (f fill) state(i int, every time.Duration) feed.State {
	at := f.start.Add(time.Duration(i) * every)
	avail := fillCap/2 - int64(at.Sub(f.start).Seconds())*fillRate
	s := engine.Snapshot{TakenAt: at, ImageFs: engine.FsStats{Mountpoint: "/var/lib/containerd", CapacityBytes: fillCap, AvailableBytes: avail, UsedBytes: fillCap - avail}}
	return feed.State{Snapshot: s, At: at, Now: at, Refreshes: uint64(i + 1), Policy: engine.DefaultPolicy()}
}

// TestOverviewForecastLabel pins the Overview's forecast beside the usage
// history: before forecast.MinHistory of readings it says how much it
// needs; after 40 minutes of a steady fill it says when usage reaches the
// high threshold (available below 101-85 = 16% of capacity, the
// kubelet's rounding of usage) and when the bytes GC cannot remove reach
// the eviction line (the kubelet's default imagefs.available<15%), with
// a 90% interval that, on a smooth fill, is the estimate itself.
func TestOverviewForecastLabel(t *testing.T) {
	f := fill{start: time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)}
	m := New(keys.Default(true), style.Default(true))
	m.SetSize(160, 40)
	m, _ = m.Update(f.state(0, 2*time.Second))
	if s := ansi.Strip(m.View()); !strings.Contains(s, "FORECAST  from 20m of readings (since 10:00:00)") {
		t.Fatalf("at the first reading, the Overview lacks the forecast's wait:\n%s", s)
	}
	const every = 2 * time.Second // the dashboard's refresh: a reading every 10 s of them
	n := int((40 * time.Minute) / every)
	for i := 1; i <= n; i++ {
		m, _ = m.Update(f.state(i, every))
	}
	last := f.state(n, every)
	avail := last.Snapshot.ImageFs.AvailableBytes
	in := func(line float64) string {
		d := time.Duration((float64(avail) - line) / float64(fillRate) * float64(time.Second))
		r := format.Rough(d)
		return fmt.Sprintf("in %s (%s, 90%%: %s to %s)", r, last.At.Add(d).Format("15:04"), r, r)
	}
	s := ansi.Strip(m.View())
	for _, want := range []string{
		"FORECAST  high 85%: " + in(float64(fillCap)*16/100),
		"· DiskPressure despite GC: " + in(float64(fillCap)*15/100),
	} {
		if !strings.Contains(s, want) {
			t.Errorf("the Overview lacks %q:\n%s", want, s)
		}
	}
}

// TestOverviewForecastFromTheStateDir: a dashboard started on the state
// dir's history (the agent's) forecasts at its first refresh.
func TestOverviewForecastFromTheStateDir(t *testing.T) {
	f := fill{start: time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)}
	var rs []forecast.Reading
	for i := range 180 { // 30 minutes, a reading every 10 s
		s := f.state(i, 10*time.Second).Snapshot
		rs = append(rs, forecast.Reading{At: s.TakenAt, Capacity: s.ImageFs.CapacityBytes, Available: s.ImageFs.AvailableBytes})
	}
	m := New(keys.Default(true), style.Default(true)).WithForecastHistory(rs)
	m.SetSize(160, 40)
	m, _ = m.Update(f.state(180, 10*time.Second))
	if s := ansi.Strip(m.View()); !strings.Contains(s, "FORECAST  high 85%: in 9h") {
		t.Errorf("the Overview started on 30 minutes of history does not forecast:\n%s", s)
	}
}

// TestForecastWordsFarAway: a fill too slow to say when (past what a
// time.Duration holds) reads "over a year", not a wrapped duration.
func TestForecastWordsFarAway(t *testing.T) {
	at := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	f := forecast.Forecast{Status: forecast.StatusFilling, At: at, Estimate: 1e12, Lower: 1e11, Upper: math.Inf(1)}
	if got := lineWords(f, "now"); got != "in over a year" {
		t.Errorf("lineWords = %q, want %q", got, "in over a year")
	}
	f.Estimate, f.Lower, f.Upper = 3600, 1800, 1e11
	if got := lineWords(f, "now"); got != "in 1h0m (11:00, 90%: 30m to over a year)" {
		t.Errorf("lineWords = %q", got)
	}
}
