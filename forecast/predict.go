package forecast

import (
	"math"
	"time"
)

// Line names the line a forecast is for: the metrics' line label.
type Line string

// The two lines.
const (
	// LineGCThreshold is the image GC high threshold: usage reaches it
	// and the next image pass acts.
	LineGCThreshold Line = "gc_threshold"
	// LineEviction is the imagefs.available eviction threshold, reached
	// by what GC cannot remove: the bytes available even once every
	// reclaimable image is gone.
	LineEviction Line = "eviction"
)

// Status is a forecast's answer.
type Status string

// Forecast answers.
const (
	// StatusCrossed: the line is crossed at the latest reading.
	StatusCrossed Status = "crossed"
	// StatusFilling: the line is ahead, at Estimate within [Lower, Upper].
	StatusFilling Status = "filling"
	// StatusNotFilling: the fitted rate does not approach the line.
	StatusNotFilling Status = "not-filling"
	// StatusNotEnoughHistory: too few readings in the window to fit.
	StatusNotEnoughHistory Status = "not-enough-history"
	// StatusNoLine: the line is not set (no eviction threshold on
	// imagefs.available, image GC disabled).
	StatusNoLine Status = "no-line"
)

// Options set the lines and the fit.
type Options struct {
	// HighThresholdPercent is the image GC high threshold; usage reaches
	// it when 100 - floor(available*100/capacity) >= it (the kubelet's
	// rounding). 0 or more than 100: no GC line.
	HighThresholdPercent int
	// EvictionBytes is imagefs.available's eviction threshold in bytes
	// at the history's capacity; the line is crossed when available is
	// below it. 0: no eviction line.
	EvictionBytes int64
	// Window is how much recent history the fit uses (default
	// DefaultWindow).
	Window time.Duration
}

// DefaultWindow is the history the fit uses: long enough to span many
// image GC periods (5 minutes) and bursts of pulls, short enough to
// follow a node whose rate changes. The backtest (docs/forecast.md)
// compared 1, 3 and 6 hours.
const DefaultWindow = 3 * time.Hour

// MinHistory is the least growth time the fit needs in its window.
const MinHistory = 20 * time.Minute

// MaxGap is the longest interval between two readings the fit uses: a
// longer one is the agent down (a restart), whose growth is unknown.
const MaxGap = 15 * time.Minute

// blocks is how many equal slices of the window the rate's spread is
// measured over.
const blocks = 6

// z widens the rate's standard error to its bounds: 1.645, a two-sided
// 90% interval of a normal law.
const z = 1.645

// Forecast is one line's forecast, made at the latest reading.
type Forecast struct {
	Line   Line
	Status Status
	// At is the latest reading's time, when the forecast is made.
	At time.Time
	// Estimate, Lower and Upper are the time from At until the line is
	// crossed and its bounds; +Inf when never (Upper when the rate may
	// be zero, all three when not filling). 0 once crossed.
	Estimate, Lower, Upper float64
	// Headroom is the bytes left before the line at At.
	Headroom int64
	// Rate is the fitted consumption of headroom in bytes per second.
	Rate float64
}

// Predict returns the forecasts of both lines from the history's
// readings: LineGCThreshold first, then LineEviction.
func Predict(rs []Reading, o Options) []Forecast {
	return []Forecast{PredictLine(rs, LineGCThreshold, o), PredictLine(rs, LineEviction, o)}
}

// PredictLine forecasts one line. The series fitted is the headroom to
// the line: for the GC threshold, available with what GC passes freed
// added back (so the saw-tooth's steps down do not read as the node
// emptying); for eviction, available plus reclaimable, which a pass does
// not change (it turns reclaimable bytes into available ones). The rate
// is the headroom lost over the window's intervals, per second of them;
// its bounds come from the spread of the rates of the window's blocks.
func PredictLine(rs []Reading, line Line, o Options) Forecast {
	if len(rs) == 0 {
		return Forecast{Line: line, Status: StatusNotEnoughHistory, Estimate: math.NaN(), Lower: math.NaN(), Upper: math.NaN()}
	}
	last := rs[len(rs)-1]
	f := Forecast{Line: line, At: last.At, Estimate: math.Inf(1), Lower: math.Inf(1), Upper: math.Inf(1)}
	level, ok := lineLevel(line, last.Capacity, o)
	if !ok {
		f.Status, f.Estimate, f.Lower, f.Upper = StatusNoLine, math.NaN(), math.NaN(), math.NaN()
		return f
	}
	head := headroom(line, last)
	f.Headroom = int64(math.Floor(float64(head) - level))
	if float64(head) < level {
		f.Status, f.Estimate, f.Lower, f.Upper, f.Headroom = StatusCrossed, 0, 0, 0, 0
		return f
	}
	from := last.At.Add(-cmpOr(o.Window, DefaultWindow))
	if rs[0].At.After(from) {
		from = rs[0].At // a younger history is fitted whole
	}
	r, ok := fitRate(rs, line, from, last.At)
	if !ok {
		f.Status, f.Estimate, f.Lower, f.Upper = StatusNotEnoughHistory, math.NaN(), math.NaN(), math.NaN()
		return f
	}
	f.Rate = r.mean
	gap := float64(head) - level
	at := func(rate float64) float64 {
		if rate <= 0 {
			return math.Inf(1)
		}
		return gap / rate
	}
	f.Estimate = at(r.mean)
	f.Lower, f.Upper = bounds(f.Estimate, r, gap)
	f.Status = StatusFilling
	if r.mean <= 0 {
		f.Status = StatusNotFilling
	}
	return f
}

