package agent

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	eventsv1 "k8s.io/api/events/v1"

	"github.com/nodegc/nodegc/engine"
	"github.com/nodegc/nodegc/forecast"
	"github.com/nodegc/nodegc/nodeevents"
)

var fcStart = time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)

// fcSnapshot is a snapshot at fcStart+at of a 10 GiB image fs with one
// unused image of 1 GiB detected an hour before fcStart.
func fcSnapshot(at time.Duration, available int64) engine.Snapshot {
	return engine.Snapshot{
		TakenAt:      fcStart.Add(at),
		ImageFs:      engine.FsStats{CapacityBytes: 10 << 30, AvailableBytes: available},
		Images:       []engine.Image{{ID: "sha256:old", SizeBytes: 1 << 30}},
		ImageRecords: []engine.ImageRecord{{ID: "sha256:old", FirstDetected: fcStart.Add(-time.Hour)}},
	}
}

func newTestForecaster(t *testing.T, dir string) (*forecaster, *bytes.Buffer) {
	t.Helper()
	var logs bytes.Buffer
	f := newForecaster(slog.New(slog.NewTextHandler(&logs, nil)), dir, engine.DefaultPolicy(), fcStart, nil)
	return f, &logs
}

// TestForecastHistorySurvivesRestart: an agent's readings, saved at its
// stop, are the next agent's history; the reclaimable bytes are the
// reclaim-all plan's (the unused image, past MinAge).
func TestForecastHistorySurvivesRestart(t *testing.T) {
	dir := t.TempDir()
	f, _ := newTestForecaster(t, dir)
	for m := range 30 {
		f.add(fcObserved(time.Duration(m)*time.Minute, 5<<30-int64(m)<<24))
	}
	f.save(fcStart.Add(30 * time.Minute))
	if fi, err := os.Stat(filepath.Join(dir, forecast.FileName)); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("history file: %v, %v; want mode 0600", fi, err)
	}
	g, logs := newTestForecaster(t, dir)
	rs := g.hist.Readings()
	if len(rs) != 30 || logs.Len() != 0 {
		t.Fatalf("restarted with %d readings (logs %q), want 30 and no warning", len(rs), logs)
	}
	if last := rs[29]; !last.At.Equal(fcStart.Add(29*time.Minute)) || last.Reclaimable != 1<<30 {
		t.Errorf("last reading %+v, want at +29m with 1 GiB reclaimable", last)
	}
	g.add(fcObserved(31*time.Minute, 4<<30))
	if fs := g.Forecasts(); len(fs) != 2 || fs[0].Status != forecast.StatusFilling {
		t.Errorf("forecasts after the restart %+v, want the GC threshold filling", fs)
	}
}

// TestForecastCorruptHistory: a corrupt file is moved aside with a
// warning and the history starts empty; a symlink is not followed.
func TestForecastCorruptHistory(t *testing.T) {
	t.Run("corrupt file moved aside", func(t *testing.T) {
		dir := t.TempDir()
		path := filepath.Join(dir, forecast.FileName)
		os.WriteFile(path, []byte(`{"kind":"ImageFsHistory","readings":[[1,0,0,0,0]]}`), 0o600)
		f, logs := newTestForecaster(t, dir)
		aside := fmt.Sprintf("%s.corrupt-%d", path, fcStart.Unix())
		if f.hist.Len() != 0 || !strings.Contains(logs.String(), "moved to "+aside) {
			t.Fatalf("%d readings, logs %q; want none and a warning naming %s", f.hist.Len(), logs, aside)
		}
		if _, err := os.Stat(aside); err != nil {
			t.Errorf("corrupt file not moved aside: %v", err)
		}
	})
	t.Run("symlink not followed", func(t *testing.T) {
		dir := t.TempDir()
		target := filepath.Join(dir, "elsewhere")
		f0, _ := newTestForecaster(t, "")
		f0.add(fcObserved(0, 5<<30))
		data, _ := forecast.Encode(f0.hist, fcStart)
		os.WriteFile(target, data, 0o600)
		os.Symlink(target, filepath.Join(dir, forecast.FileName))
		f, logs := newTestForecaster(t, dir)
		if f.hist.Len() != 0 || !strings.Contains(logs.String(), "is a symlink; nodegc does not follow links") {
			t.Fatalf("%d readings, logs %q; want none and a warning", f.hist.Len(), logs)
		}
	})
}

// eventSink is a nodeevents.Creator that keeps what it is sent.
type eventSink struct {
	mu     sync.Mutex
	events []*eventsv1.Event
}

func (s *eventSink) CreateEvent(_ context.Context, ev *eventsv1.Event) (*eventsv1.Event, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.events = append(s.events, ev)
	return ev, nil
}

// PatchEvent counts a repeat on the series of an event sent before.
func (s *eventSink) PatchEvent(_ context.Context, _, name string, _ []byte) (*eventsv1.Event, error) {
	return &eventsv1.Event{}, nil
}

// TestForecastWarnsOnceOnTheNode: a node whose bytes GC cannot remove
// grow toward the eviction line gets one Warning event on its Node, in
// the kubelet's words, however many readings follow.
func TestForecastWarnsOnceOnTheNode(t *testing.T) {
	sink := &eventSink{}
	rec := nodeevents.Start(nodeevents.Options{Client: sink, NodeName: "node-1"})
	f, logs := newTestForecaster(t, "")
	f.events = rec
	// 10 GiB, 1 GiB reclaimable; available falls 20 MiB a minute from
	// 4 GiB: the eviction line (1.5 GiB available after reclaim) is
	// about 3.5 hours away at first.
	for m := range 90 {
		f.add(fcObserved(time.Duration(m)*time.Minute, 4<<30-int64(m)*(20<<20)))
	}
	rec.Stop(context.Background())
	if len(sink.events) != 1 {
		t.Fatalf("%d events, want 1; logs:\n%s", len(sink.events), logs)
	}
	ev := sink.events[0]
	if ev.Type != "Warning" || ev.Reason != nodeevents.ReasonDiskPressureForecast || ev.Regarding.Name != "node-1" ||
		!strings.Contains(ev.Note, "imagefs.available<15% in about") || !strings.Contains(ev.Note, "even after deleting every unused image") {
		t.Errorf("event %s %s on %s: %q", ev.Type, ev.Reason, ev.Regarding.Name, ev.Note)
	}
}

// fcObserved is fcSnapshot handed over with a monotonic clock that
// agrees with its time, as an agent's would.
func fcObserved(at time.Duration, avail int64) (engine.Snapshot, time.Duration) {
	return fcSnapshot(at, avail), at + time.Second
}
