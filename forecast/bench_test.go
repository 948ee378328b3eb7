package forecast_test

import (
	"context"
	"testing"
	"time"

	"github.com/nodegc/nodegc/engine"
	"github.com/nodegc/nodegc/engine/cri"
	"github.com/nodegc/nodegc/forecast"
	"github.com/nodegc/nodegc/internal/simfs"
	"github.com/nodegc/nodegc/internal/simnode"
)

// BenchmarkReadingOf is the agent's cost of one reading on the large
// demo node (2,000 images, 1,000 pods, 5,000 dead containers): the
// reclaim-all plan of a snapshot the engine already took.
func BenchmarkReadingOf(b *testing.B) {
	n, ep := simnode.ServeTemp(b, simnode.DemoLarge(1))
	c, err := cri.Dial(context.Background(), ep, cri.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	e, err := engine.New(engine.Options{Reader: c, Statfs: simfs.Local(n), Policy: engine.DefaultPolicy(), Now: n.Now})
	if err != nil {
		b.Fatal(err)
	}
	s, err := e.Snapshot(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for b.Loop() {
		forecast.ReadingOf(s, engine.DefaultPolicy())
	}
}

// BenchmarkPredictWeek is the cost of both forecasts over a full
// history (a week, downsampled by DefaultTiers).
func BenchmarkPredictWeek(b *testing.B) {
	var h forecast.History
	start := simnode.DefaultStart
	for at := time.Duration(0); at <= 7*24*time.Hour; at += 10 * time.Second {
		h.Add(forecast.Reading{At: start.Add(at), Capacity: 100 << 30, Available: 50<<30 - int64(at/time.Second)*1000, Reclaimable: 1 << 30})
	}
	o := forecast.Options{HighThresholdPercent: 85, EvictionBytes: 15 << 30}
	b.ResetTimer()
	for b.Loop() {
		forecast.Predict(h.Readings(), o)
	}
	b.ReportMetric(float64(h.Len()), "readings")
}
