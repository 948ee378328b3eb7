package metrics

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/nodegc/nodegc/engine"
)

var t0 = time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)

// value returns the value of the series of name whose labels include
// want; ok is false when there is none.
func value(t *testing.T, c *Collector, name string, want map[string]string) (float64, bool) {
	t.Helper()
	reg := prometheus.NewRegistry()
	reg.MustRegister(c)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	series:
		for _, m := range mf.GetMetric() {
			got := map[string]string{}
			for _, lp := range m.GetLabel() {
				got[lp.GetName()] = lp.GetValue()
			}
			for k, v := range want {
				if got[k] != v {
					continue series
				}
			}
			return metricValue(m), true
		}
	}
	return 0, false
}

// total sums the series of name whose labels include want.
func total(t *testing.T, c *Collector, name string, want map[string]string) float64 {
	t.Helper()
	reg := prometheus.NewRegistry()
	reg.MustRegister(c)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var sum float64
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	series:
		for _, m := range mf.GetMetric() {
			for _, lp := range m.GetLabel() {
				if v, ok := want[lp.GetName()]; ok && v != lp.GetValue() {
					continue series
				}
			}
			sum += metricValue(m)
		}
	}
	return sum
}

// metricValue is a counter's or gauge's value, or a histogram's count.
func metricValue(m *dto.Metric) float64 {
	switch {
	case m.Counter != nil:
		return m.Counter.GetValue()
	case m.Gauge != nil:
		return m.Gauge.GetValue()
	case m.Histogram != nil:
		return float64(m.Histogram.GetSampleCount())
	}
	return 0
}

// expect asserts the value of one series.
func expect(t *testing.T, c *Collector, name string, labels map[string]string, want float64) {
	t.Helper()
	got, ok := value(t, c, name, labels)
	if !ok || got != want {
		t.Errorf("%s%v = %v (found %v), want %v", name, labels, got, ok, want)
	}
}

// imageFs is a 1,000-byte image filesystem with avail bytes free.
func imageFs(avail int64) *engine.FsStats {
	return &engine.FsStats{CapacityBytes: 1000, AvailableBytes: avail}
}

// imageItem is one image item of a report.
func imageItem(id string, size int64, reason engine.ImageRemoveReason, o engine.Outcome) engine.ItemResult {
	return engine.ItemResult{Kind: engine.ItemImage, ID: id, SizeBytes: size, Reason: string(reason), Outcome: o}
}

// imagePass builds the report of an image pass that started at t0 and
// took took, planned with the given target (triggered when > 0).
func imagePass(target int64, took time.Duration, items ...engine.ItemResult) engine.PassReport {
	r := engine.PassReport{ID: 1, Kind: engine.PassImages, StartedAt: t0, FinishedAt: t0.Add(took), Items: items, Events: []engine.Event{}}
	r.Plan = engine.Plan{EvaluatedAt: t0, Pass: engine.PassImages, ImageGC: engine.ImagePlan{Triggered: target > 0, BytesToFree: target}}
	for _, it := range items {
		if it.Outcome == engine.OutcomeRemoved {
			r.EstimatedBytesFreed += it.SizeBytes
		}
	}
	return r
}

