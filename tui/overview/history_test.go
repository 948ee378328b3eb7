package overview

import (
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/x/ansi"

	"github.com/nodegc/nodegc/engine"
	"github.com/nodegc/nodegc/tui/keys"
	"github.com/nodegc/nodegc/tui/style"
)

func samples(vs ...int64) []Sample {
	out := make([]Sample, len(vs))
	for i, v := range vs {
		out[i] = Sample{At: time.Unix(int64(i), 0), Value: v}
	}
	return out
}

// TestUsageScale pins issue 41's usage chart: it spans the GC band and
// every sample with a margin, not 0–100%, so the band's two lines fall on
// rows of their own.
func TestUsageScale(t *testing.T) {
	tests := []struct {
		name      string
		xs        []Sample
		low, high int
		bottom    int64
		top       int64
	}{
		{name: "a node inside its band spans the band and a margin", xs: samples(81, 83), low: 80, high: 85, bottom: 75, top: 90},
		{name: "a full node reaches 100%", xs: samples(70, 99), low: 80, high: 85, bottom: 63, top: 100},
		{name: "an empty node reaches 0%", xs: samples(2, 40), low: 80, high: 85, bottom: 0, top: 100},
		{name: "no samples yet: the band alone", xs: nil, low: 80, high: 85, bottom: 75, top: 90},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			bottom, top := usageScale(tt.xs, tt.low, tt.high)
			if bottom != tt.bottom || top != tt.top {
				t.Errorf("usageScale = %d–%d, want %d–%d", bottom, top, tt.bottom, tt.top)
			}
		})
	}
}

// TestTheBandLinesHaveRowsOfTheirOwn: on the chart of a node inside its
// band, at the 9 rows a 120×36 Overview gives it, the high and the low
// line are both drawn, on different rows, the low one below.
func TestTheBandLinesHaveRowsOfTheirOwn(t *testing.T) {
	xs := samples(70, 72, 74)
	bottom, top := usageScale(xs, 80, 85)
	rows := chart(xs, 10, 9, bottom, top, mark{80, '┈'}, mark{85, '┄'})
	hi, lo := -1, -1
	for i, r := range rows {
		if strings.Contains(r, "┄") {
			hi = i
		}
		if strings.Contains(r, "┈") {
			lo = i
		}
	}
	if hi < 0 || lo < 0 || hi >= lo {
		t.Errorf("high line on row %d, low on row %d; want both, high above:\n%s", hi, lo, strings.Join(rows, "\n"))
	}
}

// TestFreedChartSaysZero: a pass that freed nothing is "most 0 B", not
// 1 B, and draws no bar.
func TestFreedChartSaysZero(t *testing.T) {
	xs := samples(0)
	if m := maxValue(xs); m != 0 {
		t.Errorf("maxValue = %d, want 0", m)
	}
	if r := chart(bars(xs, 20), 20, 3, 0, max(maxValue(xs), 1)); strings.TrimSpace(strings.Join(r, "")) != "" {
		t.Errorf("a pass that freed 0 B drew %q", r)
	}
}

// TestFewPassesFillTheirChart: 7 passes on a 200-column chart are bars of
// 3 columns with a gap each, not 7 columns at its right-hand edge.
func TestFewPassesFillTheirChart(t *testing.T) {
	b := bars(samples(1, 2, 3, 4, 5, 6, 7), 200)
	if len(b) != 28 {
		t.Errorf("7 passes widened to %d columns, want 28 (3 a bar and a gap)", len(b))
	}
	if b := bars(samples(1, 2, 3), 4); len(b) != 3 {
		t.Errorf("3 passes in 4 columns widened to %d, want 3 (no room)", len(b))
	}
}

// TestLastPassSaysStopped pins issue 41: a pass stopped with X reads
// "stopped, N not run" on the Overview, as on Events, not "0 failed".
func TestLastPassSaysStopped(t *testing.T) {
	m := New(keys.Default(false), style.Default(true))
	at := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	r := &engine.PassReport{ID: 7, Kind: engine.PassContainers, StartedAt: at, FinishedAt: at, Stopped: "the operator stopped it", Undone: 6,
		Items: []engine.ItemResult{{Kind: engine.ItemContainer, ID: "c1", Outcome: engine.OutcomeRemoved}, {Kind: engine.ItemContainer, ID: "c2", Outcome: engine.OutcomeNotRun}}}
	m.d.Status.LastReport, m.d.Now = r, at
	line := ansi.Strip(m.lastPassLine())
	if !strings.Contains(line, "stopped, 6 not run") || strings.Contains(line, "0 failed") {
		t.Errorf("last pass line %q; want it to say stopped, 6 not run", line)
	}
}
