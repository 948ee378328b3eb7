package metrics

import (
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/nodegc/nodegc/forecast"
)

// TestForecasts: a filling line has its three bounds (+Inf served as
// such) and its headroom; a line without enough history has only its
// status.
func TestForecasts(t *testing.T) {
	var f Forecasts
	f.Set([]forecast.Forecast{
		{Line: forecast.LineGCThreshold, At: time.Unix(1795950489, 0), Status: forecast.StatusFilling, Estimate: 3600, Lower: 3000, Upper: math.Inf(1), Headroom: 1 << 30},
		{Line: forecast.LineEviction, Status: forecast.StatusNotEnoughHistory, Estimate: math.NaN(), Lower: math.NaN(), Upper: math.NaN()},
	})
	reg := prometheus.NewRegistry()
	reg.MustRegister(&f)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			var labels []string
			for _, l := range m.GetLabel() {
				labels = append(labels, l.GetName()+"="+l.GetValue())
			}
			if v := m.GetGauge().GetValue(); v != 0 {
				got = append(got, mf.GetName()+"{"+strings.Join(labels, ",")+"} "+strconv.FormatFloat(v, 'f', -1, 64))
			}
		}
	}
	want := []string{
		"nodegc_forecast_headroom_bytes{line=gc_threshold} 1073741824",
		"nodegc_forecast_reading_timestamp_seconds{} 1795950489",
		"nodegc_forecast_seconds{bound=estimate,line=gc_threshold} 3600",
		"nodegc_forecast_seconds{bound=lower,line=gc_threshold} 3000",
		"nodegc_forecast_seconds{bound=upper,line=gc_threshold} +Inf",
		"nodegc_forecast_status{line=eviction,status=not-enough-history} 1",
		"nodegc_forecast_status{line=gc_threshold,status=filling} 1",
	}
	if !slices.Equal(got, want) {
		t.Errorf("non-zero series:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