// TestImageGCQuestions asks each of KEP-6053's questions of a scripted
// pass as a metric assertion.
func TestImageGCQuestions(t *testing.T) {
	fdsf := engine.Event{Reason: engine.EventFreeDiskSpaceFailed, Warning: true}
	tests := []struct {
		name   string
		report func() engine.PassReport
		// trigger, result, reason: the attempt counted.
		trigger, result, reason string
		check                   func(t *testing.T, c *Collector)
	}{
		{
			name: "success: usage past the high threshold runs image GC, which frees its target",
			report: func() engine.PassReport {
				r := imagePass(200, 1500*time.Millisecond, imageItem("a", 150, engine.RemoveForSpace, engine.OutcomeRemoved), imageItem("b", 100, engine.RemoveForSpace, engine.OutcomeRemoved))
				measured := int64(240)
				r.MeasuredBytesFreed, r.ImageFsBefore, r.ImageFsAfter = &measured, imageFs(100), imageFs(340)
				r.Plan.ImageGC.Keep = []engine.ImageKeep{{ID: "c", Reason: engine.KeepInUse}, {ID: "d", Reason: engine.KeepInUse}, {ID: "e", Reason: engine.KeepTooYoung}, {ID: "p", Reason: engine.KeepSandboxImage}}
				return r
			},
			trigger: TriggerPeriodic, result: ResultSuccess, reason: ReasonThreshold,
			check: func(t *testing.T, c *Collector) {
				// How long did it take?
				expect(t, c, "nodegc_image_gc_duration_seconds", map[string]string{"trigger": TriggerPeriodic}, 1)
				// How many bytes did it try to free, and free?
				expect(t, c, "nodegc_image_gc_target_bytes", nil, 200)
				expect(t, c, "nodegc_image_gc_freed_bytes", map[string]string{"measure": MeasureRuntime}, 250)
				expect(t, c, "nodegc_image_gc_freed_bytes", map[string]string{"measure": MeasureStatfs}, 240)
				expect(t, c, "nodegc_image_gc_freed_bytes_total", map[string]string{"measure": MeasureStatfs, "trigger": TriggerPeriodic}, 240)
				expect(t, c, "nodegc_image_gc_deletions_total", map[string]string{"reason": "space", "result": "removed"}, 2)
				// Why were the others kept?
				expect(t, c, "nodegc_image_gc_images_kept", map[string]string{"reason": "in-use"}, 2)
				expect(t, c, "nodegc_image_gc_images_kept", map[string]string{"reason": "too-young"}, 1)
				expect(t, c, "nodegc_image_gc_images_kept", map[string]string{"reason": "sandbox-image"}, 1)
				expect(t, c, "nodegc_image_gc_images_kept", map[string]string{"reason": "pinned"}, 0)
				// The image fs after the pass, against the band.
				expect(t, c, "nodegc_image_fs_usage_ratio", nil, 0.66)
				expect(t, c, "nodegc_image_gc_high_threshold_ratio", nil, 0.85)
			},
		},
		{
			name: "partial: one deletion fails after another succeeded",
			report: func() engine.PassReport {
				return imagePass(200, time.Second, imageItem("a", 150, engine.RemoveForSpace, engine.OutcomeRemoved), engine.ItemResult{Kind: engine.ItemImage, ID: "b", SizeBytes: 100, Reason: "space", Outcome: engine.OutcomeFailed, Error: "in use"})
			},
			trigger: TriggerPeriodic, result: ResultPartial, reason: ReasonDeleteError,
			check: func(t *testing.T, c *Collector) {
				expect(t, c, "nodegc_image_gc_deletions_total", map[string]string{"reason": "space", "result": "failed"}, 1)
			},
		},
		{
			name: "partial: everything eligible went and the target was not met",
			report: func() engine.PassReport {
				r := imagePass(500, time.Second, imageItem("a", 150, engine.RemoveForSpace, engine.OutcomeRemoved))
				r.Events = []engine.Event{fdsf}
				return r
			},
			trigger: TriggerPeriodic, result: ResultPartial, reason: ReasonInsufficientFreed,
		},
		{
			name: "error: nothing was eligible above the threshold",
			report: func() engine.PassReport {
				r := imagePass(500, time.Second)
				r.Events = []engine.Event{fdsf}
				r.Plan.ImageGC.Keep = []engine.ImageKeep{{ID: "a", Reason: engine.KeepTooYoung}}
				return r
			},
			trigger: TriggerPeriodic, result: ResultError, reason: ReasonInsufficientFreed,
			check: func(t *testing.T, c *Collector) {
				expect(t, c, "nodegc_image_gc_images_kept", map[string]string{"reason": "too-young"}, 1)
			},
		},
		{
			name: "noop: below the threshold, nothing idle too long",
			report: func() engine.PassReport {
				r := imagePass(0, 10*time.Millisecond)
				r.ImageFsAfter = imageFs(900)
				return r
			},
			trigger: TriggerPeriodic, result: ResultNoop, reason: ReasonBelowThreshold,
			check: func(t *testing.T, c *Collector) {
				expect(t, c, "nodegc_image_gc_target_bytes", nil, 0)
				expect(t, c, "nodegc_image_fs_usage_ratio", nil, 0.1)
			},
		},
		{
			name: "stats error: the node could not be listed, nothing was planned",
			report: func() engine.PassReport {
				return engine.PassReport{ID: 1, Kind: engine.PassImages, StartedAt: t0, FinishedAt: t0, Error: "image filesystem: runtime unavailable"}
			},
			trigger: TriggerPeriodic, result: ResultError, reason: ReasonStatsError,
		},
		{
			name: "invalid capacity: the image fs reports capacity 0",
			report: func() engine.PassReport {
				r := imagePass(0, time.Millisecond)
				r.Events = []engine.Event{{Reason: engine.EventInvalidDiskCapacity, Warning: true}}
				return r
			},
			trigger: TriggerPeriodic, result: ResultError, reason: ReasonInvalidCapacity,
		},
		{
			name: "delete error: the only deletion failed",
			report: func() engine.PassReport {
				r := imagePass(100, time.Second, engine.ItemResult{Kind: engine.ItemImage, ID: "a", SizeBytes: 150, Reason: "space", Outcome: engine.OutcomeFailed, Error: "boom"})
				r.Forced = true
				return r
			},
			trigger: TriggerForced, result: ResultError, reason: ReasonDeleteError,
		},
		{
			name: "age: an idle image goes below the threshold",
			report: func() engine.PassReport {
				return imagePass(0, time.Second, imageItem("a", 150, engine.RemoveForAge, engine.OutcomeRemoved))
			},
			trigger: TriggerPeriodic, result: ResultSuccess, reason: ReasonAge,
		},
		{
			name: "reclaim-all: every unused image",
			report: func() engine.PassReport {
				r := imagePass(0, time.Second, imageItem("a", 150, engine.RemoveForReclaim, engine.OutcomeRemoved))
				r.Kind, r.Forced = engine.PassReclaimAll, true
				return r
			},
			trigger: TriggerReclaimAll, result: ResultSuccess, reason: ReasonAllUnused,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := New(Options{Policy: engine.DefaultPolicy()})
			c.ObserveReport(tt.report())
			expect(t, c, "nodegc_image_gc_attempts_total", map[string]string{"trigger": tt.trigger, "result": tt.result, "reason": tt.reason}, 1)
			if tt.check != nil {
				tt.check(t, c)
			}
		})
	}
}

