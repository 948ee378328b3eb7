package nodeevents

import (
	"math"
	"testing"

	"github.com/nodegc/nodegc/forecast"
)

func TestDiskPressureForecast(t *testing.T) {
	tests := []struct {
		name string
		f    forecast.Forecast
		want string
	}{
		{"filling, bounded", forecast.Forecast{Status: forecast.StatusFilling, Estimate: 3 * 3600, Lower: 2*3600 + 50*60, Upper: 3*3600 + 10*60},
			"Image filesystem forecast to fall below the eviction threshold imagefs.available<15% in about 3h0m (90% interval 2h50m to 3h10m), even after deleting every unused image: the kubelet will then evict pods (DiskPressure). Investigate disk usage, as it could be used by active images, logs, volumes, or other data."},
		{"filling, no upper bound", forecast.Forecast{Status: forecast.StatusFilling, Estimate: 40 * 60, Lower: 30 * 60, Upper: math.Inf(1)},
			"Image filesystem forecast to fall below the eviction threshold imagefs.available<15% in about 40m (90% interval 30m or later), even after deleting every unused image: the kubelet will then evict pods (DiskPressure). Investigate disk usage, as it could be used by active images, logs, volumes, or other data."},
		{"crossed", forecast.Forecast{Status: forecast.StatusCrossed},
			"Image filesystem forecast to fall below the eviction threshold imagefs.available<15% now, even after deleting every unused image: the kubelet will then evict pods (DiskPressure). Investigate disk usage, as it could be used by active images, logs, volumes, or other data."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ev := DiskPressureForecast(tt.f, "15%")
			if ev.Note != tt.want || ev.Type != "Warning" || ev.Reason != ReasonDiskPressureForecast {
				t.Errorf("%s %s %q\nwant Warning %s %q", ev.Type, ev.Reason, ev.Note, ReasonDiskPressureForecast, tt.want)
			}
		})
	}
}
