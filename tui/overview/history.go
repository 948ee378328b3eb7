package overview

import (
	"fmt"
	"strings"
	"time"

	"github.com/nodegc/nodegc/engine"
)

// MaxHistory bounds each series of the session's history.
const MaxHistory = 720

// History is the session's history: the image fs usage at each refresh
// and the bytes each pass freed, oldest first.
type History struct {
	Usage []Sample
	Freed []Sample
	// lastPass is the last pass counted in Freed (its run, ID and start).
	lastPass string
}

// Sample is one point of a series.
type Sample struct {
	At    time.Time
	Value int64
}

// AddUsage records the image fs usage (percent) at a refresh.
func (h *History) AddUsage(at time.Time, percent int) {
	h.Usage = push(h.Usage, Sample{At: at, Value: int64(percent)})
}

// AddPass records the bytes a finished pass freed: measured when the
// engine measured them, else its estimate. A pass seen twice (notice and
// apply) counts once; two passes that finished at the same time count
// twice.
func (h *History) AddPass(r engine.PassReport) {
	if r.DryRun {
		return
	}
	key := fmt.Sprintf("%s/%d/%s", r.Run, r.ID, r.StartedAt.Format(time.RFC3339Nano))
	if key == h.lastPass {
		return
	}
	h.lastPass = key
	v := r.EstimatedBytesFreed
	if r.MeasuredBytesFreed != nil {
		v = max(*r.MeasuredBytesFreed, 0)
	}
	h.Freed = push(h.Freed, Sample{At: r.FinishedAt, Value: v})
}

// push appends s without writing into a backing array another copy of
// the history may share.
func push(xs []Sample, s Sample) []Sample {
	start := max(len(xs)+1-MaxHistory, 0)
	out := make([]Sample, 0, len(xs)-start+1)
	return append(append(out, xs[start:]...), s)
}

// last returns the last n values of xs (all when fewer).
func last(xs []Sample, n int) []Sample {
	return xs[max(len(xs)-n, 0):]
}

var blocks = []rune(" ▁▂▃▄▅▆▇█")

// mark is a rule drawn across the chart at a value (a threshold).
type mark struct {
	value int64
	ch    rune
}

// chart draws xs (the last w of them) as a chart h rows high scaled to
// [bottom, top], btop style: each column is a bar of eighth blocks. Each
// mark strictly inside the range draws its rule character in the empty
// cells of the row holding it, a later mark over an earlier one on the
// same row; the caller styles rows. It returns h strings, top row first.
func chart(xs []Sample, w, h int, bottom, top int64, marks ...mark) []string {
	xs = last(xs, w)
	span := max(top-bottom, 1)
	rows := make([][]rune, h)
	for r := range rows {
		rows[r] = []rune(strings.Repeat(" ", w))
	}
	for _, mk := range marks {
		if r := markRow(mk.value, h, bottom, top); r >= 0 {
			for c := range rows[r] {
				rows[r][c] = mk.ch
			}
		}
	}
	off := w - len(xs)
	for i, s := range xs {
		eighths := int((min(max(s.Value, bottom), top) - bottom) * int64(h*8) / span)
		if s.Value > bottom && eighths == 0 {
			eighths = 1
		}
		for r := h - 1; r >= 0 && eighths > 0; r-- {
			e := min(eighths, 8)
			rows[r][off+i] = blocks[e]
			eighths -= e
		}
	}
	out := make([]string, h)
	for r := range rows {
		out[r] = string(rows[r])
	}
	return out
}

// markRow is the row (0 the top) of a chart h rows high over [bottom,
// top] that holds v, or -1 when v is not strictly inside the range.
func markRow(v int64, h int, bottom, top int64) int {
	if v <= bottom || v >= top {
		return -1
	}
	return h - 1 - int(int64(h)*(v-bottom)/(top-bottom))
}

// usageScale is the range of percentages the usage chart spans: the GC
// band [low, high] and every sample, with a margin of a quarter of that
// (at least 5 points) on each side, within 0–100. A node that lives
// around its band gets its rows there, not in the empty 0–60% (btop
// scales its graphs to what they show).
func usageScale(xs []Sample, low, high int) (bottom, top int64) {
	lo, hi := int64(low), int64(high)
	for _, s := range xs {
		lo, hi = min(lo, s.Value), max(hi, s.Value)
	}
	pad := max((hi-lo)/4, 5)
	return max(lo-pad, 0), min(hi+pad, 100)
}

// bars widens each sample of xs to a bar of up to 3 columns with a gap
// after it, as many as fit in w: a few passes fill their chart instead of
// its right-hand edge.
func bars(xs []Sample, w int) []Sample {
	if len(xs) == 0 {
		return nil
	}
	bw := min(w/len(xs), 4) - 1
	if bw < 1 {
		return xs
	}
	out := make([]Sample, 0, len(xs)*(bw+1))
	for _, s := range xs {
		for range bw {
			out = append(out, s)
		}
		out = append(out, Sample{At: s.At})
	}
	return out
}

// maxValue is the largest value of xs, 0 when there is none.
func maxValue(xs []Sample) int64 {
	m := int64(0)
	for _, s := range xs {
		m = max(m, s.Value)
	}
	return m
}

// span says how many samples xs holds and when the first was taken: a
// time, not an age, so that the line does not move with the clock (an
// idle dashboard then draws nothing each second).
func span(xs []Sample) string {
	if len(xs) == 0 {
		return "no samples yet"
	}
	return fmt.Sprintf("%d samples since %s", len(xs), xs[0].At.Format(time.TimeOnly))
}