func TestContainerGCAndMachinery(t *testing.T) {
	journal := engine.JournalStats{Lines: map[engine.JournalOp]int64{engine.JournalIntent: 3, engine.JournalRemoved: 3}, Reconciled: map[engine.JournalOp]int64{engine.JournalNotRemoved: 1}, FailedWrites: 2}
	c := New(Options{
		Policy:    engine.DefaultPolicy(),
		Journal:   func() engine.JournalStats { return journal },
		PodSource: func() PodSourceState { return PodSourceState{Enabled: true, Synced: true, Pods: 42, LastError: t0} },
	})
	c.ObserveSnapshot(engine.Snapshot{Containers: []engine.Container{{ID: "r", State: engine.ContainerRunning}, {ID: "x1", State: engine.ContainerExited}, {ID: "x2", State: engine.ContainerExited}, {ID: "u", State: engine.ContainerUnknown}}})
	c.ObserveStatus(engine.Status{Running: engine.PassContainers})
	expect(t, c, "nodegc_gc_pass_in_flight", nil, 1)
	c.ObserveReport(engine.PassReport{ID: 1, Kind: engine.PassContainers, StartedAt: t0, FinishedAt: t0.Add(time.Second), Items: []engine.ItemResult{
		{Kind: engine.ItemContainer, ID: "x1", Reason: string(engine.RemovePodRemovable), Outcome: engine.OutcomeRemoved},
		{Kind: engine.ItemContainer, ID: "x2", Reason: string(engine.RemovePerContainerLimit), Outcome: engine.OutcomeFailed},
		{Kind: engine.ItemSandbox, ID: "s", Reason: engine.SandboxPodRemovable, Outcome: engine.OutcomeRemoved},
		{Kind: engine.ItemLog, ID: "/var/log/pods/x", Reason: engine.LogPodRemovable, Outcome: engine.OutcomeRemoved},
	}})
	c.ObserveStatus(engine.Status{})
	c.ObserveEventStream(true)

	expect(t, c, "nodegc_container_gc_removals_total", map[string]string{"reason": "pod-removable", "result": "removed"}, 1)
	expect(t, c, "nodegc_container_gc_removals_total", map[string]string{"reason": "per-container-limit", "result": "failed"}, 1)
	expect(t, c, "nodegc_container_gc_dead_containers", nil, 2)
	expect(t, c, "nodegc_container_gc_sandbox_removals_total", map[string]string{"reason": "pod-removable", "result": "removed"}, 1)
	expect(t, c, "nodegc_container_gc_log_removals_total", map[string]string{"reason": "pod-removable", "result": "removed"}, 1)
	expect(t, c, "nodegc_gc_passes_total", map[string]string{"kind": "containers", "trigger": "periodic", "result": "error"}, 1)
	expect(t, c, "nodegc_gc_pass_in_flight", nil, 0)
	expect(t, c, "nodegc_journal_lines_written_total", map[string]string{"op": "intent"}, 3)
	expect(t, c, "nodegc_journal_write_failures_total", nil, 2)
	expect(t, c, "nodegc_journal_reconciled_intents_total", map[string]string{"outcome": "not-removed"}, 1)
	expect(t, c, "nodegc_journal_reconciled_intents_total", map[string]string{"outcome": "removed"}, 0)
	expect(t, c, "nodegc_pod_source_synced", nil, 1)
	expect(t, c, "nodegc_pod_source_pods", nil, 42)
	expect(t, c, "nodegc_pod_source_last_error_timestamp_seconds", nil, float64(t0.Unix()))
	expect(t, c, "nodegc_event_stream_connected", nil, 1)
	if n := total(t, c, "nodegc_image_gc_attempts_total", nil); n != 0 {
		t.Errorf("a container pass counted %v image GC attempts", n)
	}
}

