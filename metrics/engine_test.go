package metrics

import (
	"context"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"google.golang.org/grpc/codes"

	"github.com/nodegc/nodegc/engine"
	"github.com/nodegc/nodegc/engine/cri"
	"github.com/nodegc/nodegc/internal/simfs"
	"github.com/nodegc/nodegc/internal/simnode"
)

// selector matches a metric and its label matchers in a PromQL query.
var selector = regexp.MustCompile(`(nodegc_[a-z_]+)(\{([^}]*)\})?`)

// matcher matches one label matcher: name, op (= or =~), value.
var matcher = regexp.MustCompile(`([a-z_]+)(=~|=)"([^"]*)"`)

// readmeSelectors returns every metric selector of the README's metrics
// table, as name and label matchers (a =~ value is a regexp).
func readmeSelectors(t *testing.T) map[string]map[string]*regexp.Regexp {
	t.Helper()
	b, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]map[string]*regexp.Regexp{}
	for _, line := range strings.Split(string(b), "\n") {
		if !strings.HasPrefix(line, "| ") || !strings.Contains(line, "nodegc_") {
			continue
		}
		for _, m := range selector.FindAllStringSubmatch(line, -1) {
			if strings.HasPrefix(m[1], "nodegc_forecast_") {
				continue // the agent's forecaster serves them (agent/forecast.go), not a Collector
			}
			labels := map[string]*regexp.Regexp{}
			for _, lm := range matcher.FindAllStringSubmatch(strings.ReplaceAll(m[3], `\|`, "|"), -1) {
				val := regexp.QuoteMeta(lm[3])
				if lm[2] == "=~" {
					val = lm[3]
				}
				labels[lm[1]] = regexp.MustCompile("^(?:" + val + ")$")
			}
			out[m[0]] = labels
		}
	}
	if len(out) < 15 {
		t.Fatalf("found %d selectors in the README's metrics table: the table moved?", len(out))
	}
	return out
}

// series counts the series of c a selector matches (a _bucket selector
// matches its histogram's series).
func series(t *testing.T, c *Collector, sel string, labels map[string]*regexp.Regexp) int {
	t.Helper()
	name := strings.TrimSuffix(selector.FindStringSubmatch(sel)[1], "_bucket")
	mfs, err := gather(c)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	next:
		for _, m := range mf.GetMetric() {
			got := map[string]string{}
			for _, lp := range m.GetLabel() {
				got[lp.GetName()] = lp.GetValue()
			}
			for k, re := range labels {
				if !re.MatchString(got[k]) {
					continue next
				}
			}
			n++
		}
	}
	return n
}

// TestEveryReadmeSeriesFromTheStart: before any pass, every selector of
// the README's queries has a series, so that each query answers (0) from
// the agent's start and an increase counts the first attempt. The image
// filesystem's gauges come from the snapshot the agent takes before it
// serves anything.
func TestEveryReadmeSeriesFromTheStart(t *testing.T) {
	c := New(Options{Policy: engine.DefaultPolicy(), Journal: func() engine.JournalStats { return engine.JournalStats{} },
		PodSource: func() PodSourceState { return PodSourceState{Enabled: true} }})
	c.ObserveEventStream(true)
	c.ObserveSnapshot(engine.Snapshot{ImageFs: *imageFs(500)})
	for sel, labels := range readmeSelectors(t) {
		if series(t, c, sel, labels) == 0 {
			t.Errorf("%s has no series at the agent's start", sel)
		}
	}
}

