package agent

import (
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodegc/nodegc/api/v1alpha1"
	"github.com/nodegc/nodegc/engine"
	"github.com/nodegc/nodegc/engine/state"
	"github.com/nodegc/nodegc/forecast"
	"github.com/nodegc/nodegc/internal/safefile"
	"github.com/nodegc/nodegc/metrics"
	"github.com/nodegc/nodegc/nodeevents"
)

// forecastSaveEvery is how often the forecaster writes its history to
// the state dir (and at the agent's stop): a crash loses at most this
// much of it, and a node's disk sees one small write per period.
const forecastSaveEvery = 5 * time.Minute

// forecaster keeps the image filesystem's history from the engine's
// snapshots and the passes' reports, forecasts both lines after each
// reading, and serves them in the metrics. Snapshots reach it without
// blocking the engine (the latest one wins); it plans the reclaim-all
// pass on a goroutine of its own.
type forecaster struct {
	log    *slog.Logger
	dir    string // "" keeps the history in memory
	policy engine.Policy
	out    *metrics.Forecasts
	uptime func() time.Duration // Reading.Uptime: the monotonic clock
	snaps  chan observed

	// events, when set, takes the Warning event of DiskPressure that no
	// GC prevents, forecast within warn's horizon.
	events *nodeevents.Recorder
	warn   forecast.Warner

	mu        sync.Mutex
	hist      *forecast.History
	freed     int64 // by passes since the last reading
	latest    []forecast.Forecast
	lastSaved time.Time
}

// newForecaster loads the history from dir (a corrupt file is moved
// aside with a warning, as the image records are) and returns the
// forecaster, not yet running. uptime is the monotonic clock (nil: the
// process's).
func newForecaster(log *slog.Logger, dir string, p engine.Policy, now time.Time, uptime func() time.Duration) *forecaster {
	if uptime == nil {
		start := time.Now()
		uptime = func() time.Duration { return time.Since(start) }
	}
	f := &forecaster{log: log, dir: dir, policy: p, out: &metrics.Forecasts{}, uptime: uptime, snaps: make(chan observed, 1), lastSaved: now}
	rs, err := loadHistory(dir, now)
	if err != nil {
		log.Warn("forecast history", "err", err)
	}
	f.hist = forecast.NewHistory(rs, nil)
	return f
}

// loadHistory reads the history file of dir (ReadForecastHistory). A
// missing file is an empty history; a corrupt one is moved to
// <file>.corrupt-<unix time>, and the error says so.
func loadHistory(dir string, now time.Time) ([]forecast.Reading, error) {
	rs, err := ReadForecastHistory(dir)
	var corrupt *corruptHistoryError
	if !errors.As(err, &corrupt) {
		return rs, err
	}
	path := filepath.Join(dir, forecast.FileName)
	aside := fmt.Sprintf("%s.corrupt-%d", path, now.Unix())
	if err := os.Rename(path, aside); err != nil {
		return nil, fmt.Errorf("%w, and could not be moved aside: %w", corrupt, err)
	}
	return nil, fmt.Errorf("%w: moved to %s, starting fresh", corrupt, aside)
}

// corruptHistoryError is a history file that does not decode.
type corruptHistoryError struct {
	path string
	err  error
}

func (e *corruptHistoryError) Error() string {
	return fmt.Sprintf("history %s is corrupt (%v)", e.path, e.err)
}

// ReadForecastHistory returns the readings of the forecast history the
// agent keeps in the state dir dir, oldest first, reading the file
// without following a symlink or waiting on a FIFO: the dashboard starts
// its forecast from them. A missing file, or dir "", is no reading.
func ReadForecastHistory(dir string) ([]forecast.Reading, error) {
	if dir == "" {
		return nil, nil
	}
	path := filepath.Join(dir, forecast.FileName)
	data, err := state.ReadFileAtMost(dir, forecast.FileName, maxHistoryBytes)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read forecast history: %w; starting a fresh history in memory", err)
	}
	rs, err := forecast.Decode(data)
	if err != nil {
		return nil, &corruptHistoryError{path, err}
	}
	return rs, nil
}

// maxHistoryBytes bounds what ReadForecastHistory reads of the history
// file: far above the bounded history the agent writes.
const maxHistoryBytes = 8 << 20

// observe hands a snapshot to run without blocking: a snapshot not yet
// read is replaced by the newer one. It fits engine.Options.OnSnapshot.
func (f *forecaster) observe(s engine.Snapshot) {
	engine.SendNewest(f.snaps, observed{s, f.uptime()})
}

// observed is a snapshot with the monotonic clock read as it was handed
// over, not when run gets to it: a busy agent's lag between the two would
// read as the wall clock jumping.
type observed struct {
	engine.Snapshot
	uptime time.Duration
}

// observeReport counts what a real pass freed (forecast.FreedBy): the
// next reading carries it, and the fit adds it back.
func (f *forecaster) observeReport(r engine.PassReport) {
	f.mu.Lock()
	f.freed += forecast.FreedBy(r)
	f.mu.Unlock()
}

// startForecast follows s's notices and the snapshots on a goroutine
// in wg until the returned stop is called; the history is saved then.
// events (nil: none) takes the forecast's Warning event.
func (f *forecaster) startForecast(s *engine.Scheduler, wg *sync.WaitGroup, events *nodeevents.Recorder) (stop func()) {
	f.events = events
	notices, unsubscribe := s.Subscribe()
	wg.Go(func() { f.run(notices) })
	return unsubscribe
}

