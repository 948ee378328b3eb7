package overview

import (
	"fmt"
	"math"
	"time"

	"github.com/nodegc/nodegc/engine"
	"github.com/nodegc/nodegc/forecast"
	"github.com/nodegc/nodegc/internal/format"
)

// forecaster is the pane's image fs forecast (docs/forecast.md), made by
// the forecast package as the agent makes it: a history of readings,
// started from the state dir's (the agent's, saved every 5 minutes) and
// taken at the refreshes at most one per forecast.MinSpacing, the bytes
// the passes seen since the last reading freed, and the latest
// forecasts. The pane's copies share it: only Update writes it.
type forecaster struct {
	hist   *forecast.History
	freed  int64
	latest []forecast.Forecast
	// restarted says why the history last started afresh ("" when it
	// did not).
	restarted string
}

// newForecaster starts a forecast from readings (oldest first).
func newForecaster(readings []forecast.Reading) *forecaster {
	return &forecaster{hist: forecast.NewHistory(readings, nil)}
}

// add takes a refresh's snapshot as a reading and forecasts again; a
// snapshot without a capacity, or within MinSpacing of the last reading,
// is not read (its plan would be spared).
func (f *forecaster) add(s engine.Snapshot, p engine.Policy) {
	if s.ImageFs.CapacityBytes <= 0 || s.TakenAt.IsZero() {
		return
	}
	if rs := f.hist.Readings(); len(rs) > 0 {
		if d := s.TakenAt.Sub(rs[len(rs)-1].At); d >= 0 && d < forecast.MinSpacing {
			return
		}
	}
	r, plan := forecast.ReadingOf(s, p)
	r.Freed, f.freed = f.freed, 0
	if err := f.hist.Add(r); err != nil {
		f.restarted = err.Error()
	}
	f.latest = forecast.Predict(f.hist.Readings(), forecast.OptionsFor(p, plan.DiskReserve, 0))
}

// forecastLine is the pane's forecast of both lines: when usage reaches
// the high threshold (GC acts) and when what GC cannot remove reaches
// the eviction line (DiskPressure despite GC), each with its 90%
// interval, counted from the reading it was made at; "" before the
// first reading.
func (m Model) forecastLine() string {
	f := m.fc
	if f == nil || len(f.latest) < 2 {
		return ""
	}
	st := m.st
	gc, ev := f.latest[0], f.latest[1]
	head := st.Header.Render("FORECAST") + "  "
	if gc.Status == forecast.StatusNotEnoughHistory && ev.Status == forecast.StatusNotEnoughHistory {
		rs := f.hist.Readings()
		return head + m.label(fmt.Sprintf("from %s of readings (since %s)", format.Rough(forecast.MinHistory), rs[0].At.Format(time.TimeOnly)))
	}
	evWords := lineWords(ev, "now")
	switch {
	case ev.Status == forecast.StatusCrossed:
		evWords = st.Bad.Render(evWords)
	case ev.Status == forecast.StatusFilling && ev.Estimate <= forecast.DefaultWarnWithin.Seconds():
		evWords = st.Warn.Render(evWords)
	}
	return head + m.label(fmt.Sprintf("high %d%%:", m.d.Policy.Image.HighThresholdPercent)) + " " + lineWords(gc, "reached") +
		"  " + m.label("· DiskPressure despite GC:") + " " + evWords
}

// farAway is the farthest forecast said as a time (a time.Duration
// holds no more than 292 years).
const farAway = 365 * 24 * time.Hour

// lineWords says one line's forecast: "in 2h10m (15:10, 90%: 1h50m to
// 2h40m)", crossed (a line's own word), "not filling", "needs 20m of
// readings".
func lineWords(f forecast.Forecast, crossed string) string {
	switch f.Status {
	case forecast.StatusCrossed:
		return crossed
	case forecast.StatusNotFilling:
		return "not filling"
	case forecast.StatusNoLine:
		return "no line"
	case forecast.StatusNotEnoughHistory:
		return fmt.Sprintf("needs %s of readings", format.Rough(forecast.MinHistory))
	}
	secs := func(s float64) string {
		switch {
		case math.IsInf(s, 1):
			return "never"
		case s > farAway.Seconds():
			return "over a year"
		}
		return format.Rough(time.Duration(s * float64(time.Second)))
	}
	if f.Estimate > farAway.Seconds() {
		return "in " + secs(f.Estimate)
	}
	at := f.At.Add(time.Duration(f.Estimate * float64(time.Second)))
	return fmt.Sprintf("in %s (%s, 90%%: %s to %s)", secs(f.Estimate), at.Format("15:04"), secs(f.Lower), secs(f.Upper))
}