// simEngine is an engine over a simulated node whose image filesystem is
// past the high threshold, its snapshots fed to c; it returns the node's
// CRI client too, for removals the engine does not make.
func simEngine(t *testing.T, c **Collector) (*engine.Engine, *cri.Client, *simnode.Node) {
	t.Helper()
	o := simnode.Demo(3)
	o.InitialUsagePercent = 95
	n, ep := simnode.ServeTemp(t, o)
	client, err := cri.Dial(context.Background(), ep, cri.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close() })
	policy := engine.DefaultPolicy()
	policy.Image.MinAge = 0 // the engine's records begin now
	e, err := engine.New(engine.Options{Reader: client, Remover: client, Statfs: simfs.Local(n), Policy: policy,
		Now: n.Now, StateDir: t.TempDir(), OnSnapshot: func(s engine.Snapshot) { (*c).ObserveSnapshot(s) }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	*c = New(Options{Policy: e.Policy(), Journal: e.JournalStats})
	(*c).ObserveEventStream(true) // as the agent's follower does
	return e, client, n
}

// run runs a real pass of kind and feeds its report to c.
func run(t *testing.T, e *engine.Engine, c *Collector, kind engine.PassKind) engine.PassReport {
	t.Helper()
	r, err := e.Run(context.Background(), kind)
	if err != nil {
		t.Fatal(err)
	}
	c.ObserveReport(r)
	return r
}

// TestScriptedSequenceOverARealEngine drives a real engine on a simulated
// node through a periodic image pass past the threshold, a no-op, a
// removal by someone else, and a reclaim-all whose first deletion fails;
// after each step the metrics answer as the README's questions read them.
func TestScriptedSequenceOverARealEngine(t *testing.T) {
	var c *Collector
	e, client, n := simEngine(t, &c)
	sels := readmeSelectors(t)
	answers := func(step string) {
		t.Helper()
		for sel, labels := range sels {
			if series(t, c, sel, labels) == 0 {
				t.Errorf("after %s, %s has no series", step, sel)
			}
		}
	}
	periodic := map[string]string{"trigger": TriggerPeriodic}

	// 1. The periodic pass past the threshold frees its target.
	r := run(t, e, c, engine.PassImages)
	if !r.Plan.ImageGC.Triggered || r.Count(engine.OutcomeRemoved) == 0 {
		t.Fatalf("the first pass did not remove images past the threshold: triggered %v, %d planned", r.Plan.ImageGC.Triggered, len(r.Plan.ImageGC.Remove))
	}
	expect(t, c, "nodegc_image_gc_attempts_total", map[string]string{"trigger": TriggerPeriodic, "result": ResultSuccess, "reason": ReasonThreshold}, 1)
	target := total(t, c, "nodegc_image_gc_target_bytes_total", periodic)
	freed := total(t, c, "nodegc_image_gc_freed_bytes_total", map[string]string{"trigger": TriggerPeriodic, "measure": MeasureRuntime})
	if target <= 0 || freed < target {
		t.Errorf("periodic: target_bytes_total %v, freed_bytes_total{runtime} %v: a pass that met its target must read freed/target >= 1", target, freed)
	}
	answers("a periodic pass")

	// 2. A no-op: below the threshold now. The gauges stay, at 0.
	r = run(t, e, c, engine.PassImages)
	if r.Plan.ImageGC.Triggered || r.Count(engine.OutcomeRemoved) != 0 {
		t.Fatalf("the second pass was no no-op: triggered %v, %d removed", r.Plan.ImageGC.Triggered, r.Count(engine.OutcomeRemoved))
	}
	expect(t, c, "nodegc_image_gc_attempts_total", map[string]string{"trigger": TriggerPeriodic, "result": ResultNoop, "reason": ReasonBelowThreshold}, 1)
	expect(t, c, "nodegc_image_gc_freed_bytes", map[string]string{"measure": MeasureStatfs}, 0)
	expect(t, c, "nodegc_image_gc_freed_bytes", map[string]string{"measure": MeasureRuntime}, 0)
	expect(t, c, "nodegc_image_gc_target_bytes", nil, 0)
	answers("a no-op pass")

	// 3. Someone else (the kubelet's GC, crictl rmi) removes an image:
	// it counts as another's, once a snapshot has waited for a claim.
	p, err := e.Plan(context.Background(), engine.PassReclaimAll)
	if err != nil || len(p.ImageGC.Remove) < 3 {
		t.Fatalf("reclaim-all plans %d images (%v): too few for the test", len(p.ImageGC.Remove), err)
	}
	theirs := p.ImageGC.Remove[0]
	if err := client.RemoveImage(context.Background(), theirs.ID); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if _, err := e.Snapshot(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	expect(t, c, "nodegc_gc_removed_by_others_total", map[string]string{"kind": OtherImage}, 1)
	expect(t, c, "nodegc_image_gc_removed_by_others_bytes_total", nil, float64(theirs.SizeBytes))

	// 4. A reclaim-all whose first deletion fails: partial, delete-error,
	// its freed bytes under its own trigger, none of its removals
	// another's.
	n.InjectFault(simnode.Fault{Method: "RemoveImage", Err: codes.Internal, Times: 1})
	r = run(t, e, c, engine.PassReclaimAll)
	if r.Count(engine.OutcomeFailed) != 1 || r.Count(engine.OutcomeRemoved) == 0 {
		t.Fatalf("reclaim-all: %d failed, %d removed; want 1 and some", r.Count(engine.OutcomeFailed), r.Count(engine.OutcomeRemoved))
	}
	expect(t, c, "nodegc_image_gc_attempts_total", map[string]string{"trigger": TriggerReclaimAll, "result": ResultPartial, "reason": ReasonDeleteError}, 1)
	reclaim := map[string]string{"trigger": TriggerReclaimAll, "measure": MeasureRuntime}
	expect(t, c, "nodegc_image_gc_freed_bytes_total", reclaim, float64(r.EstimatedBytesFreed))
	expect(t, c, "nodegc_image_gc_target_bytes_total", map[string]string{"trigger": TriggerReclaimAll}, float64(r.Plan.ImageGC.BytesFreed))
	expect(t, c, "nodegc_image_gc_freed_bytes_total", map[string]string{"trigger": TriggerPeriodic, "measure": MeasureRuntime}, freed)
	for range 2 {
		if _, err := e.Snapshot(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	expect(t, c, "nodegc_gc_removed_by_others_total", map[string]string{"kind": OtherImage}, 1)
	answers("a reclaim-all with a failed deletion")
}

// TestRemovedByOthersWaitsForALateReport: a pass's report that reaches
// the collector after the next snapshot still claims what it removed.
func TestRemovedByOthersWaitsForALateReport(t *testing.T) {
	c := New(Options{Policy: engine.DefaultPolicy()})
	img := func(ids ...string) engine.Snapshot {
		var s engine.Snapshot
		for _, id := range ids {
			s.Images = append(s.Images, engine.Image{ID: id, SizeBytes: 10})
		}
		return s
	}
	c.ObserveSnapshot(img("a", "b", "c"))
	c.ObserveSnapshot(img("c")) // a and b vanished; the report is late
	c.ObserveReport(engine.PassReport{ID: 1, Kind: engine.PassImages, Items: []engine.ItemResult{imageItem("a", 10, engine.RemoveForSpace, engine.OutcomeRemoved)}})
	c.ObserveSnapshot(img("c"))
	expect(t, c, "nodegc_gc_removed_by_others_total", map[string]string{"kind": OtherImage}, 1)
	expect(t, c, "nodegc_image_gc_removed_by_others_bytes_total", nil, 10)
}

// gather is what a registry of c alone gathers.
func gather(c *Collector) ([]*dto.MetricFamily, error) {
	reg := prometheus.NewRegistry()
	reg.MustRegister(c)
	return reg.Gather()
}
