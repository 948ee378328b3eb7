package forecast_test

import (
	"flag"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nodegc/nodegc/forecast"
)

// backtestTable, set, makes TestBacktest print its error tables in
// markdown (docs/forecast.md holds them).
var backtestTable = flag.Bool("backtest.table", false, "print the backtest's error tables")

// backtestScenarios are the histories the backtest replays: several fill
// rates, bursty pulls, a node that levels off, and nodes whose GC frees
// less and less (bytes it cannot remove grow: images that stay in use
// and writes besides images).
func backtestScenarios() []scenario {
	slow, medium, fast := baseNode(11, 0.004), baseNode(12, 0.015), baseNode(13, 0.05)
	bursty := baseNode(14, 0.0015)
	bursty.Workload.PullMinBytes, bursty.Workload.PullMaxBytes = gib, 2*gib
	levels := baseNode(15, 0.015)
	shrinking := baseNode(16, 0.01)
	shrinking.Workload.PodDeleteProbability = 0 // pulled images come into use and stay
	shrinking.Workload.GrowthBytes = 2 * mib
	growing := baseNode(17, 0.03)
	growing.Workload.GrowthBytes = 5 * mib
	return []scenario{
		{name: "slow fill", node: slow, duration: 12 * time.Hour},
		{name: "medium fill", node: medium, duration: 12 * time.Hour},
		{name: "fast fill", node: fast, duration: 12 * time.Hour},
		{name: "bursty pulls", node: bursty, duration: 12 * time.Hour},
		{name: "levels off after 4h", node: levels, duration: 12 * time.Hour, levelOff: 4 * time.Hour},
		{name: "GC frees less and less", node: shrinking, duration: 12 * time.Hour},
		{name: "fast, GC frees less and less", node: growing, duration: 12 * time.Hour},
	}
}

// method is one way to forecast a line from the readings.
type method struct {
	name    string
	predict func(rs []forecast.Reading, line forecast.Line, o forecast.Options) forecast.Forecast
}

// methods are the fit at three windows, and kube-prometheus's way
// (predict_linear: least squares over the raw series) for comparison.
var methods = []method{
	{"growth fit, 3h (default)", withWindow(3 * time.Hour)},
	{"growth fit, 1h", withWindow(time.Hour)},
	{"growth fit, 6h", withWindow(6 * time.Hour)},
	{"least squares, 3h (predict_linear)", leastSquares(3 * time.Hour)},
}

func withWindow(w time.Duration) func([]forecast.Reading, forecast.Line, forecast.Options) forecast.Forecast {
	return func(rs []forecast.Reading, line forecast.Line, o forecast.Options) forecast.Forecast {
		o.Window = w
		return forecast.PredictLine(rs, line, o)
	}
}

// leastSquares fits a line through the raw headroom (no add-back of
// what GC freed) over the window, as predict_linear does, and extends it
// to the line; its status comes from PredictLine.
func leastSquares(w time.Duration) func([]forecast.Reading, forecast.Line, forecast.Options) forecast.Forecast {
	return func(rs []forecast.Reading, line forecast.Line, o forecast.Options) forecast.Forecast {
		o.Window = w
		f := forecast.PredictLine(rs, line, o)
		if f.Status != forecast.StatusFilling && f.Status != forecast.StatusNotFilling {
			return f
		}
		last := rs[len(rs)-1]
		var n, sx, sy, sxx, sxy float64
		for _, r := range rs {
			if last.At.Sub(r.At) > w {
				continue
			}
			x := r.At.Sub(last.At).Seconds()
			y := float64(r.Available)
			if line == forecast.LineEviction {
				y = float64(min(r.Available+r.Reclaimable, r.Capacity))
			}
			n, sx, sy, sxx, sxy = n+1, sx+x, sy+y, sxx+x*x, sxy+x*y
		}
		slope := (n*sxy - sx*sy) / (n*sxx - sx*sx)
		f.Estimate, f.Lower, f.Upper = math.Inf(1), math.Inf(1), math.Inf(1)
		if slope < 0 {
			f.Estimate = float64(f.Headroom) / -slope
			f.Lower, f.Upper = f.Estimate, f.Estimate
		}
		return f
	}
}