// A skipped periodic container pass counts as a pass, result skipped,
// and adds no duration: it ran nothing.
func TestSkippedPassesAreCountedWithoutDuration(t *testing.T) {
	c := New(Options{Policy: engine.DefaultPolicy()})
	c.ObserveReport(engine.PassReport{ID: 2, Kind: engine.PassContainers, StartedAt: t0, FinishedAt: t0, Items: []engine.ItemResult{}, Skipped: "unchanged since pass #1"})
	expect(t, c, "nodegc_gc_passes_total", map[string]string{"kind": "containers", "trigger": "periodic", "result": "skipped"}, 1)
	expect(t, c, "nodegc_gc_last_pass_timestamp_seconds", map[string]string{"kind": "containers"}, float64(t0.Unix()))
	if n, ok := value(t, c, "nodegc_gc_pass_duration_seconds", nil); ok && n != 0 {
		t.Errorf("a skipped pass observed %v durations; want none", n)
	}
}

func TestDryRunsAreNotCounted(t *testing.T) {
	c := New(Options{Policy: engine.DefaultPolicy()})
	r := imagePass(100, time.Second, imageItem("a", 150, engine.RemoveForSpace, engine.OutcomePlanned))
	r.DryRun = true
	c.ObserveReport(r)
	if n := total(t, c, "nodegc_gc_passes_total", nil); n != 0 {
		t.Errorf("a dry run counted as %v passes", n)
	}
}

// TestPromtoolCheckMetrics: what /metrics serves, with every kind of
// series present, passes `promtool check metrics`.
func TestPromtoolCheckMetrics(t *testing.T) {
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		t.Skip("promtool not installed (Debian's prometheus package; scripts/install-deps.sh installs it)")
	}
	c := New(Options{
		Policy:  engine.DefaultPolicy(),
		Version: "v1.2.3",
		Journal: func() engine.JournalStats {
			return engine.JournalStats{Lines: map[engine.JournalOp]int64{engine.JournalIntent: 1}}
		},
		PodSource: func() PodSourceState { return PodSourceState{Enabled: true, LastError: t0} },
	})
	measured := int64(90)
	r := imagePass(200, time.Second, imageItem("a", 150, engine.RemoveForSpace, engine.OutcomeRemoved))
	r.MeasuredBytesFreed, r.ImageFsAfter = &measured, imageFs(300)
	r.Plan.ImageGC.Keep = []engine.ImageKeep{{ID: "b", Reason: engine.KeepPinned}}
	c.ObserveReport(r)
	c.ObserveSnapshot(engine.Snapshot{ImageFs: *imageFs(300)})
	c.ObserveEventStream(false)
	srv := httptest.NewServer(NewHandler(c))
	defer srv.Close()
	body := get(t, srv.URL+"/metrics", http.StatusOK)
	for _, name := range []string{"nodegc_image_gc_attempts_total", "nodegc_build_info", "process_resident_memory_bytes", "nodegc_image_gc_duration_seconds_bucket"} {
		if !strings.Contains(body, name) {
			t.Errorf("/metrics lacks %s", name)
		}
	}
	cmd := exec.Command(promtool, "check", "metrics")
	cmd.Stdin = strings.NewReader(body)
	if out, err := cmd.CombinedOutput(); err != nil || len(bytes.TrimSpace(out)) != 0 {
		t.Errorf("promtool check metrics: %v\n%s", err, out)
	}
}