// run reads snapshots and the scheduler's notices until the notices
// close, then saves the history. Its own subscription loses a pass's
// report only when 64 notices follow it before it is read.
func (f *forecaster) run(notices <-chan engine.Notice) {
	for {
		select {
		case o := <-f.snaps:
			f.add(o.Snapshot, o.uptime)
		case n, ok := <-notices:
			if !ok {
				f.save(time.Now())
				return
			}
			if n.Report != nil {
				f.observeReport(*n.Report)
			}
		}
	}
}

// add turns a snapshot into a reading, forecasts, and saves the history
// when forecastSaveEvery has passed.
func (f *forecaster) add(s engine.Snapshot, uptime time.Duration) {
	if f.tooSoon(s.TakenAt) {
		return // the history would drop it: spare the plan
	}
	r, plan := forecast.ReadingOf(s, f.policy)
	f.mu.Lock()
	r.Freed, r.Uptime = f.freed, uptime
	f.freed = 0
	if err := f.hist.Add(r); err != nil {
		f.log.Warn("forecast history", "err", err)
	}
	f.latest = forecast.Predict(f.hist.Readings(), forecast.OptionsFor(f.policy, plan.DiskReserve, 0))
	since := s.TakenAt.Sub(f.lastSaved)
	due := since >= forecastSaveEvery || since < 0 // < 0: the clock went back
	f.mu.Unlock()
	f.out.Set(f.latest)
	f.warnPressure(f.latest[1])
	if due {
		f.save(s.TakenAt)
	}
}

// warnPressure logs, and sends as a Warning event on the Node, an
// eviction forecast within the horizon, once (forecast.Warner).
func (f *forecaster) warnPressure(ev forecast.Forecast) {
	if !f.warn.Warn(ev) {
		return
	}
	e := nodeevents.DiskPressureForecast(ev, f.policy.Disk.EvictionHard["imagefs.available"])
	f.log.Warn(e.Note, "reason", e.Reason)
	f.events.Queue(e)
}

// tooSoon reports whether t is within forecast.MinSpacing after the
// latest reading (a clock that went back is not: the history restarts).
func (f *forecaster) tooSoon(t time.Time) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	rs := f.hist.Readings()
	if len(rs) == 0 {
		return false
	}
	d := t.Sub(rs[len(rs)-1].At)
	return d >= 0 && d < forecast.MinSpacing
}

// save writes the history to the state dir atomically (safefile.Write);
// a failure is logged, and the next save tries again.
func (f *forecaster) save(now time.Time) {
	if f.dir == "" {
		return
	}
	f.mu.Lock()
	data, err := forecast.Encode(f.hist, now)
	f.lastSaved = now
	f.mu.Unlock()
	if err == nil {
		path := filepath.Join(f.dir, forecast.FileName)
		if err = safefile.Write(path, data, 0o600); err != nil {
			err = fmt.Errorf("write %s: %w", path, err)
		}
	}
	if err != nil {
		f.log.Warn("forecast history", "err", err)
	}
}

// Forecasts returns the latest forecasts (gc_threshold, eviction); nil
// before the first reading.
func (f *forecaster) Forecasts() []forecast.Forecast {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.latest
}

// objectSteps are the steps a forecast's times are rounded to in the
// NodeGC object, the largest at most a tenth of their distance: a
// forecast 3 hours away moves in steps of 10 minutes, one a day away in
// steps of an hour.
var objectSteps = []time.Duration{24 * time.Hour, 6 * time.Hour, time.Hour, 30 * time.Minute, 10 * time.Minute, 5 * time.Minute, time.Minute}

// objectHorizon is the farthest time the object gives: a fill slower
// than that is "filling" without a time (and a time.Duration holds no
// more than 292 years).
const objectHorizon = 365 * 24 * time.Hour

// objectStep is the step of a time d away.
func objectStep(d time.Duration) time.Duration {
	for _, s := range objectSteps {
		if s <= d/10 {
			return s
		}
	}
	return time.Minute
}

// objectForecast is the eviction forecast ev as the NodeGC object shows
// it: its times rounded (objectStep), and shown, the one last written,
// kept while ev says the same within a step of its estimate, so that a
// steady forecast, made again at each reading, is not a write each time.
// nil when there is no forecast yet.
func objectForecast(ev *forecast.Forecast, shown *v1alpha1.Forecast) *v1alpha1.Forecast {
	if ev == nil {
		return nil
	}
	out := &v1alpha1.Forecast{Status: string(ev.Status)}
	if ev.Status != forecast.StatusFilling {
		return out
	}
	at := func(secs float64) *metav1.Time {
		if math.IsNaN(secs) || secs > objectHorizon.Seconds() {
			return nil // never, or too far to say
		}
		d := time.Duration(secs * float64(time.Second))
		return &metav1.Time{Time: ev.At.Add(d).Round(objectStep(d)).UTC()}
	}
	if ev.Estimate > objectHorizon.Seconds() {
		return out // filling, too slowly to say when
	}
	est := ev.At.Add(time.Duration(ev.Estimate * float64(time.Second)))
	if shown != nil && shown.Status == out.Status && shown.At != nil {
		if diff := est.Sub(shown.At.Time).Abs(); diff <= objectStep(est.Sub(ev.At)) {
			return shown
		}
	}
	out.At, out.Earliest, out.Latest = at(ev.Estimate), at(ev.Lower), at(ev.Upper)
	return out
}

// evictionForecast is the latest eviction forecast; nil before the
// first reading.
func (f *forecaster) evictionForecast() *forecast.Forecast {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.latest) < 2 {
		return nil
	}
	ev := f.latest[1]
	return &ev
}
