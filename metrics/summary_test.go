package metrics

import (
	"testing"
	"time"

	"github.com/nodegc/nodegc/engine"
)

// TestSummary: the fleet row holds what the passes left: the image fs
// against the band, the latest attempt with its result, reason and bytes,
// the dead containers, the images kept by reason, the pod source and the
// event stream; unknown figures are -1, not 0.
func TestSummary(t *testing.T) {
	var p engine.Policy
	p.Image.HighThresholdPercent, p.Image.LowThresholdPercent = 85, 80
	ps := PodSourceState{}
	c := New(Options{Policy: p, Version: "v1", PodSource: func() PodSourceState { return ps }})
	s := c.Summary("node-a", t0)
	if s.UsagePercent != -1 || s.DeadContainers != -1 || s.LastAttempt != nil || s.PodSource != "off" || s.EventStream != "unknown" {
		t.Fatalf("before anything: %+v", s)
	}

	c.ObserveSnapshot(engine.Snapshot{ImageFs: *imageFs(100), Containers: []engine.Container{
		{ID: "a", State: engine.ContainerRunning}, {ID: "b", State: engine.ContainerExited}, {ID: "c", State: engine.ContainerExited}}})
	r := imagePass(90, time.Second, imageItem("img1", 60, engine.RemoveForSpace, engine.OutcomeRemoved), imageItem("img2", 40, engine.RemoveForSpace, engine.OutcomeRemoved))
	r.Plan.ImageGC.Keep = []engine.ImageKeep{{ID: "x", Reason: engine.KeepInUse}, {ID: "y", Reason: engine.KeepInUse}, {ID: "z", Reason: engine.KeepPinned}}
	measured := int64(95)
	r.MeasuredBytesFreed = &measured
	c.ObserveReport(r)
	c.ObserveEventStream(true)
	ps = PodSourceState{Enabled: true, Synced: true}

	s = c.Summary("node-a", t0)
	if s.Node != "node-a" || s.UsagePercent != 90 || s.High != 85 || s.Low != 80 || s.DeadContainers != 2 {
		t.Errorf("fs, band, dead: %+v", s)
	}
	a := s.LastAttempt
	if a == nil || a.Result != ResultSuccess || a.Reason != ReasonThreshold || a.Target != 90 || a.Freed != 100 || a.Measured == nil || *a.Measured != 95 || !a.At.Equal(t0.Add(time.Second)) {
		t.Errorf("last attempt: %+v", a)
	}
	if s.Kept[engine.KeepInUse] != 2 || s.Kept[engine.KeepPinned] != 1 || len(s.Kept) != 2 {
		t.Errorf("kept: %v", s.Kept)
	}
	if s.Passes["ok"] != 1 || s.PodSource != "synced" || s.EventStream != "live" {
		t.Errorf("passes %v, pod source %q, stream %q", s.Passes, s.PodSource, s.EventStream)
	}
	ps.LastError = t0
	c.ObserveEventStream(false)
	if s = c.Summary("node-a", t0); s.PodSource != "error" || s.EventStream != "down" {
		t.Errorf("after errors: pod source %q, stream %q", s.PodSource, s.EventStream)
	}
}