// outcome is one forecast scored against what happened.
type outcome struct {
	horizon  time.Duration // actual time to the crossing
	relErr   float64       // |estimate - horizon| / horizon; +Inf for "not filling"
	absMin   float64       // |estimate - horizon| in minutes
	covered  bool          // the actual crossing within [lower, upper]
	crossing bool          // false: no crossing followed within the run
	early    bool          // no crossing followed, yet the estimate fell within the run
}

// score replays a run: at each reading where the line is not crossed and
// the method answers (filling or not filling), it compares the forecast
// with the next crossing.
func score(run simRun, line forecast.Line, m method) []outcome {
	crossed := run.gcCrossed
	if line == forecast.LineEviction {
		crossed = run.evCrossed
	}
	end := run.readings[len(run.readings)-1].At
	var out []outcome
	for i := range run.readings {
		if crossed[i] {
			continue
		}
		f := m.predict(run.readings[:i+1], line, run.lines)
		if f.Status != forecast.StatusFilling && f.Status != forecast.StatusNotFilling {
			continue
		}
		next := slices.Index(crossed[i+1:], true)
		at := run.readings[i].At
		if next < 0 {
			out = append(out, outcome{early: f.Estimate < end.Sub(at).Seconds()})
			continue
		}
		h := run.readings[i+1+next].At.Sub(at)
		abs := math.Abs(f.Estimate - h.Seconds())
		out = append(out, outcome{horizon: h, crossing: true, relErr: abs / h.Seconds(),
			absMin: abs / 60, covered: f.Lower <= h.Seconds() && h.Seconds() <= f.Upper})
	}
	return out
}

// horizons are the table's rows: the actual time to the crossing.
var horizons = []struct {
	name   string
	lo, hi time.Duration
}{
	{"≤ 30 min", 0, 30 * time.Minute},
	{"30 min – 2 h", 30 * time.Minute, 2 * time.Hour},
	{"2 h – 6 h", 2 * time.Hour, 6 * time.Hour},
	{"> 6 h", 6 * time.Hour, math.MaxInt64},
}

// quantile returns the q-quantile of xs (sorted in place); NaN when empty.
func quantile(xs []float64, q float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	slices.Sort(xs)
	return xs[min(int(q*float64(len(xs))), len(xs)-1)]
}

// table renders the outcomes of one line and method by horizon.
// stats are one row's figures: median error and the share of actual
// crossings within the bounds.
type stats struct{ median, covered float64 }

func table(outs []outcome) (string, map[string]stats) {
	var b strings.Builder
	rows := map[string]stats{}
	b.WriteString("| horizon | forecasts | median error | p90 error | median error (min) | actual within bounds |\n|---|---|---|---|---|---|\n")
	for _, h := range horizons {
		var rel, abs []float64
		covered := 0
		for _, o := range outs {
			if o.crossing && o.horizon > h.lo && o.horizon <= h.hi {
				rel = append(rel, o.relErr)
				abs = append(abs, o.absMin)
				if o.covered {
					covered++
				}
			}
		}
		if len(rel) == 0 {
			fmt.Fprintf(&b, "| %s | 0 | | | | |\n", h.name)
			continue
		}
		rows[h.name] = stats{median: quantile(rel, 0.5), covered: float64(covered) / float64(len(rel))}
		fmt.Fprintf(&b, "| %s | %d | %s | %s | %s | %.0f%% |\n", h.name, len(rel), pct(rows[h.name].median), pct(quantile(rel, 0.9)), minutes(quantile(abs, 0.5)), 100*rows[h.name].covered)
	}
	none, early := 0, 0
	for _, o := range outs {
		if !o.crossing {
			none++
			if o.early {
				early++
			}
		}
	}
	fmt.Fprintf(&b, "\nNo crossing followed %d forecasts; %d of them (%s) expected one within the run.\n", none, early, pct(float64(early)/math.Max(float64(none), 1)))
	return b.String(), rows
}

