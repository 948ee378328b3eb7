package engine

import (
	"encoding/json"
	"io"
	"slices"
	"testing"
	"time"

	"github.com/nodegc/nodegc/engine/internal/nodetest"
)

// BenchmarkPlan10kImages100kContainers plans a full pass (containers,
// sandboxes, logs, images, disk reserve) over bigSnapshot. It must take
// well under BenchmarkDecodeSnapshot of the same snapshot.
//
//	go test ./engine -run '^$' -bench 'Plan|Decode' -benchmem
func BenchmarkPlan10kImages100kContainers(b *testing.B) {
	s, _ := nodetest.BigSnapshot()
	p := nodetest.BenchPolicy()
	var plan Plan
	for b.Loop() {
		plan = PlanPass(s, p, PassFull, nodetest.T0)
	}
	if len(plan.ContainerGC.Remove) == 0 || len(plan.ImageGC.Remove) == 0 || len(plan.SandboxGC.Remove) == 0 {
		b.Fatalf("the benchmark plan does no work: %d containers, %d images, %d sandboxes",
			len(plan.ContainerGC.Remove), len(plan.ImageGC.Remove), len(plan.SandboxGC.Remove))
	}
	b.ReportMetric(float64(len(s.Images)+len(s.Containers)+len(s.Sandboxes)), "objects/op")
}

// BenchmarkDecodeSnapshot decodes bigSnapshot from JSON, the way
// `nodegc plan --from FILE` reads it.
func BenchmarkDecodeSnapshot(b *testing.B) {
	_, data := nodetest.BigSnapshot()
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, err := DecodeSnapshot(data); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkExplain10k explains the plan of bigSnapshot row by row, as
// `nodegc plan` does before it prints.
func BenchmarkExplain10k(b *testing.B) {
	s, _ := nodetest.BigSnapshot()
	plan := PlanPass(s, nodetest.BenchPolicy(), PassFull, nodetest.T0)
	for b.Loop() {
		Explain(s, plan)
	}
}

// BenchmarkWritePlanJSON writes the plan of bigSnapshot and its
// explanation as `nodegc plan -o json` does.
func BenchmarkWritePlanJSON(b *testing.B) {
	s, _ := nodetest.BigSnapshot()
	plan := PlanPass(s, nodetest.BenchPolicy(), PassFull, nodetest.T0)
	x := Explain(s, plan)
	for b.Loop() {
		if err := WritePlanJSON(io.Discard, plan, x); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkPlanFromSnapshot is `nodegc plan --from FILE -o json` in one
// process, minus reading the file and starting: decode, plan, explain
// and write the JSON of bigSnapshot as the command does (PlanExplained,
// WritePlanJSONWith), side by side with its baseline,
// json.Unmarshal of the same bytes into a Snapshot (internal/bare
// decode), alternated each round. x-decode is the ratio of the medians.
func BenchmarkPlanFromSnapshot(b *testing.B) {
	_, data := nodetest.BigSnapshot()
	var base, ours []time.Duration
	for b.Loop() {
		start := time.Now()
		var s Snapshot
		if err := json.Unmarshal(data, &s); err != nil {
			b.Fatal(err)
		}
		mid := time.Now()
		s, err := DecodeSnapshot(data)
		if err != nil {
			b.Fatal(err)
		}
		plan, explain := PlanExplained(s, nodetest.BenchPolicy(), PassFull, s.TakenAt)
		if err := WritePlanJSONWith(io.Discard, plan, explain); err != nil {
			b.Fatal(err)
		}
		base, ours = append(base, mid.Sub(start)), append(ours, time.Since(mid))
	}
	mb, mo := medianDuration(base), medianDuration(ours)
	b.ReportMetric(float64(mb.Milliseconds()), "decode-ms")
	b.ReportMetric(float64(mo.Milliseconds()), "plan-ms")
	b.ReportMetric(float64(mo)/float64(mb), "x-decode")
}

func medianDuration(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}
