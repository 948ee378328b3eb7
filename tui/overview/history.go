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

// chart draws xs (the last w of them) as a chart h rows high scaled to
// [0, top], btop style: each column is a bar of eighth blocks. mark, when
// in (0, top), draws a rule character in empty cells of the row holding
// it; the caller styles rows. It returns h strings, top row first.
func chart(xs []Sample, w, h int, top int64, marks map[int64]rune) []string {
	xs = last(xs, w)
	rows := make([][]rune, h)
	for r := range rows {
		rows[r] = []rune(strings.Repeat(" ", w))
	}
	markRow := map[int]rune{}
	for v, ch := range marks {
		if v > 0 && v < top {
			markRow[h-1-int(int64(h)*v/top)] = ch
		}
	}
	for r, ch := range markRow {
		if r >= 0 && r < h {
			for c := range rows[r] {
				rows[r][c] = ch
			}
		}
	}
	off := w - len(xs)
	for i, s := range xs {
		eighths := int(min(max(s.Value, 0), top) * int64(h*8) / max(top, 1))
		if s.Value > 0 && eighths == 0 {
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

// maxValue is the largest value of xs, at least 1.
func maxValue(xs []Sample) int64 {
	m := int64(1)
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