// minutes formats a count of minutes, ∞ for +Inf.
func minutes(m float64) string {
	if math.IsInf(m, 1) {
		return "∞"
	}
	return fmt.Sprintf("%.0f", m)
}

// pct formats a ratio as a percentage, ∞ for +Inf.
func pct(x float64) string {
	if math.IsInf(x, 1) {
		return "∞"
	}
	return fmt.Sprintf("%.0f%%", 100*x)
}

// TestBacktest replays the scenarios and scores every method's
// forecasts of both lines against the crossings that followed. It checks
// the default fit's median errors (checkBacktest); -backtest.table
// prints the tables of docs/forecast.md.
func TestBacktest(t *testing.T) {
	if testing.Short() {
		t.Skip("the backtest simulates 84 hours of nodes")
	}
	outs := map[string][]outcome{}
	for _, sc := range backtestScenarios() {
		run := simulate(t, sc)
		gcN, evN := count(run.gcCrossed), count(run.evCrossed)
		t.Logf("%s: %d readings, GC threshold crossed at %d, eviction line at %d", sc.name, len(run.readings), gcN, evN)
		for _, m := range methods {
			for _, line := range []forecast.Line{forecast.LineGCThreshold, forecast.LineEviction} {
				k := m.name + "|" + string(line)
				outs[k] = append(outs[k], score(run, line, m)...)
			}
		}
	}
	results := map[string]map[string]stats{}
	for _, line := range []forecast.Line{forecast.LineGCThreshold, forecast.LineEviction} {
		for _, m := range methods {
			tab, rows := table(outs[m.name+"|"+string(line)])
			results[m.name+"|"+string(line)] = rows
			if *backtestTable {
				fmt.Printf("\n#### %s: %s\n\n%s", line, m.name, tab)
			}
		}
	}
	checkBacktest(t, results)
}

// checkBacktest holds the default fit to what it achieved when it was
// chosen (docs/forecast.md): on the GC threshold, at most 40% median
// error an hour or two ahead and at most half of least squares' (the
// saw-tooth GC makes defeats a fit of the raw series); on the eviction
// line, at most 20% from 30 minutes to 6 hours ahead; on both, the
// bounds hold at least 80% of the actual crossings within 2 hours.
func checkBacktest(t *testing.T, results map[string]map[string]stats) {
	t.Helper()
	fit, ls := methods[0].name, methods[3].name
	gc, ev := "|"+string(forecast.LineGCThreshold), "|"+string(forecast.LineEviction)
	med := func(m, line, row string) float64 { return results[m+line][row].median }
	cov := func(line, row string) float64 { return results[fit+line][row].covered }
	checks := []struct {
		what       string
		got, limit float64
	}{
		{"GC threshold, 30 min – 2 h", med(fit, gc, "30 min – 2 h"), 0.4},
		{"GC threshold, ≤ 30 min, against least squares", med(fit, gc, "≤ 30 min"), med(ls, gc, "≤ 30 min") / 2},
		{"GC threshold, 30 min – 2 h, against least squares", med(fit, gc, "30 min – 2 h"), med(ls, gc, "30 min – 2 h") / 2},
		{"eviction, 30 min – 2 h", med(fit, ev, "30 min – 2 h"), 0.2},
		{"eviction, 2 h – 6 h", med(fit, ev, "2 h – 6 h"), 0.2},
	}
	for _, c := range checks {
		if !(c.got <= c.limit) {
			t.Errorf("%s: median error %s, want at most %s", c.what, pct(c.got), pct(c.limit))
		}
	}
	for _, line := range []string{gc, ev} {
		for _, row := range []string{"≤ 30 min", "30 min – 2 h"} {
			if c := cov(line, row); !(c >= 0.8) {
				t.Errorf("%s, %s: bounds hold %s of the crossings, want at least 80%%", line[1:], row, pct(c))
			}
		}
	}
}

// count is how many are true.
func count(bs []bool) int {
	n := 0
	for _, b := range bs {
		if b {
			n++
		}
	}
	return n
}