// TestCollectorDescribesWhatItSends: with every kind of series present, a
// pedantic registry finds each series the Collector sends among the
// descriptions it gave, with the same help and labels.
func TestCollectorDescribesWhatItSends(t *testing.T) {
	c := New(Options{
		Policy:  engine.DefaultPolicy(),
		Version: "v1.2.3",
		Journal: func() engine.JournalStats {
			return engine.JournalStats{Lines: map[engine.JournalOp]int64{engine.JournalIntent: 1}, FailedWrites: 1}
		},
		PodSource: func() PodSourceState { return PodSourceState{Enabled: true, Synced: true, Pods: 3, LastError: t0} },
	})
	measured := int64(90)
	r := imagePass(200, time.Second, imageItem("a", 150, engine.RemoveForSpace, engine.OutcomeRemoved))
	r.Kind = engine.PassFull
	r.Items = append(r.Items,
		engine.ItemResult{Kind: engine.ItemContainer, ID: "x", Reason: string(engine.RemovePodRemovable), Outcome: engine.OutcomeRemoved},
		engine.ItemResult{Kind: engine.ItemSandbox, ID: "s", Reason: engine.SandboxPodRemovable, Outcome: engine.OutcomeRemoved},
		engine.ItemResult{Kind: engine.ItemLog, ID: "/var/log/pods/x", Reason: engine.LogPodRemovable, Outcome: engine.OutcomeRemoved})
	r.MeasuredBytesFreed, r.ImageFsAfter = &measured, imageFs(300)
	c.ObserveSnapshot(engine.Snapshot{ImageFs: *imageFs(300), Containers: []engine.Container{{ID: "x", State: engine.ContainerExited}}})
	c.ObserveReport(r)
	c.ObserveEventStream(true)
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatalf("gather: %v", err)
	}
	if len(mfs) != len(stateDescs)+len(c.vec.collectors()) {
		t.Errorf("gathered %d families, want every one of the %d", len(mfs), len(stateDescs)+len(c.vec.collectors()))
	}
}

func TestHealth(t *testing.T) {
	var runtimeErr error
	srv := httptest.NewServer(NewHandler(New(Options{}),
		Check{Name: "runtime", Fn: func(context.Context) error { return runtimeErr }},
		Check{Name: "state dir", Fn: func(context.Context) error { return nil }}))
	defer srv.Close()
	get(t, srv.URL+"/healthz", http.StatusOK)
	get(t, srv.URL+"/readyz", http.StatusOK)
	runtimeErr = errors.New("runtime unavailable")
	if body := get(t, srv.URL+"/readyz", http.StatusServiceUnavailable); body != "runtime: runtime unavailable\n" {
		t.Errorf("/readyz body %q", body)
	}
	get(t, srv.URL+"/healthz", http.StatusOK)
	get(t, srv.URL+"/nothing", http.StatusNotFound)
}

// get fetches url, checks the status and returns the body.
func get(t *testing.T, url string, status int) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != status {
		t.Errorf("GET %s: %d, want %d (%s)", url, resp.StatusCode, status, b)
	}
	return string(b)
}

// fakeEvents is an event source whose stream the test closes.
type fakeEvents struct {
	ch  chan engine.ContainerEvent
	err error
}

func (f *fakeEvents) ContainerEvents(context.Context) (<-chan engine.ContainerEvent, error) {
	return f.ch, f.err
}

func TestWatchEvents(t *testing.T) {
	c := New(Options{})
	if _, ok := value(t, c, "nodegc_event_stream_connected", nil); ok {
		t.Error("a stream never opened has a state")
	}
	src := &fakeEvents{ch: make(chan engine.ContainerEvent, 1)}
	out, err := c.WatchEvents(src).ContainerEvents(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	expect(t, c, "nodegc_event_stream_connected", nil, 1)
	src.ch <- engine.ContainerEvent{Type: engine.ContainerCreatedEvent}
	if ev := <-out; ev.Type != engine.ContainerCreatedEvent {
		t.Errorf("event %+v", ev)
	}
	close(src.ch)
	for range out {
	}
	expect(t, c, "nodegc_event_stream_connected", nil, 0)
	src.err = engine.ErrNoEventStream
	c.ObserveEventStream(true)
	if _, err := c.WatchEvents(src).ContainerEvents(context.Background()); err == nil {
		t.Error("the open's error was lost")
	}
	expect(t, c, "nodegc_event_stream_connected", nil, 0)
}
