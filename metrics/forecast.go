package metrics

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/nodegc/nodegc/forecast"
)

// Bounds of a forecast: the bound label.
const (
	BoundEstimate = "estimate"
	BoundLower    = "lower"
	BoundUpper    = "upper"
)

var (
	descForecastSeconds = desc("forecast", "seconds",
		"Seconds from the latest reading until the image filesystem crosses the line: gc_threshold (usage reaches the image GC high threshold; GC acts) or eviction (the bytes available even after GC removed every unused image fall below imagefs.available's eviction threshold: DiskPressure no GC prevents). bound: estimate, lower, upper (a 90% interval of the fitted rate); +Inf when never, 0 once crossed, absent without enough history.",
		"line", "bound")
	descForecastStatus = desc("forecast", "status",
		"1 for each line's current forecast answer (crossed, filling, not-filling, not-enough-history, no-line), 0 for the others.",
		"line", "status")
	descForecastReading = desc("forecast", "reading_timestamp_seconds",
		"When the reading the forecasts were made at was taken, in seconds since the epoch: the seconds count from it.")
	descForecastHeadroom = desc("forecast", "headroom_bytes",
		"Bytes left before the line at the latest reading: available above the GC threshold's, or available plus reclaimable above the eviction threshold.",
		"line")
)

// forecastStatuses are every forecast answer, so each line has a series
// for each.
var forecastStatuses = []forecast.Status{
	forecast.StatusCrossed, forecast.StatusFilling, forecast.StatusNotFilling,
	forecast.StatusNotEnoughHistory, forecast.StatusNoLine,
}

// Forecasts serves the agent's latest image filesystem forecasts as a
// prometheus.Collector: a scrape reads what the agent last computed,
// never the node. Its zero value serves nothing until Set. It is safe
// for concurrent use.
type Forecasts struct {
	mu sync.Mutex
	fs []forecast.Forecast
}

// Set replaces the forecasts served.
func (f *Forecasts) Set(fs []forecast.Forecast) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fs = fs
}

// Describe sends the forecast metrics' descriptions.
func (f *Forecasts) Describe(ch chan<- *prometheus.Desc) {
	ch <- descForecastSeconds
	ch <- descForecastStatus
	ch <- descForecastHeadroom
	ch <- descForecastReading
}

// Collect sends the latest forecasts.
func (f *Forecasts) Collect(ch chan<- prometheus.Metric) {
	f.mu.Lock()
	fs := f.fs
	f.mu.Unlock()
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	if len(fs) > 0 && !fs[0].At.IsZero() {
		gauge(descForecastReading, float64(fs[0].At.UnixNano())/1e9)
	}
	for _, fc := range fs {
		line := string(fc.Line)
		for _, st := range forecastStatuses {
			gauge(descForecastStatus, b2f(fc.Status == st), line, string(st))
		}
		switch fc.Status {
		case forecast.StatusNotEnoughHistory, forecast.StatusNoLine:
			continue
		}
		gauge(descForecastSeconds, fc.Estimate, line, BoundEstimate)
		gauge(descForecastSeconds, fc.Lower, line, BoundLower)
		gauge(descForecastSeconds, fc.Upper, line, BoundUpper)
		gauge(descForecastHeadroom, float64(fc.Headroom), line)
	}
}

// b2f is 1 for true, 0 for false.
func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