// bounds returns the interval around an estimate t of the time to
// consume gap, from two uncertainties combined in log space: the rate's
// (its z-standard-error bounds give the times gap/high and gap/low) and
// the arrival of the steps the headroom goes in. Consuming gap in steps
// of r.step takes about n = gap/step of them, and the total time of n
// exponential waits varies by 1/√n of itself: z/√n more. Upper is +Inf
// when the rate may be zero.
func bounds(t float64, r rate, gap float64) (lower, upper float64) {
	if r.high <= 0 {
		return math.Inf(1), math.Inf(1)
	}
	steps := 0.0 // a smooth fill
	if r.step > 0 {
		steps = z / math.Sqrt(max(gap/r.step, 1))
	}
	widen := func(byRate float64) float64 { return math.Exp(math.Hypot(math.Log(byRate), steps)) }
	if math.IsInf(t, 1) {
		return gap / r.high / widen(1), math.Inf(1)
	}
	lower = t / widen(t/(gap/r.high))
	if r.low <= 0 {
		return lower, math.Inf(1)
	}
	return lower, t * widen((gap/r.low)/t)
}

// lineLevel returns the headroom level below which the line is crossed.
// The GC line: usage reaches High when available*100 < capacity*(101-High).
func lineLevel(line Line, capacity int64, o Options) (float64, bool) {
	switch line {
	case LineGCThreshold:
		h := o.HighThresholdPercent
		if h <= 0 || h > 100 {
			return 0, false
		}
		return float64(capacity) * float64(101-h) / 100, true
	case LineEviction:
		return float64(o.EvictionBytes), o.EvictionBytes > 0
	}
	return 0, false
}

// headroom is the series a line is fitted on, at one reading.
func headroom(line Line, r Reading) int64 {
	if line == LineEviction {
		return r.afterReclaim()
	}
	return r.available()
}

// rate is a fitted rate of headroom lost, bytes per second, with bounds.
type rate struct {
	mean, low, high float64
	// step is the intervals' losses' variance over their mean: for
	// losses that come in steps of one size at random (pulls) it is that
	// size; for a smooth fill, 0.
	step float64
}

// fitRate fits the headroom lost per second over the readings in
// [from, to]. Each interval between two readings at most MaxGap apart
// counts: its loss is the headroom before minus after, plus, on the GC
// line, what passes freed in it. The mean is the total loss over the
// total time; the bounds are mean ± z·s/√n, s the standard deviation of
// the rates of the blocks (equal slices of the window) that hold at
// least half their length in intervals. ok is false with less than
// MinHistory of intervals or fewer than three such blocks.
func fitRate(rs []Reading, line Line, from, to time.Time) (rate, bool) {
	span := to.Sub(from)
	if span < MinHistory {
		return rate{}, false
	}
	var loss, secs [blocks]float64
	var n, sumL, sumL2 float64
	for i := 1; i < len(rs); i++ {
		a, b := rs[i-1], rs[i]
		if a.At.Before(from) {
			continue
		}
		dt := b.At.Sub(a.At)
		if dt <= 0 || dt > MaxGap {
			continue
		}
		l := float64(headroom(line, a) - headroom(line, b))
		if line == LineGCThreshold {
			l += float64(b.Freed)
		}
		n, sumL, sumL2 = n+1, sumL+l, sumL2+l*l
		k := min(int(float64(b.At.Sub(from))/float64(span)*blocks), blocks-1)
		loss[k] += l
		secs[k] += dt.Seconds()
	}
	r, ok := blockRate(loss[:], secs[:], span.Seconds()/blocks)
	if mean := sumL / max(n, 1); mean > 0 {
		r.step = max(sumL2/n-mean*mean, 0) / mean
	}
	return r, ok
}

// blockRate combines the blocks' losses and times into a rate with
// bounds; see fitRate.
func blockRate(loss, secs []float64, blockSecs float64) (rate, bool) {
	var total, totalSecs float64
	var rates []float64
	for k := range loss {
		total += loss[k]
		totalSecs += secs[k]
		if secs[k] >= blockSecs/2 {
			rates = append(rates, loss[k]/secs[k])
		}
	}
	if totalSecs < MinHistory.Seconds() || len(rates) < 3 {
		return rate{}, false
	}
	mean := total / totalSecs
	var ss float64
	for _, r := range rates {
		ss += (r - mean) * (r - mean)
	}
	se := math.Sqrt(ss/float64(len(rates)-1)) / math.Sqrt(float64(len(rates)))
	return rate{mean: mean, low: mean - z*se, high: mean + z*se}, true
}

// cmpOr returns d, or def when d is not positive.
func cmpOr(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}

// DefaultWarnWithin is how soon DiskPressure that no GC prevents must be
// forecast for the agent to warn on the Node: the example critical
// alert's horizon.
const DefaultWarnWithin = 4 * time.Hour

// Warner decides when to warn of an eviction forecast: once when the
// estimate first falls within its horizon (or the line is crossed), and
// again only after the forecast left the horizon (beyond twice it, not
// filling, or not enough history), so a forecast wavering around the
// horizon does not repeat. Its zero value warns within
// DefaultWarnWithin.
type Warner struct {
	// Within is the horizon; 0 means DefaultWarnWithin.
	Within time.Duration
	warned bool
}

// Warn reports whether f (an eviction forecast) is to be warned of now.
func (w *Warner) Warn(f Forecast) bool {
	within := cmpOr(w.Within, DefaultWarnWithin).Seconds()
	switch {
	case f.Status == StatusCrossed || (f.Status == StatusFilling && f.Estimate <= within):
		fire := !w.warned
		w.warned = true
		return fire
	case f.Status == StatusFilling && f.Estimate <= 2*within:
		return false // still near: stay quiet, and do not re-arm
	}
	w.warned = false
	return false
}
