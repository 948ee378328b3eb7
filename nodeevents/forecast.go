package nodeevents

import (
	"fmt"
	"math"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodegc/nodegc/forecast"
	"github.com/nodegc/nodegc/internal/format"
)

// ReasonDiskPressureForecast is the reason of the Warning event of a
// forecast that what image GC cannot remove will cross imagefs.available's
// eviction threshold (forecast.LineEviction) within the agent's horizon.
const ReasonDiskPressureForecast = "ImageFsDiskPressureForecast"

// ActionForecast is the action of the forecast's event.
const ActionForecast = "Forecast"

// DiskPressureForecast words an eviction forecast as the kubelet words
// its disk warnings (FreeDiskSpaceFailed: "Investigate disk usage, …").
// threshold is imagefs.available's as the kubelet's flag gives it
// ("15%"), for the message.
func DiskPressureForecast(f forecast.Forecast, threshold string) Event {
	secs := func(s float64) string { return format.Rough(time.Duration(s * float64(time.Second))) }
	when := "now"
	switch {
	case f.Status == forecast.StatusCrossed:
	case math.IsInf(f.Upper, 1):
		when = fmt.Sprintf("in about %s (90%% interval %s or later)", secs(f.Estimate), secs(f.Lower))
	default:
		when = fmt.Sprintf("in about %s (90%% interval %s to %s)", secs(f.Estimate), secs(f.Lower), secs(f.Upper))
	}
	note := fmt.Sprintf("Image filesystem forecast to fall below the eviction threshold imagefs.available<%s %s, even after deleting every unused image: "+
		"the kubelet will then evict pods (DiskPressure). "+
		"Investigate disk usage, as it could be used by active images, logs, volumes, or other data.", threshold, when)
	return Event{Type: corev1.EventTypeWarning, Reason: ReasonDiskPressureForecast, Action: ActionForecast, Note: note}
}

// Queue queues one event; it never blocks, and reports whether it was
// queued (false: the queue is full, or r is nil).
func (r *Recorder) Queue(ev Event) bool {
	if r == nil {
		return false
	}
	select {
	case r.queue <- ev:
		return true
	default:
		r.o.Log.Warn("node event dropped: the API server is behind", "reason", ev.Reason)
		return false
	}
}
